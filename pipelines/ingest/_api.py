"""The ingest entry points the grading runner calls: load tasks, stream trajectories, check ids.

Trajectories stream: memory holds one item at a time plus the set of (task_id, trajectory_id)
pairs already seen (to report repeats). Tasks are loaded whole (the runner needs them all).
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from judge import InputErrorInfo, SourceRef
from pipelines.ingest._base import (
    DELIBERATE,
    Bundle,
    BundleFormat,
    ItemContext,
    ItemError,
    Limits,
    Loaded,
    TaskSet,
    TrajectoryFormat,
    default_trajectory_id,
    unforeseen,
    validation_error,
)
from pipelines.ingest._reader import RawItem, Source, read_items, source_name
from pipelines.ingest._registry import (
    BUNDLE_REGISTRY,
    TASK_FORMATS,
    TRAJECTORY_FORMATS,
    TRAJECTORY_REGISTRY,
    describe_bare,
    is_wrapped,
    sniff_bare,
    sniff_bundle,
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


# Leading objects that name no format (a first line missing its task_id, an empty object) are
# looked past, up to this many readable items: the first object that names a format names the
# file's, and those before it become its error rows. Detection reads no further than that.
DETECTION_ITEMS = 10


def _sniff_leading(path: Source, limits: Limits, sniff: Callable[[dict[str, Any]], str | None]) -> tuple[str | None, dict[str, Any] | None, bool]:
    """(the format named by the first of the file's leading objects that names one, its first
    object, whether the file holds any item at all)."""
    first: dict[str, Any] | None = None
    seen = False
    readable = 0
    for raw in read_items(path, limits):
        seen = True
        if raw.error is not None:
            continue
        readable += 1
        if isinstance(raw.value, dict):
            first = raw.value if first is None else first
            if (name := sniff(raw.value)) is not None:
                return name, first, True
        if readable >= DETECTION_ITEMS:
            break
    return None, first, seen


def _describe(item: dict[str, Any] | None) -> str:
    if item is None:
        return "it holds no readable JSON object"
    return f"first object has keys {sorted(item)[:12]}"


def detect_task_format(path: str | os.PathLike) -> str:
    """The task format of ``path``, judged from its leading objects (``DETECTION_ITEMS``; a folder: BFCL's data folder)."""
    if Path(path).is_dir():
        return "bfcl"
    name, item, seen = _sniff_leading(path, Limits(), sniff_task)
    if not seen:
        raise UsageError("--tasks", f"{path} is empty: it holds no tasks")
    if name is None:
        raise UsageError("--task-format", f"cannot detect the task format of {path}: {_describe(item)}; name the format", TASK_FORMATS)
    return name


_HEAD_BYTES = 4096


def _head(path: str | os.PathLike) -> bytes:
    with open(path, "rb") as fh:
        return fh.read(_HEAD_BYTES)


def _looks_like_json(head: bytes) -> bool:
    return head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] in (b"{", b"[")


def _detect_bundle(path: Source, limits: Limits) -> tuple[str | None, dict[str, Any] | None]:
    """(bundle format, first object). The file's first bytes are tried alone first: a bundle is often
    one large JSON document (or an archive), and finding its "first object" means parsing all of it.
    Only when the bytes do not suffice is the first object read (it is returned for reuse)."""
    if not isinstance(path, (str, os.PathLike)):
        return None, None  # a stream: only streaming formats are detected
    head = _head(path)
    name = sniff_bundle(head, None)
    if name is not None or not _looks_like_json(head):
        return name, None
    first, _ = _first_object(path, limits)
    return (sniff_bundle(head, first) if first is not None else None), first


def detect_trajectory_format(path: str | os.PathLike) -> str:
    """The trajectory format of ``path``: a bundle from the file's first bytes (and first object),
    else a streaming format from its leading objects (``DETECTION_ITEMS``), else (a bare message
    list) from its first list of messages."""
    name, item = _detect_bundle(path, Limits())
    if name is None and (item is None or sniff_trajectory(item) is None):
        name, item, seen = _sniff_leading(path, Limits(), sniff_trajectory)
        if not seen:
            raise UsageError("--trajectories", f"{path} is empty: it holds no trajectories")
    name = name or (sniff_trajectory(item) if item is not None else None)
    if name is None:
        bare = _first_bare(path, Limits())
        if bare is not None:
            name = sniff_bare(bare)
            if name is None:
                raise UsageError("--format", f"cannot detect the trajectory format of {path}: {describe_bare(bare)}; name the format", TRAJECTORY_FORMATS)
    if name is None:
        raise UsageError("--format", f"cannot detect the trajectory format of {path}: {_describe(item)}; name the format", TRAJECTORY_FORMATS)
    return name


