"""The calibration report: ``calibrate`` computes the agreement statistics of recorded verdicts;
``render_markdown`` / ``render_html`` write it with the optional workflow sections (prompt versions,
few-shot tuning, bias probes, recommended panel) that ``run_calibration`` (``_workflow``) fills in.

Everything in the outputs is a function of (gold file, judges, rubric, seed, n_boot): no timestamps,
sorted keys, fixed bootstrap seeds -> byte-identical files on every run.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, Field

from calibration._agreement import AgreementStats, Estimate, HumanCeiling, LabelCoder, Resampler, agreement, human_ceiling, krippendorff_alpha
from calibration._gold import GoldSet, why_not_judgeable
from calibration._panel_choice import PanelChoice
from calibration._panels import FIXED_RULES, HeldOutEvaluation, decode, encode_votes, fixed_rule, held_out_evaluation
from calibration._probes import ProbeResult
from calibration._prompts import FewShotReport
from calibration._self_preference import SelfPreference, self_preference
from calibration._subset import GoldSubset
from calibration._versions import PromptVersionReport
from judge import fmt_num, fmt_pct, md_text

REPORT_VERSION = 1
NO_LIVE_JUDGE = (
    "the verdicts recorded in the gold set are measured, but no live judge can be run on these items "
    "(--judge provider:model, --against, --variant, --few-shot and --probes need items with their material inline and complete: "
    "make such a gold set from a graded run with judge gold export, judge gold label and judge gold import)"
)


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
    prompt_versions: PromptVersionReport | None = None
    few_shot: FewShotReport | None = None
    probes: list[ProbeResult] = Field(default_factory=list)
    panel_choice: PanelChoice | None = None
    subset: GoldSubset | None = None  # --limit / --sample: which items were used (None: all)

    @property
    def sections(self) -> dict[str, CalibrationReport]:
        """Per rubric: this report under its rubric (one rubric, one section)."""
        return {self.rubric or "": self}


class PerRubricReport(BaseModel):
    """A gold set of several rubrics, calibrated per rubric: one full ``CalibrationReport`` each.
    Figures are never pooled over rubrics (their labels and judges' skills differ)."""

    version: int = REPORT_VERSION
    source: str
    format: str
    rubric: None = None  # several: see ``rubrics``
    seed: int
    n_boot: int
    n_items: int
    skipped: dict[str, int]
    rubrics: dict[str, CalibrationReport]
    notes: list[str] = Field(default_factory=list)
    files: list[str] = Field(default_factory=list)
    subset: GoldSubset | None = None

    @property
    def sections(self) -> dict[str, CalibrationReport]:
        return self.rubrics


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
    """The statistics of one rubric's items without the files: (report, disagreement records).
    A gold set of several rubrics: ``calibrate_per_rubric``."""
    if rubric is None and len(gold.rubrics) > 1:
        raise ValueError(
            f"{gold.source}: the gold set mixes rubrics {gold.rubrics}: its figures are per rubric (judge calibrate writes one section each; --rubric NAME keeps one)"
        )
    known_rubrics = gold.rubrics
    gold = gold.for_rubric(rubric)
    if not gold.items:
        raise ValueError(f"{gold.source}: no items of rubric {rubric!r} (--rubric); the gold set holds {', '.join(known_rubrics) or 'no items'}")
    names = list(judges) if judges is not None else gold.judges
    unknown = [j for j in names if j not in gold.judges]
    if unknown:
        raise ValueError(f"{gold.source}: no recorded verdicts for --judge {', '.join(unknown)}; the gold set records {', '.join(gold.judges) or 'none'}")
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

    blocked = why_not_judgeable(items)
    if blocked is not None:
        notes.append(f"{blocked}: {NO_LIVE_JUDGE}")

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


def calibrate_per_rubric(
    gold: GoldSet,
    *,
    judges: Sequence[str] | None = None,
    seed: int = 0,
    n_boot: int = 1000,
    train_fraction: float = 0.5,
    spread_seeds: int = 20,
) -> tuple[dict[str, CalibrationReport], list[dict]]:
    """``calibrate`` on each rubric's items (rubrics sorted by name): {rubric: report}, and every
    section's disagreement records. A named judge with no verdict recorded on a rubric's items is
    left out of that rubric's section, and the section says so."""
    sections: dict[str, CalibrationReport] = {}
    records: list[dict] = []
    for name in gold.rubrics:
        part = gold.for_rubric(name)
        present = None if judges is None else [j for j in judges if j in part.judges]
        report, found = calibrate(part, judges=present, rubric=name, seed=seed, n_boot=n_boot, train_fraction=train_fraction, spread_seeds=spread_seeds)
        missing = [j for j in judges or [] if j not in part.judges]
        if missing:
            report.notes.append(f"no verdicts recorded on the {name} items for --judge {', '.join(missing)}: not measured on this rubric")
        sections[name] = report
        records += found
    return sections, records


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
                    {
                        "rater": rater,
                        "id": it.id,
                        "rubric": it.rubric,
                        "human": h,
                        "rated": lab,
                        "cluster": it.cluster_key,
                        "agent": it.agent,
                        "material": it.material_summary(),
                    }
                )
        counts[rater] = n
    return records, counts


