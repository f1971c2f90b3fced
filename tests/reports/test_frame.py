"""The report's tables without pandas (issue 27, a first trajectory fast): ``reports._frame.Table``
holds what the pandas tables held (kinds inferred as pandas infers dtypes), writes the CSV bytes
pandas wrote, and a small run imports none of the heavy libraries; Parquet is written for a run of
``PARQUET_FROM`` trajectories or more, or when asked, with the frames it had before."""

from __future__ import annotations

import io
import itertools
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from reports import analyse, build_report, load_run
from reports._escape import csv_safe
from reports._frame import Table
from reports._tables import trajectories
from reports._write import CSV_EOL, PARQUET_FROM, TRAJECTORY_CHUNK
from tests.reports.conftest import write_run

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("pandas", "numpy", "pyarrow", "scipy", "sklearn", "jinja2", "judge.llm", "rubrics")
ATOMS = [1, 2, 0.5, None, float("nan"), True, False, "x", "=1+1", "a\r\nb", (1,)]


def _pandas_csv(df: pd.DataFrame, header: bool = True) -> str:
    """What the reports wrote with pandas before (reports._write at 0b2b056)."""
    return csv_safe(df).to_csv(index=False, header=header, lineterminator=CSV_EOL)


def _csv(table: Table, header: bool = True) -> str:
    buf = io.StringIO(newline="")
    table.write_csv(buf, header=header, eol=CSV_EOL)
    return buf.getvalue()


def test_every_column_of_up_to_three_values_is_the_frame_pandas_builds():
    """Every column of 0 to 3 values drawn from ints, floats, NaN, None, bools, strings and other
    objects: the same dtype and values as ``pandas.DataFrame(records)``, and the same CSV bytes."""
    for n in range(4):
        for combo in itertools.product(ATOMS, repeat=n):
            records = [{"a": v} for v in combo]
            want = pd.DataFrame(records, columns=["a"])
            table = Table.from_records(records, ["a"])
            got = table.to_pandas()
            assert str(got["a"].dtype) == str(want["a"].dtype), combo
            pd.testing.assert_frame_equal(got, want)
            assert _csv(table) == _pandas_csv(want), combo
            assert table.is_numeric("a") == (pd.api.types.is_numeric_dtype(want["a"]) and not pd.api.types.is_bool_dtype(want["a"]))


def test_a_record_without_a_key_is_nan_there_as_in_pandas():
    records = [{"a": "x", "b": 1}, {"b": 2}, {"a": "y"}]
    want = pd.DataFrame(records, columns=["a", "b"])
    pd.testing.assert_frame_equal(Table.from_records(records, ["a", "b"]).to_pandas(), want)
    assert _csv(Table.from_records(records, ["a", "b"])) == _pandas_csv(want)


def _all_tables(run_dirs: list[Path]) -> list[tuple[str, Table]]:
    reports = [analyse(load_run(d)) for d in run_dirs]
    out = [(f"{i}:{name}", t) for i, rep in enumerate(reports) for name, t in rep.tables.items()]
    for rep in reports:
        run = rep.run
        out += [(f"trajectories:{start}", trajectories(run, start, start + TRAJECTORY_CHUNK)) for start in range(0, max(len(run.rows), 1), TRAJECTORY_CHUNK)]
    return out


def test_every_table_of_a_graded_and_a_judged_run_writes_the_csv_bytes_pandas_wrote(graded_run: Path, judged_run: Path):
    for name, table in _all_tables([graded_run, judged_run]):
        frame = table.to_pandas()
        assert _csv(table) == _pandas_csv(frame), name
        assert _csv(table, header=False) == _pandas_csv(frame, header=False), name


def test_hostile_cells_are_quoted_and_made_inert_as_pandas_did():
    records = [
        {"text": "=HYPERLINK(1)", "n": 1, "x": None},
        {"text": 'say "hi"', "n": 2, "x": "+1.5"},
        {"text": "line\nbreak", "n": 3, "x": "a,b"},
        {"text": "cr\ronly", "n": None, "x": "-x"},
        {"text": "", "n": 4, "x": "@me"},
    ]
    table = Table.from_records(records, ["text", "n", "x"])
    assert _csv(table) == _pandas_csv(pd.DataFrame(records, columns=["text", "n", "x"]))
    assert "'=HYPERLINK(1)" in _csv(table) and "'-x" in _csv(table) and ",+1.5" in _csv(table)


