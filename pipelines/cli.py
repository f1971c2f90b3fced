"""The ``judge`` command line.

Exit codes: 0 the run completed (whatever the verdicts); 1 an unexpected internal error;
2 bad usage (unknown option, missing file); 3 an input error with ``--on-error fail``;
4 the judge configuration is invalid.
"""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from pipelines.config import GradingConfig
from pipelines.grading import GradeOptions, InputErrorsFound, run_grading

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_show_locals=False, help="Grade tool-calling agent trajectories, VAKRA-style.")
console = Console(stderr=True)
REPO_ROOT = Path(__file__).resolve().parents[1]
EXIT_INPUT_ERROR, EXIT_JUDGE_CONFIG = 3, 4


class OnError(str, Enum):
    skip = "skip"
    fail = "fail"


JudgeOpt = Annotated[Optional[list[str]], typer.Option("--judge", help="A judge as provider:model (repeat for a panel), e.g. openai:gpt-4.1-mini.")]
JudgeConfigOpt = Annotated[Optional[Path], typer.Option("--config", help="TOML config: [grading] weights/thresholds, [judges] panels, base URLs, prices, limits.")]
CacheOpt = Annotated[Optional[Path], typer.Option("--cache", help="Judge response cache (SQLite). Default: a per-user cache shared by all runs.")]
NoCacheOpt = Annotated[bool, typer.Option("--no-cache", help="Do not read or write the judge cache.")]
OfflineOpt = Annotated[bool, typer.Option("--offline", help="Answer judge requests from the cache only; a miss ends unresolved.")]
MaxCostOpt = Annotated[Optional[float], typer.Option("--max-cost", help="Stop launching judge calls once this many USD are spent.")]
VoteOpt = Annotated[Optional[str], typer.Option("--vote", help="Panel rule: majority | unanimous | weighted.")]
WeightsOpt = Annotated[Optional[Path], typer.Option("--weights", help="Vote weights written by `judge calibrate`.")]
TieOpt = Annotated[Optional[str], typer.Option("--tie-breaker", help="Judge (provider:model) that breaks panel ties.")]
ReplayOpt = Annotated[bool, typer.Option("--replay/--no-replay", help="Re-execute calls in the task's environment when it has one.")]


def _escalator(judges, config, cache, no_cache, offline, max_cost, vote, weights, tie_breaker):
    if not judges and config is None:
        return None
    try:
        from judge import JudgeSettings, build_panel
    except ImportError as exc:  # pragma: no cover - only when the judge extra is broken
        console.print(f"[red]LLM judges are unavailable: {exc}[/red]")
        raise typer.Exit(EXIT_JUDGE_CONFIG) from exc
    fields = {
        "judges": judges or [],
        "config_path": config,
        "cache_path": cache,
        "no_cache": no_cache,
        "offline": offline,
        "max_cost_usd": max_cost,
        "rule": vote,
        "weights_path": weights,
        "tie_breaker": tie_breaker,
    }
    try:
        settings = JudgeSettings(**{k: v for k, v in fields.items() if v is not None})
        return build_panel(settings)
    except Exception as exc:
        console.print(f"[red]invalid judge configuration: {exc}[/red]")
        raise typer.Exit(EXIT_JUDGE_CONFIG) from exc


def _replayer(enabled: bool):
    if not enabled:
        return None
    try:
        from pipelines.replay import Replayer
    except ImportError:
        return None
    return Replayer()


def _count_lines(path: Path) -> int | None:
    """Cheap total for the progress bar (JSONL: one trajectory per line)."""
    try:
        with open(path, "rb") as fh:
            return sum(block.count(b"\n") for block in iter(lambda: fh.read(1 << 20), b"")) or None
    except OSError:
        return None


