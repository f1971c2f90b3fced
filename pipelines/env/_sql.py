"""SQLite access with the safety rails every tool call runs under.

Invariants: arguments only ever reach SQL as bound parameters; table and column names come from
the schema read out of the database itself (an argument naming a column is looked up in that
set, and the schema's own spelling is what gets quoted into SQL); an authorizer refuses ATTACH,
DETACH, PRAGMA and extension loading on every connection, so no statement can reach a file
outside the domain; a progress handler interrupts any statement past its deadline.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from pathlib import Path
from typing import Any

_DENY = {
    sqlite3.SQLITE_ATTACH,
    sqlite3.SQLITE_DETACH,
    sqlite3.SQLITE_PRAGMA,
}
_FUNCTION_DENY = {"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"}


def _authorizer(action: int, arg1: str | None, arg2: str | None, db: str | None, trigger: str | None) -> int:
    if action in _DENY:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in _FUNCTION_DENY:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


class Deadline:
    """A per-statement wall-clock limit enforced by sqlite's progress handler."""

    def __init__(self) -> None:
        self.until: float | None = None

    def __call__(self) -> int:
        return 1 if self.until is not None and time.monotonic() > self.until else 0


def _harden(conn: sqlite3.Connection) -> Deadline:
    conn.set_authorizer(_authorizer)
    deadline = Deadline()
    conn.set_progress_handler(deadline, 2000)
    conn.row_factory = sqlite3.Row
    return deadline


def open_read_only(path: Path) -> tuple[sqlite3.Connection, Deadline]:
    uri = f"file:{path.resolve().as_posix()}?mode=ro"
    conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
    return conn, _harden(conn)


def copy_to_memory(source: sqlite3.Connection) -> tuple[sqlite3.Connection, Deadline]:
    """An isolated writable copy: writes never touch the file, and never another session."""
    mem = sqlite3.connect(":memory:", check_same_thread=False)
    source.backup(mem)
    return mem, _harden(mem)


def read_schema(conn: sqlite3.Connection) -> dict[str, list[str]]:
    """Table -> columns in declaration order, straight from sqlite_master (no user input)."""
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]
    schema: dict[str, list[str]] = {}
    for table in tables:
        cur = conn.execute(f'SELECT * FROM "{table}" LIMIT 0')
        schema[table] = [d[0] for d in cur.description]
    return schema


def state_digest(conn: sqlite3.Connection, schema: dict[str, list[str]]) -> str:
    """Content hash of every row of every table (rowid order), independent of file layout."""
    h = hashlib.sha256()
    for table in sorted(schema):
        h.update(f"\x00table:{table}\x00".encode())
        for row in conn.execute(f'SELECT * FROM "{table}" ORDER BY rowid'):
            h.update(repr(tuple(row)).encode("utf-8"))
            h.update(b"\n")
    return h.hexdigest()


def rows_as_dicts(cursor: sqlite3.Cursor, cap: int) -> tuple[list[dict[str, Any]], bool]:
    """At most ``cap`` rows; the flag says whether more were available."""
    rows = cursor.fetchmany(cap + 1)
    return [dict(r) for r in rows[:cap]], len(rows) > cap