def _stored(table: Table) -> pd.DataFrame:
    """The frame a table's Parquet file holds: the pandas frame, object columns (None mixed with
    bools or strings) as strings, bools and None kept (as reports._write stored them before)."""
    frame = table.to_pandas()
    for col in frame.columns:
        if frame[col].dtype == object:
            frame[col] = frame[col].map(lambda v: None if v is None else v if isinstance(v, bool) else str(v))
    return frame


def _grade(tmp_path: Path, *extra: str) -> tuple[Path, set[str]]:
    """``judge grade`` on a one-line file (bench/conversations.py), in a fresh process: its --out
    and the heavy libraries loaded when it exits."""
    from bench.conversations import generate

    paths = generate(tmp_path / "in", 1)
    out = tmp_path / "out"
    code = (
        "import sys\nfrom pipelines.cli import main\nsys.argv = ['judge', *sys.argv[1:]]\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert exc.code in (None, 0), exc.code\n"
        f"print('LOADED=' + ','.join(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)"
    )
    args = ["grade", "--tasks", str(paths["episode"]), "--trajectories", str(paths["trajectories"]), "--out", str(out), *extra]
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT, check=True)
    line = next(x for x in proc.stderr.splitlines() if x.startswith("LOADED="))
    return out, {m for m in line.removeprefix("LOADED=").split(",") if m}


def test_one_trajectory_is_graded_without_pandas_numpy_pyarrow_scipy_or_sklearn(tmp_path: Path):
    """Nor the judges' machinery (judge.llm, the rubrics and their jinja2 templates): a run without
    judges records no rubric in its manifest; its summary's intervals need no draws (one task)."""
    out, loaded = _grade(tmp_path)
    assert not loaded, loaded
    tables = sorted(p.name for p in (out / "tables").iterdir())
    assert "trajectories.csv" in tables and not [t for t in tables if t.endswith(".parquet")]
    assert "Tables: `tables/*.csv`; per-trajectory drill-down" in (out / "report.md").read_text(encoding="utf-8")
    assert len(pd.read_csv(out / "tables" / "trajectories.csv")) == 1


def test_asked_for_parquet_a_small_run_writes_it_with_the_frames_of_its_tables(tmp_path: Path):
    out, loaded = _grade(tmp_path, "--parquet")
    assert {"pandas", "pyarrow"} <= loaded
    assert "Tables: `tables/*.csv` and `tables/*.parquet`;" in (out / "report.md").read_text(encoding="utf-8")
    rep = analyse(load_run(out))
    for name, table in rep.tables.items():
        pd.testing.assert_frame_equal(pd.read_parquet(out / "tables" / f"{name}.parquet"), _stored(table), obj=name)
    traj = pd.read_parquet(out / "tables" / "trajectories.parquet")
    assert list(traj.columns) == trajectories(rep.run).columns and len(traj) == 1


@pytest.mark.parametrize("size", [PARQUET_FROM - 1, PARQUET_FROM])
def test_parquet_by_default_from_parquet_from_trajectories(tmp_path: Path, graded_run: Path, size: int):
    """Below PARQUET_FROM trajectories CSV only; from it, Parquet too (the frames as before); and
    --no-parquet / --parquet override the size either way."""
    from tests.reports.conftest import read_results

    run = tmp_path / "run"
    write_run(run, read_results(graded_run)[:size])
    files = build_report([run], tmp_path / "default")
    assert any(p.suffix == ".parquet" for p in files) == (size >= PARQUET_FROM)
    flipped = build_report([run], tmp_path / "flipped", parquet=size < PARQUET_FROM)
    assert any(p.suffix == ".parquet" for p in flipped) == (size < PARQUET_FROM)
    with_parquet = tmp_path / ("default" if size >= PARQUET_FROM else "flipped") / "tables"
    rep = analyse(load_run(run))
    for name, table in rep.tables.items():
        pd.testing.assert_frame_equal(pd.read_parquet(with_parquet / f"{name}.parquet"), _stored(table), obj=name)
    traj = pd.read_parquet(with_parquet / "trajectories.parquet")
    assert len(traj) == size and list(traj.columns) == trajectories(rep.run).columns