def _first_bare(path: Source, limits: Limits) -> list[Any] | None:
    """The file's first bare message list: its first list item, or the top-level array when its
    first readable item is a message rather than a trajectory object; None when it has neither."""
    messages: list[Any] = []
    for raw in read_items(path, limits):
        if messages and not raw.in_array:
            break
        if raw.error is not None:
            continue
        if isinstance(raw.value, list) and not messages:
            return raw.value
        if not (raw.in_array and isinstance(raw.value, dict) and not is_wrapped(raw.value)):
            break
        messages.append(raw.value)
    return messages or None


def load_tasks(
    path: str | os.PathLike, fmt: str | None = None, reference: str | Path | None = None, limits: Limits = Limits(), *, strict: bool = False
) -> TaskSet:
    """All tasks of ``path`` (joined with ``reference`` for formats that keep the gold apart).

    Item-level problems are collected in ``TaskSet.errors``; a ``UsageError`` (a ValueError) means
    the call itself cannot work (unknown format name, undetectable format, an empty file, a
    reference file missing or superfluous) and names the option to fix.
    ``strict``: a task carrying a field the schema does not know is an error, not a warning.
    """
    chosen = task_format(fmt) if fmt is not None else task_format(detect_task_format(path))
    if reference is not None and chosen.reference == "none":
        raise UsageError("--reference", f"{chosen.name} tasks carry their own reference calls and gold answers: they take no reference file")
    if reference is None and chosen.reference == "required":
        raise UsageError("--reference", f"{chosen.name} tasks need their reference file ({chosen.description})")
    taskset = chosen.load(str(path), None if reference is None else str(reference), limits)
    if not (taskset.tasks or taskset.errors or taskset.ambiguous or taskset.invalid):
        raise UsageError("--tasks", f"{path} holds no tasks")
    return _strict_tasks(taskset) if strict else taskset


def strict_tasks(taskset: TaskSet) -> TaskSet:
    """``--strict`` for a task set loaded otherwise (in shards): unknown fields become errors."""
    return _strict_tasks(taskset)


def _strict_tasks(taskset: TaskSet) -> TaskSet:
    """Unknown fields become errors: the task is reported as unreadable (its trajectories say why)."""
    kept = []
    for warning in taskset.warnings:
        if warning.kind != "unknown_field":
            kept.append(warning)
            continue
        info = InputErrorInfo(kind="invalid_field", message=f"{warning.message} (--strict)", file=warning.file, line=warning.line, field=warning.field)
        taskset.errors.append(info)
        for tid, source in list(taskset.sources.items()):
            if source.file == warning.file and source.line == warning.line and tid in taskset.tasks:
                del taskset.tasks[tid]
                taskset.invalid.setdefault(tid, info)
    taskset.warnings = kept
    return taskset


def strict_items(items: Iterator[Loaded]) -> Iterator[Loaded]:
    """``--strict`` for trajectories: an item with an unknown field becomes an error row."""
    for loaded in items:
        unknown = [w for w in loaded.warnings if w.kind == "unknown_field"]
        if unknown and loaded.error is None:
            first = unknown[0]
            more = f" and {len(unknown) - 1} more" if len(unknown) > 1 else ""
            info = InputErrorInfo(kind="invalid_field", message=f"{first.message}{more} (--strict)", file=first.file, line=first.line, field=first.field)
            loaded = Loaded(
                source=loaded.source, trajectory=None, error=info, task_id=loaded.task_id, trajectory_id=loaded.trajectory_id, warnings=loaded.warnings
            )
        yield loaded