# ---------------------------------------------------------------- rendering


def _f(x: float | None, digits: int = 3) -> str:
    return fmt_num(x, digits, none="-")


def _pct(x: float | None) -> str:
    return fmt_pct(x, 2, none="-", sign="")


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
    return tables + _workflow_tables(report)


def _workflow_tables(report: CalibrationReport) -> list[tuple[str, list[str], list[list[str]]]]:
    tables: list[tuple[str, list[str], list[list[str]]]] = []
    pv = report.prompt_versions
    if pv is not None:
        tables.append(
            (
                "Prompt versions: agreement with the human labels",
                ["version", "judge", "rubric versions", "n", "% agreement [95% CI]", "Cohen's kappa [95% CI]"],
                [
                    [
                        v.version,
                        v.judge,
                        ", ".join(f"{r} {h}" for r, h in v.rubric_versions.items()),
                        str(v.stats.n),
                        _ci(v.stats.accuracy),
                        _ci(v.stats.cohen_kappa),
                    ]
                    for v in pv.per_version
                ],
            )
        )
        labels = pv.per_version[0].stats.labels if pv.per_version else []
        tables.append(
            (
                "Prompt versions: confusion, share of each human label given each judge label [95% CI] (count)",
                ["version", "judge", "human label", *[f"judge: {lab}" for lab in labels]],
                [
                    [v.version, v.judge, lab, *[f"{_ci(v.confusion_rates[i][j])} ({v.stats.confusion[i][j]})" for j in range(len(labels))]]
                    for v in pv.per_version
                    for i, lab in enumerate(labels)
                ],
            )
        )
        tables.append(
            (
                "Prompt versions: paired comparisons (b - a; McNemar exact p, Holm-adjusted per judge)",
                ["judge", "a", "b", "n", "kappa a", "kappa b", "kappa diff [95% CI]", "only a right", "only b right", "p (Holm)", "winner"],
                [
                    [
                        c.judge,
                        c.a,
                        c.b,
                        str(c.test.n),
                        _f(c.test.kappa_a),
                        _f(c.test.kappa_b),
                        _ci(c.test.kappa_diff),
                        str(c.test.only_a_right),
                        str(c.test.only_b_right),
                        _f(c.mcnemar_p_holm, 4),
                        c.winner or "none (indistinguishable)",
                    ]
                    for c in pv.comparisons
                ],
            )
        )
    fs = report.few_shot
    if fs is not None:
        r = fs.result
        rows = [[str(k), _f(r.dev_kappa.get(k)), "chosen" if k == r.chosen_k else ""] for k in sorted(r.dev_kappa)]
        tables.append((f"Few-shot tuning of {fs.rubric} for {fs.judge}: kappa on dev ({r.n_dev} items) per number of examples", ["k", "dev kappa", ""], rows))
        t = r.test
        tables.append(
            (
                f"Few-shot tuning: measured once on test ({r.n_test} items; examples from {r.n_disagreements_train} train disagreements of {r.n_train})",
                ["prompt", "rubric version", "kappa", "kappa diff [95% CI]", "only zero-shot right", "only few-shot right", "McNemar exact p"],
                [
                    ["zero-shot", fs.base_version, _f(t.kappa_a), "", "", "", ""],
                    [
                        f"{r.chosen_k} examples",
                        fs.tuned_version,
                        _f(t.kappa_b),
                        _ci(t.kappa_diff),
                        str(t.only_a_right),
                        str(t.only_b_right),
                        _f(t.mcnemar_p, 4),
                    ],
                ],
            )
        )
    if report.probes:
        head = ["probe", "attack / rater", "n pairs", "flips", "flip rate [95% CI]", "to positive", "to-positive rate [95% CI]", "abstained", "rater kappa"]
        rows = []
        for pr in report.probes:
            rows.append([pr.probe, "panel" if pr.probe != "self-preference" else "all judges", *_flip_cells(pr.panel), "", ""][:8] + [""])
            for name, fsx in pr.variants.items():
                rows.append([pr.probe, name, *_flip_cells(fsx), ""])
            for judge, fsx in pr.judges.items():
                kappa = report.judges.get(judge)
                rows.append([pr.probe, judge, *_flip_cells(fsx), _ci(kappa.cohen_kappa) if kappa is not None else ""])
        tables.append(("Bias probes: how often a change that must not matter flips the verdict", head, rows))
    pc = report.panel_choice
    if pc is not None:
        shown = [c for c in pc.candidates if c.meets_target][:10] or pc.candidates[:10]
        tables.append(
            (
                f"Cheapest panel with held-out kappa lower bound >= {pc.target_kappa} (held-out {pc.n_held_out} items, seed {pc.seed}; cheapest first)",
                ["judges", "rule", "coverage", "kappa [95% CI]", "USD per 1,000 escalated cases", "meets target"],
                [
                    [
                        " + ".join(c.judges),
                        c.rule,
                        _pct(c.coverage),
                        _ci(c.kappa),
                        "-" if c.usd_per_1000_cases is None else f"{c.usd_per_1000_cases:.4f}",
                        "yes" if c.meets_target else "no",
                    ]
                    for c in shown
                ],
            )
        )
        tables.append(
            (
                "Judge cost per call (prices from the config)",
                ["judge", "input tokens", "output tokens", "USD per call", "basis"],
                [
                    [
                        c.judge,
                        _f(c.input_tokens_per_call, 1),
                        _f(c.output_tokens_per_call, 1),
                        "-" if c.usd_per_call is None else f"{c.usd_per_call:.6f}",
                        c.basis,
                    ]
                    for c in pc.costs.values()
                ],
            )
        )
    return tables


