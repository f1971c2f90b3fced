"""``report.md``: the run as tables a person reads first. Deterministic: no timestamps at all
(the grading run promises a byte-identical report.md for the same inputs).
"""

from __future__ import annotations

from reports import _orchestration as O
from reports._analysis import RunReport
from reports._escape import md_text
from reports._format import calibration_sentence, md_table, num, pct, pct_ci, pivot_comparison, trust_sentence
from reports._frame import Table
from reports._tables import STAGES, pass_at_k_shown


def _headline(rep: RunReport) -> list[str]:
    s = rep.run.summary
    c = s.counts
    lines = [
        f"**{c.graded}** trajectories graded ({c.errors} input errors): **{c.passed} pass**, {c.fail} fail, {c.unresolved} unresolved.",
        "",
        f"- Pass rate: **{pct(s.pass_rate)}** {pct_ci(s.pass_rate_ci95)} (95% cluster-bootstrap CI over tasks; "
        f"{pct(s.pass_rate_if_unresolved_pass)} if every unresolved case passed)",
    ]
    lb = s.leaderboard
    if lb.score is not None:
        caps = ", ".join(f"cap {md_text(str(k))}: {pct(v)}" for k, v in lb.capabilities.items())
        lines.append(f"- VAKRA leaderboard score: **{pct(lb.score)}** ({caps}; {lb.rule})")
    lines.append(f"- CRAG score: {num(s.crag_score)} (accuracy minus hallucination rate)")
    if c.policy_not_audited:
        lines.append(
            f"- Policy not audited: {c.policy_not_audited} trajectories had a domain-wide policy document, kept as context for the judges "
            "(`--policy-text gate` audits it)"
        )
    trust = trust_sentence(rep.control_facts)
    if trust:
        lines.append(f"- **{trust}**")
    cf = rep.calibration_facts
    if cf and cf.get("corrected_pass_rate") is not None:
        lines.append(
            f"- Pass rate corrected for judge error: {pct(cf['corrected_pass_rate'])} (Rogan-Gladen with {cf['rater']}: TPR {num(cf['tpr'])}, TNR {num(cf['tnr'])})"
        )
    return lines


def _section(title: str, df: Table, columns: list[str] | None = None, empty: str = "none") -> list[str]:
    lines = ["", f"### {title}", ""]
    if df.empty:
        return lines + [f"_{empty}_"]
    return lines + md_table(df, columns)


