"""Joining a task file with the reference file that holds its gold (VAKRA input cases with their
ground truth, BFCL questions with their possible answers): one join for every such format.

The reference side follows the same duplicate rules as tasks: a repeated id is a ``duplicate_id``
error naming the first line; different content makes the id ambiguous. Each entry remembers
whether a task used it, so that orphans on either side are reported naming both files. An error
while building a task names the file its field came from (the format says which).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from judge import InputErrorInfo, InputWarning, SourceRef, Task, canonical_json
from pipelines.ingest._base import ItemError, Limits, TaskCollector
from pipelines.ingest._reader import RawItem, read_items


class Entry:
    def __init__(self, value: dict[str, Any], source: SourceRef):
        self.value = value
        self.source = source
        self.used = False


def where(source: SourceRef) -> str:
    return f"{source.file}:{source.line}"


def object_or_error(raw: RawItem, path: str, collector: TaskCollector) -> dict[str, Any] | None:
    """The item's object, or None after recording why it is not one."""
    if raw.error is not None:
        collector.add_error(raw.error, None)
        return None
    if not isinstance(raw.value, dict):
        collector.add_error(InputErrorInfo(kind="invalid_field", message="an item must be a JSON object", file=path, line=raw.line, field="<root>"), None)
        return None
    return raw.value


def index_by_id(path: str, limits: Limits, collector: TaskCollector, role: str, key: Callable[[dict[str, Any]], str], field: str) -> dict[str, Entry]:
    """id -> first item of ``path``; unreadable and duplicate items become errors in ``collector``."""
    entries: dict[str, Entry] = {}
    for raw in read_items(path, limits):
        source = SourceRef(file=path, line=raw.line, item=raw.index)
        value = object_or_error(raw, path, collector)
        if value is None:
            continue
        try:
            uid = key(value)
        except ItemError as err:
            collector.add_error(err.info(path, raw.line), None)
            continue
        first = entries.get(uid)
        if first is None:
            entries[uid] = Entry(value, source)
            continue
        same = canonical_json(first.value) == canonical_json(value)
        detail = "identical content; the first is kept" if same else "different content; its trajectories are reported as ambiguous_task errors"
        collector.result.errors.append(
            InputErrorInfo(
                kind="duplicate_id", message=f"{role} {uid!r} already defined at {where(first.source)} with {detail}", file=path, line=raw.line, field=field
            )
        )
        if not same:
            collector.mark_ambiguous(uid, path, raw.line, f"defined at {where(first.source)} and again at {path}:{raw.line} with different content")
    return entries


class JoinSpec(msgspec.Struct, frozen=True):
    """What a format tells the join. ``build`` returns the task and soft problems as (kind,
    message, field in the reference item); ``from_main_file`` says whether a build error names a
    field of the main item (else of the reference item); ``not_graded`` returns why an item is
    not graded (an unsupported variant), else None; ``check_file`` may raise a usage error when the
    file is plainly the wrong one."""

    main_role: str  # "question", "input case"
    ref_role: str  # "possible answer", "ground truth"
    key: Callable[[dict[str, Any]], str]
    key_field: str
    build: Callable[[dict[str, Any], dict[str, Any] | None], tuple[Task, list[tuple[str, str, str]]]]
    from_main_file: Callable[[ItemError], bool]
    not_graded: Callable[[dict[str, Any]], tuple[str, str] | None] = lambda item: None  # (message, field)
    check_file: Callable[[dict[str, Any]], None] = lambda item: None
    missing_hint: str = ""
    graded_alone: Callable[[dict[str, Any]], bool] = lambda item: False  # an item that has no reference by design (built with None)


def join(path: str, reference: str | None, limits: Limits, collector: TaskCollector, spec: JoinSpec) -> None:
    """Every item of ``path`` joined with its reference item into one task (or one error). Without a
    reference file, only the items the format grades alone (``graded_alone``) become tasks."""
    refs = {} if reference is None else index_by_id(reference, limits, collector, f"{spec.ref_role} id", spec.key, spec.key_field)
    for raw in read_items(path, limits):
        source = SourceRef(file=path, line=raw.line, item=raw.index)
        item = object_or_error(raw, path, collector)
        if item is None:
            continue
        spec.check_file(item)
        try:
            uid = spec.key(item)
        except ItemError as err:
            collector.add_error(err.info(path, raw.line), None)
            continue
        entry = refs.get(uid)
        skipped = spec.not_graded(item)
        if skipped is not None:
            message, field = skipped
            collector.add_error(InputErrorInfo(kind="unsupported", message=message, file=path, line=raw.line, field=field), uid)
            if entry is not None:
                entry.used = True
            continue
        if entry is None and not spec.graded_alone(item):
            found_in = f"in {reference}" if reference is not None else "file given (no reference file)"
            message = f"{spec.main_role} {uid!r} has no {spec.ref_role} {found_in}{spec.missing_hint}"
            collector.add_error(InputErrorInfo(kind="unknown_task", message=message, file=path, line=raw.line, field=spec.key_field), uid)
            continue
        if entry is not None:
            entry.used = True
        try:
            task, soft = spec.build(item, None if entry is None else entry.value)
        except ItemError as err:
            if spec.from_main_file(err) or entry is None or reference is None:
                info = err.info(path, raw.line)
            else:
                err.file = None
                info = err.info(reference, entry.source.line)
                info.message += f" ({spec.ref_role} of the {spec.main_role} at {path}:{raw.line})"
            collector.add_error(info, uid)
            continue
        for kind, message, field in soft:
            file, line = (reference, entry.source.line) if entry is not None and reference is not None else (path, raw.line)
            collector.result.warnings.append(InputWarning(kind=kind, message=f"{message} (task {uid!r})", file=file, line=line, field=field))
        collector.add(task, source)
    for uid, entry in refs.items():
        if not entry.used and reference is not None:
            message = f"{spec.ref_role} {uid!r} has no {spec.main_role} in {path}"
            # an error, not an item whose id could not be read (TaskSet.unnamed): its id is known, only the main file lacks it
            collector.result.errors.append(InputErrorInfo(kind="unknown_task", message=message, file=reference, line=entry.source.line, field=spec.key_field))