def _grade(opts: GradeOptions) -> dict:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    columns = (TextColumn("grading"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn())
    try:
        with Progress(*columns, console=console, transient=True, disable=not console.is_terminal) as bar:
            task = bar.add_task("grading", total=_count_lines(opts.trajectories))
            outcome = run_grading(opts, progress=lambda n: bar.update(task, completed=n) if n % 200 == 0 else None)
    except InputErrorsFound as exc:
        console.print(f"[red]input error:[/red] {exc.info.render()}")
        raise typer.Exit(EXIT_INPUT_ERROR) from exc
    _print_summary(outcome.summary, outcome.out)
    stats = getattr(opts.escalator, "stats", None)
    if stats is not None and getattr(stats, "budget_exhausted", False):
        console.print(f"[yellow]judge budget reached: {stats.budget_message}[/yellow]")
    return outcome.summary


def _print_summary(summary: dict, out: Path) -> None:
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


@app.command()
def grade(
    tasks: Annotated[Path, typer.Option(exists=True, dir_okay=False, help="Tasks file (native JSONL, VAKRA input/ground truth, BFCL questions).")],
    trajectories: Annotated[Path, typer.Option(exists=True, dir_okay=False, help="Trajectories (native, OpenAI messages, Anthropic messages, VAKRA predictions).")],
    reference: Annotated[Optional[Path], typer.Option(exists=True, dir_okay=False, help="Separate ground truth: VAKRA ground truth or BFCL possible answers.")] = None,
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
    opts = GradeOptions(
        tasks=tasks,
        trajectories=trajectories,
        reference=reference,
        task_format=task_format,
        trajectory_format=format,
        out=out,
        on_error=on_error.value,
        config=GradingConfig.load(config),
        escalator=_escalator(judge, config, cache, no_cache, offline, max_cost, vote, weights, tie_breaker),
        replayer=_replayer(replay),
        command=["judge", *sys.argv[1:]],
    )
    _grade(opts)


@app.command()
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
    sample = REPO_ROOT / "data" / "sample"
    if not (sample / "tasks.jsonl").exists():
        sample = REPO_ROOT / "data" / "mini"
    if not (sample / "tasks.jsonl").exists():
        console.print(f"[red]no bundled sample found under {REPO_ROOT / 'data'}[/red]")
        raise typer.Exit(2)
    opts = GradeOptions(
        tasks=sample / "tasks.jsonl",
        trajectories=sample / "trajectories.jsonl",
        out=out,
        config=GradingConfig.load(config),
        escalator=_escalator(judge, config, cache, no_cache, offline, max_cost, vote, weights, tie_breaker),
        replayer=_replayer(True),
        command=["judge", *sys.argv[1:]],
    )
    summary = _grade(opts)
    from rich.table import Table

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


@app.command()
def report(
    run_dirs: Annotated[list[Path], typer.Argument(exists=True, file_okay=False, help="One or more run directories (several: side-by-side comparison).")],
    out: Annotated[Optional[Path], typer.Option(help="Output directory (default: the single run directory, or runs/comparison).")] = None,
    calibration: Annotated[Optional[Path], typer.Option(exists=True, dir_okay=False, help="calibration.json of the judges used: adds their agreement figures and pass rates corrected for judge error.")] = None,
) -> None:
    """Re-render the report of one run, or compare several runs side by side."""
    from reports import build_report

    target = out or (run_dirs[0] if len(run_dirs) == 1 else Path("runs/comparison"))
    for path in build_report(list(run_dirs), target, calibration=calibration):
        Console().print(str(path))


@app.command()
def calibrate(
    gold: Annotated[Path, typer.Option(exists=True, dir_okay=False, help="Gold set: native JSONL, or the Thakur et al. CSV (detected).")],
    out: Annotated[Path, typer.Option(help="Output directory.")] = Path("runs/calibration"),
    judge: JudgeOpt = None,
    rubric: Annotated[Optional[str], typer.Option(help="Only gold items of this rubric.")] = None,
    gold_format: Annotated[Optional[str], typer.Option("--format", help="Gold format (auto-detected by default).")] = None,
    seed: Annotated[int, typer.Option(help="Seed of splits and bootstrap.")] = 0,
    config: JudgeConfigOpt = None,
    cache: CacheOpt = None,
    no_cache: NoCacheOpt = False,
    offline: OfflineOpt = False,
    max_cost: MaxCostOpt = None,
) -> None:
    """Measure each judge and panel against human labels; write calibration.json/.md and weights.json.

    ``--judge`` names either verdict columns recorded in the gold set or live ``provider:model``
    judges, which are then run on every item with inline material."""
    import json

    from rich.table import Table

    from calibration import run_calibration
    from judge import JudgeSettings

    fields = {"config_path": config, "cache_path": cache, "no_cache": no_cache, "offline": offline, "max_cost_usd": max_cost}
    settings = JudgeSettings(**{k: v for k, v in fields.items() if v is not None})
    try:
        run_calibration(gold, out, judges=judge, rubric=rubric, seed=seed, gold_format=gold_format, judge_settings=settings)
    except ValueError as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(EXIT_INPUT_ERROR) from exc
    data = json.loads((out / "calibration.json").read_text(encoding="utf-8"))
    table = Table(title=f"agreement with human labels ({gold.name})")
    for col in ("rater", "kind", "n", "accuracy", "cohen_kappa"):
        table.add_column(col)
    for kind in ("judges", "panels"):
        entries = data.get(kind) or {}
        items = entries.items() if isinstance(entries, dict) else ((e.get("name"), e) for e in entries)
        for name, stats in items:
            kappa = stats.get("cohen_kappa")
            kappa = kappa.get("value") if isinstance(kappa, dict) else kappa
            acc = stats.get("accuracy")
            acc = acc.get("value") if isinstance(acc, dict) else acc
            table.add_row(str(name), kind[:-1], str(stats.get("n", "")), "" if acc is None else f"{acc:.4f}", "" if kappa is None else f"{kappa:.3f}")
    Console().print(table)
    held = data.get("held_out") or {}
    if held.get("rules"):
        split = Table(title=f"held-out split ({held.get('n_held_out')} items; panels learned on {held.get('n_train')} train items)")
        split.add_column("vote rule")
        split.add_column("cohen_kappa")
        for name, stats in held["rules"].items():
            kappa = (stats.get("cohen_kappa") or {}).get("value")
            split.add_row(name, "n/a" if kappa is None else f"{kappa:.3f}")
        Console().print(split)
    Console().print(f"outputs in {out}/ : calibration.json calibration.md calibration_section.html weights.json")


@app.command()
def schema(out: Annotated[Path, typer.Option(help="Directory for the JSON Schemas.")] = Path("docs/schemas")) -> None:
    """Export the JSON Schemas of the native task and trajectory formats."""
    from pipelines.ingest import export_json_schemas

    for path in export_json_schemas(out):
        Console().print(str(path))


def _mount_optional() -> None:
    try:
        from pipelines.env.cli import env_app
    except ImportError:
        return
    app.add_typer(env_app, name="env", help="Executable environments: list, show tools, serve over MCP.")


_mount_optional()


def main() -> None:  # pragma: no cover
    try:
        app()
    except SystemExit:
        raise
    except Exception as exc:
        console.print(f"[red]internal error: {type(exc).__name__}: {exc}[/red]")
        sys.exit(1)
