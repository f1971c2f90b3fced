"""Entry points: ``write_reports`` (called by the grading run) and ``build_report`` (``judge report``).

Outputs in ``out``: ``report.md``, ``report.html``, ``tables/<name>.csv`` and, for a run of at least
``PARQUET_FROM`` trajectories or when asked (``parquet=True``; ``parquet=False`` never), ``.parquet``;
with several runs the per-run tables go to ``tables/<run>/`` and the comparison tables to ``tables/``.
Byte-identical for the same inputs except the one ``Generated`` line of report.html.

The CSV files are written with the standard library (``reports._frame``), byte for byte what pandas
wrote; pandas and pyarrow are imported only to write Parquet, so a small run imports neither.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from judge import RunSummary
from reports import _tables as T
from reports._analysis import RunReport, analyse
from reports._frame import Table
from reports._html import html_chunks
from reports._markdown import render_markdown
from reports._parquet import Unconverted, arrow_arrays, arrow_table
from reports._run import ORCHESTRATION_COLUMNS, SCORE_NAMES, Row, RunData, load_run


def _generated() -> str:
    """The one timestamp in the outputs; ``SOURCE_DATE_EPOCH`` pins it (reproducible builds)."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    when = datetime.fromtimestamp(int(epoch), UTC) if epoch else datetime.now(UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


CSV_EOL = "\r\n"  # RFC 4180; the csv module quotes a cell holding any character of the line end, so a cell with a lone CR is quoted (with "\n" it was not: a reader saw a new row start inside it)


PARQUET_FROM = 200  # trajectories: below it a run writes CSV only (importing pandas + pyarrow cost more than the run)


def _write_table(df: Table, folder: Path, name: str, parquet: bool) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    csv = folder / f"{name}.csv"
    with open(csv, "w", encoding="utf-8", newline="") as fh:
        df.write_csv(fh, eol=CSV_EOL)
    if not parquet:
        return [csv]
    path = folder / f"{name}.parquet"
    table = arrow_table(df)
    if table is not None:  # pyarrow alone, the bytes of the pandas path below
        import pyarrow.parquet as pq

        pq.write_table(table, path, compression="snappy")
        return [csv, path]
    frame = df.to_pandas()
    for col in frame.columns:  # object columns mixing None and bools/str: Parquet needs one type
        if frame[col].dtype == object:
            frame[col] = frame[col].map(lambda v: None if v is None else str(v) if not isinstance(v, bool) else v)
    frame.to_parquet(path, index=False, engine="pyarrow", compression="snappy")
    return [csv, path]


TRAJECTORY_CHUNK = 2_000


def _trajectory_schema() -> Any:
    import pyarrow as pa

    return pa.schema(
        [(c, pa.string()) for c in ("task_id", "trajectory_id", "agent", "capability", "domain")]
        + [("hop_count", pa.int64())]
        + [(c, pa.string()) for c in ("hop_pattern", "policy_condition", "verdict", "failure_stage", "decided_by", "unresolved_stages")]
        + [("judge_calls", pa.int64()), ("judge_cost_usd", pa.float64())]
        + [("score_" + n, pa.float64()) for n in SCORE_NAMES]
        + [
            (c, pa.string() if c == "tier" else pa.bool_() if c == "looping" else pa.float64() if c.endswith(("rate", "efficiency")) else pa.int64())
            for c in ORCHESTRATION_COLUMNS
        ]
    )


def _trajectory_chunk(table: Table, schema: Any) -> Any:
    """A chunk of the trajectories table as ``pa.Table.from_pandas(table.to_pandas(), schema=...)``
    gives it, from the columns' buffers (pandas where a value does not convert: ``Unconverted``)."""
    import pyarrow as pa

    if table.columns == schema.names:
        try:
            return pa.Table.from_arrays(arrow_arrays(table, schema.types), schema=schema)
        except (Unconverted, UnicodeEncodeError):
            pass
    return pa.Table.from_pandas(table.to_pandas(), schema=schema, preserve_index=False)


