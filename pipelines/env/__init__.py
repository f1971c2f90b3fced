"""Executable environments: SQLite-backed API tools, document retrievers, and an MCP server.

The grading matcher replays predicted and reference calls here (``pipelines.grade.replay``); agents
can run against the very same domains through ``serve`` (MCP over stdio or streamable HTTP).

Importing this package loads nothing heavy: the catalogue (``list_environments``,
``describe_environment``) reads files as JSON; the runtime (pydantic models, SQLite, jsonschema)
and the retriever (bm25s, jieba: scipy underneath) load on first use, so ``judge env list``
starts fast.
"""

from typing import TYPE_CHECKING, Any

from pipelines.env._catalog import describe_environment, list_environments

__all__ = [
    "BM25Index",
    "DomainError",
    "Environment",
    "ExecResult",
    "Session",
    "UnknownEnvironment",
    "describe_environment",
    "has_reference",
    "list_environments",
    "load_environment",
    "tokenize",
]

if TYPE_CHECKING:
    from pipelines.env._labels import has_reference
    from pipelines.env._retriever import BM25Index, tokenize
    from pipelines.env._runtime import DomainError, Environment, ExecResult, Session, UnknownEnvironment, load_environment

_LAZY = {
    "BM25Index": "_retriever",
    "tokenize": "_retriever",
    "DomainError": "_runtime",
    "Environment": "_runtime",
    "ExecResult": "_runtime",
    "Session": "_runtime",
    "UnknownEnvironment": "_runtime",
    "has_reference": "_labels",
    "load_environment": "_runtime",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f"pipelines.env.{module}"), name)
