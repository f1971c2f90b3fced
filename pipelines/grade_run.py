"""The grading run: ingest -> deterministic checks (with replay) -> escalation rounds -> outputs.

Guarantees:
- every input trajectory yields exactly one line of ``results.jsonl``, in input order, graded or
  with its error (file, line, field); errors in the tasks file are listed in ``summary.json``;
- every input is read once (a pipe or standard input works like a file; see ``run_inputs``);
- the same inputs and config give byte-identical ``results.jsonl`` / ``summary.json`` /
  ``report.md`` whether graded in this process, by N worker processes or on a Ray cluster
  (shards merged in input order, every cut checked; see ``shards``), and timestamps live in
  ``manifest.json`` only;
- memory stays flat: tasks are kept packed, shards stream through, decided rows go to disk;
  only cases waiting for a judge are held;
- outputs are atomic and a directory never mixes runs; an interrupted run can be resumed without
  regrading a decided trajectory or asking a judge again (see ``run_dir``);
- escalation happens here, in one place, one round at a time, whoever graded the shards.
"""

from __future__ import annotations

import asyncio
import json
import platform
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

import rubrics
from judge import Escalator, InputErrorInfo, PanelDecision, TrajectoryResult
from pipelines.aggregate import Aggregator
from pipelines.config import GradingConfig
from pipelines.executors import Executor, make_executor
from pipelines.grade_case import GradedCase
from pipelines.ingest import Limits, TaskSet, iter_trajectories, load_tasks
from pipelines.run_dir import MANIFEST, REPORT_MD, RESULTS, SUMMARY, RunDirectory, RunDirError, RunState, ShardRecord, atomic_write
from pipelines.run_inputs import LineShards, RawShard, TaskInput, display_name, open_stream
from pipelines.shards import GradingContext, Shard, ShardResult, grade_shard

__all__ = ["MANIFEST", "REPORT_MD", "RESULTS", "SUMMARY", "GradeOptions", "InputErrorsFound", "RunDirError", "RunOutcome", "run_grading"]

_PENDING = "__pending__"
_DETECT_BUFFER = 64 << 20  # bytes of shards held while looking for the first object (format detection)


class InputErrorsFound(Exception):
    """Raised with ``--on-error fail`` at the first bad input item."""

    def __init__(self, info: InputErrorInfo):
        super().__init__(info.render())
        self.info = info


@dataclass
class GradeOptions:
    tasks: Path
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
    workers: int = 1  # processes grading shards (the CLI defaults to the machine's cores)
    ray: bool = False  # grade shards on a Ray cluster instead
    ray_address: str | None = None  # None: a local Ray instance; "auto" / "ray://host:port": a cluster
    overwrite: bool = False  # replace another run's files in ``out``
    resume: bool = False  # continue the interrupted run in ``out``
    shard_lines: int = 1000  # lines per shard (a shard is the unit of work of a worker)
    shard_bytes: int = 8 << 20


@dataclass
class RunOutcome:
    summary: dict[str, Any]
    out: Path
    files: list[Path]
    resumed: bool = False


Progress = Callable[[int], None]


def run_grading(opts: GradeOptions, progress: Progress | None = None, on_bytes: Callable[[int], None] | None = None) -> RunOutcome:
    """Grade ``opts.trajectories`` against ``opts.tasks`` into ``opts.out``.

    ``progress(n)`` is told the number of trajectories done; ``on_bytes(n)`` the bytes of the
    trajectories input read. Raises ``RunDirError`` (the output directory cannot take the run),
    ``InputErrorsFound`` (``on_error="fail"``) and ``ValueError`` (a format cannot be used).
    """
    started = datetime.now(UTC)
    rundir = RunDirectory(opts.out)
    resuming = rundir.prepare(overwrite=opts.overwrite, resume=opts.resume, dry_run=True)
    spool_dir = Path(tempfile.mkdtemp(prefix="judge-inputs-"))
    tasks_in = TaskInput.open(opts.tasks, spool_dir)
    reference_in = TaskInput.open(opts.reference, spool_dir) if opts.reference is not None else None
    try:
        taskset = load_tasks(tasks_in.path, opts.task_format, None if reference_in is None else reference_in.path, opts.limits)
        _rename_spools(taskset, [tasks_in] + ([reference_in] if reference_in is not None else []))
        digests = {"tasks": tasks_in.hash(), "reference": None if reference_in is None else reference_in.hash()}
    finally:
        tasks_in.close()
        if reference_in is not None:
            reference_in.close()
        spool_dir.rmdir()
    if opts.on_error == "fail" and taskset.errors:
        raise InputErrorsFound(taskset.errors[0])
    rundir.prepare(overwrite=opts.overwrite, resume=opts.resume)
    run = _Run(opts, taskset, rundir.state, digests, started, resuming)
    try:
        outcome = run.execute(progress, on_bytes)
    except InputErrorsFound:
        rundir.state.remove()  # the run stopped on purpose: nothing of it is kept
        raise
    return outcome


