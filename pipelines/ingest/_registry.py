"""The registry of input formats. Detection tries formats in registry order on the first object.

To add a format: write ``_<name>.py`` exposing ``TASKS`` (a ``TaskFormat``), ``TRAJECTORIES`` (a
streaming ``TrajectoryFormat``: one item, one trajectory) or ``BUNDLE`` (a ``BundleFormat``: a file
read whole, which may carry its own tasks), and list it here. Bundles are detected first (from the
file's first bytes and first object), then streaming formats (from the first object).
"""

from __future__ import annotations

from typing import Any

from pipelines.ingest import (
    _agents_trace,
    _anthropic,
    _bfcl,
    _bfcl_results,
    _inspect,
    _langchain,
    _native,
    _openai,
    _otel,
    _pydantic_ai,
    _responses,
    _tau2,
    _vakra,
)
from pipelines.ingest._base import BundleFormat, TaskFormat, TrajectoryFormat
from pipelines.ingest._usage import UsageError

TASK_REGISTRY: dict[str, TaskFormat] = {f.name: f for f in (_native.TASKS, _vakra.TASKS, _bfcl.TASKS)}
TRAJECTORY_REGISTRY: dict[str, TrajectoryFormat] = {
    f.name: f
    for f in (
        _native.TRAJECTORIES,
        _openai.TRAJECTORIES,
        _anthropic.TRAJECTORIES,
        _vakra.TRAJECTORIES,
        _bfcl_results.TRAJECTORIES,
        _responses.TRAJECTORIES,
        _langchain.TRAJECTORIES,
        _pydantic_ai.TRAJECTORIES,
    )
}
BUNDLE_REGISTRY: dict[str, BundleFormat] = {f.name: f for f in (_tau2.BUNDLE, _inspect.BUNDLE, _otel.BUNDLE, _agents_trace.BUNDLE)}
# detection order: the most specific signatures first (the framework dumps, then anthropic, then
# the openai fallback, which takes any {messages} object)
_TRAJECTORY_DETECTION = ("native", "vakra", "bfcl", "langchain", "pydantic-ai", "responses", "anthropic", "openai")
# bare message lists (no task id around them): the frameworks' own dumps
_BARE_DETECTION = ("langchain", "pydantic-ai", "responses")

TASK_FORMATS: tuple[str, ...] = tuple(TASK_REGISTRY)
TRAJECTORY_FORMATS: tuple[str, ...] = (*TRAJECTORY_REGISTRY, *BUNDLE_REGISTRY)


def task_format(name: str) -> TaskFormat:
    try:
        return TASK_REGISTRY[name]
    except KeyError:
        raise UsageError("--task-format", f"unknown task format {name!r}", TASK_FORMATS) from None


def trajectory_format(name: str) -> TrajectoryFormat | BundleFormat:
    found = TRAJECTORY_REGISTRY.get(name) or BUNDLE_REGISTRY.get(name)
    if found is None:
        raise UsageError("--format", f"unknown trajectory format {name!r}", TRAJECTORY_FORMATS)
    return found


def sniff_bundle(head: bytes, first: dict | None) -> str | None:
    for fmt in BUNDLE_REGISTRY.values():
        if fmt.sniff(head, first):
            return fmt.name
    return None


def sniff_task(item: dict) -> str | None:
    for fmt in TASK_REGISTRY.values():
        if fmt.sniff(item):
            return fmt.name
    return None


def sniff_trajectory(item: dict) -> str | None:
    for name in _TRAJECTORY_DETECTION:
        if TRAJECTORY_REGISTRY[name].sniff(item):
            return name
    return None


def sniff_bare(messages: list[Any]) -> str | None:
    """The format of a bare message list (a framework's own dump, no task id around it)."""
    for name in _BARE_DETECTION:
        bare = TRAJECTORY_REGISTRY[name].bare
        if bare is not None and bare(messages):
            return name
    return None


# what makes an object a trajectory rather than a message: a message of no format has these keys
_WRAPPER_KEYS = ("task_id", "trajectory_id", "messages", "items", "turns", "steps", "final_answer")


def is_wrapped(value: dict[str, Any]) -> bool:
    return any(key in value for key in _WRAPPER_KEYS)


def describe_bare(messages: list[Any]) -> str:
    """What a bare list that no format recognised looks like (for the detection error)."""
    first = next((m for m in messages if isinstance(m, dict)), None)
    names = ", ".join(n for n in _BARE_DETECTION)
    size = f"{len(messages)} item{'s' if len(messages) != 1 else ''}"
    if first is None:
        return f"a JSON array of {size}, none of them an object; bare message lists are read for {names}"
    marks = {k: first[k] for k in ("type", "role", "kind", "part_kind") if isinstance(first.get(k), str)}
    shown = f" ({', '.join(f'{k}={v!r}' for k, v in marks.items())})" if marks else ""
    return f"a JSON array of {size} read as a bare message list, the first with keys {sorted(first)[:12]}{shown}: the messages of none of {names}"
