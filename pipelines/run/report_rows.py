"""The report's rows of a run with many input errors: the graded rows held, the error rows read
back from ``results.jsonl`` whenever the rows are walked (issue 26 item 9).

A million tiny invalid lines made a million report rows (~250 bytes each, the row and its ids)
that only ``tables/trajectories.csv`` and the drill-down's choice ever read; every one of them is
already a line of ``results.jsonl``. ``ErrorRowsOnDisk`` is the sequence of every result's
``reports.Row`` in file order that ``reports`` takes, holding only the graded rows: memory grows
with what was graded, not with the number of errors. Walking it reads ``results.jsonl`` once per
walk (sequential slices continue where the last one ended); ``graded`` needs no reading at all.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

from judge import TrajectoryResult

if TYPE_CHECKING:
    from reports import Row

__all__ = ["ErrorRowsOnDisk"]

_ERROR_MARK = b'"verdict":"error"'  # as model_dump_json writes it; inside a JSON string its quotes would be escaped


class ErrorRowsOnDisk(Sequence["Row"]):
    """Every row of ``results`` in file order: ``graded`` (every row that is not an input error,
    in order) held, the ``errors`` error rows made from their lines as they are reached.

    Raises ``RuntimeError`` when ``results`` does not hold exactly those rows (a bug, never an
    input problem: the run wrote the file from the same results)."""

    def __init__(self, graded: list[Row], errors: int, results: Path):
        self.graded = graded
        self.errors = errors
        self.results = Path(results)
        self._cursor: tuple[int, Iterator[Row]] | None = None  # (position, the walk that reached it)

    def __len__(self) -> int:
        return len(self.graded) + self.errors

    def __iter__(self) -> Iterator[Row]:
        if not self.errors:
            yield from self.graded
            return
        from reports import to_row

        pool: dict[Any, Any] = {}
        graded = iter(self.graded)
        found = 0
        with open(self.results, "rb") as fh:
            for line in fh:
                if _ERROR_MARK in line:
                    result = TrajectoryResult.model_validate_json(line)
                    if result.verdict.value == "error":
                        found += 1
                        yield to_row(result, pool)
                        continue
                row = next(graded, None)
                if row is None:
                    raise RuntimeError(f"{self.results}: more graded rows than the run merged")
                yield row
        if found != self.errors or next(graded, None) is not None:
            raise RuntimeError(f"{self.results}: {found} error rows for {self.errors}, or fewer graded rows than the run merged")

    @overload
    def __getitem__(self, index: int) -> Row: ...
    @overload
    def __getitem__(self, index: slice) -> list[Row]: ...
    def __getitem__(self, index: int | slice) -> Row | list[Row]:
        if isinstance(index, int):
            position = index + len(self) if index < 0 else index
            if not 0 <= position < len(self):
                raise IndexError(index)
            return next(islice(iter(self), position, None))
        start, stop, step = index.indices(len(self))
        if step != 1:
            return list(self)[index]
        if self._cursor is None or self._cursor[0] != start:  # not where the last slice ended: walk from the start
            walk = iter(self)
            for _ in islice(walk, start):
                pass
        else:
            walk = self._cursor[1]
        taken = list(islice(walk, max(stop - start, 0)))
        self._cursor = (start + len(taken), walk)
        return taken
