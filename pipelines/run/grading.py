"""The grading run: ingest -> deterministic checks (with replay) -> escalation rounds -> outputs.

Guarantees:
- every input trajectory yields exactly one line of ``results.jsonl``, in input order, graded or
  with its error (file, line, field); errors in the tasks file are listed in ``summary.json``;
- every input is read once from where it was given: a pipe or standard input (``-``) is spooled
  to a temporary file as it is read (see ``spool``), never read twice;
- the same inputs and config give byte-identical ``results.jsonl`` / ``summary.json`` /
  ``report.md`` whether graded in this process, by N worker processes or on a Ray cluster
  (JSONL inputs are cut into shards merged in input order, every cut checked; see ``shards``);
  timestamps live in ``manifest.json`` only;
- memory stays flat: tasks are kept packed, shards stream through, decided rows go to disk;
  only cases waiting for a judge are held;
- outputs are atomic, ``manifest.json`` comes last (``complete: true``), a directory never mixes
  runs, and an interrupted run can be resumed without regrading a decided trajectory or asking a
  judge again (see ``folder`` and ``state``);
- escalation happens here, in one place, one round at a time, whoever graded the shards; with
  provider batches (``--judge-mode batch``) a round's questions go out as batches, the run stops
  ``waiting`` (``run_grading`` returns a ``BatchWait``) and ``judge resume`` continues it, round by round, into the
  outputs an online run with the same answers writes.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from judge import ConfigurationError, Escalator
from pipelines.run.escalation import Escalation
from pipelines.run.folder import RunDirectory, RunDirError
from pipelines.run.inputs import RunInputs
from pipelines.run.lines import READ_BUFFER, LineShards
from pipelines.run.merge import Merger
from pipelines.run.options import BatchWait, GradeOptions, InputErrorsFound, JudgingProgress, Progress, RunOutcome
from pipelines.run.publish import Publisher
from pipelines.run.records import JudgesIdentity, LimitsRecord, ReferenceInput, RunIdentity, ShardSize, TasksInput, TrajectoriesInput
from pipelines.run.spool import InputChanged, display_name
from pipelines.run.state import RunState, forks_die_with_this_process

__all__ = ["run_grading"]


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
    cannot be used; a ``UsageError`` for a trajectories input that holds none, unless ``opts.empty_ok``:
    raised, as the others, before ``opts.out`` is touched). With provider batches (``--judge-mode batch``) the run may stop to wait for
    them: then it returns a ``BatchWait`` and publishes nothing (resume it: ``resume=True``).
    """
    started = datetime.now(UTC)
    rundir = RunDirectory(opts.out)
    resuming = rundir.prepare(overwrite=opts.overwrite, resume=opts.resume, dry_run=True)
    with forks_die_with_this_process(), RunInputs(opts) as inputs:  # loading forks too (task_shards), before --out is held
        if opts.on_error == "fail" and inputs.errors():
            raise InputErrorsFound(inputs.errors()[0])
        created = not Path(opts.out).exists()
        try:
            rundir.state.hold()  # this process owns --out from here on: nothing is cleared under another live run
        except RunDirError:
            if created and Path(opts.out).is_dir() and not any(Path(opts.out).iterdir()):
                Path(opts.out).rmdir()
            raise
        try:
            rundir.prepare(overwrite=opts.overwrite, resume=opts.resume)
            run = _Run(opts, inputs, rundir.state, started, resuming, on_judging)
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


