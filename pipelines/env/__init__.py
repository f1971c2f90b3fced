"""Executable environments: SQLite-backed API tools, document retrievers, and an MCP server.

The grading matcher replays predicted and reference calls here (``pipelines.replay``); agents
can run against the very same domains through ``serve`` (MCP over stdio or streamable HTTP).
"""

from pipelines.env._retriever import BM25Index, tokenize
from pipelines.env._runtime import (
    DomainError,
    Environment,
    ExecResult,
    Session,
    UnknownEnvironment,
    list_environments,
    load_environment,
)

__all__ = [
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
