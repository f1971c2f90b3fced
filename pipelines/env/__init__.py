"""Executable environments: SQLite-backed API tools, document retrievers, and an MCP server.

The grading matcher replays predicted and reference calls here (``pipelines.replay``); agents
can run against the very same domains through ``serve`` (MCP over stdio or streamable HTTP).
"""

from pipelines.env._runtime import (
    DEFAULT_ROOT,
    DomainError,
    Environment,
    ExecResult,
    Session,
    UnknownEnvironment,
    list_environments,
    load_environment,
)
from pipelines.env._retriever import BM25Index, tokenize

__all__ = [
    "DEFAULT_ROOT",
    "BM25Index",
    "DomainError",
    "Environment",
    "ExecResult",
    "Session",
    "UnknownEnvironment",
    "list_environments",
    "load_environment",
    "tokenize",
]
