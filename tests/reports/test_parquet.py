"""Parquet written with pyarrow alone (``reports._parquet``) is byte for byte what the pandas path
wrote, on every table of a graded run: the bundled sample and realistic conversations."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import reports._write as W
from reports import analyse, load_run, render
from reports._parquet import Unconverted, arrow_table

ROOT = Path(__file__).resolve().parents[2]


def _graded(tmp_path: Path, case: str) -> Path:
    from pipelines.run import GradeOptions, run_grading

    if case == "sample":
        tasks, trajectories = ROOT / "data/sample/tasks.jsonl", ROOT / "data/sample/trajectories.jsonl"
    else:
        sys.path.insert(0, str(ROOT))
        from bench.conversations import generate

        paths = generate(tmp_path / "inputs", 60)
        tasks, trajectories = paths["episode"], paths["trajectories"]
    out = tmp_path / "run"
    run_grading(GradeOptions(tasks=tasks, trajectories=trajectories, out=out, parquet=False))
    return out


def _tables(run: Path, out: Path) -> dict[str, bytes]:
    render([analyse(load_run(run))], out, generated="x", parquet=True)
    return {p.name: p.read_bytes() for p in sorted((out / "tables").glob("*.parquet"))}


@pytest.mark.parametrize("case", ["sample", "conversations"])
def test_parquet_without_pandas_is_the_pandas_bytes(tmp_path, monkeypatch, case):
    pytest.importorskip("pandas")
    run = _graded(tmp_path, case)
    fast_tables = []
    real = W.arrow_table

    def counted(df):
        table = real(df)
        fast_tables.append(table is not None)
        return table

    monkeypatch.setattr(W, "arrow_table", counted)
    fast = _tables(run, tmp_path / "fast")
    assert sum(fast_tables) >= len(fast_tables) // 2  # the path under test wrote most tables
    monkeypatch.setattr(W, "arrow_table", lambda df: None)
    monkeypatch.setattr(W, "arrow_arrays", lambda df, types: (_ for _ in ()).throw(Unconverted("pandas path")))
    slow = _tables(run, tmp_path / "slow")
    assert fast.keys() == slow.keys() and "trajectories.parquet" in fast
    assert [name for name in fast if fast[name] != slow[name]] == []


def test_an_unknown_kind_goes_to_pandas():
    from reports._frame import Table

    assert arrow_table(Table({"a": [1, None]}, {"a": "Int64"})) is None
    assert arrow_table(Table({"a": ["x", True]}, {"a": "object"})) is None
