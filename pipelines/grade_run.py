"""The grading run: ingest -> deterministic checks (with replay) -> escalation rounds -> outputs.

Guarantees:
- every input trajectory yields exactly one line of ``results.jsonl``, in input order, graded or
  with its error (file, line, field); errors in the tasks file are listed in ``summary.json``;
- every input is read once from where it was given: a pipe or standard input (``-``) is spooled
  to a temporary file as it is read (see ``run_inputs``), never read twice;
- the same inputs and config give byte-identical ``results.jsonl`` / ``summary.json`` /
  ``report.md`` whether graded in this process, by N worker processes or on a Ray cluster
  (JSONL inputs are cut into shards merged in input order, every cut checked; see ``shards``);
  timestamps live in ``manifest.json`` only;
- memory stays flat: tasks are kept packed, shards stream through, decided rows go to disk;
  only cases waiting for a judge are held;
- outputs are atomic, ``manifest.json`` comes last (``complete: true``), a directory never mixes
  runs, and an interrupted run can be resumed without regrading a decided trajectory or asking a
  judge again (see ``run_dir``);
- escalation happens here, in one place, one round at a time, whoever graded the shards; with
  provider batches (``--judge-mode batch``) a round's questions go out as batches, the run stops
  ``waiting`` (``run_grading`` returns a ``BatchWait``) and ``judge resume`` continues it, round by round, into the
  outputs an online run with the same answers writes.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import json
import platform
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

import rubrics
from judge import BadInputError, Check, ConfigurationError, Escalator, InputErrorInfo, InputWarning, Outcome, PanelDecision, RunSummary, TrajectoryResult
from pipelines.aggregate import Aggregator
from pipelines.config import GradingConfig
from pipelines.controls import Control, ControlLedger, set_aside
from pipelines.executors import Executor, make_executor
from pipelines.grade_case import GradedCase
from pipelines.ingest import (
    BundleFormat,
    Limits,
    Loaded,
    TaskSet,
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
from pipelines.run_dir import MANIFEST, REPORT_MD, RESULTS, SUMMARY, RunDirectory, RunDirError, RunState, ShardRecord, atomic_write
from pipelines.run_inputs import READ_BUFFER, SHARD_BYTES, InputChanged, ItemCounter, LineShards, RawShard, TaskInput, display_name, sha256_of
from pipelines.shards import GradingContext, Shard, ShardGrader, ShardResult, grade_shard

__all__ = [
    "MANIFEST",
    "REPORT_MD",
    "RESULTS",
    "SUMMARY",
    "BatchWait",
    "GradeOptions",
    "InputErrorsFound",
    "NoTasks",
    "RunDirError",
    "RunOutcome",
    "run_grading",
]

_PENDING = "__pending__"


class NoTasks(ConfigurationError):
    """Neither ``--tasks`` nor the trajectory file provides tasks."""


class InputErrorsFound(BadInputError):
    """Raised with ``--on-error fail`` at the first bad input item."""

    def __init__(self, info: InputErrorInfo):
        super().__init__(info.render())
        self.info = info


@dataclass
class GradeOptions:
    tasks: Path | None  # None: the trajectory file carries its tasks (tau2 results, Inspect logs)
    trajectories: Path
    out: Path
    reference: Path | None = None
    task_format: str | None = None
    trajectory_format: str | None = None
    on_error: Literal["skip", "fail"] = "skip"
    config: GradingConfig = field(default_factory=GradingConfig)
    escalator: Escalator | None = None
    replayer: Any = None  # pipelines.replay.Replayer
    limits: Limits = field(default_factory=Limits)
    command: list[str] = field(default_factory=list)
    strict: bool = False  # unknown fields are errors, not warnings
    task_key: str | None = None  # --task-key: the attribute that holds a trace's task id (otel)
    labels: Path | None = None  # external labels (--labels) to report agreement with
    tool_specs: Path | None = None  # tool specs for tasks whose source carries none (--tool-specs)
    rubrics: Any = None  # the rubric table the panel uses (--rubrics); None: the built-ins
    workers: int = 1  # processes grading shards (the CLI defaults to the machine's cores)
    ray: bool = False  # grade shards on a Ray cluster instead
    ray_address: str | None = None  # None: a local Ray instance; "auto" / "ray://host:port": a cluster
    overwrite: bool = False  # replace another run's files in ``out``
    resume: bool = False  # continue the interrupted run in ``out``
    shard_lines: int = 1000  # lines per shard (a shard is the unit of work of a worker)
    shard_bytes: int = SHARD_BYTES
    judge_settings: Any = None  # judge.llm.JudgeSettings the escalator was built from (recorded: judge resume rebuilds it)
    rubrics_dir: Path | None = None  # --rubrics (recorded with the judge settings)
    judge_shard_min: int | None = None  # escalation rounds this large are judged by ``workers`` processes (None: judge.llm.SHARD_MIN_REQUESTS)


@dataclass
class BatchWait:
    """A run that stopped to wait for provider batches (``--judge-mode batch``): the escalation
    round they answer, each batch as last seen, how many this invocation submitted."""

    round: int
    batches: list[str]  # "<api> batch <id>: <state> (counts)"
    submitted: int = 0
    out: Path | None = None


@dataclass(frozen=True)
class JudgingProgress:
    """Where an escalation round stands, for a live line while judges work: questions of the round
    (controls included), those decided so far (None: not known until the round's worker shares come
    back), and the judge calls, free answers (cache, shared), abstentions and cost of the run so far."""

    round: int  # 1-based
    questions: int
    answered: int | None
    calls: int
    cached: int
    abstained: int
    cost_usd: float
    elapsed_s: float
    done: bool = False

    @property
    def eta_s(self) -> float | None:
        """Seconds left at the round's pace so far (None until something is answered)."""
        if not self.answered or self.answered >= self.questions:
            return None if not self.answered else 0.0
        return self.elapsed_s / self.answered * (self.questions - self.answered)


