"""Parquet tables written with pyarrow alone, byte for byte what ``DataFrame.to_parquet`` wrote.

Why: importing pandas to hand pyarrow a frame cost more than writing every table of a run. The
arrays are built from the ``Table``'s columns, from their buffers (``pa.array`` imports pandas),
as pyarrow converts a frame's columns (NaN and None missing),
and the ``pandas`` schema metadata pandas' writer adds is reproduced; for a column kind this does
not reproduce, or versions of pandas and pyarrow it was not checked against (``VERIFIED``), the
pandas path writes the table (``arrow_table`` returns None). ``tests/reports/test_parquet.py``
compares the bytes of both paths.
"""

from __future__ import annotations

import array
import json
import math
from functools import cache
from importlib import metadata
from typing import Any

from judge import TrajectoryJudgeError
from reports._frame import STR, Table

__all__ = ["VERIFIED", "Unconverted", "arrow_arrays", "arrow_table"]

VERIFIED = {("3", "26")}  # (pandas, pyarrow) major versions whose metadata this reproduces

# Table kind -> (arrow type name, pandas_type, numpy_type) as pandas' frame gives them to pyarrow
_KINDS = {
    "int": ("int64", "int64", "int64"),
    "float": ("float64", "float64", "float64"),
    "bool": ("bool_", "bool", "bool"),
    STR: ("large_string", "object", "str"),
}


@cache
def _versions() -> tuple[str, str] | None:
    """(pandas, pyarrow) versions when both are installed and verified, else None."""
    import pyarrow as pa

    try:
        pandas = metadata.version("pandas")
    except metadata.PackageNotFoundError:
        return None
    if (pandas.split(".")[0], pa.__version__.split(".")[0]) not in VERIFIED:
        return None
    return pandas, pa.__version__


class Unconverted(TrajectoryJudgeError, ValueError):
    """A value the array builder does not convert as pandas would (the pandas path writes it)."""


def _missing(v: Any) -> bool:
    return v is None or (type(v) is float and math.isnan(v))


def _validity(values: list[Any]) -> tuple[Any, int]:
    """The validity bitmap (None: nothing missing) and the missing count."""
    import pyarrow as pa

    bits = bytearray((len(values) + 7) // 8)
    missing = 0
    for i, v in enumerate(values):
        if _missing(v):
            missing += 1
        else:
            bits[i >> 3] |= 1 << (i & 7)
    return (pa.py_buffer(bytes(bits)) if missing else None), missing


def _array(values: list[Any], t: Any) -> Any:
    """One column as an arrow array of type ``t`` from its buffers (``pa.array`` would import
    pandas to ask whether the list is one of its objects); ``Unconverted`` where unsure."""
    import pyarrow as pa

    n = len(values)
    if t == pa.null():
        if any(not _missing(v) for v in values):
            raise Unconverted(t)
        return pa.nulls(n)
    valid, missing = _validity(values)
    if t == pa.int64() or t == pa.float64():
        code, ok = ("q", int) if t == pa.int64() else ("d", float)
        data: list[int | float] = []
        for v in values:
            if _missing(v):
                data.append(0)
            elif type(v) is int or (type(v) is float and (ok is float or v.is_integer())):
                data.append(ok(v))
            else:
                raise Unconverted(v)
        try:
            buffer = array.array(code, data)
        except OverflowError:
            raise Unconverted(t) from None
        return pa.Array.from_buffers(t, n, [valid, pa.py_buffer(buffer)], missing)
    if t == pa.bool_():
        bits = bytearray((n + 7) // 8)
        for i, v in enumerate(values):
            if type(v) is bool:
                if v:
                    bits[i >> 3] |= 1 << (i & 7)
            elif not _missing(v):
                raise Unconverted(v)
        return pa.Array.from_buffers(t, n, [valid, pa.py_buffer(bytes(bits))], missing)
    if t == pa.string() or t == pa.large_string():
        offsets, chunks, end = [0], [], 0
        for v in values:
            if type(v) is str:
                raw = v.encode("utf-8")  # a lone surrogate raises, as in pyarrow
                chunks.append(raw)
                end += len(raw)
            elif not _missing(v):
                raise Unconverted(v)
            offsets.append(end)
        if t == pa.string() and end >= 2**31:
            raise Unconverted(t)
        code = "q" if t == pa.large_string() else "i"
        return pa.Array.from_buffers(t, n, [valid, pa.py_buffer(array.array(code, offsets)), pa.py_buffer(b"".join(chunks))], missing)
    raise Unconverted(t)


def arrow_arrays(df: Table, types: list[Any]) -> list[Any]:
    """The columns of ``df`` as arrays of ``types``, missing values (None, NaN) as nulls, as
    pyarrow converts a frame's columns; ``Unconverted`` where it cannot say."""
    return [_array(df.data[c], t) for c, t in zip(df.columns, types, strict=True)]


def arrow_table(df: Table) -> Any:
    """The pyarrow table ``pa.Table.from_pandas(df.to_pandas(), preserve_index=False)`` gives
    (after ``_write.py``'s object-column mapping), or None where this cannot say."""
    versions = _versions()
    if versions is None or not df.columns:
        return None
    import pyarrow as pa

    fields, columns = [], []
    for c in df.columns:
        kind = df.kinds[c]
        values = df.data[c]
        if kind == "object" and not values:  # an empty table's column: no type known
            arrow, pandas_type, numpy_type = "null", "empty", "object"
        elif kind in _KINDS:
            arrow, pandas_type, numpy_type = _KINDS[kind]
        else:
            return None
        if not isinstance(c, str):
            return None
        fields.append(pa.field(c, getattr(pa, arrow)()))
        columns.append({"name": c, "field_name": c, "pandas_type": pandas_type, "numpy_type": numpy_type, "metadata": None})
    meta = {
        "index_columns": [],
        "column_indexes": [],
        "columns": columns,
        "attributes": {},
        "creator": {"library": "pyarrow", "version": versions[1]},
        "pandas_version": versions[0],
    }
    schema = pa.schema(fields, metadata={b"pandas": json.dumps(meta).encode("utf8")})
    try:
        arrays = arrow_arrays(df, [f.type for f in fields])
    except (Unconverted, UnicodeEncodeError):
        return None
    return pa.Table.from_arrays(arrays, schema=schema)
