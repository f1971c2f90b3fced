"""``judge grade`` and ``judge demo``: grade trajectories, print the breakdown, write the run."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from rich.console import Console

from pipelines.cli import _usage as usage
from pipelines.cli._common import (
    EXIT_INPUT_ERROR,
    EXIT_USAGE,
    CacheOpt,
    JudgeConfigOpt,
    JudgeOpt,
    MaxCostOpt,
    NoCacheOpt,
    OfflineOpt,
    ReplayOpt,
    TieOpt,
    VoteOpt,
    WeightsOpt,
    build_escalator,
    build_replayer,
    console,
)

if TYPE_CHECKING:
    from pipelines.grade_run import GradeOptions


class OnError(StrEnum):
    skip = "skip"
    fail = "fail"


def _count_lines(path: Path) -> int | None:
    """Cheap total for the progress bar (JSONL: one trajectory per line)."""
    try:
        with open(path, "rb") as fh:
            return sum(block.count(b"\n") for block in iter(lambda: fh.read(1 << 20), b"")) or None
    except OSError:
        return None


def run_and_print(opts: GradeOptions) -> dict[str, Any]:
    """Run the grading with a progress bar, print the summary table, return summary.json's content."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from pipelines.grade_run import InputErrorsFound, run_grading
    from pipelines.ingest import UsageError

    columns = (TextColumn("grading"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn())
    try:
        with Progress(*columns, console=console, transient=True, disable=not console.is_terminal) as bar:
            task = bar.add_task("grading", total=_count_lines(opts.trajectories))
            outcome = run_grading(opts, progress=lambda n: bar.update(task, completed=n) if n % 200 == 0 else None)
    except InputErrorsFound as exc:
        console.print(f"[red]input error:[/red] {exc.info.render()}")
        raise typer.Exit(EXIT_INPUT_ERROR) from exc
    except UsageError as exc:
        usage.fail(exc.option, str(exc))
    _print_summary(outcome.summary, outcome.out)
    stats = getattr(opts.escalator, "stats", None)
    if stats is not None and getattr(stats, "budget_exhausted", False):
        console.print(f"[yellow]judge budget reached: {stats.budget_message}[/yellow]")
    return outcome.summary


def _print_summary(summary: dict[str, Any], out: Path) -> None:
    from rich.table import Table

    c = summary["counts"]
    table = Table(title=f"{c['graded']} graded, {c['errors']} input errors", show_header=True)
    table.add_column("verdict / stage")
    table.add_column("count", justify="right")
    for key in ("pass", "fail", "unresolved"):
        table.add_row(key, str(c[key]))
    for stage, n in summary["failure_stages"].items():
        if n and stage != "none":
            table.add_row(f"  fail at {stage}", str(n))
    Console().print(table)
    ci = summary["pass_rate_ci95"]
    rate = summary["pass_rate"]
    if rate is not None:
        Console().print(f"pass rate {100 * rate:.1f}%" + (f" (95% CI {100 * ci[0]:.1f}-{100 * ci[1]:.1f})" if ci else ""))
    lb = summary["leaderboard"]["score"]
    if lb is not None:
        Console().print(f"VAKRA leaderboard score {100 * lb:.1f}%")
    Console().print(f"outputs in {out}/ : results.jsonl summary.json report.md manifest.json")


def grade(
    tasks: Annotated[Path, typer.Option(exists=True, dir_okay=False, help="Tasks file (native JSONL, VAKRA input/ground truth, BFCL questions).")],
    trajectories: Annotated[
        Path, typer.Option(exists=True, dir_okay=False, help="Trajectories (native, OpenAI messages, Anthropic messages, VAKRA predictions).")
    ],
    reference: Annotated[
        Optional[Path], typer.Option(exists=True, dir_okay=False, help="Separate ground truth: VAKRA ground truth or BFCL possible answers.")
    ] = None,
    format: Annotated[Optional[str], typer.Option("--format", help="Trajectory format (auto-detected by default): native|openai|anthropic|vakra.")] = None,
    task_format: Annotated[Optional[str], typer.Option(help="Task format (auto-detected by default): native|vakra|bfcl.")] = None,
    out: Annotated[Path, typer.Option(help="Output directory.")] = Path("runs/latest"),
    on_error: Annotated[OnError, typer.Option(help="skip: grade the rest and list bad items; fail: stop at the first.")] = OnError.skip,
    judge: JudgeOpt = None,
    config: JudgeConfigOpt = None,
    cache: CacheOpt = None,
    no_cache: NoCacheOpt = False,
    offline: OfflineOpt = False,
    max_cost: MaxCostOpt = None,
    vote: VoteOpt = None,
    weights: WeightsOpt = None,
    tie_breaker: TieOpt = None,
    replay: ReplayOpt = True,
) -> None:
    """Grade trajectories against tasks; write results.jsonl, summary.json, report.md, manifest.json."""
    from pipelines.grade_run import GradeOptions

    usage.check_format_names(format, task_format)
    grading = usage.load_grading_config(config)
    usage.check_out_dir(out)
    opts = GradeOptions(
        tasks=tasks,
        trajectories=trajectories,
        reference=reference,
        task_format=task_format,
        trajectory_format=format,
        out=out,
        on_error=on_error.value,
        config=grading,
        escalator=build_escalator(judge, config, cache, no_cache, offline, max_cost, vote, weights, tie_breaker),
        replayer=build_replayer(replay),
        command=["judge", *sys.argv[1:]],
    )
    run_and_print(opts)


def demo(
    out: Annotated[Path, typer.Option(help="Output directory.")] = Path("runs/demo"),
    judge: JudgeOpt = None,
    config: JudgeConfigOpt = None,
    cache: CacheOpt = None,
    no_cache: NoCacheOpt = False,
    offline: OfflineOpt = False,
    max_cost: MaxCostOpt = None,
    vote: VoteOpt = None,
    weights: WeightsOpt = None,
    tie_breaker: TieOpt = None,
) -> None:
    """Grade the bundled sample benchmark end to end (replay included) and print the breakdown."""
    from rich.table import Table

    from pipelines.grade_run import GradeOptions
    from pipelines.resources import sample_dir

    sample = sample_dir()
    if not (sample / "tasks.jsonl").exists():
        console.print(f"[red]the bundled sample is missing: {sample / 'tasks.jsonl'} (a broken installation)[/red]")
        raise typer.Exit(EXIT_USAGE)
    grading = usage.load_grading_config(config)
    usage.check_out_dir(out)
    opts = GradeOptions(
        tasks=sample / "tasks.jsonl",
        trajectories=sample / "trajectories.jsonl",
        out=out,
        config=grading,
        escalator=build_escalator(judge, config, cache, no_cache, offline, max_cost, vote, weights, tie_breaker),
        replayer=build_replayer(True),
        command=["judge", *sys.argv[1:]],
    )
    summary = run_and_print(opts)
    for key in ("capability", "hop_count", "hop_pattern"):
        groups = summary["by"][key]
        if list(groups) == ["unknown"]:
            continue
        table = Table(title=f"by {key.replace('_', ' ')}")
        for col in (key, "n", "pass rate", "unresolved", "top failure stage"):
            table.add_column(col)
        for value, g in groups.items():
            top = max(((k, v) for k, v in g["failure_stages"].items() if k != "none"), key=lambda kv: kv[1])
            table.add_row(value, str(g["n"]), f"{100 * (g['pass_rate'] or 0):.1f}%", str(g["unresolved"]), f"{top[0]} ({top[1]})" if top[1] else "-")
        Console().print(table)