def read_trajectories(
    path: Source,
    fmt: str | None = None,
    limits: Limits = Limits(),
    *,
    strict: bool = False,
    start: tuple[int, int, int] = (1, 0, 0),
    seen: dict[tuple[str, str], int | None] | None = None,
    tasks: TaskSet | None = None,
    task_key: str | None = None,
) -> Bundle:
    """The trajectories of ``path`` and, for formats that carry them, its tasks.

    ``path`` may also be a binary file object (streaming formats only). With ``fmt=None`` bundles
    are detected first; otherwise the streaming format is detected from the first readable object
    (items before it, unreadable ones, are held back until then).
    For a shard cut from a larger JSONL input (streaming formats): ``start`` = (line, item index,
    byte offset) where it begins (see ``read_items``), ``seen`` = (task_id, trajectory_id) -> line
    of the ids read before it. ``tasks``: the tasks the trajectories will be graded against, so
    that a transcript naming no task (a bare message list) is matched to one by its question.
    ``task_key`` (``--task-key``): the attribute that holds the task id, for formats that read it
    from attributes (traces); a ``UsageError`` for the others.
    """
    chosen = trajectory_format(fmt) if fmt is not None else None
    if chosen is None and isinstance(path, (str, os.PathLike)):
        name, _ = _detect_bundle(path, limits)
        chosen = BUNDLE_REGISTRY[name] if name is not None else None
    if task_key is not None:
        check_task_key(chosen)
    if isinstance(chosen, BundleFormat):
        if not isinstance(path, (str, os.PathLike)):
            raise ValueError(f"the {chosen.name} format is read as a whole file: pass a path, not a stream")
        bundle = chosen.read(str(path), limits) if task_key is None or chosen.keyed_read is None else chosen.keyed_read(str(path), limits, task_key)
    else:
        stream = _Stream(path, chosen, limits, start, tasks)
        stream.seen.update(seen or {})
        bundle = Bundle(tasks=None, items=stream.items())
    if strict:
        bundle = Bundle(tasks=_strict_tasks(bundle.tasks) if bundle.tasks is not None else None, items=strict_items(bundle.items))
    return bundle


def check_task_key(chosen: TrajectoryFormat | BundleFormat | None) -> None:
    """``--task-key`` is for formats whose task ids come from attributes (traces): a
    ``UsageError`` naming those for any other (a format detected item by item names the task in
    each item)."""
    if isinstance(chosen, BundleFormat) and chosen.keyed_read is not None:
        return
    keyed = [f.name for f in BUNDLE_REGISTRY.values() if f.keyed_read is not None]
    what = f"{chosen.name} trajectories name their task themselves" if chosen is not None else "this file is not a trace export"
    raise UsageError("--task-key", f"{what}; --task-key names the task id attribute of {' or '.join(keyed)} traces only")


def convert_trajectory(item: Any, fmt: str = "native", *, file: str = "<memory>", tasks: TaskSet | None = None) -> Loaded:
    """One in-memory item read as a line of a ``fmt`` file would be (same checks, same errors,
    same warnings); for callers that hold trajectories in memory (``pipelines.grade.reward``)."""
    chosen = trajectory_format(fmt)
    if isinstance(chosen, BundleFormat):
        raise ValueError(f"the {chosen.name} format is read as a whole file; pass one trajectory in a streaming format")
    return _Stream(file, chosen, Limits(), tasks=tasks)._load(RawItem(line=1, index=0, value=item))


def iter_trajectories(path: Source, fmt: str | None = None, limits: Limits = Limits(), *, tasks: TaskSet | None = None) -> Iterator[Loaded]:
    """One ``Loaded`` per trajectory of ``path``, lazily, in file order (see ``read_trajectories``)."""
    return read_trajectories(path, fmt, limits, tasks=tasks).items


class _Lookahead:
    """An iterator of raw items that can be given one item back."""

    def __init__(self, items: Iterator[RawItem]):
        self._items = items
        self._back: list[RawItem] = []

    def __iter__(self) -> _Lookahead:
        return self

    def __next__(self) -> RawItem:
        return self._back.pop() if self._back else next(self._items)

    def give_back(self, raw: RawItem) -> None:
        self._back.append(raw)


# Unreadable items before the first object that names the format are held (so that a file whose
# format cannot be detected is a usage error before any row); past this many they go out as the
# error rows they are, whatever the format turns out to be: memory bounded by it, not by the file.
HELD_BEFORE_DETECTION = 1000


