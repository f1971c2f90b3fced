"""``judge gold export|label|import``: human gold labels from your own graded runs.

export: draw a labelling set from a run (stratified by failure stage or by how checks were
decided), with each case's material inline; label: write the offline HTML labelling page; import:
merge the label files of one or more annotators into a gold set that ``judge calibrate`` reads.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated, Optional

import typer

from pipelines.cli._common import EXIT_INPUT_ERROR, console
from pipelines.cli.rubrics import RubricsOpt, load_rubric_table

gold_app = typer.Typer(no_args_is_help=True, add_completion=False)


class Stratify(StrEnum):
    stage = "stage"
    decided_by = "decided_by"


@gold_app.command("export")
def export(
    run_dir: Annotated[Path, typer.Argument(exists=True, file_okay=False, help="A graded run (the --out of judge grade).")],
    out: Annotated[Path, typer.Option("--out", help="The labelling set to write (JSONL).")],
    n: Annotated[int, typer.Option("--n", min=1, help="How many cases to draw.")] = 200,
    stratify: Annotated[
        Stratify, typer.Option(help="Equal shares per failure stage, or per how the check was decided (the other key nested).")
    ] = Stratify.stage,
    seed: Annotated[int, typer.Option(help="Seed of the draw.")] = 0,
    rubrics: RubricsOpt = None,
) -> None:
    """Draw a labelling set from a graded run: each case's check, material, steps, answer and evidence inline."""
    from calibration import write_label_set
    from judge import InputError
    from pipelines.run.gold import export_label_set

    table = load_rubric_table(rubrics)
    try:
        items, summary = export_label_set(run_dir, n, stratify=stratify.value, seed=seed, rubric_table=table)
    except InputError as exc:
        console.print(f"{exc.info.render()}", style="red")
        raise typer.Exit(EXIT_INPUT_ERROR) from exc
    write_label_set(items, out)
    typer.echo(
        f"{summary.chosen} cases drawn from {summary.candidates} labellable rows of {summary.rows} "
        f"({summary.error_rows} input-error rows and {summary.nothing_to_label} rows with no labellable check left out) -> {out}"
    )
    for stratum, counts in summary.strata.items():
        typer.echo(f"  {stratum}: {counts['sampled']} of {counts['size']}")


@gold_app.command("label")
def label(
    label_set: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="A labelling set written by judge gold export.")],
    out: Annotated[Optional[Path], typer.Option("--out", help="The HTML page to write (default: SET with .html).")] = None,
    title: Annotated[Optional[str], typer.Option(help="Page title (default: the set's file name).")] = None,
) -> None:
    """Write the self-contained labelling page for a set and print its path (open it in a browser; no server)."""
    from calibration import labelling_page, load_label_set
    from judge import InputError

    try:
        items = load_label_set(label_set)
    except InputError as exc:
        console.print(f"{exc.info.render()}", style="red")
        raise typer.Exit(EXIT_INPUT_ERROR) from exc
    page = out or label_set.with_suffix(".html")
    page.write_text(labelling_page(items, title=title or label_set.name), encoding="utf-8")
    typer.echo(str(page.resolve()))


@gold_app.command("import")
def import_labels(
    label_set: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="The labelling set the labels belong to.")],
    labels: Annotated[list[Path], typer.Argument(exists=True, dir_okay=False, help="Label files exported from the page (one per annotator or more).")],
    out: Annotated[Path, typer.Option("--out", help="The gold set to write (JSONL, read by judge calibrate --gold).")],
) -> None:
    """Merge annotators' label files into a gold set (annotator ids kept: calibrate reports human-human agreement)."""
    from calibration import merge_labels, write_gold_jsonl
    from judge import InputError

    try:
        gold, summary = merge_labels(label_set, labels)
    except InputError as exc:
        console.print(f"{exc.info.render()}", style="red")
        raise typer.Exit(EXIT_INPUT_ERROR) from exc
    write_gold_jsonl(gold, out)
    who = ", ".join(f"{a} {k}" for a, k in summary.annotators.items())
    typer.echo(f"{summary.labelled} of {summary.items} items labelled ({who}); {summary.multi_annotated} by two or more annotators -> {out}")
    if summary.unlabelled:
        typer.echo(
            f"  {len(summary.unlabelled)} items carry no label and are not in the gold set: {', '.join(summary.unlabelled[:5])}{' ...' if len(summary.unlabelled) > 5 else ''}"
        )
    if summary.duplicates_ignored:
        typer.echo(f"  {summary.duplicates_ignored} identical label lines seen twice were counted once")
    rubrics = sorted({it.rubric for it in gold.items})
    if len(rubrics) > 1:
        typer.echo(f"  the gold set mixes rubrics {', '.join(rubrics)}: judge calibrate reports each in its own section (--rubric NAME keeps one)")
