"""``judge rubrics export|check`` and the ``--rubrics DIR`` option every judging command shares.

``load_rubric_table`` is the one helper behind ``--rubrics`` (grade, demo, calibrate, and any
command that builds a judge panel): the built-in rubrics with the folder's files added or
overriding them by name, checked before any judge is called; a bad file exits 4 (invalid judge
configuration) with its file and line.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from pipelines.cli._common import EXIT_JUDGE_CONFIG, EXIT_USAGE, console, labelled, print_table

if TYPE_CHECKING:
    from rubrics import TemplateRubric

RubricsOpt = Annotated[
    Optional[Path],
    typer.Option("--rubrics", help="Folder of rubric files (jinja2 + TOML header) adding to or overriding the built-in rubrics by name."),
]

rubrics_app = typer.Typer(no_args_is_help=True, add_completion=False)


def load_rubric_table(folder: Path | None) -> dict[str, TemplateRubric] | None:
    """None without ``--rubrics`` (the built-ins apply); else the checked table (exit 4 on a bad file)."""
    if folder is None:
        return None
    from rubrics import RubricFileError, rubric_set

    try:
        return rubric_set(folder)
    except RubricFileError as exc:
        console.print(labelled("invalid rubric:", str(exc)))
        raise typer.Exit(EXIT_JUDGE_CONFIG) from exc


def rubric_versions(table: dict[str, TemplateRubric] | None) -> dict[str, dict[str, str]]:
    """{name: {version, source}} for the manifest: source is ``builtin`` or the file read."""
    import rubrics

    table = table or rubrics.RUBRICS
    out = {}
    for name, rubric in sorted(table.items()):
        builtin = rubrics.RUBRICS.get(name) is rubric
        out[name] = {"version": rubric.version, "source": "builtin" if builtin else str(getattr(rubric, "source_path", "") or "")}
    return out


@rubrics_app.command("export")
def export(
    folder: Annotated[Path, typer.Argument(help="Folder to write the built-in rubrics into (created if needed).")],
    force: Annotated[bool, typer.Option("--force", help="Replace files that differ from the built-ins.")] = False,
) -> None:
    """Write the built-in rubrics as rubric files: the starting point for your own (--rubrics DIR)."""
    import rubrics

    try:
        files = rubrics.write_rubric_files(rubrics.RUBRICS, folder, overwrite=force)
    except FileExistsError as exc:
        console.print(f"{exc}", style="red")
        raise typer.Exit(EXIT_USAGE) from exc
    for path in files:
        typer.echo(str(path))


@rubrics_app.command("check")
def check(folder: Annotated[Path, typer.Argument(help="A rubric folder, as --rubrics takes it.")]) -> None:
    """Check every rubric file of a folder and print the rubric set it gives (name, check, version, source)."""
    from rich.table import Table

    table = load_rubric_table(folder) or {}
    versions = rubric_versions(table)
    shown = Table(title=f"rubrics with {folder}")
    for col in ("rubric", "check", "labels", "version", "source"):
        shown.add_column(col)
    for name, rubric in table.items():
        shown.add_row(name, str(rubric.check), ", ".join(rubric.labels), versions[name]["version"], versions[name]["source"])
    print_table(shown)