TICK_S = 1.0  # how often the progress callback hears from a round in progress


@dataclass
class RunOutcome:
    summary: RunSummary
    out: Path
    files: list[Path]
    resumed: bool = False


Progress = Callable[[int], None]


def run_grading(
    opts: GradeOptions,
    progress: Progress | None = None,
    on_bytes: Callable[[int, int], None] | None = None,
    on_judging: Callable[[JudgingProgress], None] | None = None,
) -> RunOutcome | BatchWait:
    """Grade ``opts.trajectories`` against ``opts.tasks`` into ``opts.out``.

    ``progress(n)`` is told the number of trajectories done; ``on_bytes(done, total)`` the bytes of
    the trajectories input read; ``on_judging(JudgingProgress)`` where each escalation round stands,
    every ``TICK_S`` while judges work and once when the round is decided. Raises ``RunDirError`` (the output directory cannot take the
    run), ``InputErrorsFound`` (``on_error="fail"``), ``NoTasks`` and ``ValueError`` (a format
    cannot be used). With provider batches (``--judge-mode batch``) the run may stop to wait for
    them: then it returns a ``BatchWait`` and publishes nothing (resume it: ``resume=True``).
    """
    started = datetime.now(UTC)
    rundir = RunDirectory(opts.out)
    resuming = rundir.prepare(overwrite=opts.overwrite, resume=opts.resume, dry_run=True)
    with _Inputs(opts) as inputs:
        if opts.on_error == "fail" and inputs.errors():
            raise InputErrorsFound(inputs.errors()[0])
        created = not Path(opts.out).exists()
        rundir.prepare(overwrite=opts.overwrite, resume=opts.resume)
        run = _Run(opts, inputs, rundir.state, started, resuming)
        run.on_judging = on_judging
        try:
            return run.execute(progress, on_bytes)
        except (InputErrorsFound, ConfigurationError):  # stopped on purpose (--on-error fail, an unreadable input): nothing of it is kept
            if resuming:
                raise  # the interrupted run stays as it was, to be resumed rightly
            rundir.state.remove()
            if created and Path(opts.out).is_dir() and not any(Path(opts.out).iterdir()):
                Path(opts.out).rmdir()
            raise
        finally:
            rundir.state.release()


class _Inputs:
    """The run's inputs, each a regular file (pipes spooled), loaded once: tasks (from ``--tasks``
    or the trajectory file), tool specs, labels; how the trajectories are to be read."""

    def __init__(self, opts: GradeOptions):
        self.opts = opts
        self._stack = ExitStack()
        self.spools: list[TaskInput] = []
        self.bundle_items: Iterator[Loaded] | None = None

    def __enter__(self) -> _Inputs:
        opts = self.opts
        spool_dir = Path(self._stack.enter_context(tempfile.TemporaryDirectory(prefix="judge-inputs-")))
        self.trajectories = self._open(opts.trajectories, spool_dir)
        self.fmt, self.whole = _trajectory_mode(self.trajectories.path, opts.trajectory_format, opts.limits)
        if opts.task_key is not None:
            check_task_key(trajectory_format(opts.trajectory_format or detect_trajectory_format(self.trajectories.path)))
        if opts.tasks is not None:  # given tasks win over tasks the trajectory file carries
            tasks = self._open(opts.tasks, spool_dir)
            reference = self._open(opts.reference, spool_dir) if opts.reference is not None else None
            if reference is None and _tasks_in_shards(tasks.path, opts):
                from pipelines.task_shards import load_tasks_in_shards

                self.taskset, tasks.sha256 = load_tasks_in_shards(tasks.path, opts.limits, opts.workers, opts.shard_lines, opts.shard_bytes, strict=opts.strict)
            else:
                self.taskset = load_tasks(tasks.path, opts.task_format, None if reference is None else reference.path, opts.limits, strict=opts.strict)
            self.digests = {"tasks": tasks.hash(), "reference": None if reference is None else reference.hash()}
        else:
            bundle = read_trajectories(self.trajectories.path, opts.trajectory_format, opts.limits, strict=opts.strict, task_key=opts.task_key)
            if bundle.tasks is None:
                raise NoTasks(f"{display_name(opts.trajectories)} carries no tasks: pass them with --tasks")
            self.taskset, self.bundle_items = bundle.tasks, bundle.items
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
        _rename_spools(self.taskset, self.labels, self.spools)
        return self

    def _open(self, given: Path, spool_dir: Path) -> TaskInput:
        opened = TaskInput.open(given, spool_dir)
        if opened.spooled:
            self.spools.append(opened)
        return opened

    def errors(self) -> list[InputErrorInfo]:
        return self.taskset.errors or (self.labels.errors if self.labels is not None else [])

    def whole_items(self) -> Iterator[Loaded]:
        """The trajectories read as one stream (the reader detecting the format), named as given."""
        items = self.bundle_items
        if items is None:
            items = read_trajectories(
                self.trajectories.path, self.opts.trajectory_format, self.opts.limits, strict=self.opts.strict, tasks=self.taskset, task_key=self.opts.task_key
            ).items
        spooled = {str(s.path): s.display for s in self.spools}
        return (_renamed_loaded(loaded, spooled) for loaded in items) if spooled else items

    def __exit__(self, *exc: object) -> None:
        self._stack.close()


