"""Content-addressed SQLite cache of judge answers, shared by every run of a user.

Key: sha256 of the canonical JSON of the request identity (provider kind, model, base URL,
messages, verdict schema, sampling parameters), never keys or headers. Each answer is written
(and committed) the moment it arrives, so an interrupted run resumes without repeating paid calls.
WAL mode lets several runs share the per-user cache file.

Cached: verdicts, and final provider answers that are themselves failures (a refusal, an
off-schema verdict): a rerun would get the same. Never cached: transient failures (429, 5xx,
timeouts), budget or offline abstentions.

Claims make runs that share the file pay once for a question they ask at the same time: a run
about to ask a question the cache cannot answer claims it (a row naming the claimant, with a
lease); another run finding a live claim waits and polls for the answer instead of paying too.
Invariants: at most one live claim per key; a claim is released when its answer is written (in
the same transaction) or when its claimant gives up; a claimant renews its leases while it works,
so a claim whose lease ran out, or whose claimant process on this host is gone, belongs to
nobody and the next run takes it over. Claims are an optimisation: losing one (a lease that ran
out under a stalled event loop) costs a second paid call, never a wrong answer.

A cache that cannot be written (a full disk, a read-only file) loses no answer already paid:
``put`` keeps it in memory (this run reads it back from there, and its vote goes into the run's
results as any other), says so once in ``write_error`` (naming the file and the way out) and
tries again at ``close``; claims, an optimisation, are skipped while writes fail.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
import socket
import sqlite3
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import msgspec

from judge.core._canonical import canonical_json, content_hash
from judge.core._errors import ConfigurationError

log = logging.getLogger("judge.cache")

SCHEMA_VERSION = 1
HOST = socket.gethostname()
STALE_CLAIM_S = 3600.0  # expired claims older than this are swept when a cache is opened
OPEN_WAIT_S = 30.0  # how long opening waits for another process that holds the file


def cache_key(identity: dict[str, Any]) -> str:
    return content_hash({"v": SCHEMA_VERSION, "request": identity})


class KeyTemplate:
    """``cache_key`` for one judge and one verdict schema, without re-encoding what never changes.

    Encoding the identity is most of a cached answer's cost, and the verdict schema is most of
    the identity. Canonical JSON is compositional (a value encodes the same inside a container
    as alone), so the identity is encoded once with a marker where the messages go, and each key
    is that text with the marker replaced by the messages' encoding: the same bytes, the same
    key as ``cache_key(identity(messages, schema))``. ``identity`` must place ``messages``
    verbatim (every client's does; the constructor checks the marker appears exactly once).
    """

    def __init__(self, identity: Any, schema: dict[str, Any]):
        marker = f"messages-{uuid.uuid4().hex}"
        text = canonical_json({"v": SCHEMA_VERSION, "request": identity(marker, schema)})
        hole = canonical_json(marker)
        if text.count(hole) != 1:
            raise ValueError("the identity does not hold the messages verbatim: use cache_key")
        self._head, _, self._tail = text.partition(hole)

    def key(self, messages: list[dict[str, str]]) -> str:
        return hashlib.sha256((self._head + canonical_json(messages) + self._tail).encode("utf-8")).hexdigest()


class Claim(msgspec.Struct, frozen=True):
    """What ``JudgeCache.claim`` found: the answer, our claim, or another live claimant's."""

    payload: dict[str, Any] | None = None  # the answer is already there
    claimed: bool = False  # the question is ours to ask
    holder: str | None = None  # someone else is asking it


def new_claimant_id() -> str:
    """``host:pid:random``: unique per claimant, and says which process on which host holds it."""
    return f"{HOST}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


def _claimant_is_gone(owner: str) -> bool:
    """True only when the claimant is a process on this host that no longer exists."""
    parts = owner.rsplit(":", 2)
    if len(parts) != 3 or parts[0] != HOST:
        return False
    try:
        pid = int(parts[1])
    except ValueError:
        return False
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # exists, but not ours to signal
        return False
    return False


class JudgeCache:
    def __init__(self, path: Path, *, claimant: str | None = None):
        self.path = Path(path)
        self.claimant = claimant or new_claimant_id()
        self._lock = threading.Lock()
        self._unsaved: dict[str, tuple[str, str]] = {}  # key -> (judge, payload text): answers paid but not written
        self.write_error: str | None = None  # why the cache could not be written, with the way out (None: it could)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = _open(self.path)
        except (OSError, sqlite3.Error) as exc:
            raise ConfigurationError(f"judge cache {self.path}: {exc} (point --cache at another file, or use --no-cache)") from exc

    # --- answers --------------------------------------------------------------------------------
    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            kept = self._unsaved.get(key)
            row = (kept[1],) if kept is not None else self._db.execute("SELECT payload FROM answers WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, judge: str, payload: dict[str, Any]) -> bool:
        """Store the answer and release our claim on it, in one transaction. False: the file could
        not be written, the answer is kept in memory instead (see the module docstring)."""
        text = canonical_json(payload)
        with self._lock:
            try:
                with self._transaction():
                    self._db.execute("INSERT OR REPLACE INTO answers (key, judge, payload) VALUES (?, ?, ?)", (key, judge, text))
                    self._db.execute("DELETE FROM claims WHERE key = ? AND owner = ?", (key, self.claimant))
            except sqlite3.OperationalError as exc:  # SQLITE_FULL, SQLITE_IOERR, SQLITE_READONLY...
                self._unsaved[key] = (judge, text)
                self._cannot_write(exc)
                return False
        return True

    @property
    def unsaved(self) -> int:
        """Answers paid in this process that the file does not hold (kept in memory)."""
        with self._lock:
            return len(self._unsaved)

    def _cannot_write(self, exc: sqlite3.Error) -> None:
        if self.write_error is None:
            self.write_error = (
                f"judge cache {self.path} could not be written ({exc}): the answers paid since are kept in memory and in this run's "
                "results, not in the cache, so a later run pays for them again; free space on its disk, or point --cache at another "
                "file (or use --no-cache)"
            )
            log.warning("%s", self.write_error)

    def _flush_unsaved(self) -> None:
        """Write the answers kept in memory, if the file takes them now (space freed meanwhile)."""
        try:
            with self._transaction():
                self._db.executemany(
                    "INSERT OR REPLACE INTO answers (key, judge, payload) VALUES (?, ?, ?)", [(k, j, t) for k, (j, t) in self._unsaved.items()]
                )
        except sqlite3.OperationalError:
            return
        self._unsaved.clear()

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM answers").fetchone()[0])

    # --- claims ---------------------------------------------------------------------------------
    def claim(self, key: str, lease_s: float) -> Claim:
        """The answer if there is one; else the question, unless another live claimant holds it."""
        now = time.time()
        with self._lock:
            kept = self._unsaved.get(key)
            if kept is not None:
                return Claim(payload=json.loads(kept[1]))
            try:
                with self._transaction():
                    row = self._db.execute("SELECT payload FROM answers WHERE key = ?", (key,)).fetchone()
                    if row is not None:
                        return Claim(payload=json.loads(row[0]))
                    held = self._db.execute("SELECT owner, expires FROM claims WHERE key = ?", (key,)).fetchone()
                    if held is not None and held[0] != self.claimant and held[1] > now and not _claimant_is_gone(held[0]):
                        return Claim(holder=held[0])
                    self._db.execute("INSERT OR REPLACE INTO claims (key, owner, expires) VALUES (?, ?, ?)", (key, self.claimant, now + lease_s))
            except sqlite3.OperationalError as exc:  # no claim can be written: ask without one (claims are an optimisation)
                if getattr(exc, "sqlite_errorname", "").startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
                    raise
                self._cannot_write(exc)
        return Claim(claimed=True)

    def holder(self, key: str) -> str | None:
        """The live claimant of ``key`` other than us; None once it is answered, released, or its
        claimant is gone (an answer deletes its claim in the same transaction)."""
        with self._lock:
            held = self._db.execute("SELECT owner, expires FROM claims WHERE key = ?", (key,)).fetchone()
        if held is None or held[0] == self.claimant or held[1] <= time.time() or _claimant_is_gone(held[0]):
            return None
        return str(held[0])

    def renew(self, lease_s: float) -> int:
        """Extend every claim we hold by ``lease_s`` from now; the number renewed."""
        with self._lock:
            cur = self._db.execute("UPDATE claims SET expires = ? WHERE owner = ?", (time.time() + lease_s, self.claimant))
            return int(cur.rowcount)

    def release(self, key: str) -> None:
        """Give a question up without an answer (a transient failure): others may ask it now."""
        with self._lock:
            try:
                self._db.execute("DELETE FROM claims WHERE key = ? AND owner = ?", (key, self.claimant))
            except sqlite3.OperationalError as exc:  # the claim lapses with its lease
                self._cannot_write(exc)

    def claims(self) -> list[tuple[str, str, float]]:
        """(key, owner, expires) of every claim: for tests and diagnostics."""
        with self._lock:
            return [(str(k), str(o), float(e)) for k, o, e in self._db.execute("SELECT key, owner, expires FROM claims ORDER BY key")]

    def close(self) -> None:
        with self._lock:
            try:
                if self._unsaved:
                    self._flush_unsaved()
                self._db.execute("DELETE FROM claims WHERE owner = ?", (self.claimant,))
            except sqlite3.ProgrammingError:  # already closed
                return
            except sqlite3.OperationalError:  # a full disk: our claims lapse with their leases
                pass
            self._db.close()

    def _transaction(self) -> _Transaction:
        return _Transaction(self._db)


def _open(path: Path, wait_s: float = OPEN_WAIT_S) -> sqlite3.Connection:
    """Connect and set the file up, retrying while another process holds it.

    SQLite's busy timeout does not cover every lock: switching a new file to WAL while another
    process does the same can fail at once with "database is locked" (seen when two runs start
    together on a fresh cache). Every setup statement is idempotent, so the whole setup is
    retried, with jittered back-off, until ``wait_s`` has passed; then the error is raised.
    """
    deadline = time.monotonic() + wait_s
    delay = 0.005
    while True:
        # Autocommit: every statement commits by itself, multi-statement changes take BEGIN IMMEDIATE.
        db = sqlite3.connect(str(path), check_same_thread=False, timeout=wait_s, isolation_level=None)
        try:
            if str(db.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
                db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, judge TEXT NOT NULL, payload TEXT NOT NULL)")
            db.execute("CREATE TABLE IF NOT EXISTS claims (key TEXT PRIMARY KEY, owner TEXT NOT NULL, expires REAL NOT NULL)")
            db.execute("DELETE FROM claims WHERE expires < ?", (time.time() - STALE_CLAIM_S,))  # left by killed runs
            return db
        except sqlite3.OperationalError as exc:
            db.close()
            busy = str(getattr(exc, "sqlite_errorname", "")).startswith(("SQLITE_BUSY", "SQLITE_LOCKED"))  # extended codes too
            if not busy or time.monotonic() + delay > deadline:
                raise
            time.sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, 0.25)


class _Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on error): takes the write lock up front,
    so a read-then-write (a claim) cannot interleave with another process's."""

    def __init__(self, db: sqlite3.Connection):
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: Any, *_: Any) -> None:
        if exc_type is None:
            try:
                self._db.execute("COMMIT")
                return
            except sqlite3.OperationalError:  # a COMMIT that could not be written (a full disk) leaves the transaction open
                self._rollback()
                raise
        self._rollback()

    def _rollback(self) -> None:
        if self._db.in_transaction:  # SQLite may have rolled back by itself (SQLITE_FULL)
            self._db.execute("ROLLBACK")