def _flip_cells(s) -> list[str]:
    return [str(s.n), str(s.n_flips), _ci(s.flip_rate), str(s.flips_to_positive), _ci(s.to_positive_rate), str(s.n_abstained)]


def conclusions(report: CalibrationReport) -> list[str]:
    out = []
    if report.prompt_versions is not None:
        out += [f"{c.judge}: {c.a} vs {c.b}: {c.conclusion}" for c in report.prompt_versions.comparisons]
    fs = report.few_shot
    if fs is not None:
        t = fs.result.test
        where = f"; tuned rubric written to {fs.folder} (version {fs.tuned_version})" if fs.folder else ""
        out.append(
            f"few-shot ({fs.judge}, {fs.rubric}): {fs.result.chosen_k} examples chosen on dev; on test kappa {_f(t.kappa_a)} -> {_f(t.kappa_b)} "
            f"(difference {_ci(t.kappa_diff)}, McNemar p {_f(t.mcnemar_p, 4)}){where}"
        )
    for pr in report.probes:
        out.append(
            f"probe {pr.probe}: flip rate {_ci(pr.panel.flip_rate)} over {pr.panel.n} pairs; flips to the positive label {_ci(pr.panel.to_positive_rate)}"
        )
    if report.panel_choice is not None:
        out.append(f"cheapest panel: {report.panel_choice.conclusion}")
    return out


