"""``--tool-specs FILE``: tool specs for formats whose files do not carry them (traces, logs), so
that grading knows each tool's parameters and which tools write.

Accepted shapes: a JSON array of specs, ``{"tools": [...]}`` (items may be ``{"spec": ...}`` as in a
bundled domain's ``tools.json``), or JSONL with one spec per line; a spec is a task's ``tools`` entry
(flat ``{name, description, parameters, side_effect}`` or OpenAI's wrapped form). A task gains each
spec whose tool it does not declare itself; its own specs win, except a placeholder that only names
the tool (no description, no parameters: what a reader writes for a format that names tools without
describing them, such as tau2 results), which a given spec replaces.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from judge import BadInputError, InputErrorInfo, ToolSpec
from pipelines.ingest._base import Limits, TaskSet, validation_error
from pipelines.ingest._reader import read_items


class ToolSpecError(BadInputError):
    """The tool-specs file cannot be used; the message names file, line and field."""


def _entries(value: Any) -> list[tuple[str, Any]]:
    if isinstance(value, dict) and isinstance(value.get("tools"), list):
        return [(f"tools[{i}]", t.get("spec", t) if isinstance(t, dict) else t) for i, t in enumerate(value["tools"])]
    if isinstance(value, dict) and isinstance(value.get("spec"), dict):
        return [("spec", value["spec"])]
    return [("", value)]


def load_tool_specs(path: Path, limits: Limits = Limits()) -> list[ToolSpec]:
    """Every spec of the file, in order; a bad one raises ``ToolSpecError`` (the run cannot guess)."""
    name = str(path)
    specs: dict[str, ToolSpec] = {}
    for raw in read_items(path, limits):
        if raw.error is not None:
            raise ToolSpecError(raw.error.render())
        items = [(f"[{i}]", v) for i, v in enumerate(raw.value)] if isinstance(raw.value, list) else _entries(raw.value)
        for where, value in items:
            try:
                spec = ToolSpec.model_validate(value)
            except ValidationError as err:
                bad = validation_error(err, prefix=where).info(name, raw.line)
                raise ToolSpecError(bad.render()) from None
            if spec.name in specs:
                info = InputErrorInfo(
                    kind="duplicate_id", message=f"tool {spec.name!r} is specified twice", file=name, line=raw.line, field=f"{where}.name".lstrip(".")
                )
                raise ToolSpecError(info.render())
            specs[spec.name] = spec
    if not specs:
        raise ToolSpecError(f"{name}: no tool specs found")
    return list(specs.values())


def _placeholder(spec: ToolSpec) -> bool:
    """A spec that only names its tool (and at most a read/write guess): nothing a given spec would lose."""
    return not spec.description and not spec.properties


def with_tool_specs(taskset: TaskSet, specs: list[ToolSpec]) -> TaskSet:
    """Each task gains the specs of tools it does not declare, and a given spec replaces a placeholder
    (shared objects: memory stays flat)."""
    given = {s.name: s for s in specs}
    for tid, task in list(taskset.tasks.items()):
        known = task.tool_index
        own = [given[t.name] if t.name in given and _placeholder(t) else t for t in task.tools]
        extra = [s for s in specs if s.name not in known]
        if extra or any(a is not b for a, b in zip(own, task.tools)):
            updated = task.model_copy(update={"tools": [*own, *extra]})
            updated.__dict__.pop("tool_index", None)  # rebuilt from the new tool list on first use
            taskset.tasks[tid] = updated
    return taskset