def _write_trajectories(run: RunData, folder: Path, parquet: bool) -> list[Path]:
    """The one-row-per-trajectory table, written in chunks (CSV appended, one Parquet row group
    per chunk with a fixed schema), so a 100k-trajectory run never holds the whole table."""
    folder.mkdir(parents=True, exist_ok=True)
    csv, path = folder / "trajectories.csv", folder / "trajectories.parquet"
    n = len(run.rows)
    with contextlib.ExitStack() as stack:
        fh = stack.enter_context(open(csv, "w", encoding="utf-8", newline=""))
        writer = None
        if parquet:
            import pyarrow.parquet as pq

            schema = _trajectory_schema()
            writer = stack.enter_context(pq.ParquetWriter(path, schema, compression="snappy"))
        for start in range(0, max(n, 1), TRAJECTORY_CHUNK):
            table = T.trajectories(run, start, start + TRAJECTORY_CHUNK)
            table.write_csv(fh, header=start == 0, eol=CSV_EOL)
            if writer is not None:
                writer.write_table(_trajectory_chunk(table, schema))
    return [csv, path] if parquet else [csv]


def _unique_names(runs: list[RunData]) -> None:
    seen: dict[str, int] = {}
    for run in runs:
        seen[run.name] = seen.get(run.name, 0) + 1
    if any(v > 1 for v in seen.values()):
        for i, run in enumerate(runs, 1):
            run.name = f"{i}-{run.name}"


def wants_parquet(runs: Sequence[RunData], parquet: bool | None = None) -> bool:
    """Parquet as asked; when not asked, for a run (any of several) of at least ``PARQUET_FROM`` trajectories."""
    return parquet if parquet is not None else any(len(run.rows) >= PARQUET_FROM for run in runs)


def render(reports: list[RunReport], out: Path, generated: str | None = None, parquet: bool | None = None) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    comparison: dict[str, Table] | None = None
    files: list[Path] = []
    runs = [rep.run for rep in reports]
    with_parquet = wants_parquet(runs, parquet)
    formats = ("csv", "parquet") if with_parquet else ("csv",)
    if len(reports) > 1:
        comparison = {"comparison": T.comparison(runs)}
        for key in ("capability", "domain", "hop_count", "hop_pattern", "agent"):
            comparison[f"comparison_by_{key}"] = T.comparison_by(runs, key)
    md = out / "report.md"
    md.write_text(render_markdown(reports, comparison, formats), encoding="utf-8")
    html = out / "report.html"
    with open(html, "w", encoding="utf-8") as fh:  # in pieces: the drill-down's items are written one at a time
        fh.writelines(html_chunks(reports, comparison, generated or _generated()))
    files += [md, html]
    tables = out / "tables"
    for rep in reports:
        folder = tables if len(reports) == 1 else tables / rep.run.name
        for name, df in rep.tables.items():
            files += _write_table(df, folder, name, with_parquet)
        files += _write_trajectories(rep.run, folder, with_parquet)
    for name, df in (comparison or {}).items():
        files += _write_table(df, tables, name, with_parquet)
    return files


def write_reports(
    summary: RunSummary,
    out: Path,
    calibration: Path | None = None,
    rows: Sequence[Row] | None = None,
    parquet: bool | None = None,
    own_steps: bool = False,
    picks: tuple[list[int], int] | None = None,
) -> list[Path]:
    """Every report format for one finished run in ``out`` (reads ``out/results.jsonl``; with
    ``rows``, the ``to_row`` of every result in order, only the drill-down's results); ``parquet``:
    see ``wants_parquet``; ``own_steps`` and ``picks``: see ``load_run``."""
    out = Path(out)
    run = load_run(out, summary=summary, calibration=calibration, rows=rows, own_steps=own_steps, picks=picks)
    return render([analyse(run)], out, parquet=parquet)


def build_report(
    run_dirs: list[Path],
    out: Path,
    calibration: Path | None = None,
    drill_first: int | None = None,
    drill_extra_failures: int | None = None,
    parquet: bool | None = None,
) -> list[Path]:
    """Report for one or more run directories; with several, a side-by-side comparison first.

    ``calibration`` (a calibration.json) applies to every run that has none of its own.
    """
    if not run_dirs:
        raise ValueError("build_report needs at least one run directory")
    runs = [
        load_run(
            Path(d),
            calibration=calibration if not (Path(d) / "calibration.json").exists() else None,
            drill_first=drill_first,
            drill_extra_failures=drill_extra_failures,
        )
        for d in run_dirs
    ]
    _unique_names(runs)
    return render([analyse(run) for run in runs], Path(out), parquet=parquet)
