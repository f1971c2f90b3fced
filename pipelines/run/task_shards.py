"""Tasks loaded in shards by worker processes, for a native JSONL tasks file.

The run's counterpart of ``pipelines.ingest._parallel`` (which says why): it cuts the file into
shards of whole lines, has a pool of forked workers read, validate and pack each shard, and
replays their records in file order into one ``TaskCollector``. As for trajectory shards, a
shard whose reader ran past its end inside an item, or that started at a wrong item index, is
read again here (joined with the next one, or from the right index): the task set is the one the
serial loader builds, error for error.
"""

from __future__ import annotations

import itertools
import multiprocessing
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path

from pipelines.ingest import Limits, TaskCollector, TaskSet, TaskShard, read_task_shard, replay_task_shard, strict_tasks
from pipelines.run.lines import READ_BUFFER, SHARD_BYTES, ItemCounter, LineShards, RawShard
from pipelines.run.stream import ShardStream

__all__ = ["load_tasks_in_shards"]


def _read(path: str, raw: RawShard, first_item: int, limits: Limits, zdict: bytes | None = None, sample: bool = False) -> TaskShard:
    raw = raw.load(limits.max_line_bytes, digest=False)  # a range of the file: the worker reads it (no bytes through the pool's pipe)
    return read_task_shard(ShardStream(raw, path), path, (raw.first_line, first_item, raw.first_byte), limits, zdict, sample)


def load_tasks_in_shards(
    path: Path, limits: Limits, workers: int, shard_lines: int = 1000, shard_bytes: int = SHARD_BYTES, strict: bool = False
) -> tuple[TaskSet, str]:
    """The task set ``load_tasks(path, "native", ...)`` returns, read by ``workers`` processes, and
    the file's sha256 (hashed as it was cut: the run needs no second read for its manifest)."""
    name = str(path)
    collector = TaskCollector()
    context = multiprocessing.get_context("fork")
    with open(path, "rb", buffering=READ_BUFFER) as fh:
        cutter = LineShards(fh, shard_lines, shard_bytes, limits.max_line_bytes)
        cutter.source = str(path)
        raws: Iterator[RawShard] = cutter.shards()
        first = next(raws, None)
        zdict = None
        if first is not None:  # the store's compression dictionary, from the file's first task, before the workers fork
            sample = _read(name, first, 0, limits, sample=True).sample
            zdict = collector.result.tasks.prime(*sample) if sample is not None else None
            raws = itertools.chain([first], raws)
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            _load(name, raws, pool, workers, limits, zdict, collector)
        cutter.drain()
    taskset = collector.result
    return (strict_tasks(taskset) if strict else taskset), cutter.hexdigest()


def _load(name: str, raws: Iterator[RawShard], pool: ProcessPoolExecutor, workers: int, limits: Limits, zdict: bytes | None, collector: TaskCollector) -> None:
    """Shards to the pool, records replayed in order; a shard read wrong is read again here."""
    window: deque[tuple[RawShard, int, Future[TaskShard]]] = deque()
    items = guess = 0
    counter = ItemCounter.for_file(name)
    while True:
        while len(window) < 2 * workers and (raw := next(raws, None)) is not None:
            window.append((raw, guess, pool.submit(_read, name, raw, guess, limits, zdict)))
            guess += counter(raw)
        if not window:
            break
        raw, guessed, future = window.popleft()
        shard = future.result()
        while True:  # read it again here until it is what the whole file's reader reads
            if shard.overran:
                following = window.popleft()[0] if window else next(raws, None)
                if following is not None:
                    raw, guessed = raw.join(following), items
                    shard = _read(name, raw, items, limits, zdict)
                    continue
            if guessed != items:
                guessed = items
                shard = _read(name, raw, items, limits, zdict)
                continue
            break
        replay_task_shard(shard.records, collector)
        items += shard.items
        counter.learn(raw, shard.items)
        guess = items + sum(counter(r) for r, _, _ in window)  # the next guesses start from what is known
