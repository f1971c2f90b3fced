"""Executable environments: SQLite-backed API tools, document retrievers, an MCP server, and
BFCL's own multi-turn environment classes (``_bfcl``: from the optional bfcl-eval package).

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
    "BFCL_INSTALL",
    "BM25Index",
    "BfclUnavailable",
    "CallSpec",
    "DomainError",
    "EntryFailed",
    "EntrySpec",
    "Environment",
    "ExecResult",
    "Session",
    "TurnSpec",
    "UnknownEnvironment",
    "bfcl_version",
    "bind_call",
    "describe_environment",
    "has_reference",
    "list_environments",
    "load_environment",
    "method_owners",
    "parse_call",
    "replay_bfcl_entry",
    "tokenize",
]

if TYPE_CHECKING:
    from pipelines.env._bfcl import INSTALL as BFCL_INSTALL
    from pipelines.env._bfcl import BfclUnavailable, CallSpec, EntryFailed, EntrySpec, TurnSpec, bfcl_version, bind_call, method_owners, parse_call
    from pipelines.env._bfcl import replay_entry as replay_bfcl_entry
    from pipelines.env._labels import has_reference
    from pipelines.env._retriever import BM25Index, tokenize
    from pipelines.env._runtime import DomainError, Environment, ExecResult, Session, UnknownEnvironment, load_environment

_LAZY = {
    "BfclUnavailable": "_bfcl",
    "CallSpec": "_bfcl",
    "EntryFailed": "_bfcl",
    "EntrySpec": "_bfcl",
    "TurnSpec": "_bfcl",
    "bfcl_version": "_bfcl",
    "bind_call": "_bfcl",
    "method_owners": "_bfcl",
    "parse_call": "_bfcl",
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
    if name in ("BFCL_INSTALL", "replay_bfcl_entry"):
        from pipelines.env import _bfcl

        return _bfcl.INSTALL if name == "BFCL_INSTALL" else _bfcl.replay_entry
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f"pipelines.env.{module}"), name)
