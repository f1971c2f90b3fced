"""The run's inputs, loaded once: tasks (from ``--tasks`` or the trajectory file), reference, tool
specs, labels, each a regular file (pipes spooled, see ``spool``), and how the trajectories are to
be read: cut into shards (JSONL of a known format) or read as one stream (a bundle, a JSON array,
an undetected format). Errors and sources name an input as given (``-``), never its spool."""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from judge import InputErrorInfo, InputWarning
from pipelines.ingest import (
    BundleFormat,
    Limits,
    Loaded,
    TaskSet,
    UsageError,
    check_task_key,
    detect_task_format,
    detect_trajectory_format,
    load_tasks,
    load_tool_specs,
    read_trajectories,
    trajectory_format,
    with_tool_specs,
)
from pipelines.labels import LabelSet, load_labels
from pipelines.run.lines import one_shard
from pipelines.run.options import GradeOptions, NoTasks
from pipelines.run.spool import TaskInput, display_name, is_stdin, sha256_of

__all__ = ["RunInputs", "first_read", "rename_spools", "renamed_items", "renamed_loaded", "starts_array"]


class RunInputs:
    """The run's inputs, each a regular file (pipes spooled), loaded once: tasks (from ``--tasks``
    or the trajectory file), tool specs, labels; how the trajectories are to be read."""

    def __init__(self, opts: GradeOptions):
        self.opts = opts
        self.name = display_name(opts.trajectories)  # the trajectories input as rows name it
        self._stack = ExitStack()
        self.spools: list[TaskInput] = []
        self.bundle_items: Iterator[Loaded] | None = None

    def __enter__(self) -> RunInputs:
        try:
            return self._enter()
        except BaseException:  # a usage error on the way in: its spools go now, not when collected
            self._stack.close()
            raise

    def _enter(self) -> RunInputs:
        opts = self.opts
        spool_dir = Path(self._stack.enter_context(tempfile.TemporaryDirectory(prefix="judge-inputs-")))
        self.trajectories = self._open(opts.trajectories, spool_dir)
        self.fmt, self.whole, detected = _trajectory_mode(self.trajectories.path, opts.trajectory_format, opts.limits)
        if opts.task_key is not None:  # the format detected once (detected again only to raise its error)
            check_task_key(trajectory_format(opts.trajectory_format or detected or detect_trajectory_format(self.trajectories.path)))
        if opts.tasks is not None:  # given tasks win over tasks the trajectory file carries
            tasks = self._open(opts.tasks, spool_dir)
            reference = self._open(opts.reference, spool_dir) if opts.reference is not None else None
            task_fmt = opts.task_format or _detected_task_format(tasks.path)  # detected once, for both loaders
            if reference is None and _tasks_in_shards(tasks.path, task_fmt, opts):
                from pipelines.run.task_shards import load_tasks_in_shards

                self.taskset, tasks.sha256 = load_tasks_in_shards(tasks.path, opts.limits, opts.workers, opts.shard_lines, opts.shard_bytes, strict=opts.strict)
            else:
                self.taskset = load_tasks(tasks.path, task_fmt, None if reference is None else reference.path, opts.limits, strict=opts.strict)
            self.digests = {"tasks": tasks.hash(), "reference": None if reference is None else reference.hash()}
        else:
            bundle = read_trajectories(self.trajectories.path, opts.trajectory_format, opts.limits, strict=opts.strict, task_key=opts.task_key)
            self.bundle_items = first_read(bundle.items, opts.trajectories, opts.empty_ok)  # an empty file is that, not one without tasks
            if bundle.tasks is None:
                raise NoTasks(f"{display_name(opts.trajectories)} carries no tasks: pass them with --tasks")
            self.taskset = bundle.tasks
            self.digests = {"tasks": None, "reference": None}
        if opts.tool_specs is not None:
            specs = self._open(opts.tool_specs, spool_dir)
            self.taskset = with_tool_specs(self.taskset, load_tool_specs(specs.path, opts.limits))
            self.digests["tool_specs"] = specs.hash()
        self.labels: LabelSet | None = None
        if opts.labels is not None:
            if Path(opts.labels).is_dir():  # a folder of BFCL score files: read where it is
                self.labels = load_labels(Path(opts.labels), opts.limits)
                self.digests["labels"] = sha256_of(opts.labels)
            else:
                labels = self._open(opts.labels, spool_dir)
                self.labels = load_labels(labels.path, opts.limits)
                self.digests["labels"] = labels.hash()
        rename_spools(self.taskset, self.labels, self.spools)
        if self.bundle_items is None:
            items = read_trajectories(
                self.trajectories.path, opts.trajectory_format, opts.limits, strict=opts.strict, tasks=self.taskset, task_key=opts.task_key
            ).items
            self.bundle_items = first_read(items, opts.trajectories, opts.empty_ok)
        if not self.whole:
            self.bundle_items = None  # the shards read the file themselves
        return self

    def _open(self, given: Path, spool_dir: Path) -> TaskInput:
        opened = TaskInput.open(given, spool_dir, self.opts.limits.max_inflated_bytes)
        if opened.spooled:
            self.spools.append(opened)
        return opened

    def errors(self) -> list[InputErrorInfo]:
        return self.taskset.errors or (self.labels.errors if self.labels is not None else [])

    def whole_items(self) -> Iterator[Loaded]:
        """The trajectories read as one stream (the reader detecting the format), named as given:
        the stream begun on entering (``first_read``), so it can be taken once."""
        items, self.bundle_items = self.bundle_items, None
        assert items is not None, "the trajectories read as one stream are taken once"
        return renamed_items(items, self.spools)

    def __exit__(self, *exc: object) -> None:
        self._stack.close()


