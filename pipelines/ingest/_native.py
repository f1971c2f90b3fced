"""The native format: JSONL of ``judge.Task`` / ``judge.Trajectory`` lines.

A trajectory without ``trajectory_id`` gets the deterministic id ``<file stem>:<line>`` (``:<n>`` added
for the n-th item of a line holding several, see ``default_trajectory_id``). Fields the
schema does not know are kept and reported as ``unknown_field`` warnings naming the field the user
wrote (with a "did you mean" when a known field is close); top-level ones move into ``metadata``
(a trajectory's ``reward`` becomes ``metadata.reward``; a task's into ``metadata.tags``).
``--strict`` turns the warnings into errors (see ``pipelines.ingest._api``).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ValidationError

from judge import (
    SINGLE_TURN_KEYS,
    ArgumentRule,
    ExternalLabel,
    ForbiddenArgument,
    InputWarning,
    Policy,
    ReferenceCall,
    SourceRef,
    SourceRule,
    Step,
    Task,
    TaskMetadata,
    TokenUsage,
    ToolSpec,
    Trajectory,
    TrajectoryTurn,
    Turn,
    extra_fields,
)
from judge.core._heap import freeze_more, frozen_heap
from pipelines.ingest._base import (
    ItemContext,
    ItemError,
    Limits,
    TaskCollector,
    TaskFormat,
    TaskSet,
    TrajectoryFormat,
    as_id,
    guarded,
    validation_error,
)
from pipelines.ingest._reader import RawItem, read_items

FREEZE_EVERY = 500  # tasks read between two freezes of what is loaded (load_task_items)
_TRAJECTORY_KEYS = ("turns", "steps", "final_answer")
_TRAJECTORY_SHORTHAND = ("steps", "final_answer")
_TASK_SHORTHAND = ("question", *SINGLE_TURN_KEYS)
_MODELS: tuple[type[BaseModel], ...] = (
    Task,
    Turn,
    ReferenceCall,
    ArgumentRule,
    ToolSpec,
    Policy,
    ForbiddenArgument,
    SourceRule,
    TaskMetadata,
    Trajectory,
    TrajectoryTurn,
    Step,
    TokenUsage,
    ExternalLabel,
)
_VOCABULARY = sorted({name for model in _MODELS for name in model.model_fields} | set(_TASK_SHORTHAND) | {"gold_answer"})


def unknown_field_warning(path: str, file: str, line: int | None) -> InputWarning:
    key = path.rsplit(".", 1)[-1]
    close = difflib.get_close_matches(key, _VOCABULARY, n=1, cutoff=0.8)
    if key in _VOCABULARY:
        hint = f" ({key!r} is a field at another level of the schema: check its nesting)"
    else:
        hint = f" (did you mean {close[0]!r}?)" if close else ""
    return InputWarning(kind="unknown_field", message=f"unknown field {key!r} kept but not used{hint}", file=file, line=line, field=path)


def _move_top_level(item: dict[str, Any], known: set[str], into: str) -> tuple[dict[str, Any], list[str]]:
    """Unknown top-level keys go into ``item[into]`` (a dict): kept where users look for them."""
    extra = [k for k in item if k not in known]
    if not extra or (into in item and not isinstance(item[into], dict)):
        return item, []
    moved = {k: v for k, v in item.items() if k not in extra}
    moved[into] = {**{k: item[k] for k in extra}, **(item.get(into) or {})}
    return moved, extra


_TRAJECTORY_TOP = set(Trajectory.model_fields) | set(_TRAJECTORY_SHORTHAND)
_TASK_TOP = set(Task.model_fields) | set(_TASK_SHORTHAND)


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


def _user_path(path: str, item: dict[str, Any], shorthand: tuple[str, ...]) -> str:
    return _shorthand_path(ItemError("unknown_field", "", path), item, shorthand).field or path


def _convert_trajectory(item: dict[str, Any], ctx: ItemContext) -> Trajectory:
    if "trajectory_id" not in item:
        item = {**item, "trajectory_id": ctx.default_trajectory_id}
    validated, moved = _move_top_level(item, _TRAJECTORY_TOP, "metadata")
    try:
        trajectory = Trajectory.model_validate(validated)
    except ValidationError as err:
        raise _shorthand_path(validation_error(err), item, _TRAJECTORY_SHORTHAND) from None
    paths = moved + [_user_path(path, item, _TRAJECTORY_SHORTHAND) for path, _ in extra_fields(trajectory)]
    ctx.warnings.extend(unknown_field_warning(path, ctx.file, ctx.line) for path in paths)
    return trajectory


@guarded
def convert_task(item: dict[str, Any], file: str = "<memory>", line: int | None = None, *, warn: bool = True) -> tuple[Task, list[InputWarning]]:
    """The task and a warning for each field it carries that the schema does not know (none looked
    for with ``warn=False``: callers that report no warnings, such as ``pipelines.grade.reward``)."""
    validated: dict[str, Any] = item
    moved: list[str] = []
    meta = item.get("metadata", {})
    if isinstance(meta, dict) and isinstance(meta.get("tags", {}), dict):
        validated, moved = _move_top_level(item, _TASK_TOP, "metadata")
        if moved:  # into metadata.tags: TaskMetadata keeps free-form values there
            top = validated["metadata"]
            validated["metadata"] = {**meta, "tags": {**{k: top[k] for k in moved}, **(meta.get("tags") or {})}}
    try:
        task = Task.model_validate(validated)
    except ValidationError as err:
        raise _shorthand_path(validation_error(err), item, ("question",)) from None
    if not warn:
        return task, []
    paths = moved + [_user_path(path, item, ("question",)) for path, _ in extra_fields(task)]
    return task, [unknown_field_warning(path, file, line) for path in paths]


def read_task_item(
    item: dict[str, Any], collector: TaskCollector, file: str = "<memory>", line: int | None = None, *, warn: bool = True
) -> tuple[Task, list[InputWarning]]:
    """One native task item read as a line of a tasks file is (same checks, errors and warnings;
    tool specs met before through ``collector`` are shared, not validated again), without the
    duplicate rules: the caller keeps the task. Raises ``ItemError``."""
    task, warnings = convert_task(collector.prepare(item), file, line, warn=warn)
    return collector.share_tools(task), warnings


def _load_tasks(path: str, reference: str | None, limits: Limits) -> TaskSet:
    if reference is not None:
        raise ValueError("native tasks carry their own reference calls and gold answers; they take no reference file")
    # task lines of converted logs repeat their deployment's tool specs: read once per distinct
    # text (load_task_items and TaskCollector.prepare build new containers, never mutate them)
    return load_task_items(read_items(path, limits, shared=("tools",)), path, TaskCollector())


def load_task_items(items: Iterable[RawItem], path: str, collector: TaskCollector) -> TaskSet:
    """Each read item into ``collector`` (a task, or an error): the loop of ``_load_tasks``, also
    run by workers on shards of a large tasks file (``pipelines.ingest._parallel``).

    The task set is a large tree of objects that lives for the run: every ``FREEZE_EVERY`` items
    what is loaded so far is set aside from the collector (``judge.core._heap``), so the full
    collections the loading triggers do not walk it again and again."""
    with frozen_heap():
        for count, raw in enumerate(items, 1):
            if count % FREEZE_EVERY == 0:
                freeze_more()
            source = SourceRef(file=path, line=raw.line, item=raw.index)
            if raw.error is not None:
                collector.add_error(raw.error, None)
                continue
            if not isinstance(raw.value, dict):
                collector.add_error(ItemError("invalid_field", "a task must be a JSON object", "<root>").info(path, raw.line), None)
                continue
            try:
                task, warnings = convert_task(collector.prepare(raw.value, unchanged=True), path, raw.line)
            except ItemError as err:
                collector.add_error(err.info(path, raw.line), as_id(raw.value.get("task_id")))
                continue
            collector.add(task, source, warnings)
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
