"""``run_calibration``: one gold set in, calibration.json / .md / _section.html + weights.json out.

Everything in the outputs is a function of (gold file, judges, rubric, seed, n_boot): no timestamps,
sorted keys, fixed bootstrap seeds -> byte-identical files on every run.
"""

from __future__ import annotations

import asyncio
import html
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from pydantic import BaseModel, Field

from calibration._agreement import AgreementStats, Estimate, HumanCeiling, LabelCoder, Resampler, agreement, human_ceiling, krippendorff_alpha
from calibration._gold import GoldSet
from calibration._gold_io import load_gold
from calibration._live import panel_judge_run
from calibration._panels import FIXED_RULES, HeldOutEvaluation, decode, encode_votes, fixed_rule, held_out_evaluation
from calibration._self_preference import SelfPreference, self_preference
from calibration._votes import write_weights
from judge.llm import JudgeSettings, build_panel

REPORT_VERSION = 1


class HumanSummary(BaseModel):
    annotators: list[str]
    positive_rate: float | None
    ceiling: HumanCeiling | None  # None: no item has two annotators


class CalibrationReport(BaseModel):
    version: int = REPORT_VERSION
    source: str
    format: str
    rubric: str | None
    positive_label: str
    labels: list[str]
    seed: int
    n_boot: int
    n_items: int
    n_no_consensus: int  # items whose human labels tie: left out of judge-vs-human statistics
    skipped: dict[str, int]  # rows of the source not turned into items, by reason
    human: HumanSummary
    judges: dict[str, AgreementStats]
    panels: dict[str, AgreementStats]  # fixed vote rules over all listed judges, on all items
    krippendorff_alpha: dict[str, float | None]
    held_out: HeldOutEvaluation | None
    self_preference: list[SelfPreference] = Field(default_factory=list)
    disagreement_counts: dict[str, int] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)
    files: list[str] = Field(default_factory=list)


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
) -> CalibrationReport:
    """``judges`` names recorded verdict columns, or ``provider:model`` judges that are not recorded
    in the gold set: those are run live on every item with inline material (one single-judge panel
    each, built from ``judge_settings`` for cache, offline and cost options) before the statistics."""
    gold_set = load_gold(Path(gold), format=gold_format, positive_label=positive_label)
    live = [name for name in judges or [] if name not in gold_set.judges]
    if live:
        gold_set = judge_live(gold_set, live, judge_settings or JudgeSettings())
    report, disagreements = calibrate(
        gold_set, judges=judges, rubric=rubric, seed=seed, n_boot=n_boot, train_fraction=train_fraction, spread_seeds=spread_seeds
    )
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = ["calibration.json", "calibration.md", "calibration_section.html", "disagreements.jsonl"]
    if report.held_out is not None:
        write_weights(report.held_out.weights, out / "weights.json")
        files.append("weights.json")
    report.files = sorted(files)
    (out / "disagreements.jsonl").write_text("".join(json.dumps(d, sort_keys=True, ensure_ascii=False) + "\n" for d in disagreements), encoding="utf-8")
    (out / "calibration.json").write_text(json.dumps(report.model_dump(mode="json"), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    (out / "calibration.md").write_text(render_markdown(report), encoding="utf-8")
    (out / "calibration_section.html").write_text(render_html(report), encoding="utf-8")
    return report


def judge_live(gold: GoldSet, names: Sequence[str], settings: JudgeSettings) -> GoldSet:
    """Ask each named judge (``provider:model``) for a verdict on every inline item and record it
    as that judge's verdict, so live and recorded judges are calibrated the same way. An
    abstention is recorded as no verdict (None), never as a wrong label."""
    import rubrics

    inline = [it for it in gold.items if it.material is not None]
    if not inline:
        raise ValueError(f"{gold.source}: no item carries inline material, so no judge can be run on it")
    verdicts: dict[str, dict[str, str | None]] = {}
    for name in names:
        panel = build_panel(settings.model_copy(update={"judges": [name], "config_path": settings.config_path}), rubrics.RUBRICS)
        if panel is None:  # pragma: no cover - a named judge always builds a panel
            raise ValueError(f"judge {name!r} could not be built")
        run = panel_judge_run(lambda _table, p=panel: p, rubrics.RUBRICS, key_prefix=f"calibration/{name}")
        verdicts[name] = asyncio.run(run(inline, ()))
    items = [it.model_copy(update={"judge_verdicts": {**it.judge_verdicts, **{n: verdicts[n].get(it.id) for n in names}}}) for it in gold.items]
    return gold.model_copy(update={"items": items})


def calibrate(
    gold: GoldSet,
    *,
    judges: Sequence[str] | None = None,
    rubric: str | None = None,
    seed: int = 0,
    n_boot: int = 1000,
    train_fraction: float = 0.5,
    spread_seeds: int = 20,
) -> tuple[CalibrationReport, list[dict]]:
    """The statistics without the files: (report, disagreement records)."""
    if rubric is None and len(gold.rubrics) > 1:
        raise ValueError(f"{gold.source}: the gold set mixes rubrics {gold.rubrics}; choose one with rubric=")
    gold = gold.for_rubric(rubric)
    if not gold.items:
        raise ValueError(f"{gold.source}: no items for rubric {rubric!r}")
    names = list(judges) if judges is not None else gold.judges
    unknown = [j for j in names if j not in gold.judges]
    if unknown:
        raise ValueError(f"{gold.source}: no recorded verdicts for judges {unknown}; known: {gold.judges}")
    items = gold.items
    coder = LabelCoder(gold.labels)
    truth = [it.human_label for it in items]
    clusters = [it.cluster_key for it in items]
    verdicts = [it.judge_verdicts for it in items]
    resampler = Resampler(clusters, n_boot, seed)
    notes: list[str] = []

    judge_stats = {j: agreement(truth, [v.get(j) for v in verdicts], coder, resampler) for j in names}
    votes = encode_votes(verdicts, names, coder)
    panels: dict[str, AgreementStats] = {}
    rule_preds: dict[str, list[str | None]] = {}
    if len(names) >= 2:
        for rule in FIXED_RULES:
            rule_preds[rule] = decode(fixed_rule(rule, votes, len(coder.labels)), coder)
            panels[rule] = agreement(truth, rule_preds[rule], coder, resampler)
    else:
        notes.append("fewer than two judges: no panel vote rules evaluated")

    alpha = {
        "judges": krippendorff_alpha([[v.get(j) for v in verdicts] for j in names], coder) if len(names) >= 2 else None,
        "judges_and_human": krippendorff_alpha([[v.get(j) for v in verdicts] for j in names] + [truth], coder) if names else None,
    }

    held: HeldOutEvaluation | None = None
    if len(names) >= 2 and len(coder.labels) == 2:
        held = held_out_evaluation(
            truth,
            verdicts,
            clusters,
            names,
            coder,
            rubric=gold.rubrics[0] if len(gold.rubrics) == 1 else rubric,
            seed=seed,
            train_fraction=train_fraction,
            n_boot=n_boot,
            spread_seeds=spread_seeds,
        )
    elif len(names) >= 2:
        notes.append(f"labels {coder.labels} are not binary: learned (weighted) panels and weights.json are binary-only and were skipped")

    annotators = sorted({h.annotator for it in items for h in it.human_labels})
    ceiling = human_ceiling([{h.annotator: h.label for h in it.human_labels} for it in items], coder)
    if ceiling is None:
        notes.append("no item has two human annotators: the human-human ceiling cannot be measured on this gold set")
    human_pos = [None if t is None else t == gold.positive_label for t in truth]
    known = [h for h in human_pos if h is not None]

    prefs = []
    for j in names:
        sp = self_preference(
            j,
            [None if v.get(j) is None else v.get(j) == gold.positive_label for v in verdicts],
            human_pos,
            [it.agent for it in items],
            clusters,
            n_boot=n_boot,
            seed=seed,
        )
        if sp is not None:
            prefs.append(sp)

    if all(it.material is not None and it.material.get("answer") is None for it in items):
        notes.append(
            "no item carries the judged answer (material.answer is null): items cannot be re-judged, so live bias probes, prompt comparison and threshold tuning need another gold set"
        )

    disagreements, counts = _disagreements(gold, names, rule_preds)
    report = CalibrationReport(
        source=gold.source,
        format=gold.format,
        rubric=rubric if rubric is not None else (gold.rubrics[0] if len(gold.rubrics) == 1 else None),
        positive_label=gold.positive_label,
        labels=coder.labels,
        seed=seed,
        n_boot=n_boot,
        n_items=len(items),
        n_no_consensus=sum(t is None for t in truth),
        skipped=dict(gold.skipped),
        human=HumanSummary(annotators=annotators, positive_rate=round(float(np.mean(known)), 6) if known else None, ceiling=ceiling),
        judges=judge_stats,
        panels=panels,
        krippendorff_alpha=alpha,
        held_out=held,
        self_preference=prefs,
        disagreement_counts=counts,
        notes=notes,
    )
    return report, disagreements


def _disagreements(gold: GoldSet, names: Sequence[str], rule_preds: dict[str, list[str | None]]) -> tuple[list[dict], dict[str, int]]:
    records: list[dict] = []
    counts: dict[str, int] = {}
    raters = [(j, [it.judge_verdicts.get(j) for it in gold.items]) for j in names] + [(f"panel:{r}", p) for r, p in rule_preds.items()]
    for rater, labels in raters:
        n = 0
        for it, lab in zip(gold.items, labels, strict=True):
            h = it.human_label
            if h is not None and lab is not None and lab != h:
                n += 1
                records.append(
                    {"rater": rater, "id": it.id, "human": h, "rated": lab, "cluster": it.cluster_key, "agent": it.agent, "material": it.material_summary()}
                )
        counts[rater] = n
    return records, counts


# ---------------------------------------------------------------- rendering


def _f(x: float | None, digits: int = 3) -> str:
    if x is None:
        return "-"
    text = f"{x:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text  # no "-0.000"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.2f}"


def _ci(e: Estimate, digits: int = 3) -> str:
    if e.value is None:
        return "-"
    if e.ci_low is None:
        return _f(e.value, digits)
    return f"{_f(e.value, digits)} [{_f(e.ci_low, digits)}, {_f(e.ci_high, digits)}]"


_STAT_HEAD = [
    "rater",
    "n",
    "coverage",
    "% agreement",
    "Cohen's kappa [95% CI]",
    "Gwet AC1",
    "Scott pi",
    "balanced acc.",
    "TPR",
    "TNR",
    "human +rate",
    "rater +rate",
    "leniency",
]


def _stat_row(name: str, s: AgreementStats) -> list[str]:
    return [
        name,
        str(s.n),
        _pct(s.coverage),
        _pct(s.accuracy.value),
        _ci(s.cohen_kappa),
        _f(s.gwet_ac1.value),
        _f(s.scott_pi.value),
        _f(s.balanced_accuracy.value),
        _f(s.tpr.value),
        _f(s.tnr.value),
        _f(s.reference_positive_rate.value),
        _f(s.rated_positive_rate.value),
        _ci(s.leniency),
    ]


def _tables(report: CalibrationReport) -> list[tuple[str, list[str], list[list[str]]]]:
    tables = []
    order = sorted(report.judges, key=lambda j: -(report.judges[j].cohen_kappa.value or -2))
    tables.append(("Judges vs human labels (all items)", _STAT_HEAD, [_stat_row(j, report.judges[j]) for j in order]))
    if report.panels:
        tables.append(
            ("Vote rules over all judges (all items; unresolved items lower coverage)", _STAT_HEAD, [_stat_row(r, s) for r, s in report.panels.items()])
        )
    h = report.held_out
    if h is not None:
        tables.append(
            (
                f"Held-out split (seed {h.seed}: train {h.n_train} items / {h.clusters_train} clusters, held-out {h.n_held_out} items / {h.clusters_held_out} clusters)",
                _STAT_HEAD,
                [_stat_row(r, s) for r, s in h.rules.items()],
            )
        )
        if h.spread is not None:
            rows = [[r, _f(h.spread.kappa_mean[r]), _f(h.spread.kappa_min[r]), _f(h.spread.kappa_max[r])] for r in h.spread.kappa_mean]
            tables.append(
                (
                    f"Held-out kappa over {len(h.spread.seeds)} other split seeds ({h.spread.seeds[0]}..{h.spread.seeds[-1]})",
                    ["rule", "mean", "min", "max"],
                    rows,
                )
            )
        tables.append(
            (
                "Pass rate corrected for judge error on the held-out split (TPR/TNR from train)",
                ["judge", "observed +rate", "corrected [95% CI]", "human +rate", "TPR (train)", "TNR (train)"],
                [[j, _f(c.observed), _ci(c.corrected), _f(c.human), _f(c.tpr_train), _f(c.tnr_train)] for j, c in h.corrected_pass_rates.items()],
            )
        )
        tables.append(
            (
                "Panel weights (log-odds, learned on train; written to weights.json)",
                ["judge", "weight", "TPR", "TNR", "n"],
                [[j, _f(w["weight"]), _f(w["tpr"]), _f(w["tnr"]), str(w["n"])] for j, w in h.weights["judges"].items()],
            )
        )
    if h is not None and h.comparisons:
        tables.append(
            (
                "Paired comparisons on the held-out split (b - a)",
                ["a", "b", "n", "kappa a", "kappa b", "kappa diff [95% CI]", "only a right", "only b right", "McNemar exact p"],
                [
                    [c.a, c.b, str(c.n), _f(c.kappa_a), _f(c.kappa_b), _ci(c.kappa_diff), str(c.only_a_right), str(c.only_b_right), _f(c.mcnemar_p, 4)]
                    for c in h.comparisons
                ],
            )
        )
    if report.self_preference:
        tables.append(
            (
                "Self-preference (leniency on own model family minus leniency on others)",
                ["judge", "family", "n same", "n other", "leniency same", "leniency other", "difference [95% CI]", "flagged"],
                [
                    [
                        s.judge,
                        s.family or "-",
                        str(s.n_same),
                        str(s.n_other),
                        _f(s.leniency_same),
                        _f(s.leniency_other),
                        _ci(s.difference),
                        "yes" if s.flagged else "no",
                    ]
                    for s in report.self_preference
                ],
            )
        )
    return tables


def _summary_lines(report: CalibrationReport) -> list[str]:
    lines = [
        f"Source: {report.source} (format {report.format}); rubric {report.rubric}; positive label '{report.positive_label}'.",
        f"Items: {report.n_items}; human consensus missing on {report.n_no_consensus}; skipped rows: "
        + (", ".join(f"{k} {v}" for k, v in sorted(report.skipped.items())) or "none")
        + ".",
        f"Bootstrap: {report.n_boot} cluster resamples, seed {report.seed}, 95% percentile intervals.",
        f"Human positive rate: {_f(report.human.positive_rate)}; annotators: {', '.join(report.human.annotators)}.",
        "Krippendorff's alpha (nominal): judges "
        + _f(report.krippendorff_alpha.get("judges"))
        + ", judges + human "
        + _f(report.krippendorff_alpha.get("judges_and_human"))
        + ".",
    ]
    c = report.human.ceiling
    if c is not None:
        lines.append(
            f"Human-human ceiling on {c.n_items} items: pairwise kappa {_f(c.pairwise_cohen_kappa)}, agreement {_pct(c.pairwise_percent_agreement)}%, alpha {_f(c.krippendorff_alpha)}."
        )
    return lines


def render_markdown(report: CalibrationReport) -> str:
    out = ["# Judge calibration", ""]
    out += [f"- {line}" for line in _summary_lines(report)]
    for title, head, rows in _tables(report):
        out += ["", f"## {title}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        out += ["| " + " | ".join(r) + " |" for r in rows]
    if report.notes:
        out += ["", "## Notes", ""] + [f"- {n}" for n in report.notes]
    out += [
        "",
        "Disagreements with their material: disagreements.jsonl (counts: " + ", ".join(f"{k} {v}" for k, v in report.disagreement_counts.items()) + ").",
    ]
    return "\n".join(out) + "\n"


def render_html(report: CalibrationReport) -> str:
    """An HTML fragment (no <html>/<body>) that the report page embeds."""
    e = html.escape
    out = ['<section class="calibration">', "<h2>Judge calibration</h2>", "<ul>"]
    out += [f"<li>{e(line)}</li>" for line in _summary_lines(report)]
    out.append("</ul>")
    for title, head, rows in _tables(report):
        out.append(f"<h3>{e(title)}</h3>")
        out.append("<table><thead><tr>" + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr></thead><tbody>")
        out += ["<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>" for r in rows]
        out.append("</tbody></table>")
    if report.notes:
        out.append("<h3>Notes</h3><ul>" + "".join(f"<li>{e(n)}</li>" for n in report.notes) + "</ul>")
    out.append("</section>")
    return "\n".join(out) + "\n"
