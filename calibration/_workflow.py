"""``run_calibration``: one gold set in, the whole calibration out (calibration.json / .md /
_section.html, weights.json, disagreements.jsonl, and on request the prompt-version comparison,
the tuned rubric folder, bias probes and the recommended panel).

Live judges (``provider:model`` names not recorded in the gold set) are run on every item with
inline material, once per prompt version (a rubric table: the built-ins, or a ``--rubrics`` folder
over them). With one version a judge's column is its name; with several, ``judge@version``, so
every version gets its own agreement figures. An abstention is recorded as no verdict (None),
never as a wrong label.

Everything in the outputs is a function of (gold file, judges' answers, options, seed): no
timestamps, sorted keys, fixed bootstrap seeds.
"""

from __future__ import annotations

import asyncio
import json
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import msgspec

from calibration._gold import GoldItem, GoldSet, why_not_judgeable
from calibration._gold_io import load_gold
from calibration._live import panel_judge_run, with_examples
from calibration._panel_choice import ESTIMATED_OUTPUT_TOKENS, JudgeCost, PanelChoice, choose_panel, judge_cost, panel_config_toml
from calibration._probes import PROBE_NAMES, ProbeResult, run_bias_probes, run_self_preference_probe
from calibration._prompts import FewShotReport, few_shot_experiment
from calibration._report import CalibrationReport, PerRubricReport, calibrate, calibrate_per_rubric, render_html, render_markdown
from calibration._subset import select_subset
from calibration._versions import compare_prompt_versions
from calibration._votes import per_rubric_weights, write_weights
from judge import JudgeRequest, Vote
from judge.llm import ConfigFile, JudgeSettings, Rubric, build_panel

BUILTIN_VERSION = "builtin"


class PromptVersion(msgspec.Struct, frozen=True):
    """A named rubric table: what one prompt version of every rubric is."""

    name: str
    rubrics: Mapping[str, Rubric]
    folder: Path | None = None  # where its rubric files were read (None: the built-ins)


def few_shot_k_values(k_max: int) -> list[int]:
    """Numbers of examples tried on dev: powers of two below ``k_max``, and ``k_max``."""
    if k_max < 1:
        raise ValueError(f"--few-shot needs K >= 1, got {k_max}")
    out = {k_max}
    k = 1
    while k < k_max:
        out.add(k)
        k *= 2
    return sorted(out)


def builtin_version() -> PromptVersion:
    import rubrics

    return PromptVersion(BUILTIN_VERSION, cast(Mapping[str, Rubric], dict(rubrics.RUBRICS)))


async def _ask(panel: Any, items: Sequence[GoldItem], key_prefix: str) -> tuple[dict[str, str | None], list[Vote]]:
    try:
        requests = [JudgeRequest(key=f"{key_prefix}/{it.id}", rubric=it.rubric, material=dict(it.material or {})) for it in items]
        decisions = await panel.decide(requests) if requests else []
    finally:
        await panel.aclose()
    return {it.id: d.label for it, d in zip(items, decisions, strict=True)}, [v for d in decisions for v in d.votes]


def _panel(settings: JudgeSettings, judges: Sequence[str], table: Mapping[str, Rubric]) -> Any:
    panel = build_panel(settings.model_copy(update={"judges": list(judges)}), table)
    if panel is None:  # pragma: no cover - named judges always build a panel
        raise ValueError(f"judges {list(judges)} could not be built")
    return panel


def judge_live(
    gold: GoldSet, names: Sequence[str], settings: JudgeSettings, versions: Sequence[PromptVersion] | None = None
) -> tuple[GoldSet, dict[str, dict[str, dict[str, str | None]]], dict[str, list[Vote]]]:
    """Ask each named judge for a verdict on every inline item under every prompt version; returns the
    gold set with the verdicts recorded as columns, ``labels[version][judge][item]`` and the first
    version's votes per judge (their tokens price the panel choice)."""
    inline = [it for it in gold.items if it.judgeable]
    if not inline:
        kept = f"it records {', '.join(gold.judges)}" if gold.judges else "it records no judge"
        raise ValueError(
            f"{gold.source}: {why_not_judgeable(gold.items)}, so no live judge ({', '.join(names)}) can be run on them. "
            f"Measure the judges the gold set records instead (--judge NAME; {kept}), or calibrate live judges on gold made from "
            "a graded run: judge gold export RUN --out set.jsonl, judge gold label set.jsonl, judge gold import set.jsonl LABELS --out gold.jsonl"
        )
    versions = list(versions or [builtin_version()])
    labels: dict[str, dict[str, dict[str, str | None]]] = {}
    votes: dict[str, list[Vote]] = {}
    for i, version in enumerate(versions):
        labels[version.name] = {}
        for name in names:
            got, vs = asyncio.run(_ask(_panel(settings, [name], version.rubrics), inline, f"calibration/{name}"))
            labels[version.name][name] = got
            if i == 0:
                votes[name] = vs
    single = len(versions) == 1

    def column(judge: str, version: str) -> str:
        return judge if single else f"{judge}@{version}"

    items = []
    for it in gold.items:
        recorded = dict(it.judge_verdicts)
        for v in versions:
            for n in names:
                recorded[column(n, v.name)] = labels[v.name][n].get(it.id)
        items.append(it.model_copy(update={"judge_verdicts": recorded}))
    return gold.model_copy(update={"items": items}), labels, votes


