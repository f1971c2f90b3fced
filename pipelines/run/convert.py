"""``judge convert``: a trajectory input in any format the readers know, written as native JSONL.

What ``judge grade`` reads from a file, item for item: one ``Trajectory`` a line (its
``model_dump_json``), in input order, and with ``tasks_out`` the tasks the run would grade them
against (those the file carries, as tau2 results and Inspect logs do, or those of ``tasks``, in any
task format) as a native tasks file. Grading the written files gives the results grading the input
gives, each result's ``source`` aside (it names the file read; tested format by format). An item
that cannot be read is written nowhere and reported (file, line, field): nothing else is dropped,
and with ``stop_at_error`` the first one stops the conversion.

Why: to see what was read from a trace or a framework's message dump, to keep a collection of runs
from several harnesses in one format, and to write tasks against the ids a trace carries.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

import msgspec

from judge import InputErrorInfo, InputWarning
from pipelines.ingest import (
    ItemError,
    Limits,
    Loaded,
    TaskSet,
    convert_task,
    convert_trajectory,
    load_tasks,
    load_tool_specs,
    read_trajectories,
    with_tool_specs,
)
from pipelines.run.inputs import first_read, rename_spools, renamed_items
from pipelines.run.options import InputErrorsFound, NoTasks
from pipelines.run.spool import TaskInput, display_name

__all__ = ["ConvertOptions", "Converted", "convert_trajectories"]


class ConvertOptions(msgspec.Struct, frozen=True):
    """What to read (as ``judge grade`` names its inputs) and how."""

    trajectories: Path
    tasks: Path | None = None  # tasks to match transcripts that name none, and to write with tasks_out
    reference: Path | None = None  # separate ground truth of the tasks (VAKRA, BFCL)
    trajectory_format: str | None = None  # None: detected
    task_format: str | None = None
    task_key: str | None = None  # traces: the attribute that holds the task id
    tool_specs: Path | None = None  # tool specs for task formats whose files carry none
    strict: bool = False  # unknown fields are errors, not warnings
    stop_at_error: bool = False  # stop at the first item that cannot be read
    limits: Limits = msgspec.field(default_factory=Limits)


class Converted(msgspec.Struct):
    """What was written and what could not be: every input item is one or the other."""

    trajectories: int = 0
    tasks: int | None = None  # tasks written (None: none were asked for)
    errors: list[InputErrorInfo] = msgspec.field(default_factory=list)
    warnings: list[InputWarning] = msgspec.field(default_factory=list)


def convert_trajectories(
    opts: ConvertOptions, out: BinaryIO, tasks_out: BinaryIO | None = None, on_error: Callable[[InputErrorInfo], None] | None = None
) -> Converted:
    """Write ``opts.trajectories`` to ``out`` as native JSONL (and the tasks to ``tasks_out``).

    Raises ``UsageError`` when the input holds no trajectory (nothing is written), ``NoTasks``
    when ``tasks_out`` is asked for and neither the file nor ``opts.tasks`` provides tasks, and
    ``InputErrorsFound`` at the first bad item with ``stop_at_error`` (what was read before it is
    written). ``on_error`` sees each bad item as it is met."""
    done = Converted()
    with tempfile.TemporaryDirectory(prefix="judge-convert-") as spool_root:
        spool_dir = Path(spool_root)
        spools: list[TaskInput] = []

        def opened(given: Path) -> TaskInput:
            one = TaskInput.open(given, spool_dir, opts.limits.max_inflated_bytes)
            if one.spooled:
                spools.append(one)
            return one

        source = opened(opts.trajectories)
        taskset = _given_tasks(opts, opened) if opts.tasks is not None else None
        bundle = read_trajectories(source.path, opts.trajectory_format, opts.limits, strict=opts.strict, tasks=taskset, task_key=opts.task_key)
        items = first_read(bundle.items, opts.trajectories)  # an empty input is a usage error, as judge grade says
        taskset = taskset or bundle.tasks
        if opts.tool_specs is not None and taskset is not None:  # as the run applies them: to the tasks it grades against
            taskset = with_tool_specs(taskset, load_tool_specs(opened(opts.tool_specs).path, opts.limits))
        if tasks_out is not None and taskset is None:
            raise NoTasks(f"{display_name(opts.trajectories)} carries no tasks: pass them with --tasks, or leave --tasks-out out")
        if taskset is not None:
            rename_spools(taskset, None, spools)
            _report(taskset.errors, done, on_error, opts.stop_at_error)
            done.warnings += taskset.warnings
        for loaded in renamed_items(items, spools):
            done.warnings += loaded.warnings
            if loaded.trajectory is None:
                assert loaded.error is not None
                _report([loaded.error], done, on_error, opts.stop_at_error)
                continue
            text = loaded.trajectory.model_dump_json()
            refused = _native_trajectory_error(text, loaded)
            if refused is not None:
                _report([refused], done, on_error, opts.stop_at_error)
                continue
            out.write(text.encode() + b"\n")
            done.trajectories += 1
        if tasks_out is not None and taskset is not None:
            done.tasks = 0
            for tid in taskset.tasks:
                text = taskset.tasks[tid].model_dump_json()
                refused = _native_task_error(text, tid, taskset)
                if refused is not None:
                    _report([refused], done, on_error, opts.stop_at_error)
                    continue
                tasks_out.write(text.encode() + b"\n")
                done.tasks += 1
    return done


_UNWRITABLE = "read, but the native format cannot hold it as it is"


def _native_trajectory_error(text: str, loaded: Loaded) -> InputErrorInfo | None:
    """Why the native reader would refuse ``text`` (the trajectory ``loaded`` as written), named at
    the input item; None when it reads it. Every written line is read back: the promise is that
    grading the written files gives the input's results."""
    again = convert_trajectory(json.loads(text), "native", file=loaded.source.file)
    if again.error is None:
        return None
    return InputErrorInfo(
        kind=again.error.kind, message=f"{_UNWRITABLE}: {again.error.message}", file=loaded.source.file, line=loaded.source.line, field=again.error.field
    )


def _native_task_error(text: str, tid: str, taskset: TaskSet) -> InputErrorInfo | None:
    """As ``_native_trajectory_error``, for a task: a task can be valid in memory and not as a
    native task line, e.g. one given ``--tool-specs`` for some of its tools (tools declared,
    then every reference call must name one of them)."""
    source = taskset.sources.get(tid)
    file, line = (source.file, source.line) if source is not None else ("<tasks>", None)
    try:
        convert_task(json.loads(text), file, warn=False)
    except ItemError as err:
        return InputErrorInfo(kind=err.kind, message=f"task {tid!r}: {_UNWRITABLE}: {err.message}", file=file, line=line, field=err.field)
    return None


def _given_tasks(opts: ConvertOptions, opened: Callable[[Path], TaskInput]) -> TaskSet:
    assert opts.tasks is not None
    tasks = opened(opts.tasks)
    reference = opened(opts.reference) if opts.reference is not None else None
    return load_tasks(tasks.path, opts.task_format, None if reference is None else reference.path, opts.limits, strict=opts.strict)


def _report(errors: list[InputErrorInfo], done: Converted, on_error: Callable[[InputErrorInfo], None] | None, stop: bool) -> None:
    for info in errors:
        done.errors.append(info)
        if on_error is not None:
            on_error(info)
        if stop:
            raise InputErrorsFound(info)
