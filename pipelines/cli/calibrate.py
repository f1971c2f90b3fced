"""``judge calibrate``: measure judges and panels against human-labelled gold items; compare prompt
versions, tune few-shot examples, run bias probes, recommend the cheapest good-enough panel."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional, cast

import typer

from pipelines.cli._common import (
    EXIT_INPUT_ERROR,
    EXIT_JUDGE_CONFIG,
    EXIT_USAGE,
    CacheOpt,
    JudgeConfigOpt,
    JudgeOpt,
    MaxCostOpt,
    NoCacheOpt,
    OfflineOpt,
    console,
    print_table,
    stdout,
)
from pipelines.cli.rubrics import RubricsOpt, load_rubric_table

if TYPE_CHECKING:
    from calibration import CalibrationReport, Estimate, PerRubricReport, PromptVersion
    from judge.llm import Rubric

BUILTIN = "builtin"


def prompt_versions(rubrics: Path | None, against: list[str] | None, variants: list[str] | None) -> list[PromptVersion]:
    """The prompt versions the options name, in order: ``--rubrics`` (or the built-ins), each
    ``--against``, each ``--variant NAME=DIR``. ``builtin`` stands for the built-in rubrics."""
    from calibration import PromptVersion, builtin_version

    specs: list[tuple[str | None, str]] = [(None, str(rubrics) if rubrics is not None else BUILTIN)]
    specs += [(None, a) for a in against or []]
    for v in variants or []:
        given, sep, where = v.partition("=")
        if not sep or not given.strip() or not where.strip():
            console.print(f"--variant wants NAME=DIR (or NAME=builtin), got {v!r}", style="red")
            raise typer.Exit(EXIT_USAGE)
        specs.append((given.strip(), where.strip()))
    out: list[PromptVersion] = []
    for name, folder in specs:
        label: str
        if folder == BUILTIN:
            version = builtin_version()
            label = name or BUILTIN
        else:
            path = Path(folder)
            table = cast("Mapping[str, Rubric]", load_rubric_table(path) or {})
            version = PromptVersion(name or path.name, table, path)
            label = name or path.resolve().name
        taken = {v.name for v in out}
        unique, i = label, 2
        while unique in taken:
            unique, i = f"{label}-{i}", i + 1
        out.append(PromptVersion(unique, version.rubrics, version.folder))
    return out


def calibrate(
    gold: Annotated[Path, typer.Option(exists=True, dir_okay=False, help="Gold set: native JSONL, or the Thakur et al. CSV (detected).")],
    out: Annotated[Path, typer.Option(help="Output directory.")] = Path("runs/calibration"),
    judge: JudgeOpt = None,
    rubric: Annotated[Optional[str], typer.Option(help="Only gold items of this rubric (default: every rubric, each calibrated in its own section).")] = None,
    limit: Annotated[Optional[int], typer.Option("--limit", min=1, help="Calibrate on the first N items of the gold set (file order; after --rubric).")] = None,
    sample: Annotated[
        Optional[int],
        typer.Option("--sample", min=1, help="Calibrate on a random sample of N items (--seed; stratified by rubric and human label; after --rubric)."),
    ] = None,
    gold_format: Annotated[Optional[str], typer.Option("--format", help="Gold format (auto-detected by default).")] = None,
    positive_label: Annotated[
        Optional[str], typer.Option("--positive-label", help="The label that counts as positive (default: the rubric's, e.g. correct).")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of --sample, the splits and the bootstrap.")] = 0,
    rubrics: RubricsOpt = None,
    against: Annotated[
        Optional[list[str]], typer.Option("--against", help="Another prompt version to compare with: a rubric folder, or 'builtin' (repeatable).")
    ] = None,
    variant: Annotated[Optional[list[str]], typer.Option("--variant", help="A named prompt version NAME=DIR (or NAME=builtin), repeatable.")] = None,
    few_shot: Annotated[
        Optional[int], typer.Option("--few-shot", help="Tune up to K few-shot examples (train disagreements; K chosen on dev; reported on test).")
    ] = None,
    probes: Annotated[Optional[str], typer.Option("--probes", help="Bias probes, comma-separated: position,verbosity,self-preference,injection.")] = None,
    target_kappa: Annotated[
        Optional[float], typer.Option("--target-kappa", help="Recommend the cheapest judge or panel whose held-out kappa lower CI bound meets this.")
    ] = None,
    config: JudgeConfigOpt = None,
    cache: CacheOpt = None,
    no_cache: NoCacheOpt = False,
    offline: OfflineOpt = False,
    max_cost: MaxCostOpt = None,
) -> None:
    """Measure each judge and panel against human labels; write calibration.json/.md and weights.json.

    A gold set of several rubrics is calibrated per rubric (one section each, per-rubric weights);
    ``--limit N`` / ``--sample N`` calibrate on part of it, recorded in the outputs. ``--judge`` names either verdict columns recorded in the gold set or live ``provider:model``
    judges, which are then run on every item with inline material, once per prompt version
    (``--rubrics A --against B`` or ``--variant NAME=DIR``): per version agreement, then paired
    comparisons that name a winner only when the difference is significant."""
    import pipelines.checks.answer  # noqa: F401  (registers the comparisons a judge's pass is checked with)
    from calibration import PROBE_NAMES, conclusions, run_calibration
    from judge import InputError
    from judge.llm import JudgeConfigError, JudgeSettings

    probe_list = [p.strip() for p in (probes or "").split(",") if p.strip()]
    unknown = [p for p in probe_list if p not in PROBE_NAMES]
    if unknown:
        console.print(f"--probes: unknown {unknown}; known: {', '.join(PROBE_NAMES)}", style="red")
        raise typer.Exit(EXIT_USAGE)
    if few_shot is not None and few_shot < 1:
        console.print("--few-shot wants K >= 1", style="red")
        raise typer.Exit(EXIT_USAGE)
    if target_kappa is not None and not -1.0 <= target_kappa <= 1.0:
        console.print("--target-kappa must lie in [-1, 1]", style="red")
        raise typer.Exit(EXIT_USAGE)
    if limit is not None and sample is not None:
        console.print("give either --limit N (the first N items) or --sample N (a seeded random sample), not both", style="red")
        raise typer.Exit(EXIT_USAGE)
    versions = prompt_versions(rubrics, against, variant)
    fields = {"config_path": config, "cache_path": cache, "no_cache": no_cache, "offline": offline, "max_cost_usd": max_cost}
    settings = JudgeSettings.model_validate({k: v for k, v in fields.items() if v is not None})
    try:
        report = run_calibration(
            gold,
            out,
            judges=judge,
            rubric=rubric,
            seed=seed,
            gold_format=gold_format,
            judge_settings=settings,
            versions=versions,
            few_shot=few_shot,
            probes=probe_list,
            target_kappa=target_kappa,
            limit=limit,
            sample=sample,
            positive_label=positive_label,
        )
    except JudgeConfigError as exc:
        console.print(f"invalid judge configuration: {exc}", style="red")
        raise typer.Exit(EXIT_JUDGE_CONFIG) from exc
    except InputError as exc:
        console.print(f"{exc.info.render()}", style="red")
        raise typer.Exit(EXIT_INPUT_ERROR) from exc
    except ValueError as exc:
        console.print(f"{exc}", style="red")
        raise typer.Exit(EXIT_INPUT_ERROR) from exc
    _print_agreement(report, gold)
    for name, section in report.sections.items():
        for line in conclusions(section):
            stdout.print(f"- {line}" if len(report.sections) == 1 else f"- {name}: {line}")
    stdout.print(f"outputs in {out}/ : {' '.join(report.files)}")


def _print_agreement(report: CalibrationReport | PerRubricReport, gold: Path) -> None:
    if report.subset is not None:
        stdout.print(f"subset: {report.subset.describe()}")
    for name, section in report.sections.items():
        _print_section(section, gold.name if len(report.sections) == 1 else f"{gold.name}, rubric {name}")


def _print_section(report: CalibrationReport, title: str) -> None:
    from rich.table import Table

    from judge import fmt_num

    table = Table(title=f"agreement with human labels ({title})")
    for col in ("rater", "kind", "n", "accuracy", "cohen_kappa"):
        table.add_column(col)
    for kind, raters in (("judge", report.judges), ("panel", report.panels)):
        for name, stats in raters.items():
            table.add_row(name, kind, str(stats.n), fmt_num(stats.accuracy.value, 4, none=""), fmt_num(stats.cohen_kappa.value, none=""))
    print_table(table)
    held = report.held_out
    if held is not None and held.rules:
        split = Table(title=f"held-out split ({held.n_held_out} items; panels learned on {held.n_train} train items)")
        split.add_column("vote rule")
        split.add_column("cohen_kappa")
        for name, stats in held.rules.items():
            split.add_row(name, fmt_num(stats.cohen_kappa.value))
        print_table(split)
    if report.probes:
        probes = Table(title="bias probes: flip rate [95% CI]")
        for col in ("probe", "attack / rater", "pairs", "flip rate", "to positive"):
            probes.add_column(col)
        for pr in report.probes:
            for name, flips in [("pooled", pr.panel), *pr.variants.items(), *pr.judges.items()]:
                probes.add_row(pr.probe, name, str(flips.n), _est(flips.flip_rate), _est(flips.to_positive_rate))
        print_table(probes)


def _est(e: Estimate) -> str:
    if e.value is None:
        return "-"
    if e.ci_low is None:
        return f"{e.value:.3f}"
    return f"{e.value:.3f} [{e.ci_low:.3f}, {e.ci_high:.3f}]"