def run_calibration(
    gold: Path,
    out_dir: Path,
    *,
    judges: list[str] | None = None,
    rubric: str | None = None,
    seed: int = 0,
    n_boot: int = 1000,
    train_fraction: float = 0.5,
    spread_seeds: int = 20,
    positive_label: str | None = None,
    gold_format: str | None = None,
    judge_settings: JudgeSettings | None = None,
    versions: Sequence[PromptVersion] | None = None,
    few_shot: int | None = None,
    probes: Sequence[str] = (),
    target_kappa: float | None = None,
    limit: int | None = None,
    sample: int | None = None,
) -> CalibrationReport | PerRubricReport:
    """``judges`` names recorded verdict columns, or ``provider:model`` judges that are not recorded in
    the gold set: those are run live (one single-judge panel each, built from ``judge_settings`` for
    cache, offline and cost options) under every prompt version in ``versions`` (default: built-ins).

    ``rubric`` keeps one rubric's items; ``limit`` / ``sample`` (with ``seed``) keep part of them
    (``select_subset``), before any judge is called. A gold set of several rubrics is calibrated per
    rubric: a ``PerRubricReport`` with one section each, and a per-rubric weights.json."""
    settings = judge_settings or JudgeSettings()
    gold_set = load_gold(Path(gold), format=gold_format, positive_label=positive_label)
    if rubric is not None:
        held = gold_set.rubrics
        gold_set = gold_set.for_rubric(rubric)
        if not gold_set.items:
            raise ValueError(f"{gold_set.source}: no items of rubric {rubric!r} (--rubric); the gold set holds {', '.join(held)}")
    gold_set, subset = select_subset(gold_set, limit=limit, sample=sample, seed=seed)
    versions = list(versions or [builtin_version()])
    names = list(dict.fromkeys(judges or []))
    live = [n for n in names if n not in gold_set.judges]
    recorded = [n for n in names if n in gold_set.judges]
    unknown_probes = [p for p in probes if p not in PROBE_NAMES]
    if unknown_probes:
        raise ValueError(f"unknown probes {unknown_probes}; known: {', '.join(PROBE_NAMES)}")
    needs_live = [what for what, asked in (("--few-shot", few_shot), ("--probes", probes), ("several prompt versions", len(versions) > 1)) if asked]
    if needs_live and not live:
        raise ValueError(f"{', '.join(needs_live)} need live judges (--judge provider:model not recorded in the gold set); none given")
    mixed = len(gold_set.rubrics) > 1
    one_rubric = [what for what, asked in (("--few-shot", few_shot is not None), ("--target-kappa", target_kappa is not None)) if asked]
    if mixed and one_rubric:  # refused before any judge is paid
        raise ValueError(
            f"{gold_set.source}: {' and '.join(one_rubric)} tune(s) one rubric (one prompt, one panel), and the gold set mixes rubrics "
            f"{', '.join(gold_set.rubrics)}: add --rubric NAME"
        )
    labels: dict[str, dict[str, dict[str, str | None]]] = {}
    votes: dict[str, list[Vote]] = {}
    notes: list[str] = []
    if live:
        gold_set, labels, votes = judge_live(gold_set, live, settings, versions)
        left_out = sum(1 for it in gold_set.items if not it.judgeable)
        if left_out:
            notes.append(
                f"{left_out} of {len(gold_set.items)} items carry no complete inline material (a ref, or answer_available: false): "
                f"the live judges were not asked about them, and they count as missing verdicts (lower coverage) of {', '.join(live)}"
            )
    columns = None if judges is None else recorded + ([f"{n}@{v.name}" for v in versions for n in live] if len(versions) > 1 else live)
    if mixed:
        unknown = [c for c in columns or [] if c not in gold_set.judges]
        if unknown:
            raise ValueError(
                f"{gold_set.source}: no recorded verdicts for --judge {', '.join(unknown)}; the gold set records {', '.join(gold_set.judges) or 'none'}"
            )
        sections, disagreements = calibrate_per_rubric(
            gold_set, judges=columns, seed=seed, n_boot=n_boot, train_fraction=train_fraction, spread_seeds=spread_seeds
        )
    else:
        single, disagreements = calibrate(
            gold_set, judges=columns, rubric=rubric, seed=seed, n_boot=n_boot, train_fraction=train_fraction, spread_seeds=spread_seeds
        )
        sections = {gold_set.rubrics[0]: single}
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = ["calibration.json", "calibration.md", "calibration_section.html", "disagreements.jsonl"]
    for name, section in sections.items():
        part = gold_set.for_rubric(name)
        if len(versions) > 1:
            section.prompt_versions = compare_prompt_versions(
                part, labels, {v.name: {r: x.version for r, x in v.rubrics.items()} for v in versions}, n_boot=n_boot, seed=seed
            )
        if probes:
            section.probes = _probes(part, live, versions[0], settings, probes, section.notes, seed=seed, n_boot=n_boot)
    learned = {name: s.held_out.weights for name, s in sections.items() if s.held_out is not None}
    if learned:
        write_weights(next(iter(learned.values())) if not mixed else per_rubric_weights(learned), out / "weights.json")
        files.append("weights.json")
    report: CalibrationReport | PerRubricReport
    if mixed:
        report = PerRubricReport(
            source=gold_set.source,
            format=gold_set.format,
            seed=seed,
            n_boot=n_boot,
            n_items=len(gold_set.items),
            skipped=dict(gold_set.skipped),
            rubrics=sections,
            notes=notes,
            subset=subset,
        )
    else:
        report = next(iter(sections.values()))
        report.subset = subset
        report.notes += notes
        gold_set = gold_set.for_rubric(report.rubric)
        if few_shot is not None:
            report.few_shot = _few_shot(gold_set, live[0], versions[0], settings, few_shot, out, seed=seed, n_boot=n_boot)
            if len(live) > 1:
                report.notes.append(f"few-shot examples were tuned for the first judge ({live[0]}) only")
            if report.few_shot.folder is not None:
                files.append(f"{Path(report.few_shot.folder).name}/")
        if target_kappa is not None:
            choice = _panel_choice(
                gold_set, recorded, live, versions[0], votes, settings, target_kappa, seed=seed, n_boot=n_boot, train_fraction=train_fraction
            )
            report.panel_choice = choice
            text = panel_config_toml(choice, weights_path="panel_weights.json" if choice.weights else None, source=gold_set.source)
            if text is not None:
                (out / "panel.toml").write_text(text, encoding="utf-8")
                files.append("panel.toml")
                if choice.weights is not None:
                    write_weights(choice.weights, out / "panel_weights.json")
                    files.append("panel_weights.json")
    report.files = sorted(files)
    (out / "disagreements.jsonl").write_text("".join(json.dumps(d, sort_keys=True, ensure_ascii=False) + "\n" for d in disagreements), encoding="utf-8")
    (out / "calibration.json").write_text(json.dumps(report.model_dump(mode="json"), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    (out / "calibration.md").write_text(render_markdown(report), encoding="utf-8")
    (out / "calibration_section.html").write_text(render_html(report), encoding="utf-8")
    return report


def _few_shot(gold: GoldSet, judge: str, version: PromptVersion, settings: JudgeSettings, k_max: int, out: Path, *, seed: int, n_boot: int) -> FewShotReport:
    """The split / selection procedure of ``few_shot_experiment`` with a live judge; the chosen
    examples are written into a rubric folder that ``--rubrics`` accepts."""
    from rubrics import RUBRICS, TemplateRubric, write_rubric_files

    if len(gold.rubrics) != 1:
        raise ValueError(f"{gold.source}: few-shot tuning needs one rubric; the gold set mixes {gold.rubrics} (choose one with --rubric)")
    name = gold.rubrics[0]
    if name not in version.rubrics:
        raise ValueError(f"unknown rubric {name!r}; known: {sorted(version.rubrics)}")
    run = panel_judge_run(lambda table: _panel(settings, [judge], table), version.rubrics, key_prefix=f"calibration/{judge}")
    result = asyncio.run(few_shot_experiment(gold, run, k_values=few_shot_k_values(k_max), seed=seed, n_boot=n_boot))
    base = version.rubrics[name]
    tuned = with_examples(base, result.chosen_examples) if result.chosen_examples else base
    folder = None
    if isinstance(tuned, TemplateRubric) and tuned.check is not None:
        own = {n: r for n, r in version.rubrics.items() if isinstance(r, TemplateRubric) and RUBRICS.get(n) is not r}
        folder = out / "tuned_rubrics"
        write_rubric_files({**own, name: tuned}, folder, overwrite=True)
    return FewShotReport(
        judge=judge,
        rubric=name,
        version=version.name,
        base_version=base.version,
        tuned_version=tuned.version,
        folder=None if folder is None else str(folder),
        result=result,
    )


def _probes(
    gold: GoldSet, live: Sequence[str], version: PromptVersion, settings: JudgeSettings, probes: Sequence[str], notes: list[str], *, seed: int, n_boot: int
) -> list[ProbeResult]:
    items = [it for it in gold.items if it.judgeable]
    out: list[ProbeResult] = []
    panel_probes = [p for p in probes if p != "self-preference"]
    if panel_probes:
        panel = _panel(settings, live, version.rubrics)

        async def run() -> list[ProbeResult]:
            try:
                return await run_bias_probes(items, panel, positive_label=gold.positive_label, probes=panel_probes, n_boot=n_boot, seed=seed)
            finally:
                await panel.aclose()

        out += asyncio.run(run())
    if "self-preference" in probes:
        if not _renders_extra_material(gold, version):
            notes.append("self-preference probe skipped: the rubric does not render extra material (answer_author) for the judge to see")
        else:
            panels = {j: _panel(settings, [j], version.rubrics) for j in live}

            async def run_self() -> ProbeResult:
                try:
                    return await run_self_preference_probe(items, panels, positive_label=gold.positive_label, n_boot=n_boot, seed=seed)
                finally:
                    for p in panels.values():
                        await p.aclose()

            out.append(asyncio.run(run_self()))
    return sorted(out, key=lambda r: PROBE_NAMES.index(r.probe))


def _renders_extra_material(gold: GoldSet, version: PromptVersion) -> bool:
    item = next((it for it in gold.items if it.judgeable), None)
    if item is None or item.rubric not in version.rubrics:
        return False
    messages = version.rubrics[item.rubric].render({**(item.material or {}), "answer_author": "zq-author-probe"})
    return any("zq-author-probe" in m["content"] for m in messages)


def _prices(settings: JudgeSettings) -> dict[str, tuple[float, float]]:
    if settings.config_path is None:
        return {}
    config = ConfigFile.model_validate(tomllib.loads(Path(settings.config_path).read_text(encoding="utf-8")))
    return {name: (p.input_per_1m, p.output_per_1m) for name, p in config.prices.items()}


def _panel_choice(
    gold: GoldSet,
    recorded: Sequence[str],
    live: Sequence[str],
    version: PromptVersion,
    votes: Mapping[str, list[Vote]],
    settings: JudgeSettings,
    target: float,
    *,
    seed: int,
    n_boot: int,
    train_fraction: float,
) -> PanelChoice:
    """Candidates: the recorded judges named and the live judges under the first prompt version."""
    judges = [*recorded, *live]
    if not judges:
        raise ValueError("--target-kappa needs judges (--judge): recorded columns or live provider:model judges")
    prices = _prices(settings)
    costs: dict[str, JudgeCost] = {}
    for j in judges:
        counted = [v for v in votes.get(j, []) if not v.abstained and (v.input_tokens or v.output_tokens)]
        if counted:
            tin = sum(v.input_tokens for v in counted) / len(counted)
            tout = sum(v.output_tokens for v in counted) / len(counted)
            costs[j] = judge_cost(j, prices.get(j), tin, tout, measured=True)
        else:
            costs[j] = judge_cost(j, prices.get(j), _prompt_tokens(gold, version), ESTIMATED_OUTPUT_TOKENS, measured=False)
    view = gold
    suffix = f"@{version.name}"
    if any(f"{j}{suffix}" in gold.judges for j in live):  # several versions: candidates use the first one's columns
        items = [
            it.model_copy(update={"judge_verdicts": {**it.judge_verdicts, **{j: it.judge_verdicts.get(f"{j}{suffix}") for j in live}}}) for it in gold.items
        ]
        view = gold.model_copy(update={"items": items})
    return choose_panel(view, judges, costs, target_kappa=target, seed=seed, n_boot=n_boot, train_fraction=train_fraction)


def _prompt_tokens(gold: GoldSet, version: PromptVersion) -> float | None:
    """Mean prompt length / 4 over the inline items (a rough token count for recorded judges)."""
    sizes = []
    for it in gold.items:
        rubric = version.rubrics.get(it.rubric)
        if it.material is None or rubric is None:
            continue
        try:
            sizes.append(sum(len(m["content"]) for m in rubric.render(it.material)) / 4)
        except Exception:
            continue
    return sum(sizes) / len(sizes) if sizes else None


__all__ = ["BUILTIN_VERSION", "FewShotReport", "PromptVersion", "builtin_version", "few_shot_k_values", "judge_live", "run_calibration"]
