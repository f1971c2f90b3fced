"""The run state (``.judge-run/`` in ``--out``): what lets an interrupted run continue without
regrading a decided trajectory or asking a judge again. It is removed when the run completes.

Files of the run state, all append-only or replaced atomically:
Every file holds typed JSON records (``pipelines.run.records``), each with its version; nothing
the run reads back is a pickle or anything else that runs code when read.

- ``state.json``: what the run is (its identity: inputs, options), how far it got (``phase``:
  grading -> judging -> finishing, or ``waiting`` for provider batches) and how to start it again
  (``recipe``: the options as given, for ``judge resume``);
- ``results.partial``: decided result lines in input order, a placeholder per waiting case;
- ``shards.jsonl``: per merged shard, a ``ShardRecord`` line: where it lay, how many rows it wrote,
  the ids it read, its pending cases' item indices, its input warnings (truncated to the last
  checkpoint on resume; the merged aggregate is rebuilt from the rows, see ``pipelines.run.merge``);
- ``decisions.jsonl``: per escalation round, the questions and the panel's decisions (``DecidedRound``); a round
  that waits for provider batches has entries with the batches' ids (``SubmittedBatches``) and no decisions
  until it is decided;
- ``batches/``: result files of ended provider batches, downloaded once;
- ``spent.jsonl``: every live judge call, appended as it is launched and as its cost is counted, by
  every process judging (``judge.llm._spend``); never cut back on resume: what a stopped round paid
  is what ``--max-cost`` must still count (``spent_bytes``: the part paid for journaled rounds);
The run folder itself (``--out``) is locked by the one process working on the run (``RunState.hold``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import orjson

from pipelines.run.records import (
    JOURNAL_VERSION,
    SHARD_RECORD_VERSION,
    STATE_VERSION,
    DecidedRound,
    InputProgress,
    JournalEntry,
    Phase,
    Recipe,
    RecordError,
    RunDirError,
    RunIdentity,
    RunStateRecord,
    ShardRecord,
    SubmittedBatches,
    dump_line,
    parse_record,
)

__all__ = ["STATE_DIR", "RunDirError", "RunState", "ShardRecord", "atomic_write", "forks_die_with_this_process"]

STATE_DIR = ".judge-run"
_START_OVER = "start over with --overwrite"


def atomic_write(path: Path, data: str | bytes) -> None:
    """Write ``data`` to ``path`` under a temporary name in the same folder, then rename."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "wb") as fh:
        fh.write(data.encode("utf-8") if isinstance(data, str) else data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


class RunState:
    """The run state folder of one run (see the module docstring)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.state_path = folder / "state.json"
        self.partial_path = folder / "results.partial"
        self.shards_path = folder / "shards.jsonl"
        self.decisions_path = folder / "decisions.jsonl"
        self.steps_path = folder / "steps.partial"  # the trajectories the drill-down may show (reports.kept_line), in row order
        self.spent_path = folder / "spent.jsonl"  # every live judge call, as launched and as counted (judge.llm._spend): never cut back
        self._record: RunStateRecord | None = None
        self._held: int | None = None  # the locked descriptor of the run folder while this process owns it

    @property
    def record(self) -> RunStateRecord:
        """The state as started, loaded or last checkpointed by this process."""
        if self._record is None:
            raise RuntimeError("RunState.record: the state was neither started nor read")
        return self._record

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self, identity: RunIdentity, started_at: str, recipe: Recipe | None = None) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        for path in (self.partial_path, self.shards_path, self.decisions_path, self.steps_path, self.spent_path):
            path.write_bytes(b"")
        self._record = RunStateRecord(identity=identity, recipe=recipe, started_at=started_at)
        self.save()

    def hold(self) -> None:
        """Make this process the one owner of the run folder (``--out``): an exclusive lock on the
        folder itself, held until the run is published or stopped, or the process ends. Two
        processes on one folder (two resumes, a run and an ``--overwrite``) would truncate each
        other's checkpoints, mix their rows and send a round's batches twice; the second is refused
        while the first lives. The lock is the kernel's (``flock``): it goes with its owner, so a
        killed run's folder is free at once; processes forked meanwhile (workers) neither keep it
        nor outlive the owner (``_forked``; a run forks before it holds its folder too, when it
        loads its inputs: ``forks_die_with_this_process`` covers the whole run)."""
        out = self.folder.parent
        try:
            out.mkdir(parents=True, exist_ok=True)
            fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            raise RunDirError(f"--out {out}: cannot write there ({exc.strerror or exc})") from exc
        if not _try_lock(fd):
            os.close(fd)
            raise RunDirError(
                f"{out}: another process is working on this run right now (--overwrite and --resume do not take a run folder from a live run); wait for it to end, or choose another --out"
            )
        self._held = fd
        _HELD.add(fd)

    def release(self) -> None:
        if self._held is not None:
            _HELD.discard(self._held)
            os.close(self._held)  # closing the last descriptor releases the lock
            self._held = None

    def busy(self) -> bool:
        """Another live process owns the run folder right now (``hold``)."""
        out = self.folder.parent
        if self._held is not None or not out.is_dir():
            return False
        try:
            fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            return False
        try:
            if not _try_lock(fd):
                return True
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_UN)
            return False
        finally:
            os.close(fd)

    def peek(self) -> RunStateRecord:
        """The state as last checkpointed, read without touching any file (safe while another
        process works on the run)."""
        self._record = self._read("the run's state cannot be used")
        return self._record

    def load(self) -> RunStateRecord:
        """The state of the interrupted run, its files cut back to the last checkpoint."""
        record = self._read("the interrupted run's state cannot be used")
        checkpoints = (
            (self.partial_path, record.partial_bytes),
            (self.shards_path, record.shards_bytes),
            (self.decisions_path, record.decisions_bytes),
            (self.steps_path, record.steps_bytes),
        )
        # every file checked before any is cut: truncate() would lengthen a file shorter than its
        # checkpoint (padding it with NUL bytes), and a damaged run state is left as it was found
        for path, size in checkpoints:
            try:
                found = path.stat().st_size
            except FileNotFoundError:
                found = 0
            except OSError as exc:
                raise RunDirError(f"{path}: the interrupted run's state cannot be used ({exc.strerror or exc}); {_START_OVER}") from exc
            if found < size:
                raise RunDirError(
                    f"{path}: {found} bytes, shorter than its last checkpoint ({size} bytes): the run state is damaged "
                    f"and the run cannot be resumed; {_START_OVER}"
                )
        # drop whatever was written after the last checkpoint
        for path, size in checkpoints:
            with open(path, "ab") as fh:
                fh.truncate(size)
        self._record = record
        return record

    def _read(self, what: str) -> RunStateRecord:
        try:
            data = self.state_path.read_bytes()
        except OSError as exc:
            raise RunDirError(f"{self.state_path}: {what} ({exc.strerror or exc}); {_START_OVER}") from exc
        advice = _START_OVER
        try:
            if orjson.loads(data).get("version") == 1:  # shard records as pickles: never read
                advice = f"it was written by an earlier trajectory-judge, whose shard records (shards.pkl) are pickles and are never read; {_START_OVER}"
        except (orjson.JSONDecodeError, AttributeError):
            pass
        return parse_record(RunStateRecord, data, str(self.state_path), STATE_VERSION, advice)

    def save(self) -> None:
        atomic_write(self.state_path, orjson.dumps(self.record.model_dump(mode="json"), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))

    def remove(self) -> None:
        """The run state removed and the run folder released (the run is published, or stopped)."""
        self.discard()
        self.release()

    def discard(self) -> None:
        """The run state removed (an earlier run's, replaced by ``--overwrite``); ownership kept."""
        if self.folder.is_symlink():
            self.folder.unlink()
        else:
            shutil.rmtree(self.folder, ignore_errors=True)

    # -- grading checkpoints --------------------------------------------------------------------
    def append_shard(self, rows: bytes, record: ShardRecord, progress: InputProgress, steps: bytes = b"") -> None:
        """Rows, kept trajectories and record of one merged shard, then the checkpoint that makes them count."""
        state = self.record
        if steps:
            with open(self.steps_path, "ab") as fh:
                fh.write(steps)
                fh.flush()
                os.fsync(fh.fileno())
                state.steps_bytes = fh.tell()
        with open(self.partial_path, "ab") as fh:
            fh.write(rows)
            fh.flush()
            os.fsync(fh.fileno())
            state.partial_bytes = fh.tell()
        with open(self.shards_path, "ab") as fh:
            fh.write(dump_line(record))
            fh.flush()
            os.fsync(fh.fileno())
            state.shards_bytes = fh.tell()
        state.trajectories = progress
        self.save()

    def shard_records(self) -> Iterator[ShardRecord]:
        for number, line in _lines(self.shards_path, -1):
            yield parse_record(ShardRecord, line, f"{self.shards_path}:{number}", SHARD_RECORD_VERSION, _START_OVER)

    # -- escalation checkpoints -----------------------------------------------------------------
    def append_round(self, entry: JournalEntry) -> None:
        state = self.record
        with open(self.decisions_path, "ab") as fh:
            fh.write(dump_line(entry))
            fh.flush()
            os.fsync(fh.fileno())
            state.decisions_bytes = fh.tell()
        state.rounds += 1
        self.save()

    def rounds(self) -> list[JournalEntry]:
        """The journal up to the last checkpoint."""
        size = self._record.decisions_bytes if self._record is not None else -1
        entries: list[JournalEntry] = []
        for number, line in _lines(self.decisions_path, size):
            where = f"{self.decisions_path}:{number}"
            try:
                kind = orjson.loads(line).get("kind")
            except (orjson.JSONDecodeError, AttributeError):
                kind = None
            model: type[DecidedRound] | type[SubmittedBatches] = SubmittedBatches if kind == "batches" else DecidedRound
            entries.append(parse_record(model, line, where, JOURNAL_VERSION, _START_OVER))
        return entries

    def waiting_batches(self) -> list[dict]:
        """The provider batches of the round in progress: journaled after the last decided round."""
        waiting: list[dict] = []
        for entry in self.rounds():
            waiting = waiting + entry.batches if isinstance(entry, SubmittedBatches) else []
        return waiting

    def set_phase(self, phase: Phase) -> None:
        self.record.phase = phase
        self.save()


# ---- ownership across forks ---------------------------------------------------------------------

_HELD: set[int] = set()  # descriptors of run folders this process owns (locked)
_FORK = {"parent": 0, "main_thread": True}
_OWNING = [0]  # how many runs of this process are under way (``forks_die_with_this_process``)
_OWNING_LOCK = threading.Lock()


@contextlib.contextmanager
def forks_die_with_this_process() -> Iterator[None]:
    """While inside, every process forked here (task loaders, grading and judge workers, replay
    children), in any phase of the run, dies with this one as ``_forked`` says, whether or not a
    run folder is held yet: a run loads its inputs (``pipelines.run.task_shards`` forks a pool)
    before it holds ``--out``, and a pool's idle workers keep each other's queue pipes open, so
    without it a killed (SIGTERM, SIGKILL) run left them waiting for ever."""
    with _OWNING_LOCK:
        _OWNING[0] += 1
    try:
        yield
    finally:
        with _OWNING_LOCK:
            _OWNING[0] -= 1


def _try_lock(fd: int) -> bool:
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _before_fork() -> None:
    _FORK["parent"] = os.getpid()
    _FORK["main_thread"] = threading.current_thread() is threading.main_thread()


def _forked() -> None:
    """In a process forked while this one owns a run folder or runs a run
    (``forks_die_with_this_process``: a task loader, a grading worker, a judge worker, a replay
    child): close the inherited lock descriptors (without unlocking: the lock stays the owner's,
    and goes with it) and die with the owner, by the kernel's parent-death signal where the fork
    came from the main thread (the signal follows the forking thread), else by noticing that the
    parent is gone (reparented: the pipe's other end is gone too). A run's child forks in turn
    as one (a grading worker's BFCL replay child, whose time limit the worker enforces): what it
    forks dies with it, so with the owner too."""
    global _OWNING_LOCK
    _OWNING_LOCK = threading.Lock()  # another thread may have held it at the fork
    if not _HELD and not _OWNING[0]:
        return
    for fd in list(_HELD):
        with contextlib.suppress(OSError):
            os.close(fd)
    _HELD.clear()
    _OWNING[0] = max(_OWNING[0], 1)  # never left in the child (the fork's stack is not unwound there)
    parent = _FORK["parent"]
    if _FORK["main_thread"] and _parent_death_signal():
        if os.getppid() != parent:  # the owner died before the signal was armed
            os._exit(1)
        return
    threading.Thread(target=_watch_parent, args=(parent,), name="parent-watch", daemon=True).start()


def _parent_death_signal() -> bool:
    """PR_SET_PDEATHSIG(SIGKILL) on Linux; False where it is not available."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(1, int(signal.SIGKILL), 0, 0, 0) == 0  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return False


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_child=_forked)


def _lines(path: Path, size: int) -> Iterator[tuple[int, bytes]]:
    """The non-blank lines of ``path`` (its first ``size`` bytes; -1: all), numbered from 1. Split
    on ``\n`` only: a record is one JSON line, whatever line separators its strings hold."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(size)
    except OSError as exc:
        raise RecordError(f"{path}: cannot be read ({exc.strerror or exc}); {_START_OVER}") from exc
    for number, line in enumerate(data.split(b"\n"), 1):
        if line.strip():
            yield number, line