class _Run:
    """One grading run: shards in, merged in order, escalated, published."""

    def __init__(self, opts: GradeOptions, inputs: _Inputs, state: RunState, started: datetime, resuming: bool):
        self.opts = opts
        self.inputs = inputs
        self.taskset = inputs.taskset
        self.state = state
        self.started = started
        self.resuming = resuming
        self.on_judging: Callable[[JudgingProgress], None] | None = None
        self.name = display_name(opts.trajectories)
        self.agg = Aggregator(opts.config)
        for info in self.taskset.errors:
            self.agg.add_task_error(info)
        for info in inputs.labels.errors if inputs.labels is not None else ():
            self.agg.add_task_error(info, scope="labels")
        self.agg.add_warnings(self.taskset.warnings)
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
        self.report_rows: list[Any] = []  # the report's row of every result, in order (None: pending)
        self.pending_rows: dict[tuple[int, int], int] = {}  # pending case -> its position in report_rows
        self.sha256: str | None = None
        self.ctx: GradingContext | None = None
        self.executor: Executor | None = None

    # ---- identity -------------------------------------------------------------------------------
    def identity(self) -> dict[str, Any]:
        """What must be equal for an interrupted run to be continued with these options."""
        o = self.opts
        return {
            "tasks": {"path": None if o.tasks is None else display_name(o.tasks), "sha256": self.inputs.digests["tasks"], "format": o.task_format},
            "reference": None if o.reference is None else {"path": display_name(o.reference), "sha256": self.inputs.digests["reference"]},
            "extra_inputs": {k: v for k, v in sorted(self.inputs.digests.items()) if k not in ("tasks", "reference")},
            "trajectories": {"path": self.name, "format": o.trajectory_format, **({"task_key": o.task_key} if o.task_key else {})},
            "config": o.config.model_dump(mode="json"),
            "on_error": o.on_error,
            "strict": o.strict,
            "limits": {"max_line_bytes": o.limits.max_line_bytes, "max_string_bytes": o.limits.max_string_bytes},
            "replay": o.replayer is not None,
            "judges": _escalator_identity(o.escalator),
            "shards": {"lines": o.shard_lines, "bytes": o.shard_bytes},
        }

    # ---- the run --------------------------------------------------------------------------------
    def execute(self, progress: Progress | None, on_bytes: Callable[[int, int], None] | None) -> RunOutcome | BatchWait:
        self.state.hold()
        if self.resuming:
            data = self.state.load()
            _check_identity(data["identity"], self.identity())
            data["resumed_at"].append(datetime.now(UTC).isoformat(timespec="seconds"))
            self.state.save()
        else:
            from pipelines.resume import recipe

            self.state.start(self.identity(), self.started.isoformat(timespec="seconds"), recipe(self.opts))
        if self.inputs.whole:
            if not self.resuming:
                self._grade_whole(progress)
            elif self.state.data["phase"] == "grading":
                raise RunDirError(
                    f"--resume: {self.name} is read as one stream (a JSON array, a bundle, an undetected format) and was interrupted while grading: start over with --overwrite"
                )
            else:
                self._restore_whole()
        else:
            path = self.inputs.trajectories.path
            before = _file_state(path)
            total = path.stat().st_size
            with open(path, "rb", buffering=READ_BUFFER) as stream:
                cutter = LineShards(stream, self.opts.shard_lines, self.opts.shard_bytes, self.opts.limits.max_line_bytes)
                if self.resuming:
                    self._restore(cutter)
                if self.state.data["phase"] == "grading":
                    self._grade(cutter, progress, lambda: on_bytes(cutter.bytes_read, total) if on_bytes is not None else None)
                    if cutter.source is not None and _file_state(path) != before:  # workers read after the cutter hashed
                        raise InputChanged(f"{self.name} changed while it was graded (its size, modification time or inode); grade a copy that does not change")
                cutter.drain()  # a resumed run past grading still hashes the input for the manifest
                self.sha256 = cutter.hexdigest()
        if self.inputs.labels is not None:
            self.inputs.labels.used |= self.labels_used
        self.state.set_phase("judging")
        judged = self._escalate()
        if isinstance(judged, BatchWait):
            self.state.set_phase("waiting")
            judged.out = self.opts.out
            return judged
        self.state.set_phase("finishing")
        return self._finish(judged)

    def _context(self, fmt: str | None) -> GradingContext:
        return GradingContext(
            tasks=self.taskset,
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
    def _grade(self, cutter: LineShards, progress: Progress | None, tick: Callable[[], None]) -> None:
        self.ctx = self._context(self.inputs.fmt)
        self.executor = make_executor(self.ctx, self.opts.workers, self.opts.ray_address, self.opts.ray)
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
            yield Shard(raw, first_item=guess + self.correction)
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
        rows = bytearray()
        for row, report_row in zip(result.rows, result.report_rows, strict=True):
            if isinstance(row, int):
                ref = (result.index, row)
                self.pending[ref] = result.pending[row]
                self.pending_rows[ref] = len(self.report_rows)
                rows += json.dumps({_PENDING: list(ref)}).encode() + b"\n"
            else:
                rows += row
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
            pending_items=result.pending_items,
            aggregate=result.aggregate,
            keys=result.keys,
            replay=result.replay,
            sha256=result.sha256,
            labels_used=sorted(result.labels_used),
            report_rows=result.report_rows,
        )
        self.state.append_shard(bytes(rows), record, {"bytes": self.bytes, "lines": self.lines, "items": self.items, "shards": self.shards})
        if self.shards % 8 == 0:
            _trim_heap()  # a shard's transient objects are gone: give their pages back before the next ones

    def _tally(self, replay: dict[str, Any], labels_used: set[str] | list[str]) -> None:
        self.replay_versions.update(replay.get("versions", {}))
        self.replay_hits += replay.get("reference_cache_hits", 0)
        self.labels_used.update(labels_used)

    def _grade_whole(self, progress: Progress | None) -> None:
        """Read the trajectories as one stream here (a JSON array, a bundle, an undetected
        format: nothing to cut), merged in batches as they come. Not resumable: such a run
        starts over; one past grading (judging, waiting for provider batches) is resumed by
        ``_restore_whole``."""
        self.state.data["whole_input"] = True
        self.state.data["whole_sha256"] = self.inputs.trajectories.hash()
        self.ctx = ctx = self._context(None)
        grader = ShardGrader(ctx, 0, 0)
        for loaded in self.inputs.whole_items():
            if not grader.add(loaded):
                break
            if grader.items >= self.opts.shard_lines:
                self._merge(_batch_shard(grader.index, grader.first_item), grader.result())
                if progress is not None:
                    progress(self.items)
        self._merge(_batch_shard(grader.index, grader.first_item), grader.result())
        if progress is not None:
            progress(self.items)

    # ---- resuming -------------------------------------------------------------------------------
    def _restore(self, cutter: LineShards) -> None:
        """Re-read the input up to where the interrupted run got, checking it reads the same
        bytes; rebuild its merged state and, from the same shards, the cases that wait for a judge
        (their deterministic checks: nothing decided is regraded, no judge is asked)."""
        ctx = self._context(self.inputs.fmt)
        for record in self.state.shard_records():
            try:
                raw = cutter.take(record.size, record.index, record.first_line)
            except EOFError:
                raw = None
            if raw is None or raw.sha256 != record.sha256:
                raise RunDirError(f"--resume: {self.name} does not hold the bytes the interrupted run graded; start over with --overwrite")
            pending_at = self._absorb(record)
            if record.pending_items:
                result = grade_shard(ctx, Shard(raw, first_item=record.first_item, only=frozenset(record.pending_items)))
                for local, case in enumerate(result.pending):
                    self.pending[(record.index, local)] = case
                    self.pending_rows[(record.index, local)] = pending_at[local]
            self.items = record.first_item + record.items
            self.lines = record.first_line - 1 + record.lines
            self.bytes += record.size
            self.shards = record.index + 1
        progress = self.state.data["trajectories"]
        if (self.bytes, self.items) != (progress["bytes"], progress["items"]):
            raise RunDirError("--resume: the run state is inconsistent; start over with --overwrite")

    def _absorb(self, record: ShardRecord) -> list[int]:
        """Merge a checkpointed shard's aggregate, ids, tallies and report rows; the positions in
        ``report_rows`` of its cases that wait for a judge."""
        self.agg.merge(record.aggregate)
        for key in record.keys:
            self.seen.setdefault(key[:2], key[2])
        self._tally(record.replay, record.labels_used)
        pending_at = [len(self.report_rows) + i for i, row in enumerate(record.report_rows) if row is None]
        self.report_rows.extend(record.report_rows)
        return pending_at

    def _restore_whole(self) -> None:
        """A run of an input read as one stream, past grading: check the input holds the same
        bytes, rebuild the merged state from the records and, reading the input again, the cases
        that wait for a judge (only those are graded again)."""
        if self.state.data.get("whole_sha256") != self.inputs.trajectories.hash():
            raise RunDirError(f"--resume: {self.name} does not hold the bytes the interrupted run graded; start over with --overwrite")
        refs: list[tuple[int, int]] = []
        items: list[int] = []
        for record in self.state.shard_records():
            pending_at = self._absorb(record)
            for local, item in enumerate(record.pending_items):
                refs.append((record.index, local))
                items.append(item)
                self.pending_rows[(record.index, local)] = pending_at[local]
            self.items = record.first_item + record.items
            self.shards = record.index + 1
        if self.items != self.state.data["trajectories"]["items"]:
            raise RunDirError("--resume: the run state is inconsistent; start over with --overwrite")
        if refs:
            grader = ShardGrader(self._context(None), 0, 0)
            wanted = frozenset(items)
            for loaded in self.inputs.whole_items():
                grader.add(loaded, wanted)
            if grader.pending_items != items:
                raise RunDirError(f"--resume: {self.name} no longer reads as the interrupted run read it; start over with --overwrite")
            self.pending.update(zip(refs, grader.pending, strict=True))

    # ---- escalation -------------------------------------------------------------------------
    def _escalate(self) -> dict[tuple[int, int], TrajectoryResult] | BatchWait:
        """Rounds in one event loop: each round asks every waiting case its next question, all in
        one concurrent batch (the panel's clients and rate limiters live across rounds). Each
        round's decisions are journaled before the next, so a resumed run replays them.

        With provider batches (the escalator has a ``batch`` flow) a round whose questions the
        cache cannot answer sends them as batches, journals their ids and returns a ``BatchWait``;
        resumed, the round's batches are polled, and once every one has ended their answers are
        collected and the round is decided again with them. A question the round still needs
        then (a tie-breaker) goes out as a new batch of the same round."""
        escalator = self.opts.escalator
        cases = self.pending
        ledger = self.controls
        waiting: list[dict[str, Any]] = []  # batches of the round in progress (journaled, not yet decided)
        decided = 0  # rounds decided so far (= the index of the round in progress)
        spent = 0.0  # by the journaled rounds: --max-cost caps the run, across its resumes
        for entry in self.state.rounds():
            if "batches" in entry:
                waiting.extend(entry["batches"])
                continue
            for (shard, local, ti, check), decision in zip(entry["asks"], entry["decisions"], strict=True):
                made = PanelDecision.model_validate(decision)
                spent += sum(v.cost_usd for v in made.votes if not v.cached)
                cases[(shard, local)].apply_decision(ti, Check(check), made, entry["panel"])
            if ledger is not None and entry.get("controls"):
                asked = [Control.from_json(c) for c in entry["controls"]]
                answers = [PanelDecision.model_validate(c["decision"]) for c in entry["controls"]]
                spent += sum(v.cost_usd for d in answers for v in d.votes if not v.cached)
                ledger.asked |= {c.request.rubric for c in asked}
                ledger.record(asked, answers, self._label_outcomes())
            waiting, decided = [], decided + 1
        count_spent = getattr(escalator, "count_spent", None)
        if spent and count_spent is not None:
            count_spent(spent)
        batch = getattr(escalator, "batch", None)
        if waiting and batch is None:
            raise RunDirError("--resume: this run waits for provider batches: resume it in batch mode (judge resume RUN_DIR)")
        if escalator is not None and cases:
            judging = self._judging(escalator, len(cases))

            async def rounds() -> BatchWait | None:
                nonlocal waiting, decided
                try:
                    while True:
                        asks = [(ref, *nxt) for ref, case in cases.items() if (nxt := case.next_escalation()) is not None]
                        if not asks:
                            return None
                        requests = [cases[ref].request_for(ti, check) for ref, ti, check in asks]
                        if waiting:
                            wait = await self._collect(batch, waiting, decided)
                            if wait is not None:
                                return wait
                        controls = ledger.for_round(requests, decided) if ledger is not None else []
                        if controls:  # shuffled among the real questions: position tells a judge nothing
                            assert ledger is not None
                            placed, where = ledger.shuffled(requests, controls, decided)
                            answered = await self._decide_watched(judging, placed, decided)
                            decisions = [answered[where[i]] for i in range(len(requests))]
                            checked = [answered[where[len(requests) + k]] for k in range(len(controls))]
                        else:
                            decisions, checked = await self._decide_watched(judging, requests, decided), []
                        if batch is not None and batch.deferred:
                            if ledger is not None:
                                ledger.asked -= {c.request.rubric for c in controls}  # asked again when the round is decided
                            return await self._submit(batch, escalator.name, len(asks) + len(controls), decided)
                        if batch is not None:
                            batch.forget_answers()
                        if ledger is not None:
                            ledger.record(controls, checked, self._label_outcomes())
                            redecide = getattr(escalator, "redecide")  # noqa: B009  (a Panel's; the ledger exists only with one)
                            decisions = [set_aside(d, ledger.gated(d.rubric or ""), ledger.threshold, redecide) for d in decisions]
                        for (ref, ti, check), decision in zip(asks, decisions, strict=True):
                            cases[ref].apply_decision(ti, check, decision, escalator.name)
                        entry: dict[str, Any] = {
                            "panel": escalator.name,
                            "asks": [[ref[0], ref[1], ti, check.value] for ref, ti, check in asks],
                            "decisions": [d.model_dump(mode="json") for d in decisions],
                        }
                        if controls:
                            entry["controls"] = [{**c.to_json(), "decision": d.model_dump(mode="json")} for c, d in zip(controls, checked, strict=True)]
                        self.state.append_round(entry)
                        waiting, decided = [], decided + 1
                finally:
                    close = getattr(judging, "aclose", None)
                    if close is not None:
                        await close()

            wait = asyncio.run(rounds())
            if wait is not None:
                return wait
        return {ref: case.result() for ref, case in cases.items()}

    async def _decide_watched(self, judging: Escalator, requests: list[Any], round_index: int) -> list[PanelDecision]:
        """``judging.decide(requests)``, telling ``on_judging`` where the round stands meanwhile."""
        report = self.on_judging
        if report is None:
            return await judging.decide(requests)
        stats = getattr(judging, "stats", None)
        base = getattr(judging, "answered", None)
        started = time.monotonic()

        def snapshot(done: bool = False) -> JudgingProgress:
            now = getattr(judging, "answered", None)
            answered = None if base is None or now is None else now - base
            if answered is not None and answered == 0 and not done and getattr(judging, "processes", 0):
                answered = None  # sharded: the workers' answers come back with the round
            return JudgingProgress(
                round=round_index + 1,
                questions=len(requests),
                answered=len(requests) if done else answered,
                calls=getattr(stats, "calls", 0),
                cached=getattr(stats, "cache_hits", 0),
                abstained=sum((getattr(stats, "abstentions", None) or {}).values()),
                cost_usd=getattr(stats, "cost_usd", 0.0),
                elapsed_s=time.monotonic() - started,
                done=done,
            )

        async def tick() -> None:
            while True:
                report(snapshot())
                await asyncio.sleep(TICK_S)

        ticker = asyncio.create_task(tick())
        try:
            decisions = await judging.decide(requests)
        finally:
            ticker.cancel()
        report(snapshot(done=True))
        return decisions

    @cached_property
    def controls(self) -> ControlLedger | None:
        """The run's control items (``pipelines.controls``): with a panel that can tally its votes
        again (``redecide``), unless ``[grading] controls = "off"``."""
        cfg = self.opts.config
        if self.opts.escalator is None or cfg.controls == "off" or getattr(self.opts.escalator, "redecide", None) is None:
            return None
        return ControlLedger(mode=cfg.controls, threshold=cfg.control_threshold, seed=cfg.seed)

    def _label_outcomes(self) -> dict[str, dict[str, Outcome]]:
        """Rubric -> label -> outcome, as the panel reads its verdicts."""
        rubric = getattr(self.opts.escalator, "rubric", None)
        if rubric is None or self.controls is None:
            return {}
        return {name: dict(rubric(name).label_outcomes) for name in self.controls.asked}

    def _judging(self, escalator: Escalator, waiting: int) -> Escalator:
        """What decides the rounds: the panel, or, with ``--workers N`` and a first round of at least
        ``judge_shard_min`` questions (one per waiting case), the panel sharded over N judge worker
        processes (``judge.llm.ShardedPanel``: forked here, before the rounds' event loop; rounds
        too small to pay for it stay with the panel). Not with ``--ray`` (the cluster's workers
        are not this machine's cores) nor for a panel built without recorded settings."""
        if self.opts.workers <= 1 or self.opts.ray or self.opts.judge_settings is None:
            return escalator
        from judge.llm import shard_panel

        return shard_panel(
            escalator, self.opts.judge_settings, self.opts.rubrics, self.opts.workers, first_round=waiting, min_requests=self.opts.judge_shard_min
        )

    async def _collect(self, batch: Any, journaled: list[dict[str, Any]], decided: int) -> BatchWait | None:
        """Poll the round's batches; once every one has ended, load their answers for the round."""
        from judge.llm import BatchRecord

        statuses = await batch.poll([BatchRecord.from_json(r) for r in journaled])
        if not all(s.ended for s in statuses):
            return BatchWait(round=decided + 1, batches=[s.describe() for s in statuses])
        await batch.collect(statuses, self.state.folder / "batches")
        return None

    async def _submit(self, batch: Any, panel: str, questions: int, decided: int) -> BatchWait:
        """Send the round's deferred questions as provider batches, journaling each as it is
        created (also those that went out before a submission failed: they are paid for, and
        collected on resume)."""

        def journal(record: Any) -> None:  # each batch the moment it exists: it is paid for
            self.state.append_round({"panel": panel, "round": decided, "questions": questions, "batches": [record.to_json()]})

        # a failed submission raises (BatchSubmitError) with the batches that went out journaled:
        # judge resume collects those and sends the rest
        records = await batch.submit(f"{self.opts.out.name} round {decided + 1}", journal)
        lines = [f"{r.api} batch {r.id}: submitted ({len(r.keys)} requests for {', '.join(r.judges)})" for r in records]
        return BatchWait(round=decided + 1, batches=lines, submitted=len(records))

    # ---- outputs --------------------------------------------------------------------------------
    def _finish(self, judged: dict[tuple[int, int], TrajectoryResult]) -> RunOutcome:
        out = self.opts.out
        staging = self.state.folder / "staging" / out.name  # named like the run: reports are titled by it
        staging.mkdir(parents=True, exist_ok=True)
        if judged:  # the rows with the judged results in place of their placeholders
            marker = b'{"' + _PENDING.encode()
            with open(self.state.partial_path, "rb") as src, open(staging / RESULTS, "wb") as dst:
                for line in src:
                    if line.startswith(marker):
                        shard, local = json.loads(line)[_PENDING]
                        dst.write(judged[(shard, local)].model_dump_json(exclude_none=True).encode("utf-8") + b"\n")
                    else:
                        dst.write(line)
        else:  # nothing waited for a judge: the rows are the results (copied in the kernel: 1.3 s less at 100k)
            shutil.copyfile(self.state.partial_path, staging / RESULTS)
        from reports import to_row

        pool: dict[Any, Any] = {}
        for ref, result in judged.items():
            self.agg.add(result)
            self.report_rows[self.pending_rows[ref]] = to_row(result, pool)
        if self.inputs.labels is not None and self.opts.labels is not None:
            self.agg.add_warnings(self.inputs.labels.unused(display_name(self.opts.labels)))
        if self.controls is not None:
            self.agg.judge_controls = self.controls.summary()
        text = self.agg.summary().to_json()
        self.agg = Aggregator(self.opts.config)  # the report reads results.jsonl itself: free the rows
        (staging / SUMMARY).write_text(text, encoding="utf-8")
        summary = RunSummary.model_validate_json(text)  # reports see exactly what summary.json holds, whoever renders them
        manifest = self._manifest(summary, _vote_origins(judged.values()))
        # the report needs none of the tasks, ids or cases: free them (and what still points at them) first
        del self.taskset
        self.inputs.taskset = TaskSet()
        self.ctx = self.executor = None
        self.seen, self.pending, judged = {}, {}, {}
        gc.collect()
        _trim_heap()
        _write_reports(summary, staging, self.report_rows)
        self.report_rows = []
        rest = sorted(p.name for p in staging.iterdir() if p.name not in (RESULTS, SUMMARY))
        files = RunDirectory(out).publish(staging, [RESULTS, SUMMARY, *rest])
        manifest["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
        atomic_write(out / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
        self.state.remove()
        files.insert(2, out / MANIFEST)
        return RunOutcome(summary=summary, out=out, files=files, resumed=self.resuming)

    def _manifest(self, summary: RunSummary, votes: dict[str, int]) -> dict[str, Any]:
        o = self.opts
        digests = self.inputs.digests
        inputs: list[dict[str, Any]] = [
            {"role": "tasks", "path": None if o.tasks is None else display_name(o.tasks), "format": o.task_format or "auto", "sha256": digests["tasks"]},
            {
                "role": "trajectories",
                "path": self.name,
                "format": o.trajectory_format or "auto",
                "sha256": self.sha256 or self.inputs.trajectories.hash(),
                **({"task_key": o.task_key} if o.task_key else {}),
            },
        ]
        for role, path in (("reference", o.reference), ("labels", o.labels), ("tool_specs", o.tool_specs)):
            if path is not None:
                inputs.append({"role": role, "path": display_name(path), "sha256": digests.get(role)})
        executor = self.executor
        return {
            "tool": "trajectory-judge",
            "complete": True,
            "versions": _versions(),
            "python": platform.python_version(),
            "command": o.command or sys.argv,
            "inputs": inputs,
            "tasks_loaded": len(self.taskset.tasks),
            "config": o.config.model_dump(mode="json"),
            "on_error": o.on_error,
            "strict": o.strict,
            "judges": None if o.escalator is None else self._judges_described(),
            "judge_answers": _answers_note(votes),
            "replay": None if o.replayer is None else self._replay_description(),
            "grading": {
                "executor": "in-process" if executor is None else executor.name,
                "workers": 1 if executor is None else executor.workers,
                "shards": self.shards,
                "note": "results.jsonl, summary.json and report.md do not depend on the executor or the number of workers",
            },
            "counts": summary.counts.model_dump(mode="json"),
            "started_at": self.state.data.get("started_at", self.started.isoformat(timespec="seconds")),
            "resumed_at": self.state.data.get("resumed_at", []),
        }

    def _judges_described(self) -> Any:
        """The panel as ``_describe`` gives it, and every provider batch the run sent (by round)."""
        described = _describe(self.opts.escalator, self.opts.rubrics)
        batches = [
            {"round": entry["round"] + 1, "api": b["api"], "id": b["id"], "judges": b["judges"], "requests": len(b["keys"]), "submitted_at": b["submitted_at"]}
            for entry in self.state.rounds()
            if "batches" in entry
            for b in entry["batches"]
        ]
        if batches and isinstance(described, dict):
            described["batches"] = batches
        return described

    def _replay_description(self) -> Any:
        described = _describe(self.opts.replayer)
        if isinstance(described, dict):
            described = {**described, "environments": dict(sorted(self.replay_versions.items())), "reference_cache_hits": self.replay_hits}
        return described


# ---- helpers ----------------------------------------------------------------------------------


def _trajectory_mode(path: Path, fmt: str | None, limits: Limits) -> tuple[str | None, bool]:
    """(streaming format, whole): whole=True when the input is read as one stream (a bundle read
    as a whole file, a JSON array, or no recognisable format), else it is cut into shards."""
    if fmt is not None:
        if isinstance(trajectory_format(fmt), BundleFormat):
            return None, True
        name = fmt
    else:
        try:
            name = detect_trajectory_format(path)
        except ValueError:
            return None, True  # every item will say why, as the reader of the whole file reports it
        if isinstance(trajectory_format(name), BundleFormat):
            return None, True
    return (None, True) if _starts_array(path) else (name, False)


def _tasks_in_shards(path: Path, opts: GradeOptions) -> bool:
    """Worker processes load the tasks too: a native JSONL tasks file, local workers that fork."""
    import multiprocessing

    if opts.workers <= 1 or opts.ray or "fork" not in multiprocessing.get_all_start_methods():
        return False
    try:
        fmt = opts.task_format or detect_task_format(path)
    except ValueError:
        return False  # the serial loader says why, as usual
    return fmt == "native" and not _starts_array(path)


def _starts_array(path: Path, budget: int = 1 << 20) -> bool:
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


def _batch_shard(index: int, first_item: int) -> Shard:
    return Shard(RawShard(index, b"", 0, 0, 0, 0, 0), first_item=first_item)


def _file_state(path: Path) -> tuple[int, int, int] | None:
    """What changes when a file is written: its size, modification time and inode (None: gone)."""
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_size, info.st_mtime_ns, info.st_ino


def _check_identity(before: dict[str, Any], now: dict[str, Any]) -> None:
    changed = sorted(k for k in set(before) | set(now) if before.get(k) != now.get(k))
    if changed:
        raise RunDirError(
            f"--resume: the interrupted run was started with other {', '.join(changed)}; resume with the same inputs and options, or start over with --overwrite"
        )


def _renaming(spooled: dict[str, str]) -> Callable[[str], str]:
    def fix(text: str) -> str:
        for tmp, shown in spooled.items():
            text = text.replace(tmp, shown)
        return text

    return fix


def _rename_spools(taskset: TaskSet, labels: LabelSet | None, inputs: list[TaskInput]) -> None:
    """Errors and sources must name an input as given (``-``), never its temporary spool."""
    spooled = {str(i.path): i.display for i in inputs}
    if not spooled:
        return
    fix = _renaming(spooled)

    def fix_info(info: Any) -> Any:
        return info.model_copy(update={"file": fix(info.file), "message": fix(info.message)})

    taskset.errors[:] = [fix_info(i) for i in taskset.errors]
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


def _renamed_loaded(loaded: Loaded, spooled: dict[str, str]) -> Loaded:
    fix = _renaming(spooled)
    source = loaded.source.model_copy(update={"file": fix(loaded.source.file)})
    error = None if loaded.error is None else loaded.error.model_copy(update={"file": fix(loaded.error.file), "message": fix(loaded.error.message)})
    warnings: list[InputWarning] = [w.model_copy(update={"file": fix(w.file), "message": fix(w.message)}) for w in loaded.warnings]
    return Loaded(source=source, trajectory=loaded.trajectory, error=error, task_id=loaded.task_id, trajectory_id=loaded.trajectory_id, warnings=warnings)


def _escalator_identity(escalator: Any) -> Any:
    if escalator is None:
        return None
    stats = getattr(escalator, "stats", None)
    return {
        "name": getattr(escalator, "name", type(escalator).__name__),
        "judges": getattr(stats, "judges", None),
        "rule": getattr(stats, "rule", None),
        "tie_breaker": getattr(stats, "tie_breaker", None),
        "mode": getattr(stats, "mode", None),  # batch answers are collected only by a run in batch mode
    }


def _vote_origins(results: Any) -> dict[str, int]:
    live = cached = 0
    for result in results:
        for turn in result.turns:
            for check in turn.checks:
                for vote in check.decision.votes if check.decision is not None else []:
                    if vote.cached:
                        cached += 1
                    else:
                        live += 1
    return {"live": live, "cached": cached}


def _answers_note(votes: dict[str, int]) -> dict[str, Any]:
    """What a rerun answered from the judge cache changes (issue 10 item 12)."""
    return {
        "live_votes": votes["live"],
        "cached_votes": votes["cached"],
        "differs_from_a_live_run_only_in": [
            "results.jsonl: each vote's cached flag and cost_usd, each result's judge_calls and judge_cost_usd",
            "summary.json: judges.calls, judges.cost_usd, judges.calls_per_100_trajectories",
            "report.md / report.html: the judge call and cost figures",
            "manifest.json: judge statistics and timestamps",
        ]
        if votes["cached"]
        else [],
    }


def _trim_heap() -> None:
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


def _write_reports(summary: RunSummary, out: Path, rows: list[Any]) -> list[Path]:
    from reports import write_reports

    return write_reports(summary, out, rows=rows)


def _versions() -> dict[str, str]:
    out = {}
    for name in ("trajectory-judge", "pydantic", "instructor", "openai", "anthropic", "numpy", "pandas", "scikit-learn"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def _describe(component: Any, rubric_table: Any = None) -> Any:
    """What the manifest records of a panel or replayer: its stats and, for judges, rubric versions
    (and where each rubric came from: built in, or a --rubrics file)."""
    describe = getattr(component, "describe", None)
    if callable(describe):
        return describe()
    out: dict[str, Any] = {"name": getattr(component, "name", type(component).__name__)}
    stats: Any = getattr(component, "stats", None)
    if hasattr(stats, "model_dump"):
        out["stats"] = stats.model_dump(mode="json")
        table = rubric_table or rubrics.RUBRICS
        out["rubrics"] = {name: rubric.version for name, rubric in sorted(table.items())}
        out["rubric_sources"] = {
            name: str(getattr(r, "source_path", None)) if r is not rubrics.RUBRICS.get(name) else "builtin" for name, r in sorted(table.items())
        }
    return out
