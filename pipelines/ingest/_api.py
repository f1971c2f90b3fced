"""The ingest entry points the grading runner calls: load tasks, stream trajectories, check ids.

Trajectories stream: memory holds one item at a time plus the set of (task_id, trajectory_id)
pairs already seen (to report repeats). Tasks are loaded whole (the runner needs them all).
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from judge import InputErrorInfo, SourceRef
from pipelines.ingest._base import ItemContext, ItemError, Limits, Loaded, TaskSet, TrajectoryFormat, default_trajectory_id, validation_error
from pipelines.ingest._reader import RawItem, Source, read_items, source_name
from pipelines.ingest._registry import (
    TASK_FORMATS,
    TRAJECTORY_FORMATS,
    sniff_task,
    sniff_trajectory,
    task_format,
    trajectory_format,
)
from pipelines.ingest._usage import UsageError


def _first_object(path: Source, limits: Limits) -> tuple[dict[str, Any] | None, bool]:
    """(the first readable JSON object, whether the file holds any item at all)."""
    seen = False
    for raw in read_items(path, limits):
        seen = True
        if raw.error is None and isinstance(raw.value, dict):
            return raw.value, True
    return None, seen


def _describe(item: dict[str, Any] | None) -> str:
    if item is None:
        return "it holds no readable JSON object"
    return f"first object has keys {sorted(item)[:12]}"


def detect_task_format(path: str | os.PathLike) -> str:
    """The task format of ``path``, judged from its first readable object."""
    item, seen = _first_object(path, Limits())
    if not seen:
        raise UsageError("--tasks", f"{path} is empty: it holds no tasks")
    name = sniff_task(item) if item is not None else None
    if name is None:
        raise UsageError("--task-format", f"cannot detect the task format of {path}: {_describe(item)}; name the format", TASK_FORMATS)
    return name


def detect_trajectory_format(path: str | os.PathLike) -> str:
    """The trajectory format of ``path``, judged from its first readable object."""
    item, seen = _first_object(path, Limits())
    if not seen:
        raise UsageError("--trajectories", f"{path} is empty: it holds no trajectories")
    name = sniff_trajectory(item) if item is not None else None
    if name is None:
        raise UsageError("--format", f"cannot detect the trajectory format of {path}: {_describe(item)}; name the format", TRAJECTORY_FORMATS)
    return name


def load_tasks(path: str | os.PathLike, fmt: str | None = None, reference: str | Path | None = None, limits: Limits = Limits()) -> TaskSet:
    """All tasks of ``path`` (joined with ``reference`` for formats that keep the gold apart).

    Item-level problems are collected in ``TaskSet.errors``; a ``UsageError`` (a ValueError) means
    the call itself cannot work (unknown format name, undetectable format, an empty file, a
    reference file missing or superfluous) and names the option to fix.
    """
    chosen = task_format(fmt) if fmt is not None else task_format(detect_task_format(path))
    if reference is not None and chosen.reference == "none":
        raise UsageError("--reference", f"{chosen.name} tasks carry their own reference calls and gold answers: they take no reference file")
    if reference is None and chosen.reference == "required":
        raise UsageError("--reference", f"{chosen.name} tasks need their reference file ({chosen.description})")
    tasks = chosen.load(str(path), None if reference is None else str(reference), limits)
    if not (tasks.tasks or tasks.errors or tasks.ambiguous or tasks.invalid):
        raise UsageError("--tasks", f"{path} holds no tasks")
    return tasks


def iter_trajectories(path: Source, fmt: str | None = None, limits: Limits = Limits()) -> Iterator[Loaded]:
    """One ``Loaded`` per item of ``path``, lazily, in file order.

    ``path`` may also be a binary file object. With ``fmt=None`` the format is detected from the
    first readable object; items before it (unreadable ones) are held back until then.
    """
    chosen = trajectory_format(fmt) if fmt is not None else None
    return _Stream(path, chosen, limits).items()


class _Stream:
    def __init__(self, path: Source, fmt: TrajectoryFormat | None, limits: Limits):
        self.path = path
        self.name = source_name(path)
        self.fmt = fmt
        self.limits = limits
        self.undetected: str | None = None  # message when the first object matched no format
        self.seen: dict[tuple[str, str], int | None] = {}

    def items(self) -> Iterator[Loaded]:
        held: list[RawItem] = []
        seen = False
        for raw in read_items(self.path, self.limits):
            seen = True
            if self.fmt is None and self.undetected is None:
                if raw.error is None and isinstance(raw.value, dict):
                    detected = sniff_trajectory(raw.value)
                    if detected is None:  # nothing in the file can be graded: a usage error, before any row
                        message = f"cannot detect the trajectory format of {self.name}: {_describe(raw.value)} (line {raw.line}); name the format"
                        raise UsageError("--format", message, TRAJECTORY_FORMATS)
                    self.fmt = trajectory_format(detected)
                    for earlier in held:
                        yield self._load(earlier)
                    held.clear()
                else:
                    held.append(raw)
                    continue
            yield self._load(raw)
        for earlier in held:  # a file with no readable object at all
            yield self._load(earlier)
        if not seen:
            raise UsageError("--trajectories", f"{self.name} is empty: it holds no trajectories")

    def _error(self, source: SourceRef, info: InputErrorInfo, task_id: str | None, trajectory_id: str | None) -> Loaded:
        return Loaded(source=source, trajectory=None, error=info, task_id=task_id, trajectory_id=trajectory_id)

    def _load(self, raw: RawItem) -> Loaded:
        source = SourceRef(file=self.name, line=raw.line, item=raw.index)
        default = default_trajectory_id(self.name, raw.line)
        if raw.error is not None:
            return self._error(source, raw.error, None, default)
        if not isinstance(raw.value, dict):
            info = InputErrorInfo(kind="invalid_field", message="a trajectory must be a JSON object", file=self.name, line=raw.line, field="<root>")
            return self._error(source, info, None, default)
        if self.fmt is None:
            info = InputErrorInfo(kind="unsupported", message=self.undetected or "format not detected", file=self.name, line=raw.line)
            return self._error(source, info, None, default)
        task_id, trajectory_id = self.fmt.ids(raw.value, default)
        error: InputErrorInfo | None = None
        trajectory = None
        try:
            trajectory = self.fmt.convert(raw.value, ItemContext(file=self.name, line=raw.line, default_trajectory_id=default))
        except ItemError as err:
            error = err.info(self.name, raw.line)
        except ValidationError as err:  # a converter that let a model error through
            error = validation_error(err).info(self.name, raw.line)
        if trajectory is not None:
            task_id, trajectory_id = trajectory.task_id, trajectory.trajectory_id
        if task_id is not None and trajectory_id is not None:
            key = (task_id, trajectory_id)
            first = self.seen.get(key, -1)
            if first != -1:
                if error is None:
                    error = InputErrorInfo(
                        kind="duplicate_id",
                        message=f"trajectory {trajectory_id!r} of task {task_id!r} was already read at line {first}; ids must be unique",
                        file=self.name,
                        line=raw.line,
                        field="trajectory_id",
                    )
            else:
                self.seen[key] = raw.line
        if error is not None:
            return self._error(source, error, task_id, trajectory_id)
        return Loaded(source=source, trajectory=trajectory, error=None, task_id=task_id, trajectory_id=trajectory_id)


def check_task(loaded: Loaded, tasks: TaskSet) -> InputErrorInfo | None:
    """Why ``loaded`` cannot be graded against ``tasks`` (unknown or ambiguous task), else None.

    Items that already carry an error return None: their error is the one to report.
    """
    if loaded.trajectory is None:
        return None
    task_id = loaded.trajectory.task_id
    where: dict[str, Any] = {"file": loaded.source.file, "line": loaded.source.line, "field": "task_id"}
    if task_id in tasks.ambiguous:
        info = tasks.ambiguous[task_id]
        return InputErrorInfo(kind="ambiguous_task", message=f"{info.message}; not graded against a guess", **where)
    if task_id in tasks.tasks:
        return None
    if task_id in tasks.invalid:
        bad = tasks.invalid[task_id]
        return InputErrorInfo(kind="unknown_task", message=f"task {task_id!r} could not be read: {bad.render()}", **where)
    close = difflib.get_close_matches(task_id, list(tasks.tasks), n=3) if len(tasks.tasks) <= 10_000 else []
    hint = f"; similar ids: {', '.join(close)}" if close else ""
    return InputErrorInfo(kind="unknown_task", message=f"no task with id {task_id!r} among {len(tasks.tasks)} tasks{hint}", **where)