class _Run:
    """One grading run: shards in, merged in order (``Merger``), escalated (``Escalation``),
    published (``Publisher``)."""

    def __init__(
        self, opts: GradeOptions, inputs: RunInputs, state: RunState, started: datetime, resuming: bool, on_judging: Callable[[JudgingProgress], None] | None
    ):
        self.opts = opts
        self.inputs = inputs
        self.state = state
        self.started = started
        self.resuming = resuming
        self.name = inputs.name
        self.merged = Merger(opts, inputs, state)
        self.escalation = Escalation(opts, state, on_judging)

    # ---- identity -------------------------------------------------------------------------------
    def identity(self) -> RunIdentity:
        """What must be equal for an interrupted run to be continued with these options."""
        o = self.opts
        digests = self.inputs.digests
        return RunIdentity(
            tasks=TasksInput(path=None if o.tasks is None else display_name(o.tasks), sha256=digests["tasks"], format=o.task_format),
            reference=None if o.reference is None else ReferenceInput(path=display_name(o.reference), sha256=digests["reference"]),
            extra_inputs={k: v for k, v in sorted(digests.items()) if k not in ("tasks", "reference")},
            trajectories=TrajectoriesInput(path=self.name, format=o.trajectory_format, task_key=o.task_key or None),
            config=o.config,
            on_error=o.on_error,
            strict=o.strict,
            limits=LimitsRecord(max_line_bytes=o.limits.max_line_bytes, max_string_bytes=o.limits.max_string_bytes),
            replay=o.replayer is not None,
            judges=_escalator_identity(o.escalator),
            shards=ShardSize(lines=o.shard_lines, bytes=o.shard_bytes),
        )

    # ---- the run --------------------------------------------------------------------------------
    def execute(self, progress: Progress | None, on_bytes: Callable[[int, int], None] | None) -> RunOutcome | BatchWait:
        if self.resuming:
            record = self.state.load()
            _check_identity(record.identity, self.identity())
            record.resumed_at.append(datetime.now(UTC).isoformat(timespec="seconds"))
            self.state.save()
        else:
            from pipelines.run.options import recipe

            self.state.start(self.identity(), self.started.isoformat(timespec="seconds"), recipe(self.opts))
        if self.inputs.whole:
            if not self.resuming:
                self.merged.grade_whole(progress)
            elif self.state.record.phase == "grading":
                raise RunDirError(
                    f"--resume: {self.name} is read as one stream (a JSON array, a bundle, an undetected format) and was interrupted while grading: start over with --overwrite"
                )
            else:
                self.merged.restore_whole()
        else:
            path = self.inputs.trajectories.path
            before = _file_state(path)
            total = path.stat().st_size
            with open(path, "rb", buffering=READ_BUFFER) as stream:
                cutter = LineShards(stream, self.opts.shard_lines, self.opts.shard_bytes, self.opts.limits.max_line_bytes)
                if self.resuming:
                    self.merged.restore(cutter)
                if self.state.record.phase == "grading":
                    self.merged.grade(cutter, progress, lambda: on_bytes(cutter.bytes_read, total) if on_bytes is not None else None)
                    if cutter.source is not None and _file_state(path) != before:  # workers read after the cutter hashed
                        raise InputChanged(f"{self.name} changed while it was graded (its size, modification time or inode); grade a copy that does not change")
                cutter.drain()  # a resumed run past grading still hashes the input for the manifest
                self.merged.sha256 = cutter.hexdigest()
        if self.inputs.labels is not None:
            self.inputs.labels.used |= self.merged.labels_used
        self.state.set_phase("judging")
        judged = self.escalation.run(self.merged.pending)
        if isinstance(judged, BatchWait):
            self.state.set_phase("waiting")
            judged.out = self.opts.out
            return judged
        self.state.set_phase("finishing")
        publisher = Publisher(self.opts, self.inputs, self.state, self.merged, self.escalation.controls, self.started, self.resuming)
        return publisher.finish(judged)


def _file_state(path: Path) -> tuple[int, int, int] | None:
    """What changes when a file is written: its size, modification time and inode (None: gone)."""
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_size, info.st_mtime_ns, info.st_ino


def _check_identity(before: RunIdentity, now: RunIdentity) -> None:
    changed = before.changed(now)
    if changed:
        raise RunDirError(
            f"--resume: the interrupted run was started with other {', '.join(changed)}; resume with the same inputs and options, or start over with --overwrite"
        )


def _escalator_identity(escalator: Escalator | None) -> JudgesIdentity | None:
    if escalator is None:
        return None
    stats = getattr(escalator, "stats", None)
    judges = getattr(stats, "judges", None)
    return JudgesIdentity(
        name=getattr(escalator, "name", type(escalator).__name__),
        judges=None if judges is None else [str(j) for j in judges],
        rule=getattr(stats, "rule", None),
        tie_breaker=getattr(stats, "tie_breaker", None),
        mode=getattr(stats, "mode", None),  # batch answers are collected only by a run in batch mode
    )
