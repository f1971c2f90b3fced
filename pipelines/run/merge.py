"""The grading phase of a run: shards in, graded by an executor, merged in input order, each
merged shard checkpointed in the run state; and, resuming, the merged state rebuilt from those
checkpoints (nothing decided is regraded; the cases that wait for a judge are graded again from
their shards). ``Merger`` holds what the merge has gathered: the aggregate, the ids read, the
cases waiting for a judge, the report's rows of the graded results, the counts (an error row
costs no memory here: ``report_rows``)."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from judge import TrajectoryResult
from pipelines.grade import Aggregator, GradedCase
from pipelines.run.executors import Executor, make_executor
from pipelines.run.folder import RunDirError
from pipelines.run.inputs import RunInputs
from pipelines.run.lines import ItemCounter, LineShards, RawShard, one_shard
from pipelines.run.options import GradeOptions, InputErrorsFound, Progress
from pipelines.run.records import InputProgress, ReplayTally, ShardRecord, WarningTally
from pipelines.run.shards import GradingContext, Shard, ShardGrader, ShardResult, grade_shard
from pipelines.run.state import RunState

if TYPE_CHECKING:
    from reports import Row

__all__ = ["PENDING", "Merger", "PendingRef", "trim_heap"]

PENDING = "__pending__"  # the placeholder line of a case waiting for a judge in results.partial
PendingRef = tuple[int, int]  # (shard index, position in that shard's pending list)


class Merger:
    """Shards merged in input order into one run's state (see the module docstring)."""

    def __init__(self, opts: GradeOptions, inputs: RunInputs, state: RunState):
        self.opts = opts
        self.inputs = inputs
        self.state = state
        self.name = inputs.name
        self.agg = Aggregator(opts.config)
        for info in inputs.taskset.errors:
            self.agg.add_task_error(info)
        for info in inputs.labels.errors if inputs.labels is not None else ():
            self.agg.add_task_error(info, scope="labels")
        self.agg.add_warnings(inputs.taskset.warnings)
        self.seen: dict[tuple[str, str], int | None] = {}
        self.pending: dict[tuple[int, int], GradedCase] = {}
        self.items = 0  # items merged so far (= the index of the next shard's first item)
        self.lines = 0
        self.bytes = 0
        self.shards = 0
        self.guesses: dict[int, int] = {}  # shard index -> the index guessed for the item after it
        self.correction = 0  # learnt difference between items and the guesses (item index guesses)
        self.counter = ItemCounter()
        self.replay_versions: dict[str, str] = {}
        self.replay_hits = 0
        self.labels_used: set[str] = set()
        self.report_rows: list[Row | None] = []  # the report's row of every graded result, in order (None: pending)
        self.error_rows = 0  # rows that are input errors: their report rows are read back from results.jsonl (report_rows)
        self.pending_rows: dict[tuple[int, int], int] = {}  # pending case -> its position in report_rows
        self.later_failures = 0  # final rows past the drill-down's first ones that did not pass (reports.may_pick)
        self.sha256: str | None = None
        self.ctx: GradingContext | None = None
        self.executor: Executor | None = None
        self._pool: dict[Any, Any] = {}  # the report rows' shared values (reports.to_row)

    def context(self, fmt: str | None) -> GradingContext:
        return GradingContext(
            tasks=self.inputs.taskset,
            config=self.opts.config,
            fmt=fmt,
            name=self.name,
            limits=self.opts.limits,
            escalating=self.opts.escalator is not None,
            replayer=self.opts.replayer,
            stop_at_error=self.opts.on_error == "fail",
            strict=self.opts.strict,
            labels=self.inputs.labels,
        )

    # ---- grading: shards in, merged in input order ----------------------------------------------
    def grade(self, cutter: LineShards, progress: Progress | None, tick: Callable[[], None]) -> None:
        self.ctx = self.context(self.inputs.fmt)
        workers = self.opts.workers
        if workers > 1 and not self.opts.ray and one_shard(self.inputs.trajectories.path, self.opts.shard_lines, self.opts.shard_bytes):
            workers = 1  # one shard: a pool of workers would only add its start-up (the same bytes either way)
        self.executor = make_executor(self.ctx, workers, self.opts.ray_address, self.opts.ray)
        if self.executor.reads_files:
            cutter.source = str(self.inputs.trajectories.path)
        self.counter = ItemCounter.for_file(self.inputs.trajectories.path)
        try:
            results = self.executor.ordered(self._submissions(cutter.shards(first_line=self.lines + 1, first_index=self.shards)))
            for shard, result in results:
                shard, result = self._settle(shard, result, results)
                self._merge(shard, result)
                if progress is not None:
                    progress(self.items)
                tick()
        finally:
            self.executor.close()

    def _submissions(self, raws: Iterator[RawShard]) -> Iterator[Shard]:
        """Shards with a guess of their first item index (``ItemCounter``; each merge corrects the
        guesses of the shards not yet handed out)."""
        guess = self.items
        for raw in raws:
            end = guess + self.counter(raw)
            self.guesses[raw.index] = end
            yield Shard(raw, first_item=guess + self.correction, drill_failures=self._drill_failures())
            guess = end

    def _settle(self, shard: Shard, result: ShardResult, results: Iterator[tuple[Shard, ShardResult]]) -> tuple[Shard, ShardResult]:
        """Regrade ``shard`` here until its result is the one a reader of the whole input gives:
        from the right item index, with the ids earlier shards read, and not cut inside an item."""
        assert self.ctx is not None
        first, joined = shard.raw.index, 0
        while True:
            conflicts = {key[:2]: self.seen[key[:2]] for key in result.keys if key[:2] in self.seen}
            redo = result.first_item != self.items or conflicts != (shard.seen or {})
            if result.overran:
                following = next(results, None)
                if following is not None:  # the cut split an item: grade both shards as one
                    shard = Shard(shard.raw.join(following[0].raw), first_item=self.items)
                    joined += 1
                    redo = True
            if not redo:
                break
            shard = Shard(shard.raw, first_item=self.items, seen=conflicts or None)
            result = grade_shard(self.ctx, shard)
        guessed_end = self.items + result.items
        for index in range(first, first + 1 + joined):
            guessed_end = self.guesses.pop(index, guessed_end)
        self.correction = (self.items + result.items) - guessed_end
        self.counter.learn(shard.raw, result.items)
        return shard, result

    def _merge(self, shard: Shard, result: ShardResult) -> None:
        if result.first_error is not None:
            raise InputErrorsFound(result.first_error)
        from reports import kept_line, may_pick

        rows = bytearray()
        steps = bytearray()
        kept = dict(result.steps)
        for position, (row, report_row) in enumerate(zip(result.rows, result.report_rows, strict=True)):
            index = len(self.report_rows) + self.error_rows  # the row's position in results.jsonl
            verdict = None if report_row is None else report_row.verdict
            trajectory = kept.get(position)
            if trajectory is not None and may_pick(index, verdict, self.later_failures):
                steps += kept_line(index, trajectory)
            self._count_failure(index, verdict)
            if isinstance(row, int):
                ref = (result.index, row)
                self.pending[ref] = result.pending[row]
                self.pending_rows[ref] = len(self.report_rows)
                rows += json.dumps({PENDING: list(ref)}).encode() + b"\n"
            else:
                rows += row
                if report_row is not None and report_row.verdict == "error":  # memory per error stays O(1)
                    self.error_rows += 1
                    continue
            self.report_rows.append(report_row)
        self.agg.merge(result.aggregate)
        for key in result.keys:
            self.seen.setdefault(key[:2], key[2])
        self._tally(result.replay, result.labels_used)
        raw = shard.raw
        self.items += result.items
        self.lines += raw.lines
        self.bytes += raw.size
        self.shards = max(self.shards, result.index + 1)
        record = ShardRecord(
            index=result.index,
            first_line=raw.first_line,
            first_byte=raw.first_byte,
            first_item=result.first_item,
            size=raw.size,
            lines=raw.lines,
            items=result.items,
            rows=len(result.rows),
            pending_items=result.pending_items,
            keys=result.keys,
            replay=ReplayTally.model_validate(result.replay),
            sha256=result.sha256,
            labels_used=sorted(result.labels_used),
            warnings=[WarningTally(kind=kind, field_pattern=pattern, **entry) for (kind, pattern), entry in result.aggregate.warnings.items()],
        )
        progress = InputProgress(bytes=self.bytes, lines=self.lines, items=self.items, shards=self.shards)
        self.state.append_shard(bytes(rows), record, progress, bytes(steps))
        if self.shards % 8 == 0:
            trim_heap()  # a shard's transient objects are gone: give their pages back before the next ones

    def _count_failure(self, index: int, verdict: str | None) -> None:
        from reports import later_failure

        self.later_failures += later_failure(index, verdict)

    def _drill_failures(self) -> bool:
        """Whether a later non-passing row may still be in the drill-down (``reports.may_pick``)."""
        from reports import more_failures_wanted

        return more_failures_wanted(self.later_failures)

    def _tally(self, replay: dict[str, Any], labels_used: set[str] | list[str]) -> None:
        self.replay_versions.update(replay.get("versions", {}))
        self.replay_hits += replay.get("reference_cache_hits", 0)
        self.labels_used.update(labels_used)

    def grade_whole(self, progress: Progress | None) -> None:
        """Read the trajectories as one stream here (a JSON array, a bundle, an undetected
        format: nothing to cut), merged in batches as they come. Not resumable: such a run
        starts over; one past grading (judging, waiting for provider batches) is resumed by
        ``_restore_whole``."""
        self.state.record.whole_input = True
        self.state.record.whole_sha256 = self.inputs.trajectories.hash()
        self.ctx = ctx = self.context(None)
        grader = ShardGrader(ctx, 0, 0)
        for loaded in self.inputs.whole_items():
            if not grader.add(loaded):
                break
            if grader.items >= self.opts.shard_lines:
                self._merge(_batch_shard(grader.index, grader.first_item), grader.result())
                grader.drill_failures = self._drill_failures()
                if progress is not None:
                    progress(self.items)
        self._merge(_batch_shard(grader.index, grader.first_item), grader.result())
        if progress is not None:
            progress(self.items)

    # ---- resuming -------------------------------------------------------------------------------
    def restore(self, cutter: LineShards) -> None:
        """Re-read the input up to where the interrupted run got, checking it reads the same
        bytes; rebuild its merged state and, from the same shards, the cases that wait for a judge
        (their deterministic checks: nothing decided is regraded, no judge is asked)."""
        ctx = self.context(self.inputs.fmt)
        partial = self._partial_rows()
        for record in self.state.shard_records():
            try:
                raw = cutter.take(record.size, record.index, record.first_line)
            except EOFError:
                raw = None
            if raw is None or raw.sha256 != record.sha256:
                raise RunDirError(f"--resume: {self.name} does not hold the bytes the interrupted run graded; start over with --overwrite")
            pending_at = self._absorb(record, partial)
            if record.pending_items:
                result = grade_shard(ctx, Shard(raw, first_item=record.first_item, only=frozenset(record.pending_items)))
                for local, case in enumerate(result.pending):
                    self.pending[(record.index, local)] = case
                    self.pending_rows[(record.index, local)] = pending_at[local]
            self.items = record.first_item + record.items
            self.lines = record.first_line - 1 + record.lines
            self.bytes += record.size
            self.shards = record.index + 1
        progress = self.state.record.trajectories
        if (self.bytes, self.items) != (progress.bytes, progress.items) or next(partial, None) is not None:
            raise RunDirError("--resume: the run state is inconsistent; start over with --overwrite")

    def _absorb(self, record: ShardRecord, partial: Iterator[bytes]) -> list[int]:
        """Merge a checkpointed shard: its rows, read back from ``results.partial`` (the data the
        run kept: nothing is regraded), into the aggregate and the report's rows, with its input
        warnings, ids and tallies; the positions in ``report_rows`` of its cases that wait for a
        judge."""
        from reports import to_row

        shard = Aggregator(self.opts.config)
        for w in record.warnings:
            shard.warnings[(w.kind, w.field_pattern)] = {"count": w.count, "first": w.first, "message": w.message}
        marker = b'{"' + PENDING.encode()
        pending_at: list[int] = []
        for _ in range(record.rows):
            line = next(partial, None)
            if line is None:
                raise RunDirError(f"--resume: {self.state.partial_path} holds fewer rows than the run state records; start over with --overwrite")
            index = len(self.report_rows) + self.error_rows
            if line.startswith(marker):
                pending_at.append(len(self.report_rows))
                self.report_rows.append(None)
                continue
            try:
                result = TrajectoryResult.model_validate_json(line)
            except ValidationError as exc:
                raise RunDirError(
                    f"--resume: {self.state.partial_path}: a row is not a result ({exc.errors()[0]['msg']}); start over with --overwrite"
                ) from None
            shard.add(result)
            self._count_failure(index, result.verdict.value)
            if result.verdict.value == "error":
                self.error_rows += 1
            else:
                self.report_rows.append(to_row(result, self._pool))
        self.agg.merge(shard)
        for key in record.keys:
            self.seen.setdefault(key[:2], key[2])
        self._tally(record.replay.model_dump(), record.labels_used)
        return pending_at

    def _partial_rows(self) -> Iterator[bytes]:
        """The lines of ``results.partial`` (as checkpointed: the state was loaded), in order."""
        with open(self.state.partial_path, "rb") as fh:
            yield from fh

    def restore_whole(self) -> None:
        """A run of an input read as one stream, past grading: check the input holds the same
        bytes, rebuild the merged state from the records and, reading the input again, the cases
        that wait for a judge (only those are graded again)."""
        if self.state.record.whole_sha256 != self.inputs.trajectories.hash():
            raise RunDirError(f"--resume: {self.name} does not hold the bytes the interrupted run graded; start over with --overwrite")
        refs: list[tuple[int, int]] = []
        items: list[int] = []
        partial = self._partial_rows()
        for record in self.state.shard_records():
            pending_at = self._absorb(record, partial)
            for local, item in enumerate(record.pending_items):
                refs.append((record.index, local))
                items.append(item)
                self.pending_rows[(record.index, local)] = pending_at[local]
            self.items = record.first_item + record.items
            self.shards = record.index + 1
        if self.items != self.state.record.trajectories.items or next(partial, None) is not None:
            raise RunDirError("--resume: the run state is inconsistent; start over with --overwrite")
        if refs:
            grader = ShardGrader(self.context(None), 0, 0)
            wanted = frozenset(items)
            for loaded in self.inputs.whole_items():
                grader.add(loaded, wanted)
            if grader.pending_items != items:
                raise RunDirError(f"--resume: {self.name} no longer reads as the interrupted run read it; start over with --overwrite")
            self.pending.update(zip(refs, grader.pending, strict=True))


def _batch_shard(index: int, first_item: int) -> Shard:
    return Shard(RawShard(index, b"", 0, 0, 0, 0, 0), first_item=first_item)


def trim_heap() -> None:
    """Hand freed heap memory back to the system (glibc keeps it otherwise), so what comes next
    (the next shards, the report's tables) grows into it instead of on top of it."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Any:
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name).malloc_trim if name is not None else None
    except (OSError, AttributeError):  # not glibc
        return None
