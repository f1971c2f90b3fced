"""Fields an input item carries that the schema does not know.

Input models accept unknown fields (``extra="allow"``) so that one extra key never costs a task or a
trajectory: real files carry ids, rewards and tool-specific fields everywhere. Ingest then reports
each with ``extra_fields`` as a warning (or an error with ``--strict``), so a misspelt key is never
silently ignored either.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from typing import Any, get_args

from pydantic import BaseModel, ConfigDict

Open = ConfigDict(extra="allow")  # the config of every input model


@cache
def _model_fields_of(cls: type[BaseModel]) -> tuple[str, ...]:
    """The fields of ``cls`` whose type can hold a model (others, e.g. a tool's JSON-schema
    ``parameters`` dict, are never walked: the walk stays proportional to the models present)."""
    return tuple(name for name, f in cls.model_fields.items() if _holds_model(f.annotation))


def _holds_model(annotation: Any) -> bool:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return True
    return any(_holds_model(arg) for arg in get_args(annotation))


def extra_fields(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """(field path, value) of every unknown field in a validated model tree, in field order.

    Iterative (an explicit stack), so a deeply nested item cannot exhaust the recursion limit."""
    stack: list[tuple[str, Any]] = [(path, value)]
    while stack:
        where, node = stack.pop()
        if isinstance(node, BaseModel):
            children: list[tuple[str, Any]] = []
            for name in _model_fields_of(type(node)):
                child = getattr(node, name, None)
                if isinstance(child, (BaseModel, list, dict)):
                    children.append((f"{where}.{name}" if where else name, child))
            stack.extend(reversed(children))
            for key, extra in (node.model_extra or {}).items():
                yield (f"{where}.{key}" if where else key), extra
        elif isinstance(node, list):
            stack.extend(reversed([(f"{where}[{i}]", item) for i, item in enumerate(node) if isinstance(item, BaseModel)]))
        elif isinstance(node, dict):
            stack.extend(reversed([(f"{where}.{k}", item) for k, item in node.items() if isinstance(item, BaseModel)]))
