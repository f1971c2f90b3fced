"""The native format: JSONL of ``judge.Task`` / ``judge.Trajectory`` lines, validated strictly.

A trajectory without ``trajectory_id`` gets the deterministic id ``<file stem>:<line>``.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from judge import SourceRef, Task, Trajectory
from pipelines.ingest._base import (
    ItemContext,
    ItemError,
    Limits,
    TaskCollector,
    TaskFormat,
    TaskSet,
    TrajectoryFormat,
    as_id,
    validation_error,
)
from pipelines.ingest._reader import read_items

_TRAJECTORY_KEYS = ("turns", "steps", "final_answer")


def _sniff_task(item: dict[str, Any]) -> bool:
    return "task_id" in item and ("turns" in item or "question" in item)


def _sniff_trajectory(item: dict[str, Any]) -> bool:
    return "task_id" in item and "messages" not in item and any(k in item for k in _TRAJECTORY_KEYS)


def _ids(item: dict[str, Any], default: str) -> tuple[str | None, str | None]:
    tid = as_id(item.get("trajectory_id")) if "trajectory_id" in item else default
    return as_id(item.get("task_id")), tid


def _shorthand_path(err: ItemError, item: dict[str, Any], shorthand: tuple[str, ...]) -> ItemError:
    """Name the field the user wrote: a single-turn shorthand is validated as ``turns[0]``, but
    the error must say ``question`` / ``gold_answer`` / ``steps[1].name``, not ``turns[0]...``."""
    if "turns" in item or not any(k in item for k in shorthand) or not err.field or not err.field.startswith("turns[0]"):
        return err
    rest = err.field[len("turns[0]") :].lstrip(".")
    if rest.startswith("query"):
        rest = "question" + rest[len("query") :]
    elif rest.startswith("gold_answers") and "gold_answer" in item:
        rest = "gold_answer" + rest[len("gold_answers[0]") :]
    err.field = rest or "<root>"
    return err


def _convert_trajectory(item: dict[str, Any], ctx: ItemContext) -> Trajectory:
    if "trajectory_id" not in item:
        item = {**item, "trajectory_id": ctx.default_trajectory_id}
    try:
        return Trajectory.model_validate(item)
    except ValidationError as err:
        raise _shorthand_path(validation_error(err), item, ("steps", "final_answer")) from None


def convert_task(item: dict[str, Any]) -> Task:
    try:
        return Task.model_validate(item)
    except ValidationError as err:
        raise _shorthand_path(validation_error(err), item, ("question",)) from None


def _load_tasks(path: str, reference: str | None, limits: Limits) -> TaskSet:
    if reference is not None:
        raise ValueError("native tasks carry their own reference calls and gold answers; they take no reference file")
    collector = TaskCollector()
    for raw in read_items(path, limits):
        source = SourceRef(file=path, line=raw.line, item=raw.index)
        if raw.error is not None:
            collector.add_error(raw.error, None)
            continue
        if not isinstance(raw.value, dict):
            collector.add_error(ItemError("invalid_field", "a task must be a JSON object", "<root>").info(path, raw.line), None)
            continue
        try:
            task = convert_task(collector.prepare(raw.value))
        except ItemError as err:
            collector.add_error(err.info(path, raw.line), as_id(raw.value.get("task_id")))
            continue
        collector.add(task, source)
    return collector.result


TASKS = TaskFormat(
    name="native",
    description="JSONL of judge.Task objects (single-turn shorthand: question + reference_calls + gold_answer)",
    sniff=_sniff_task,
    load=_load_tasks,
    reference="none",
)

TRAJECTORIES = TrajectoryFormat(
    name="native",
    description="JSONL of judge.Trajectory objects (single-turn shorthand: steps + final_answer)",
    sniff=_sniff_trajectory,
    ids=_ids,
    convert=_convert_trajectory,
)
