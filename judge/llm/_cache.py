"""Content-addressed SQLite cache of judge answers.

Key: sha256 of the canonical JSON of the request identity (provider kind, model, base URL,
messages, verdict schema, sampling parameters), never keys or headers. Each answer is written
(and committed) the moment it arrives, so an interrupted run resumes without repeating paid calls.
WAL mode lets several runs share the per-user cache file.

Cached: verdicts, and final provider answers that are themselves failures (a refusal, an
off-schema verdict): a rerun would get the same. Never cached: transient failures (429, 5xx,
timeouts), budget or offline abstentions.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

from judge.core._canonical import canonical_json, content_hash

SCHEMA_VERSION = 1


def cache_key(identity: dict[str, Any]) -> str:
    return content_hash({"v": SCHEMA_VERSION, "request": identity})


class JudgeCache:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(self.path), check_same_thread=False, timeout=30.0)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, judge TEXT NOT NULL, payload TEXT NOT NULL)")
        self._db.commit()

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute("SELECT payload FROM answers WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, judge: str, payload: dict[str, Any]) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO answers (key, judge, payload) VALUES (?, ?, ?)", (key, judge, canonical_json(payload)))
            self._db.commit()

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM answers").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()
