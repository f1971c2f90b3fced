"""What one run paid its judges, call by call, in a file of its own: what lets ``--max-cost`` cap
a run across its resumes.

A run's rounds are journaled once decided, but an interrupted round's answers are not: they are in
the judge cache, and a resumed run reads them back from there as free cache hits. Counting only
the journaled rounds, each resume could spend nearly the whole budget again. So every process
judging for the run (the run's own and its judge workers) appends to the run's spend log:

- ``{"launch": judge, "key": K}`` before each live attempt is sent;
- ``{"paid": judge, "key": K, "usd": cost}`` once its answer (or failure) is back and counted.

Each record is one ``write`` to a file opened for appending (shared by forked workers): a killed
process leaves at most its last line cut, which is skipped when read. What a later session of the
run reads back (``SpendLog(path, since=...)``, ``since``: the bytes that belong to rounds already
journaled):

- ``decided_usd`` / ``open_usd``: what was paid before / after ``since``;
- ``in_flight``: attempts launched and never counted (the session was interrupted while they were
  in flight: the provider may have billed them), per judge; ``in_flight_usd`` prices each at the
  mean of that judge's counted calls (an estimate: their answers never arrived);
- ``take(judge, key)``: the cost of an answer this run paid for in a round not yet journaled, once
  per answer: the cache serves it again, and the vote is the paid one it was (not a free hit);
  answers cached before the run started are never in the log, and stay free.

Provider batches are not logged: their answers are collected from the files downloaded once, and
counted by the round that is decided with them (the run's journal).
"""

from __future__ import annotations

import contextlib
import os
from collections import Counter
from pathlib import Path
from typing import Any

import orjson

__all__ = ["SpendLog"]


class SpendLog:
    """The spend log of one run (see the module docstring). Make it before any judge worker is
    forked: the workers append through the same open file."""

    def __init__(self, path: Path, since: int = 0):
        self.path = Path(path)
        self.decided_usd = 0.0
        self.open_usd = 0.0
        self.in_flight: dict[str, int] = {}
        self._owned: dict[tuple[str, str], float] = {}
        self._mean: dict[str, float] = {}
        self._read(since)
        self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)

    @property
    def earlier_usd(self) -> float:
        """What earlier sessions of the run paid (or, for calls in flight, most likely paid)."""
        return self.decided_usd + self.open_usd + self.in_flight_usd

    @property
    def in_flight_usd(self) -> float:
        return sum(n * self._mean.get(judge, 0.0) for judge, n in self.in_flight.items())

    def size(self) -> int:
        """Bytes written so far (by every process appending): the ``since`` of a later session."""
        if self._fd is None:
            return 0
        return os.fstat(self._fd).st_size

    def take(self, judge: str, key: str) -> float | None:
        """The cost of the answer to ``key`` this run paid ``judge`` for in a round not yet
        journaled; None (and None the next time: one paid vote per answer) where it did not."""
        return self._owned.pop((judge, key), None)

    def launched(self, judge: str, key: str) -> None:
        self._write({"launch": judge, "key": key})

    def paid(self, judge: str, key: str, usd: float) -> None:
        self._write({"paid": judge, "key": key, "usd": usd})

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None

    def _write(self, record: dict[str, Any]) -> None:
        if self._fd is None:
            return
        with contextlib.suppress(OSError):  # a full disk: the budget of this session still counts the call
            os.write(self._fd, orjson.dumps(record) + b"\n")

    def _read(self, since: int) -> None:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return
        launches: Counter[tuple[str, str]] = Counter()
        counted: Counter[tuple[str, str]] = Counter()
        totals: dict[str, list[float]] = {}
        offset = 0
        for line in data.split(b"\n"):
            start, offset = offset, offset + len(line) + 1
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue  # blank, or cut by a killed process
            if not isinstance(record, dict):
                continue
            key = str(record.get("key"))
            if "launch" in record:
                launches[(str(record["launch"]), key)] += 1
                continue
            if "paid" not in record:
                continue
            judge, usd = str(record["paid"]), float(record.get("usd") or 0.0)
            counted[(judge, key)] += 1
            spent = totals.setdefault(judge, [0.0, 0])
            spent[0] += usd
            spent[1] += 1
            if start < since:
                self.decided_usd += usd
            else:
                self.open_usd += usd
                self._owned[(judge, key)] = usd  # the last attempt's: the one its vote records
        for (judge, _), n in (launches - counted).items():
            self.in_flight[judge] = self.in_flight.get(judge, 0) + n
        self._mean = {judge: usd / n for judge, (usd, n) in totals.items() if n}
