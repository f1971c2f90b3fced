"""Reading a reference file (VAKRA ground truth, BFCL possible answers) into an index by id.

The reference side follows the same duplicate rules as tasks: a repeated id is a ``duplicate_id``
error naming the first line; different content makes the id ambiguous. Each entry remembers
whether a task used it, so that orphans on either side can be reported naming both files.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from judge import InputErrorInfo, SourceRef, canonical_json
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
