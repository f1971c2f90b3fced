"""Loading a native tasks file in shards, in worker processes: the worker half.

A task line per trajectory makes task loading as heavy as grading (a 9 KB line read, validated
and packed per trajectory), and the run needs every task before it grades: done by one process,
it is the serial part that keeps N workers from N times the speed. So the run cuts a native
JSONL tasks file into shards of whole lines (``pipelines.run.lines.LineShards``) and each worker reads,
validates and packs its shard's tasks (``read_task_shard``), recording what the serial loader
would have done item by item (a task, or an error). The run then replays those records, in file
order, into its own ``TaskCollector`` (``add_packed`` / ``add_error``): the duplicate rules, the
error list and the sources come out exactly as the serial loader makes them, and no task is
validated twice (a repeated id unpacks both definitions to compare them, as ``add`` does).

Packed tasks name their shared tool specs by a 16-byte digest of the spec's raw text (the text
itself, several KB per tool and 15 tools per task, made every packed task ~3x larger to pickle,
compress, ship and unpack); a record carries the raw specs the collector may not have met, so
the run's store can resolve every key.
"""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec

from judge import InputErrorInfo, InputWarning, SourceRef, Task
from pipelines.ingest._base import Limits, TaskCollector
from pipelines.ingest._native import load_task_items
from pipelines.ingest._reader import read_items
from pipelines.ingest._store import pack_task

__all__ = ["TaskRecord", "TaskShard", "read_task_shard", "replay_task_shard"]

# ("task", task_id, source, packed, warnings, raw tools by key) | ("error", info, task_id)
TaskRecord = tuple[Any, ...]


class TaskShard(msgspec.Struct):
    records: list[TaskRecord] = msgspec.field(default_factory=list)
    items: int = 0
    overran: bool = False  # the reader reached the end of the shard inside an item
    sample: Any = None  # (first task, tool keys) when asked for: primes the run's store


class _Recorder(TaskCollector):
    """A collector that records instead of deciding (the run's collector decides on replay);
    it keeps its tool cache across the shards a worker reads."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[TaskRecord] = []
        self.short: dict[int, bytes] = {}  # id(shared spec) -> digest of its raw text: its key in packed tasks
        self._sent: set[bytes] = set()
        self.zdict: bytes | None = None
        self.first: Task | None = None

    def add(self, task: Task, source: SourceRef, warnings: list[InputWarning] | None = None) -> None:
        task = self._share_tools(task)
        tools: dict[bytes, dict[str, Any]] = {}
        for spec in task.tools:
            key = self._key(spec)
            if key is not None and key not in self._sent:
                self._sent.add(key)
                tools[key] = self._tools.raw_of(self._tools.keys[id(spec)])
        if self.first is None:
            self.first = task
        self.records.append(("task", task.task_id, source, pack_task(task, self.short, self.zdict), list(warnings or []), tools))

    def _key(self, spec: Any) -> bytes | None:
        """The spec's key in packed tasks (None: it has no raw text and travels inline)."""
        key = self.short.get(id(spec))
        if key is None:
            text = self._tools.keys.get(id(spec))
            if text is None:
                return None
            key = self.short[id(spec)] = hashlib.blake2b(text, digest_size=16).digest()
        return key

    def add_error(self, info: InputErrorInfo, task_id: str | None) -> None:
        self._fresh = []
        self.records.append(("error", info, task_id))


_RECORDER: _Recorder | None = None


def read_task_shard(stream: Any, path: str, start: tuple[int, int, int], limits: Limits, zdict: bytes | None = None, sample: bool = False) -> TaskShard:
    """Every item of a shard (a binary stream cut at a line boundary, ``start`` = its line, item
    index and byte offset) as the serial loader meets it, tasks packed with ``zdict`` (the run's
    store's). ``stream.cut_inside_item`` (a ``ShardStream``) tells whether an item ran past the
    shard's end. ``sample``: also return the first task and the tool keys (in-process)."""
    global _RECORDER
    if _RECORDER is None:
        _RECORDER = _Recorder()
    recorder = _RECORDER
    recorder.records, recorder._sent, recorder.zdict, recorder.first = [], set(), zdict, None
    shard = TaskShard()

    def counted() -> Any:
        for raw in read_items(stream, limits, start):
            shard.items += 1
            yield raw

    load_task_items(counted(), path, recorder)
    shard.records = recorder.records
    if sample and recorder.first is not None:
        shard.sample = (recorder.first, dict(recorder.short))
    shard.overran = stream.cut_inside_item
    return shard


def replay_task_shard(records: list[TaskRecord], collector: TaskCollector) -> None:
    """Apply the records to the run's collector, as the serial loader would have, in order."""
    for record in records:
        if record[0] == "task":
            _, tid, source, packed, warnings, tools = record
            collector.add_packed(tid, source, packed, warnings, tools)
        else:
            _, info, task_id = record
            collector.add_error(info, task_id)
