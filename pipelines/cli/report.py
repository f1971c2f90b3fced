"""``judge report``: re-render one run's report, or compare several runs side by side."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from pipelines.cli._common import EXIT_INPUT_ERROR, console, labelled, stdout


def report(
    run_dirs: Annotated[list[Path], typer.Argument(exists=True, file_okay=False, help="One or more run directories (several: side-by-side comparison).")],
    out: Annotated[Optional[Path], typer.Option(help="Output directory (default: the single run directory, or runs/comparison).")] = None,
    calibration: Annotated[
        Optional[Path],
        typer.Option(
            exists=True, dir_okay=False, help="calibration.json of the judges used: adds their agreement figures and pass rates corrected for judge error."
        ),
    ] = None,
    parquet: Annotated[
        Optional[bool],
        typer.Option("--parquet/--no-parquet", help="Write tables/*.parquet beside the CSV files (default: for a run of at least 200 trajectories)."),
    ] = None,
) -> None:
    """Re-render the report of one run, or compare several runs side by side."""
    from reports import ReportInputError, build_report

    target = out or (run_dirs[0] if len(run_dirs) == 1 else Path("runs/comparison"))
    try:
        written = build_report(list(run_dirs), target, calibration=calibration, parquet=parquet)
    except ReportInputError as exc:  # a run folder damaged or not one: nothing is written
        console.print(labelled("input error:", str(exc)), highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_INPUT_ERROR) from exc
    for path in written:
        stdout.print(str(path))
