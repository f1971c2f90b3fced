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


_LEAVES: set[type[BaseModel]] = set()  # model classes with no field that can hold a model


def _stacked(child: Any) -> bool:
    """Whether the walk must visit a child: a non-empty container, or a model with an unknown
    field or with fields that can hold models. Any other model (most tool specs, a step's usage)
    yields nothing, so skipping it at its parent leaves the order of the rest as it was."""
    if isinstance(child, BaseModel):
        return bool(child.__pydantic_extra__) or type(child) not in _LEAVES
    return isinstance(child, (list, dict)) and bool(child)


def extra_fields(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """(field path, value) of every unknown field in a validated model tree, in field order.

    Iterative (an explicit stack), so a deeply nested item cannot exhaust the recursion limit.
    A node's path is kept as a link to its parent's and written out only for an unknown field
    (most trees have none: building every path would be most of the walk's cost); a child that
    can yield nothing is never stacked (``_stacked``)."""
    stack: list[tuple[Any, Any]] = [(value, None)]
    while stack:
        node, link = stack.pop()
        if isinstance(node, BaseModel):
            names = _model_fields_of(type(node))
            if names:
                children = [(child, (link, name)) for name in names if _stacked(child := getattr(node, name, None))]
                if children:
                    stack.extend(reversed(children))
            else:
                _LEAVES.add(type(node))
            extra = node.__pydantic_extra__
            if extra:
                for key, item in extra.items():
                    yield _path(path, (link, key)), item
        elif isinstance(node, list):
            items = [(item, (link, i)) for i, item in enumerate(node) if isinstance(item, BaseModel) and (item.__pydantic_extra__ or type(item) not in _LEAVES)]
            if items:
                stack.extend(reversed(items))
        elif isinstance(node, dict):
            keyed: list[tuple[Any, Any]] = [
                (item, (link, str(k))) for k, item in node.items() if isinstance(item, BaseModel) and (item.__pydantic_extra__ or type(item) not in _LEAVES)
            ]
            if keyed:
                stack.extend(reversed(keyed))


def _path(root: str, link: Any) -> str:
    """``a.b[0].c`` from a chain of (parent, key) links: ints are list positions, anything else a
    field name or a dict key."""
    keys: list[Any] = []
    while link is not None:
        link, key = link
        keys.append(key)
    out = root
    for key in reversed(keys):
        out += f"[{key}]" if isinstance(key, int) else (f".{key}" if out else str(key))
    return out