def first_read(items: Iterator[Loaded], given: Path, empty_ok: bool = False) -> Iterator[Loaded]:
    """``items``, the first one read now: an input that holds no trajectory is a usage error raised
    before anything is written (graded, it left a run of nothing in ``--out`` that refused the
    rerun). ``given`` is read from its spool: standard input once, a compressed input inflated."""
    first = next(items, None)
    if first is None:
        if not empty_ok:
            raise UsageError("--trajectories", f"{'standard input' if is_stdin(given) else display_name(given)} is empty: it holds no trajectories")
        return items
    return itertools.chain([first], items)


def _trajectory_mode(path: Path, fmt: str | None, limits: Limits) -> tuple[str | None, bool, str | None]:
    """(streaming format, whole, the format detected): whole=True when the input is read as one
    stream (a bundle read as a whole file, a JSON array, or no recognisable format), else it is
    cut into shards; the detected name is None when ``fmt`` was given or nothing was detected."""
    if fmt is not None:
        if isinstance(trajectory_format(fmt), BundleFormat):
            return None, True, None
        name = fmt
        detected = None
    else:
        try:
            name = detected = detect_trajectory_format(path)
        except ValueError:
            return None, True, None  # every item will say why, as the reader of the whole file reports it
        if isinstance(trajectory_format(name), BundleFormat):
            return None, True, detected
    return (None, True, detected) if starts_array(path) else (name, False, detected)


def _detected_task_format(path: Path) -> str | None:
    """The task format of ``path``, or None when it cannot be told (the loader then says why)."""
    try:
        return detect_task_format(path)
    except ValueError:
        return None


def _tasks_in_shards(path: Path, fmt: str | None, opts: GradeOptions) -> bool:
    """Worker processes load the tasks too: a native JSONL tasks file of more than one shard, local
    workers that fork (a file of one shard is read here: a pool would only add its start-up)."""
    if opts.workers <= 1 or opts.ray or one_shard(path, opts.shard_lines, opts.shard_bytes):
        return False
    import multiprocessing

    if "fork" not in multiprocessing.get_all_start_methods():
        return False
    return fmt == "native" and not starts_array(path)


def starts_array(path: Path, budget: int = 1 << 20) -> bool:
    """The first line a reader decodes that is not blank starts a JSON array (the reader then
    reads the file as one array), or that line is not found in the first ``budget`` bytes."""
    with open(path, "rb") as fh:
        first = True
        while budget > 0:
            line = fh.readline(budget)
            if not line:
                return False
            budget -= len(line)
            if first and line.startswith(b"\xef\xbb\xbf"):
                line = line[3:]
            first = False
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError:
                continue
            if text.strip():
                return text.lstrip(" \t\r\n").startswith("[")
    return True


def _renaming(spooled: dict[str, str]) -> Callable[[str], str]:
    def fix(text: str) -> str:
        for tmp, shown in spooled.items():
            text = text.replace(tmp, shown)
        return text

    return fix


def rename_spools(taskset: TaskSet, labels: LabelSet | None, inputs: list[TaskInput]) -> None:
    """Errors and sources must name an input as given (``-``), never its temporary spool."""
    spooled = {str(i.path): i.display for i in inputs}
    if not spooled:
        return
    fix = _renaming(spooled)

    def fix_info(info: Any) -> Any:
        return info.model_copy(update={"file": fix(info.file), "message": fix(info.message)})

    taskset.errors[:] = [fix_info(i) for i in taskset.errors]
    taskset.unnamed[:] = [fix_info(i) for i in taskset.unnamed]
    taskset.warnings[:] = [fix_info(w) for w in taskset.warnings]
    for table in (taskset.ambiguous, taskset.invalid):
        for key, info in list(table.items()):
            table[key] = fix_info(info)
    for tid in list(taskset.sources):
        source = taskset.sources[tid]
        if source.file in spooled:
            taskset.sources[tid] = source.model_copy(update={"file": spooled[source.file]})
    if labels is not None:
        labels.errors[:] = [fix_info(i) for i in labels.errors]


def renamed_items(items: Iterator[Loaded], spools: list[TaskInput]) -> Iterator[Loaded]:
    """The items, naming each input as given (``-``), never its spool."""
    spooled = {str(s.path): s.display for s in spools}
    return (renamed_loaded(loaded, spooled) for loaded in items) if spooled else items


def renamed_loaded(loaded: Loaded, spooled: dict[str, str]) -> Loaded:
    fix = _renaming(spooled)
    source = loaded.source.model_copy(update={"file": fix(loaded.source.file)})
    error = None if loaded.error is None else loaded.error.model_copy(update={"file": fix(loaded.error.file), "message": fix(loaded.error.message)})
    warnings: list[InputWarning] = [w.model_copy(update={"file": fix(w.file), "message": fix(w.message)}) for w in loaded.warnings]
    return Loaded(source=source, trajectory=loaded.trajectory, error=error, task_id=loaded.task_id, trajectory_id=loaded.trajectory_id, warnings=warnings)