class _Stream:
    """The items of a streaming-format file, one ``Loaded`` each.

    Bare message lists (formats with ``bare``): a JSONL line, or an item of a top-level array,
    that is a JSON array is one transcript; a top-level array whose items are messages rather
    than trajectory objects (``json.dump(result.to_input_list(), f)``, a pretty-printed list) is
    one transcript as a whole, reported at the line it starts on, an error inside it at the line
    of the message. A message that cannot be read makes its whole list an error row.
    """

    def __init__(self, path: Source, fmt: TrajectoryFormat | None, limits: Limits, start: tuple[int, int, int] = (1, 0, 0), tasks: TaskSet | None = None):
        self.path = path
        self.start = start
        self.name = source_name(path)
        self.fmt = fmt
        self.limits = limits
        self.tasks = tasks
        self.undetected: str | None = None  # message when the first object matched no format
        self.seen: dict[tuple[str, str], int | None] = {}
        self._held: list[RawItem] = []  # items before the format was detected (at most HELD_BEFORE_DETECTION)
        self._unnamed: list[RawItem] = []  # those of them that name no format (at most DETECTION_ITEMS)
        self._absorbed = 0  # raw items read into a bare list beyond its first: rows number one per list

    def items(self) -> Iterator[Loaded]:
        raws = _Lookahead(read_items(self.path, self.limits, self.start))
        decided = False  # whether the top-level array's first readable item said what the array holds
        for raw in raws:
            if raw.in_array and not decided and (self.fmt is None or self.fmt.bare is not None):
                lead = [raw]  # items of the array that cannot say yet whether it is a message list
                while lead[-1].error is not None and (following := next(raws, None)) is not None:
                    if not following.in_array:
                        raws.give_back(following)
                        break
                    lead.append(following)
                decided = lead[-1].error is None
                if self._starts_message_list(lead[-1]):
                    yield from self._message_list(lead, raws)
                    continue
                for each in lead:
                    yield from self._one(each)
                continue
            yield from self._one(raw)
        if self._unnamed:  # no item of the file names its format
            raise self._undetectable()
        for earlier in self._held:  # a file with no readable object at all
            yield self._load(earlier)

    def _starts_message_list(self, raw: RawItem) -> bool:
        """An item of the top-level array that is a message: the array is one bare transcript."""
        value = raw.value
        if raw.error is not None or not raw.in_array or not isinstance(value, dict) or is_wrapped(value):
            return False
        return self.fmt is not None or sniff_trajectory(value) is None

    def _message_list(self, lead: list[RawItem], raws: _Lookahead) -> Iterator[Loaded]:
        group = list(lead)
        for raw in raws:
            if not raw.in_array:
                raws.give_back(raw)
                break
            group.append(raw)
        if self.fmt is None:
            messages = [g.value for g in group if g.error is None]
            detected = sniff_bare(messages)
            if detected is None:
                message = f"cannot detect the trajectory format of {self.name}: {describe_bare(messages)} (line {group[0].line}); name the format"
                raise UsageError("--format", message, TRAJECTORY_FORMATS)
            yield from self._detected(detected)
        first = group[0]
        broken = next((g for g in group if g.error is not None), None)
        if broken is not None:
            assert broken.error is not None
            info = broken.error.model_copy(update={"message": f"{broken.error.message} (a message of the bare message list starting at line {first.line})"})
            source = SourceRef(file=self.name, line=first.line, item=first.index - self._absorbed)
            loaded = self._error(source, info, None, default_trajectory_id(self.name, first.line, first.nth))
        else:
            loaded = self._load(RawItem(line=first.line, index=first.index, value=[g.value for g in group], nth=first.nth), lines=[g.line for g in group])
        self._absorbed += len(group) - 1
        yield loaded

    def _detected(self, name: str) -> Iterator[Loaded]:
        self.fmt = TRAJECTORY_REGISTRY[name]
        held, self._held, self._unnamed = self._held, [], []
        for earlier in held:
            yield self._load(earlier)

    def _undetectable(self) -> UsageError:
        """Nothing in the file can be graded: a usage error naming its first object (or list)."""
        first = self._unnamed[0]
        shown = _describe(first.value) if isinstance(first.value, dict) else describe_bare(first.value)
        return UsageError("--format", f"cannot detect the trajectory format of {self.name}: {shown} (line {first.line}); name the format", TRAJECTORY_FORMATS)

    def _one(self, raw: RawItem) -> Iterator[Loaded]:
        if self.fmt is None and self.undetected is None:
            value = raw.value if raw.error is None else None
            detected = sniff_trajectory(value) if isinstance(value, dict) else sniff_bare(value) if isinstance(value, list) else None
            if detected is not None:
                yield from self._detected(detected)
            else:  # held until an item names the format (an object naming none becomes its error row)
                self._held.append(raw)
                if isinstance(value, (dict, list)):
                    self._unnamed.append(raw)
                    if len(self._unnamed) >= DETECTION_ITEMS:
                        raise self._undetectable()
                if len(self._held) >= HELD_BEFORE_DETECTION:
                    if self._unnamed:  # their rows depend on the format: memory bounded, not detection
                        raise self._undetectable()
                    # their rows do not depend on the format (each is an error row whatever it is):
                    # out in order, so memory stays bounded however many precede the first object
                    held, self._held = self._held, []
                    for earlier in held:
                        yield self._load(earlier)
                return
        yield self._load(raw)

    def _error(self, source: SourceRef, info: InputErrorInfo, task_id: str | None, trajectory_id: str | None) -> Loaded:
        return Loaded(source=source, trajectory=None, error=info, task_id=task_id, trajectory_id=trajectory_id)

    def _load(self, raw: RawItem, lines: list[int] | None = None) -> Loaded:
        """One item as one row; ``lines``: the line of each message of a bare list read from a
        top-level array (an error names the line of its message)."""
        source = SourceRef(file=self.name, line=raw.line, item=raw.index - self._absorbed)
        default = default_trajectory_id(self.name, raw.line, raw.nth)
        if raw.error is not None:
            return self._error(source, raw.error, None, default)
        bare = isinstance(raw.value, list) and self.fmt is not None and self.fmt.bare is not None
        if not isinstance(raw.value, dict) and not bare:
            info = InputErrorInfo(kind="invalid_field", message="a trajectory must be a JSON object", file=self.name, line=raw.line, field="<root>")
            return self._error(source, info, None, default)
        if self.fmt is None:
            info = InputErrorInfo(kind="unsupported", message=self.undetected or "format not detected", file=self.name, line=raw.line)
            return self._error(source, info, None, default)
        task_id: str | None = None
        trajectory_id: str | None = default
        error: InputErrorInfo | None = None
        trajectory = None
        ctx = ItemContext(file=self.name, line=raw.line, default_trajectory_id=default, tasks=self.tasks)
        try:
            if not bare:
                task_id, trajectory_id = self.fmt.ids(raw.value, default)
            trajectory = self.fmt.convert(raw.value, ctx)
        except ItemError as err:
            if lines and err.line is None and (at := _LIST_INDEX.match(err.field or "")) is not None and int(at.group(1)) < len(lines):
                err.line = lines[int(at.group(1))]
            error = err.info(self.name, raw.line)
        except ValidationError as err:  # a converter that let a model error through
            error = validation_error(err).info(self.name, raw.line)
        except DELIBERATE:
            raise
        except Exception as exc:  # a shape the reader did not foresee: this item's error, not the run's
            error = unforeseen(exc, self.fmt.name).info(self.name, raw.line)
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
        return Loaded(source=source, trajectory=trajectory, error=None, task_id=task_id, trajectory_id=trajectory_id, warnings=ctx.warnings)