class _Run:
    """One grading run: shards in, merged in order, escalated, published."""

    def __init__(self, opts: GradeOptions, taskset: TaskSet, state: RunState, digests: dict[str, str | None], started: datetime, resuming: bool):
        self.opts = opts
        self.taskset = taskset
        self.state = state
        self.digests = digests
        self.started = started
        self.resuming = resuming
        self.name = display_name(opts.trajectories)
        self.agg = Aggregator(opts.config)
        for info in taskset.errors:
            self.agg.add_task_error(info)
        self.seen: dict[tuple[str, str], int | None] = {}
        self.pending: dict[tuple[int, int], GradedCase] = {}
        self.items = 0  # items merged so far (= the index of the next shard's first item)
        self.lines = 0
        self.bytes = 0
        self.shards = 0
        self.correction = 0  # learnt difference between items and non-blank lines (item index guesses)
        self.replay_versions: dict[str, str] = {}
        self.replay_hits = 0
        self.sha256: str | None = None
        self.guesses: dict[int, int] = {}  # shard index -> the first item index guessed for it
        self.ctx: GradingContext | None = None
        self.executor: Executor | None = None

    # ---- identity -------------------------------------------------------------------------------
    def identity(self) -> dict[str, Any]:
        """What must be equal for an interrupted run to be continued with these options."""
        o = self.opts
        return {
            "tasks": {"path": display_name(o.tasks), "sha256": self.digests["tasks"], "format": o.task_format},
            "reference": None if o.reference is None else {"path": display_name(o.reference), "sha256": self.digests["reference"]},
            "trajectories": {"path": self.name, "format": o.trajectory_format},
            "config": o.config.model_dump(mode="json"),
            "on_error": o.on_error,
            "limits": {"max_line_bytes": o.limits.max_line_bytes, "max_string_bytes": o.limits.max_string_bytes},
            "replay": o.replayer is not None,
            "judges": _escalator_identity(o.escalator),
            "shards": {"lines": o.shard_lines, "bytes": o.shard_bytes},
        }

    # ---- the run --------------------------------------------------------------------------------
    def execute(self, progress: Progress | None, on_bytes: Callable[[int], None] | None) -> RunOutcome:
        identity = self.identity()
        if self.resuming:
            data = self.state.load()
            _check_identity(data["identity"], identity)
            data["resumed_at"].append(datetime.now(UTC).isoformat(timespec="seconds"))
            self.state.save()
        else:
            self.state.start(identity, self.started.isoformat(timespec="seconds"))
        with open_stream(self.opts.trajectories) as stream:
            cutter = LineShards(stream, self.opts.shard_lines, self.opts.shard_bytes, self.opts.limits.max_line_bytes)
            shards = self._restore(cutter) if self.resuming else iter(())
            if self.state.data["phase"] == "grading":
                self._grade(cutter, shards, progress, on_bytes)
            else:
                for _ in shards:  # the records were read and checked; finish reading (hashing) the input
                    pass
                cutter.drain()
            self.sha256 = cutter.hexdigest()
        self.state.set_phase("judging")
        judged = self._escalate()
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
        )

    # ---- grading: shards in, merged in input order ----------------------------------------------
    def _grade(self, cutter: LineShards, restored: Iterator[Any], progress: Progress | None, on_bytes: Callable[[int], None] | None) -> None:
        for _ in restored:  # shards merged before the interruption: state and pending cases rebuilt
            pass
        raws = cutter.shards(first_line=self.lines + 1, first_index=self.shards)
        fmt = self.state.data.get("format") or self.opts.trajectory_format
        buffered: list[RawShard] = []
        if fmt is None:
            detected, buffered = self._detect(raws)
            if detected is None:  # read as one stream: a JSON array, or no recognisable object
                self._grade_whole(buffered, raws, progress, on_bytes, cutter)
                return
            fmt = self.state.data["format"] = detected
        self.ctx = self._context(fmt)
        self.executor = make_executor(self.ctx, self.opts.workers, self.opts.ray_address, self.opts.ray)
        try:
            results = self.executor.ordered(self._submissions(_chain(buffered, raws)))
            for shard, result in results:
                shard, result = self._settle(shard, result, results)
                self._merge(shard, result)
                if progress is not None:
                    progress(self.items)
                if on_bytes is not None:
                    on_bytes(cutter.bytes_read)
        finally:
            self.executor.close()

    def _submissions(self, raws: Iterator[RawShard]) -> Iterator[Shard]:
        """Shards with a guess of their first item index (items are lines in a plain JSONL file;
        each merge corrects the guesses of the shards not yet handed out)."""
        guess = self.items
        for raw in raws:
            self.guesses[raw.index] = guess
            yield Shard(raw, first_item=guess + self.correction)
            guess += raw.nonblank

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
                    shard = Shard(_join(shard.raw, following[0].raw), first_item=self.items)
                    joined += 1
                    redo = True
            if not redo:
                break
            shard = Shard(shard.raw, first_item=self.items, seen=conflicts or None)
            result = grade_shard(self.ctx, shard)
        guess = self.guesses.pop(first, self.items)
        for index in range(first + 1, first + 1 + joined):
            self.guesses.pop(index, None)
        self.correction = (self.items + result.items) - (guess + shard.raw.nonblank)
        return shard, result

    def _merge(self, shard: Shard, result: ShardResult, checkpoint: bool = True) -> None:
        if result.first_error is not None:
            raise InputErrorsFound(result.first_error)
        rows = bytearray()
        for row in result.rows:
            if isinstance(row, int):
                ref = (result.index, row)
                self.pending[ref] = result.pending[row]
                rows += json.dumps({_PENDING: list(ref)}).encode() + b"\n"
            else:
                rows += row
        self.agg.merge(result.aggregate)
        for key in result.keys:
            self.seen.setdefault(key[:2], key[2])
        self._tally_replay(result.replay)
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
            sha256=raw.sha256,
        )
        progress = {"bytes": self.bytes, "lines": self.lines, "items": self.items, "shards": self.shards}
        self.state.append_shard(bytes(rows), record, progress)

    def _tally_replay(self, replay: dict[str, Any]) -> None:
        self.replay_versions.update(replay.get("versions", {}))
        self.replay_hits += replay.get("reference_cache_hits", 0)

    def _detect(self, raws: Iterator[RawShard]) -> tuple[str | None, list[RawShard]]:
        """The format, from the first readable object, and the shards read to find it; None
        when the input must be read as one stream (a JSON array; no recognisable object)."""
        from pipelines.ingest import TRAJECTORY_FORMATS
        from pipelines.ingest._reader import read_items
        from pipelines.ingest._registry import sniff_trajectory
        from pipelines.shards import ShardStream

        held: list[RawShard] = []
        size = 0
        for raw in raws:
            held.append(raw)
            size += raw.size
            if len(held) == 1 and _starts_array(raw):
                return None, held
            for item in read_items(ShardStream(raw, self.name), self.opts.limits, (raw.first_line, 0, raw.first_byte)):
                if item.error is None and isinstance(item.value, dict):
                    name = sniff_trajectory(item.value)
                    return (name if name in TRAJECTORY_FORMATS else None), held
            if size > _DETECT_BUFFER:
                break
        return None, held

    def _grade_whole(
        self, held: list[RawShard], raws: Iterator[RawShard], progress: Progress | None, on_bytes: Callable[[int], None] | None, cutter: LineShards
    ) -> None:
        """Read the whole input as one stream here, the reader detecting the format itself;
        rows are merged in batches as they come (such a run cannot be resumed: it starts over)."""
        from pipelines.shards import ShardGrader, ShardStream

        self.state.data["whole_input"] = True
        self.ctx = ctx = self._context(None)
        stream = ShardStream(_chain(held, raws), self.name)
        grader = ShardGrader(ctx, self.shards, 0)
        batch = 0
        for loaded in iter_trajectories(stream, None, ctx.limits):
            batch += 1
            if not grader.add(loaded):
                break
            if batch >= self.opts.shard_lines:
                self._merge_batch(grader.result(), progress, on_bytes, cutter)
                batch = 0
        self._merge_batch(grader.result(), progress, on_bytes, cutter)

    def _merge_batch(self, result: ShardResult, progress: Progress | None, on_bytes: Callable[[int], None] | None, cutter: LineShards) -> None:
        self._merge(Shard(RawShard(result.index, b"", 0, 0, 0, 0, 0), first_item=result.first_item), result)
        if progress is not None:
            progress(self.items)
        if on_bytes is not None:
            on_bytes(cutter.bytes_read)

    # ---- resuming -------------------------------------------------------------------------------
    def _restore(self, cutter: LineShards) -> Iterator[None]:
        """Re-read the input up to where the interrupted run got, checking it is the same bytes;
        rebuild its merged state and, from the same shards, the cases that wait for a judge."""
        if self.state.data.get("whole_input"):
            raise RunDirError(
                f"--resume: {self.name} was read as one stream (a JSON array or an undetected format), which cannot be resumed; start over with --overwrite"
            )
        fmt = self.state.data.get("format") or self.opts.trajectory_format
        ctx = self._context(fmt)
        for record in self.state.shard_records():
            try:
                raw = cutter.take(record.size, record.index, record.first_line)
            except EOFError:
                raw = None
            if raw is None or raw.sha256 != record.sha256:
                raise RunDirError(f"--resume: {self.name} does not hold the bytes the interrupted run graded; start over with --overwrite")
            self.agg.merge(record.aggregate)
            for key in record.keys:
                self.seen.setdefault(key[:2], key[2])
            self._tally_replay(record.replay)
            if record.pending_items:  # rebuild the waiting cases (their deterministic checks)
                result = grade_shard(ctx, Shard(raw, first_item=record.first_item, only=frozenset(record.pending_items)))
                for local, case in enumerate(result.pending):
                    self.pending[(record.index, local)] = case
            self.items = record.first_item + record.items
            self.lines = record.first_line - 1 + record.lines
            self.bytes += record.size
            self.shards = record.index + 1
            yield None
        if (self.bytes, self.items) != (self.state.data["trajectories"]["bytes"], self.state.data["trajectories"]["items"]):
            raise RunDirError("--resume: the run state is inconsistent; start over with --overwrite")

    # ---- escalation -------------------------------------------------------------------------
    def _escalate(self) -> dict[tuple[int, int], TrajectoryResult]:
        """Rounds in one event loop: each round asks every waiting case its next question, all in
        one concurrent batch (the panel's clients and rate limiters live across rounds). Each
        round's decisions are journaled before the next, so a resumed run replays them."""
        escalator = self.opts.escalator
        cases = self.pending
        for entry in self.state.rounds():
            for (shard, local, ti, check), decision in zip(entry["asks"], entry["decisions"], strict=True):
                cases[(shard, local)].apply_decision(ti, _check(check), PanelDecision.model_validate(decision), entry["panel"])
        if escalator is not None and cases:

            async def rounds() -> None:
                try:
                    while True:
                        asks = [(ref, *nxt) for ref, case in cases.items() if (nxt := case.next_escalation()) is not None]
                        if not asks:
                            return
                        requests = [cases[ref].request_for(ti, check) for ref, ti, check in asks]
                        decisions = await escalator.decide(requests)
                        for (ref, ti, check), decision in zip(asks, decisions, strict=True):
                            cases[ref].apply_decision(ti, check, decision, escalator.name)
                        self.state.append_round(
                            {
                                "panel": escalator.name,
                                "asks": [[ref[0], ref[1], ti, check.value] for ref, ti, check in asks],
                                "decisions": [d.model_dump(mode="json") for d in decisions],
                            }
                        )
                finally:
                    close = getattr(escalator, "aclose", None)
                    if close is not None:
                        await close()

            asyncio.run(rounds())
        return {ref: case.result() for ref, case in cases.items()}

    # ---- outputs --------------------------------------------------------------------------------
    def _finish(self, judged: dict[tuple[int, int], TrajectoryResult]) -> RunOutcome:
        out = self.opts.out
        staging = self.state.folder / "staging" / out.name
        staging.mkdir(parents=True, exist_ok=True)
        with open(self.state.partial_path, "rb") as src, open(staging / RESULTS, "wb") as dst:
            for line in src:
                if line.startswith(b'{"' + _PENDING.encode()):
                    ref = tuple(json.loads(line)[_PENDING])
                    dst.write(judged[ref].model_dump_json(exclude_none=True).encode("utf-8") + b"\n")  # type: ignore[index]
                else:
                    dst.write(line)
        for result in judged.values():
            self.agg.add(result)
        text = json.dumps(self.agg.summary(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        self.agg = Aggregator(self.opts.config)  # the report reads results.jsonl itself: free the rows
        (staging / SUMMARY).write_text(text, encoding="utf-8")
        summary = json.loads(text)  # reports see exactly what summary.json holds, whoever renders them
        votes = _vote_origins(judged.values())
        manifest = self._manifest(summary, votes)
        tasks_loaded = len(self.taskset.tasks)
        del self.taskset
        _write_reports(summary, staging)
        files = RunDirectory(out).publish(staging, [RESULTS, SUMMARY, *sorted(p.name for p in staging.iterdir() if p.name not in (RESULTS, SUMMARY))])
        manifest["tasks_loaded"] = tasks_loaded
        manifest["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
        atomic_write(out / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
        self.state.remove()
        order = {RESULTS: 0, SUMMARY: 1, MANIFEST: 2}
        files.append(out / MANIFEST)
        files.sort(key=lambda p: (order.get(p.name, 3), p.name))
        return RunOutcome(summary=summary, out=out, files=files, resumed=self.resuming)

    def _manifest(self, summary: dict[str, Any], votes: dict[str, int]) -> dict[str, Any]:
        o = self.opts
        inputs: list[dict[str, Any]] = [
            {"role": "tasks", "path": display_name(o.tasks), "format": o.task_format or "auto", "sha256": self.digests["tasks"]},
            {"role": "trajectories", "path": self.name, "format": o.trajectory_format or "auto", "sha256": self.sha256},
        ]
        if o.reference is not None:
            inputs.append({"role": "reference", "path": display_name(o.reference), "sha256": self.digests["reference"]})
        executor = self.executor
        return {
            "tool": "trajectory-judge",
            "complete": True,
            "versions": _versions(),
            "python": platform.python_version(),
            "command": o.command or sys.argv,
            "inputs": inputs,
            "config": o.config.model_dump(mode="json"),
            "on_error": o.on_error,
            "judges": None if o.escalator is None else _describe(o.escalator),
            "judge_answers": _answers_note(votes),
            "replay": None if o.replayer is None else self._replay_description(),
            "grading": {
                "executor": "in-process" if executor is None else executor.name,
                "workers": 1 if executor is None else executor.workers,
                "shards": self.shards,
                "note": "results.jsonl, summary.json and report.md do not depend on the executor or the number of workers",
            },
            "counts": summary["counts"],
            "started_at": self.state.data.get("started_at", self.started.isoformat(timespec="seconds")),
            "resumed_at": self.state.data.get("resumed_at", []),
        }

    def _replay_description(self) -> Any:
        described = _describe(self.opts.replayer)
        if isinstance(described, dict):
            described = {**described, "environments": dict(sorted(self.replay_versions.items())), "reference_cache_hits": self.replay_hits}
        return described


# ---- helpers ----------------------------------------------------------------------------------


def _chain(first: list[RawShard], rest: Iterator[RawShard]) -> Iterator[RawShard]:
    yield from first
    yield from rest


def _join(a: RawShard, b: RawShard) -> RawShard:
    shift = len(a.data)
    return RawShard(
        index=a.index,
        data=a.data + b.data,
        first_line=a.first_line,
        first_byte=a.first_byte,
        lines=a.lines + b.lines,
        nonblank=a.nonblank + b.nonblank,
        size=a.size + b.size,
        virtual=a.virtual + tuple((at + shift, size, nl) for at, size, nl in b.virtual),
    )


def _starts_array(raw: RawShard) -> bool:
    """The first line a reader decodes that is not blank starts a JSON array (the reader then
    reads the whole file as one array)."""
    for number, line in enumerate(raw.data.splitlines()):
        if number == 0 and raw.first_byte == 0 and line.startswith(b"\xef\xbb\xbf"):
            line = line[3:]
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            continue
        if text.strip():
            return text.lstrip(" \t\r\n").startswith("[")
    return False


def _check(value: str) -> Any:
    from judge import Check

    return Check(value)


def _check_identity(before: dict[str, Any], now: dict[str, Any]) -> None:
    changed = sorted(k for k in set(before) | set(now) if before.get(k) != now.get(k))
    if changed:
        raise RunDirError(
            f"--resume: the interrupted run was started with other {', '.join(changed)}; resume with the same inputs and options, or start over with --overwrite"
        )


def _rename_spools(taskset: TaskSet, inputs: list[TaskInput]) -> None:
    """Errors and sources must name an input as given (``-``), never its temporary spool."""
    spooled = {str(i.path): i.display for i in inputs if i.spooled}
    if not spooled:
        return

    def fix(text: str) -> str:
        for tmp, shown in spooled.items():
            text = text.replace(tmp, shown)
        return text

    def fix_info(info: InputErrorInfo) -> InputErrorInfo:
        return info.model_copy(update={"file": fix(info.file), "message": fix(info.message)})

    taskset.errors[:] = [fix_info(i) for i in taskset.errors]
    for table in (taskset.ambiguous, taskset.invalid):
        for key, info in list(table.items()):
            table[key] = fix_info(info)
    for tid in list(taskset.sources):
        source = taskset.sources[tid]
        if source.file in spooled:
            taskset.sources[tid] = source.model_copy(update={"file": spooled[source.file]})


def _escalator_identity(escalator: Any) -> Any:
    if escalator is None:
        return None
    stats = getattr(escalator, "stats", None)
    return {
        "name": getattr(escalator, "name", type(escalator).__name__),
        "judges": getattr(stats, "judges", None),
        "rule": getattr(stats, "rule", None),
        "tie_breaker": getattr(stats, "tie_breaker", None),
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
    """What a rerun answered from the judge cache may change (issue 10 item 12)."""
    return {
        **votes,
        "differs_from_a_live_run_only_in": [
            "results.jsonl: each vote's cached flag and cost_usd, each result's judge_calls and judge_cost_usd",
            "summary.json: judges.calls, judges.cost_usd, judges.calls_per_100_trajectories",
            "report.md / report.html: the judge call and cost figures",
            "manifest.json: judge statistics and timestamps",
        ]
        if votes["cached"]
        else [],
    }


def _write_reports(summary: dict[str, Any], out: Path) -> list[Path]:
    from reports import write_reports

    return write_reports(summary, out)


def _versions() -> dict[str, str]:
    out = {}
    for name in ("trajectory-judge", "pydantic", "instructor", "openai", "anthropic", "numpy", "pandas", "scikit-learn"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def _describe(component: Any) -> Any:
    """What the manifest records of a panel or replayer: its stats and, for judges, rubric versions."""
    describe = getattr(component, "describe", None)
    if callable(describe):
        return describe()
    out: dict[str, Any] = {"name": getattr(component, "name", type(component).__name__)}
    stats = getattr(component, "stats", None)
    if hasattr(stats, "model_dump"):
        out["stats"] = stats.model_dump(mode="json")
        out["rubrics"] = {name: rubric.version for name, rubric in sorted(rubrics.RUBRICS.items())}
    return out
