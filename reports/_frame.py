"""``Table``: the report's tables without pandas (issue 27: a small run imports no pandas, numpy or pyarrow).

A table is named columns of equal length, each of one kind, inferred from its values the way
``pandas.DataFrame(records, columns=...)`` infers a dtype, so that every cell a report prints and
every CSV byte is what the pandas tables gave:

- ``int``: ints only; ``float``: floats (ints among them, or ints with None: None becomes NaN, ints
  become floats, as pandas makes such a column float64); ``bool``: bools only;
- ``object``: anything else (strings, bools with None, mixed types), values kept as they are;
- ``Int64`` / ``boolean``: pandas' nullable kinds (ints or bools with None kept), set explicitly.

CSV (``write_csv``): the bytes of ``csv_safe(df).to_csv(index=False, lineterminator=CSV_EOL)``:
floats by ``repr`` (numpy's shortest form is Python's), NaN and None as empty cells, formula-like
strings made inert. ``to_pandas`` (lazily imported, for Parquet) gives the frame the pandas tables
were, dtypes included.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any

from reports._escape import csv_cell

if TYPE_CHECKING:
    import pandas as pd

NUMERIC = frozenset({"int", "float", "Int64"})
_NAN = float("nan")
STR = "str"  # pandas 3 infers its string dtype for a column of strings (missing ones NaN)
_MISSING = object()


def infer(values: Sequence[Any]) -> tuple[str, list[Any]]:
    """The kind of a column as pandas infers it from records, and its values converted as pandas
    converts them (None -> NaN and int -> float in a float column; None -> NaN in a string column)."""
    has_none = has_nan = has_int = has_float = has_bool = has_str = has_other = False
    for v in values:
        if v is None:
            has_none = True
        elif isinstance(v, bool):
            has_bool = True
        elif isinstance(v, int):
            has_int = True
        elif isinstance(v, float):
            if math.isnan(v):
                has_nan = True
            else:
                has_float = True
        elif isinstance(v, str):
            has_str = True
        else:
            has_other = True
    numbers = has_int or has_float
    if has_other or (has_str and (numbers or has_bool)) or (has_bool and (numbers or has_none or has_nan)):
        return "object", list(values)
    if has_str:
        return STR, [_NAN if v is None else v for v in values]
    if has_bool:
        return "bool", list(values)
    if has_float or (has_int and (has_none or has_nan)) or has_nan:
        return "float", [_NAN if v is None else float(v) for v in values]
    if has_int:
        return "int", list(values)
    return "object", list(values)  # empty, or every value None


def _as(kind: str, values: Sequence[Any]) -> list[Any]:
    """``values`` as a column of ``kind`` (pandas' ``astype``)."""
    if kind == "float":
        return [_NAN if v is None or (isinstance(v, float) and math.isnan(v)) else float(v) for v in values]
    if kind == "Int64":
        return [None if v is None or (isinstance(v, float) and math.isnan(v)) else int(v) for v in values]
    if kind == "boolean":
        return [None if v is None or (isinstance(v, float) and math.isnan(v)) else bool(v) for v in values]
    return list(values)


class Table:
    """Columns of one kind each, in order; rows are read as dicts (``records``)."""

    __slots__ = ("data", "kinds")

    def __init__(self, data: Mapping[str, list[Any]], kinds: Mapping[str, str]) -> None:
        self.data = dict(data)
        self.kinds = dict(kinds)

    # ---- building
    @classmethod
    def from_records(cls, records: Iterable[Mapping[str, Any]], columns: Sequence[str], kinds: Mapping[str, str] | None = None) -> Table:
        """What ``pandas.DataFrame(records, columns=columns)`` holds (a key a record lacks is NaN);
        ``kinds`` sets some columns' kind (``astype``) instead of inferring it."""
        records = list(records)
        return cls.from_columns({c: [_NAN if (v := r.get(c, _MISSING)) is _MISSING else v for r in records] for c in columns}, kinds)

    @classmethod
    def from_columns(cls, columns: Mapping[str, Sequence[Any]], kinds: Mapping[str, str] | None = None) -> Table:
        """What ``pandas.DataFrame(columns)`` holds, ``kinds`` applied as ``astype``."""
        data: dict[str, list[Any]] = {}
        inferred: dict[str, str] = {}
        for c, values in columns.items():
            kind, data[c] = infer(values)
            if kinds and c in kinds:
                kind, data[c] = kinds[c], _as(kinds[c], data[c])
            inferred[c] = kind
        return cls(data, inferred)

    # ---- reading
    @property
    def columns(self) -> list[str]:
        return list(self.data)

    def __len__(self) -> int:
        return len(next(iter(self.data.values()))) if self.data else 0

    @property
    def empty(self) -> bool:
        return not self.data or len(self) == 0

    def __getitem__(self, column: str) -> list[Any]:
        return self.data[column]

    def is_numeric(self, column: str) -> bool:
        """Numbers, not bools: right-aligned in the reports."""
        return self.kinds[column] in NUMERIC

    def records(self) -> Iterator[dict[str, Any]]:
        cols = self.columns
        for values in zip(*(self.data[c] for c in cols), strict=True):
            yield dict(zip(cols, values, strict=True))

    def tuples(self, columns: Sequence[str] | None = None) -> Iterator[tuple[Any, ...]]:
        return zip(*(self.data[c] for c in (columns or self.columns)), strict=True)

    def first(self) -> dict[str, Any]:
        return next(self.records())

    # ---- new tables (kinds kept, as pandas keeps dtypes)
    def _take(self, index: Sequence[int]) -> Table:
        return Table({c: [v[i] for i in index] for c, v in self.data.items()}, self.kinds)

    def where(self, keep: Callable[[dict[str, Any]], bool]) -> Table:
        return self._take([i for i, r in enumerate(self.records()) if keep(r)])

    def head(self, n: int) -> Table:
        return Table({c: v[:n] for c, v in self.data.items()}, self.kinds)

    def drop(self, columns: Sequence[str]) -> Table:
        return Table({c: v for c, v in self.data.items() if c not in columns}, {c: k for c, k in self.kinds.items() if c not in columns})

    def sort(self, keys: Sequence[str], ascending: Sequence[bool]) -> Table:
        """A stable sort (pandas' ``sort_values(kind="mergesort")``), one pass per key from the last."""
        index = list(range(len(self)))
        for key, up in reversed(list(zip(keys, ascending, strict=True))):
            col = self.data[key]
            index.sort(key=lambda i: col[i], reverse=not up)  # reverse keeps ties in order (a stable sort)
        return self._take(index)

    # ---- writing
    def write_csv(self, fh: IO[str], header: bool = True, eol: str = "\r\n") -> None:
        writer = csv.writer(fh, lineterminator=eol)
        cols = self.columns
        if header:
            writer.writerow([csv_cell(c) for c in cols])
        cells = [_cells(self.kinds[c], self.data[c]) for c in cols]
        writer.writerows(zip(*cells, strict=True))

    def to_pandas(self) -> pd.DataFrame:
        """The pandas frame (pandas imported here, for Parquet and for callers that want one)."""
        import numpy as np
        import pandas as pd

        dtypes = {"int": np.int64, "float": np.float64, "bool": np.bool_, "object": object, STR: STR, "Int64": "Int64", "boolean": "boolean"}
        if not self.data:
            return pd.DataFrame()
        return pd.DataFrame({c: pd.Series(v, dtype=dtypes[self.kinds[c]]) for c, v in self.data.items()})


def _cells(kind: str, values: list[Any]) -> list[Any]:
    """A column as pandas' ``to_csv`` writes it (before the csv module quotes it)."""
    if kind == "float":
        return ["" if math.isnan(v) else repr(v) for v in values]
    if kind in ("int", "bool"):
        return values
    out: list[Any] = []
    for v in values:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            out.append("")
        else:
            out.append(csv_cell(v) if isinstance(v, str) else v)
    return out