def _unread(errors: list[InputErrorInfo], shown: int = 3) -> str:
    """Where the task items that could not be read are (file and line), the first ``shown`` of them."""
    where = ", ".join(e.file + (f":{e.line}" if e.line is not None else "") for e in errors[:shown])
    more = f" and {len(errors) - shown} more" if len(errors) > shown else ""
    one = len(errors) == 1
    return f"{len(errors)} task item{'' if one else 's'} could not be read ({where}{more}): the id may be on {'it' if one else 'one of them'}"


_LIST_INDEX = re.compile(r"\[(\d+)\]")


def check_task(loaded: Loaded, tasks: TaskSet) -> InputErrorInfo | None:
    """Why ``loaded`` cannot be graded against ``tasks`` (unknown or ambiguous task), else None.

    Items that already carry an error return None: their error is the one to report.
    """
    if loaded.trajectory is None:
        return None
    task_id = loaded.trajectory.task_id

    def error(kind: str, message: str) -> InputErrorInfo:
        return InputErrorInfo(kind=kind, message=message, file=loaded.source.file, line=loaded.source.line, field="task_id")

    if task_id in tasks.ambiguous:
        return error("ambiguous_task", f"{tasks.ambiguous[task_id].message}; not graded against a guess")
    if task_id in tasks.tasks:
        return None
    if task_id in tasks.invalid:
        return error("unknown_task", f"task {task_id!r} could not be read: {tasks.invalid[task_id].render()}")
    close = difflib.get_close_matches(task_id, list(tasks.tasks), n=3) if len(tasks.tasks) <= 10_000 else []
    hint = f"; similar ids: {', '.join(close)}" if close else ""
    if tasks.unnamed:  # the id may be on a task line that could not be read at all
        hint += f"; {_unread(tasks.unnamed)}"
    if loaded.task_id_note:
        hint += f"; {loaded.task_id_note}"
    return error("unknown_task", f"no task with id {task_id!r} among {len(tasks.tasks)} tasks{hint}")