def _subset_line(subset: GoldSubset | None) -> list[str]:
    return [] if subset is None else [f"Subset: {subset.describe()}."]


def _summary_lines(report: CalibrationReport) -> list[str]:
    lines = [
        f"Source: {report.source} (format {report.format}); rubric {report.rubric}; positive label '{report.positive_label}'.",
        *_subset_line(report.subset),
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


def _set_lines(report: PerRubricReport) -> list[str]:
    return [
        f"Source: {report.source} (format {report.format}): {report.n_items} items of {len(report.rubrics)} rubrics, calibrated per rubric: "
        + ", ".join(f"{name} {s.n_items}" for name, s in report.rubrics.items())
        + "; skipped rows: "
        + (", ".join(f"{k} {v}" for k, v in sorted(report.skipped.items())) or "none")
        + ".",
        *_subset_line(report.subset),
    ]


def _counts_line(report: CalibrationReport) -> str:
    return "Disagreements with their material: disagreements.jsonl (counts: " + ", ".join(f"{k} {v}" for k, v in report.disagreement_counts.items()) + ")."


def _markdown_section(report: CalibrationReport, level: int) -> list[str]:
    h = "#" * level
    out = [f"- {line}" for line in _summary_lines(report)]
    for title, head, rows in _tables(report):
        out += ["", f"{h} {title}", "", "| " + " | ".join(md_text(c) for c in head) + " |", "|" + "---|" * len(head)]
        out += ["| " + " | ".join(md_text(c) for c in r) + " |" for r in rows]  # judge, rubric and stratum names are the user's text
    lines = conclusions(report)
    if lines:
        out += ["", f"{h} Conclusions", ""] + [f"- {c}" for c in lines]
    if report.notes:
        out += ["", f"{h} Notes", ""] + [f"- {n}" for n in report.notes]
    return out + ["", _counts_line(report)]


def render_markdown(report: CalibrationReport | PerRubricReport) -> str:
    out = ["# Judge calibration", ""]
    if isinstance(report, CalibrationReport):
        out += _markdown_section(report, 2)
    else:
        out += [f"- {line}" for line in _set_lines(report)]
        if report.notes:
            out += ["", "## Notes", ""] + [f"- {n}" for n in report.notes]
        for name, section in report.rubrics.items():
            out += ["", f"## Rubric {name}", ""] + _markdown_section(section, 3)
    return "\n".join(out) + "\n"


def _html_section(report: CalibrationReport, level: int) -> list[str]:
    e = html.escape
    h = f"h{level}"
    out = ["<ul>"] + [f"<li>{e(line)}</li>" for line in _summary_lines(report)] + ["</ul>"]
    for title, head, rows in _tables(report):
        out.append(f"<{h}>{e(title)}</{h}>")
        out.append("<table><thead><tr>" + "".join(f"<th>{e(x)}</th>" for x in head) + "</tr></thead><tbody>")
        out += ["<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>" for r in rows]
        out.append("</tbody></table>")
    lines = conclusions(report)
    if lines:
        out.append(f"<{h}>Conclusions</{h}><ul>" + "".join(f"<li>{e(c)}</li>" for c in lines) + "</ul>")
    if report.notes:
        out.append(f"<{h}>Notes</{h}><ul>" + "".join(f"<li>{e(n)}</li>" for n in report.notes) + "</ul>")
    return out


def render_html(report: CalibrationReport | PerRubricReport) -> str:
    """An HTML fragment (no <html>/<body>) that the report page embeds."""
    e = html.escape
    out = ['<section class="calibration">', "<h2>Judge calibration</h2>"]
    if isinstance(report, CalibrationReport):
        out += _html_section(report, 3)
    else:
        out += ["<ul>"] + [f"<li>{e(line)}</li>" for line in _set_lines(report)] + ["</ul>"]
        if report.notes:
            out.append("<h3>Notes</h3><ul>" + "".join(f"<li>{e(n)}</li>" for n in report.notes) + "</ul>")
        for name, section in report.rubrics.items():
            out += [f"<h3>Rubric {e(name)}</h3>", *_html_section(section, 4)]
    out.append("</section>")
    return "\n".join(out) + "\n"
