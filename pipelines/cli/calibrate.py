"""``judge calibrate``: measure judges and panels against human-labelled gold items."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from pipelines.cli._common import EXIT_INPUT_ERROR, CacheOpt, JudgeConfigOpt, JudgeOpt, MaxCostOpt, NoCacheOpt, OfflineOpt, console


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
    from judge.llm import JudgeSettings

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