def render_run(rep: RunReport, level: str = "##") -> list[str]:
    t = rep.tables
    s = rep.run.summary
    lines = _headline(rep)
    if not rep.tables["capabilities"].empty:
        lines += ["", f"{level} Per capability", ""] + md_table(rep.tables["capabilities"])
    lines += ["", f"{level} Where trajectories broke (earliest failing stage)", ""]
    wf = t["failure_stages"]
    lines += md_table(wf.where(lambda r: r["by"] == "overall").drop(["by"]))
    for key in ("capability", "domain"):
        part = wf.where(lambda r: r["by"] == key)  # noqa: B023 (used at once)
        if not part.empty and list(part["group"]) != ["unknown"]:
            lines += _section(f"By {key}", part.drop(["by"]))
    hops = t["accuracy_by_hops"]
    lines += ["", f"{level} Accuracy by hop depth and hop type (with / without policy)", ""]
    lines += md_table(hops) if not hops.empty else ["_no hop metadata_"]
    for key in ("hop_count", "hop_pattern", "policy_condition", "agent"):
        groups = s.by.get(key, {})
        if not groups or list(groups) == ["unknown"]:
            continue
        lines += [
            "",
            f"### By {key.replace('_', ' ')}",
            "",
            f"| {key} | n | pass rate | 95% CI | unresolved | " + " | ".join(STAGES) + " |",
            "|---|---:|---:|---|---:|" + "---:|" * len(STAGES),
        ]
        for value, g in groups.items():
            stages = " | ".join(str(g.failure_stages.get(st, 0)) for st in STAGES)
            lines.append(f"| {md_text(str(value))} | {g.n} | {pct(g.pass_rate)} | {pct_ci(g.pass_rate_ci95)} | {g.unresolved} | {stages} |")
    lines += ["", f"{level} Scores", ""] + md_table(t["scores"], percent=set())
    lines += _section("Seed metrics per agent, with recovery (radar in report.html)", t["seed_metrics"])
    lines += ["", f"{level} Per-tool bottlenecks (conditional failure rate of each reference step)", ""]
    tools = t["tool_bottlenecks"]
    lines += md_table(tools.head(30)) if not tools.empty else ["_no reference-step evidence_"]
    if len(tools) > 30:
        lines.append(f"\n_{len(tools) - 30} more tools in tables/tool_bottlenecks.csv_")
    lines += O.render_markdown(rep.run, t, level)
    vf = rep.vote_facts
    lines += ["", f"{level} How verdicts were decided", ""] + md_table(t["decided_by"])
    lines += [
        "",
        f"- Judge calls: {vf['judge_calls']} ({vf['calls_per_100_trajectories']} per 100 trajectories); cost ${vf['judge_cost_usd']:.4f} "
        f"(${vf['cost_per_100_trajectories']:.4f} per 100 trajectories)",
        f"- Panel decisions: {vf['panel_decisions']} ({vf['panel_inconclusive']} inconclusive); mean panel agreement {pct(vf['mean_panel_agreement'])}",
    ]
    if s.unresolved_stages:
        lines.append("- Unresolved stages: " + ", ".join(f"{k} {v}" for k, v in s.unresolved_stages.items()))
    lines += _section("Judges", t["judge_votes"], empty="no judge votes in this run")
    if not t["judge_controls"].empty:
        cf_ = rep.control_facts
        lines += _section(
            f"Control items (questions whose verdict is known; mode {cf_['mode']}, threshold {cf_['threshold']}, {cf_['calls']} calls)", t["judge_controls"]
        )
    lines += _section("Calibration of the judges (agreement with human gold)", t["calibration"], empty="no calibration.json for this run")
    cf = rep.calibration_facts
    if cf:
        lines += ["", calibration_sentence(cf, s.pass_rate)]
    lines += ["", f"{level} Repeated runs of the same agent on the same task", ""]
    if t["pass_at_k"].empty:
        lines.append("_no agent ran any task more than once_")
    else:
        shown, note = pass_at_k_shown(t["pass_at_k"])
        lines += md_table(t["repeated_runs"]) + [""] + md_table(shown) + (["", f"_{note}_"] if note else [])
    if not t["external_agreement"].empty:
        lines += ["", f"{level} Agreement with the source's own verdicts", ""]
        lines += [
            "Ours (pass / fail / unresolved) against the verdict the trajectories' source gave them; kappa on the cases both decided "
            "(95% cluster-bootstrap CI over tasks). Every disagreement is listed with both sides' reasons.",
            "",
        ]
        lines += md_table(t["external_agreement"], percent={"agreement"})
        lines += _section("Disagreements", t["external_disagreements"], empty="none")
    if s.input_warnings:
        lines += ["", f"{level} Input warnings (read, graded, worth a look)", "", "| kind | field | count | first seen | message |", "|---|---|---:|---|---|"]
        for kind, fields in s.input_warnings.items():
            for pattern, w in fields.items():
                cells = [kind, pattern, w.count, w.first, w.message]  # field names and label ids are the input's own text
                lines.append("| " + " | ".join(md_text(str(c)) for c in cells) + " |")
    if s.errors:
        lines += ["", f"{level} Input errors (listed, not graded)", "", "| file | line | field | kind | message |", "|---|---:|---|---|---|"]
        for e in s.errors:
            cells = [e.file, e.line or "", e.field or "", e.kind, e.message]
            lines.append("| " + " | ".join(md_text(str(c)) for c in cells) + " |")
        if s.errors_file is not None and s.errors_by_kind is not None:
            total = sum(n for kinds in s.errors_by_kind.values() for n in kinds.values())
            counted = ", ".join(f"{md_text(kind)} {n}" for kinds in s.errors_by_kind.values() for kind, n in kinds.items())
            lines += ["", f"The first {len(s.errors)} of {total} errors are listed ({counted}); every one is in {md_text(s.errors_file)}."]
    if rep.notes:
        lines += ["", f"{level} Notes", ""] + [f"- {md_text(n)}" for n in rep.notes]
    return lines


def render_markdown(reports: list[RunReport], comparison: dict[str, Table] | None = None, formats: tuple[str, ...] = ("csv", "parquet")) -> str:
    lines = ["# trajectory-judge report", ""]
    if len(reports) == 1:
        lines += render_run(reports[0])  # no run name: report.md must not depend on the output folder
    else:
        lines += ["## Comparison of runs", "", "Deltas are against the first run; CIs are 95% cluster-bootstrap intervals.", ""]
        assert comparison is not None
        lines += md_table(comparison["comparison"])
        for key, df in comparison.items():
            if key != "comparison" and not df.empty:
                lines += _section(f"Pass rate by {key.removeprefix('comparison_by_')} (* = 95% CIs do not overlap)", pivot_comparison(df))
        for rep in reports:
            lines += ["", f"## Run {md_text(rep.run.name)}", ""] + render_run(rep, level="###")
    written = " and ".join(f"`tables/*.{f}`" for f in formats)
    lines += ["", f"Tables: {written}; per-trajectory drill-down: `report.html`."]
    return "\n".join(lines) + "\n"
