"""The run state (``.judge-run/`` in ``--out``): what lets an interrupted run continue without
regrading a decided trajectory or asking a judge again. It is removed when the run completes.

Files of the run state, all append-only or replaced atomically:
- ``state.json``: what the run is (its identity: inputs, options), how far it got (``phase``:
  grading -> judging -> finishing, or ``waiting`` for provider batches) and how to start it again
  (``recipe``: the options as given, for ``judge resume``);
- ``results.partial``: decided result lines in input order, a placeholder per waiting case;
- ``shards.pkl``: per merged shard, its partial aggregate, the ids it read and its pending cases'
  item indices (length-prefixed pickles, truncated to the last checkpoint on resume);
- ``decisions.jsonl``: per escalation round, the questions and the panel's decisions; a round
  that waits for provider batches has entries with the batches' ids (``batches``) and no decisions
  until it is decided;
- ``batches/``: result files of ended provider batches, downloaded once;
- ``lock``: locked by the one process working on the run (``RunState.hold``).
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from judge import ConfigurationError

__all__ = ["STATE_DIR", "RunDirError", "RunState", "ShardRecord", "atomic_write"]

STATE_DIR = ".judge-run"
STATE_VERSION = 1


class RunDirError(ConfigurationError):
    """The output directory cannot take this run (``--out``, ``--overwrite``, ``--resume``: a
    usage error, exit code 2)."""


def atomic_write(path: Path, data: str | bytes) -> None:
    """Write ``data`` to ``path`` under a temporary name in the same folder, then rename."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "wb") as fh:
        fh.write(data.encode("utf-8") if isinstance(data, str) else data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


@dataclass
class ShardRecord:
    """What the run keeps of a merged shard (enough to finish the run after an interruption)."""

    index: int
    first_line: int
    first_byte: int
    first_item: int
    size: int  # bytes of input it covered
    lines: int
    items: int
    pending_items: list[int]  # item index of each case that waits for a judge, in order
    aggregate: Any  # pipelines.grade.Aggregator of its decided rows
    keys: list[tuple[str, str, int | None]]
    replay: dict[str, Any] = field(default_factory=dict)
    sha256: str = ""  # of the input bytes it covered
    labels_used: list[str] = field(default_factory=list)
    report_rows: list[Any] = field(default_factory=list)  # reports.to_row of each row (None: a pending case)


class RunState:
    """The run state folder of one run (see the module docstring)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.state_path = folder / "state.json"
        self.partial_path = folder / "results.partial"
        self.shards_path = folder / "shards.pkl"
        self.decisions_path = folder / "decisions.jsonl"
        self.data: dict[str, Any] = {}
        self._held: BinaryIO | None = None  # the open lock file while this process works on the run

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self, identity: dict[str, Any], started_at: str, recipe: dict[str, Any] | None = None) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        for path in (self.partial_path, self.shards_path, self.decisions_path):
            path.write_bytes(b"")
        self.data = {
            "version": STATE_VERSION,
            "identity": identity,
            "recipe": recipe,
            "started_at": started_at,
            "resumed_at": [],
            "phase": "grading",
            "trajectories": {"bytes": 0, "sha256_prefix": None, "lines": 0, "items": 0, "shards": 0},
            "partial_bytes": 0,
            "shards_bytes": 0,
            "decisions_bytes": 0,
            "rounds": 0,
        }
        self.save()

    def hold(self) -> None:
        """Make this process the only one working on the run (an exclusive lock on ``lock`` in the
        folder, held until the process ends or the state is removed): two resumes of one run at
        once would truncate each other's checkpoints and send a round's batches twice."""
        import fcntl

        self.folder.mkdir(parents=True, exist_ok=True)
        handle = open(self.folder / "lock", "a+b")  # noqa: SIM115  (kept open: the lock lives as long as the handle)
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise RunDirError(f"{self.folder.parent}: another process is working on this run right now; wait for it to end") from None
        self._held = handle

    def release(self) -> None:
        if self._held is not None:
            self._held.close()
            self._held = None

    def peek(self) -> dict[str, Any]:
        """The state as last checkpointed, read without touching any file (safe while another
        process works on the run)."""
        try:
            self.data = json.loads(self.state_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise RunDirError(f"{self.state_path}: the run's state cannot be read ({exc})") from exc
        return self.data

    def load(self) -> dict[str, Any]:
        try:
            self.data = json.loads(self.state_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise RunDirError(f"{self.state_path}: the interrupted run's state cannot be read ({exc}); start over with --overwrite") from exc
        if self.data.get("version") != STATE_VERSION:
            raise RunDirError(f"{self.state_path}: run state version {self.data.get('version')!r} is not {STATE_VERSION}; start over with --overwrite")
        # drop whatever was written after the last checkpoint
        for path, key in ((self.partial_path, "partial_bytes"), (self.shards_path, "shards_bytes"), (self.decisions_path, "decisions_bytes")):
            with open(path, "ab") as fh:
                fh.truncate(int(self.data[key]))
        return self.data

    def save(self) -> None:
        atomic_write(self.state_path, json.dumps(self.data, indent=1, sort_keys=True))

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
        self.release()

    # -- grading checkpoints --------------------------------------------------------------------
    def append_shard(self, rows: bytes, record: ShardRecord, progress: dict[str, Any]) -> None:
        """Rows and record of one merged shard, then the checkpoint that makes them count."""
        with open(self.partial_path, "ab") as fh:
            fh.write(rows)
            fh.flush()
            os.fsync(fh.fileno())
            self.data["partial_bytes"] = fh.tell()
        blob = pickle.dumps(record, protocol=pickle.HIGHEST_PROTOCOL)
        with open(self.shards_path, "ab") as fh:
            fh.write(struct.pack("<Q", len(blob)) + blob)
            fh.flush()
            os.fsync(fh.fileno())
            self.data["shards_bytes"] = fh.tell()
        self.data["trajectories"] = progress
        self.save()

    def shard_records(self) -> Iterator[ShardRecord]:
        with open(self.shards_path, "rb") as fh:
            while header := fh.read(8):
                (size,) = struct.unpack("<Q", header)
                yield pickle.loads(fh.read(size))

    # -- escalation checkpoints -----------------------------------------------------------------
    def append_round(self, entry: dict[str, Any]) -> None:
        with open(self.decisions_path, "ab") as fh:
            fh.write(json.dumps(entry, sort_keys=True).encode("utf-8") + b"\n")
            fh.flush()
            os.fsync(fh.fileno())
            self.data["decisions_bytes"] = fh.tell()
        self.data["rounds"] += 1
        self.save()

    def rounds(self) -> list[dict[str, Any]]:
        """The journal up to the last checkpoint."""
        with open(self.decisions_path, "rb") as fh:
            data = fh.read(int(self.data.get("decisions_bytes", -1)))
        return [json.loads(line) for line in data.splitlines() if line.strip()]

    def waiting_batches(self) -> list[dict[str, Any]]:
        """The provider batches of the round in progress: journaled after the last decided round."""
        waiting: list[dict[str, Any]] = []
        for entry in self.rounds():
            waiting = waiting + entry["batches"] if "batches" in entry else []
        return waiting

    def set_phase(self, phase: str) -> None:
        self.data["phase"] = phase
        self.save()
