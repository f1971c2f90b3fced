"""SLOT-BIRD-style query tools: get_data / filter / select / sort / aggregate / retrieve.

Intermediate results are datasets held by the session and named by a content-addressed handle
(``ds_<hash>``), so the same rows reached by different valid paths get the same handle and the
same response. Column names in arguments are checked against the dataset's columns, which come
from the database schema; nothing from an argument is ever turned into SQL.
"""

from __future__ import annotations

import math
from functools import cached_property
from typing import Any

import msgspec

from judge import BadInputError, content_hash

PREVIEW_ROWS = 3
MAX_VALUES = 200

CONDITIONS = ("equal", "not_equal", "greater_than", "less_than", "greater_or_equal", "less_or_equal", "contains")
AGGREGATIONS = ("count", "count_distinct", "sum", "mean", "min", "max")


class SlotError(BadInputError):
    pass


class Dataset(msgspec.Struct, frozen=True, dict=True):
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]

    @cached_property
    def handle(self) -> str:
        return "ds_" + content_hash({"columns": list(self.columns), "rows": [list(r) for r in self.rows]})[:16]

    def dicts(self, limit: int | None = None) -> list[dict[str, Any]]:
        rows = self.rows if limit is None else self.rows[:limit]
        return [dict(zip(self.columns, r)) for r in rows]

    def column_index(self, name: Any) -> int:
        if not isinstance(name, str) or name not in self.columns:
            raise SlotError(f"unknown key_name {name!r}; columns are {list(self.columns)}")
        return self.columns.index(name)

    def describe(self) -> dict[str, Any]:
        return {"data": self.handle, "columns": list(self.columns), "row_count": len(self.rows), "preview": self.dicts(PREVIEW_ROWS)}


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def _matches(cell: Any, value: Any, condition: str) -> bool:
    if cell is None:
        return condition == "not_equal" and value is not None
    if condition == "contains":
        return str(value).strip().lower() in str(cell).lower()
    a, b = _number(cell), _number(value)
    numeric = a is not None and b is not None  # compare numbers as numbers, anything else as text
    left: Any = a if numeric else str(cell).strip().lower()
    right: Any = b if numeric else str(value).strip().lower()
    if condition == "equal":
        return left == right
    if condition == "not_equal":
        return left != right
    if isinstance(left, str) != isinstance(right, str):
        return False
    return {
        "greater_than": left > right,
        "less_than": left < right,
        "greater_or_equal": left >= right,
        "less_or_equal": left <= right,
    }[condition]


def filter_rows(ds: Dataset, key_name: Any, value: Any, condition: str) -> Dataset:
    if condition not in CONDITIONS:
        raise SlotError(f"unknown condition {condition!r}; use one of {list(CONDITIONS)}")
    i = ds.column_index(key_name)
    return Dataset(ds.columns, tuple(r for r in ds.rows if _matches(r[i], value, condition)))


def select_columns(ds: Dataset, columns: list[Any]) -> Dataset:
    if not columns:
        raise SlotError("columns must name at least one column")
    idx = [ds.column_index(c) for c in columns]
    return Dataset(tuple(ds.columns[i] for i in idx), tuple(tuple(r[i] for i in idx) for r in ds.rows))


def sort_rows(ds: Dataset, key_name: Any, ascending: bool, limit: int | None) -> Dataset:
    i = ds.column_index(key_name)

    def key(row: tuple[Any, ...]) -> tuple[int, Any]:
        cell = row[i]
        if cell is None:
            return (2, "")
        n = _number(cell)
        return (0, n) if n is not None else (1, str(cell))

    present = [r for r in ds.rows if r[i] is not None]
    missing = [r for r in ds.rows if r[i] is None]
    ordered = sorted(present, key=key, reverse=not ascending) + missing  # stable; None always last
    if limit is not None:
        if limit < 0:
            raise SlotError("limit must be >= 0")
        ordered = ordered[:limit]
    return Dataset(ds.columns, tuple(ordered))


def aggregate(ds: Dataset, key_name: Any, aggregation_type: str) -> Any:
    if aggregation_type not in AGGREGATIONS:
        raise SlotError(f"unknown aggregation_type {aggregation_type!r}; use one of {list(AGGREGATIONS)}")
    i = ds.column_index(key_name)
    values = [r[i] for r in ds.rows if r[i] is not None]
    if aggregation_type == "count":
        return len(values)
    if aggregation_type == "count_distinct":
        return len({str(v) for v in values})
    if aggregation_type in ("min", "max"):
        if not values:
            return None
        nums = [_number(v) for v in values]
        numbers = [n for n in nums if n is not None]
        if len(numbers) == len(nums):
            pick = min if aggregation_type == "min" else max
            return values[numbers.index(pick(numbers))]
        return (min if aggregation_type == "min" else max)(str(v) for v in values)
    nums = [_number(v) for v in values]
    if any(n is None for n in nums):
        raise SlotError(f"{aggregation_type} needs a numeric column; {key_name!r} is not")
    if not nums:
        return None
    total = math.fsum(nums)  # type: ignore[arg-type]
    if aggregation_type == "sum":
        return round(total, 4)
    return round(total / len(nums), 4)


def retrieve_values(ds: Dataset, key_name: Any, distinct: bool) -> list[Any]:
    i = ds.column_index(key_name)
    values = [r[i] for r in ds.rows]
    if distinct:
        seen: set[str] = set()
        unique = []
        for v in values:
            k = repr(v)
            if k not in seen:
                seen.add(k)
                unique.append(v)
        values = unique
    if len(values) > MAX_VALUES:
        raise SlotError(f"result too large: {len(values)} values (limit {MAX_VALUES}); filter first")
    return values
