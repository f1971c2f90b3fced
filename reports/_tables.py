"""Every number the report shows, as tables (``reports._frame.Table``) (also written to ``tables/`` as CSV + Parquet).

Numbers that ``summary.json`` already holds (pass rates, CIs, stage counts, scores, leaderboard,
verdicts per decider) are taken from it, never recomputed, so the report cannot disagree with the
summary. What the summary lacks is computed here from ``results.jsonl``; a group's outcome figures
(counts, pass rate, interval, score means) through ``calibration.group_metrics``, the one function
the aggregator writes the summary with:

- crossed hop x policy cells and hop types: pass rate with a Wilson 95% interval (the summary's
  cluster bootstrap is only available per single breakdown);
- per agent: the mean seed metrics (the radar); judge-decided and deterministic passes (the pass
  rate corrected for judge error);
- tool bottlenecks: for each reference tool name, among the reference steps that required it,
  the share left unsatisfied (``unsatisfied``) or undecidable (``no_counterpart``);
- repeated runs: unbiased pass@k = 1 - C(n-c,k)/C(n,k) and pass^k = C(c,k)/C(n,k) per task,
  averaged over tasks; runs of an agent on a task are ordered as they appear in results.jsonl.

Row order is fixed (natural sort of group values, stage order from ``judge``) for determinism.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

from calibration import group_metrics
from calibration._exact import np_mean
from judge import FAILURE_STAGE_ORDER, GroupStats
from reports._frame import Table
from reports._orchestration import recovery_axis
from reports._run import ORCHESTRATION_COLUMNS, SCORE_NAMES, Row, RunData

STAGES = tuple(s.value for s in FAILURE_STAGE_ORDER if s.value != "none")
SEED_METRICS = ("tool_selection", "tool_order", "parameter", "policy_compliance", "tool_efficiency", "answer_accuracy")
RADAR_AXES = (*SEED_METRICS, "recovery")  # recovery: pooled rate of recovered failed calls (reports._orchestration)


def natural(value: Any) -> tuple:
    text = str(value)
    return (0, int(text), "") if text.isdigit() else (1, 0, text)


def _r(x: Any) -> Any:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else round(float(x), 6)


# ---------------------------------------------------------------------------------------------
def headline(run: RunData) -> Table:
    s = run.summary
    rows: list[dict[str, Any]] = []

    def add(metric: str, value: Any, ci: Any = None, n: Any = None, note: str = "") -> None:
        rows.append({"metric": metric, "value": _r(value), "ci_low": _r(ci[0]) if ci else None, "ci_high": _r(ci[1]) if ci else None, "n": n, "note": note})

    c = s.counts
    add("pass_rate", s.pass_rate, s.pass_rate_ci95, c.graded, "unresolved counted as not passed; 95% cluster-bootstrap CI over tasks")
    add("pass_rate_if_unresolved_pass", s.pass_rate_if_unresolved_pass, None, c.graded, "upper bound")
    lb = s.leaderboard
    by_capability = s.by.get("capability", {})
    add("vakra_leaderboard_score", lb.score, None, c.graded, lb.rule)
    for cap, v in lb.capabilities.items():
        group = by_capability.get(cap)
        add(f"vakra_capability_{cap}", v, None, group.n if group is not None else None, "leaderboard capability score")
    add("crag_score", s.crag_score, None, c.graded, "mean of correct 1 / missing 0 / incorrect -1")
    for cap, g in by_capability.items():
        add(f"pass_rate_capability_{cap}", g.pass_rate, g.pass_rate_ci95, g.n, "")
        add(f"crag_score_capability_{cap}", g.crag_score, None, g.n, "")
    return Table.from_records(rows, columns=["metric", "value", "ci_low", "ci_high", "n", "note"])


def capabilities(run: RunData) -> Table:
    """Per capability: pass rate with CI, VAKRA capability score, CRAG (all from the summary)."""
    s = run.summary
    lb = s.leaderboard.capabilities
    rows = []
    for cap, g in s.by.get("capability", {}).items():
        ci = g.pass_rate_ci95 or (None, None)
        rows.append(
            {
                "capability": cap,
                "n": g.n,
                "pass_rate": _r(g.pass_rate),
                "ci_low": _r(ci[0]),
                "ci_high": _r(ci[1]),
                "vakra_score": _r(lb.get(cap)),
                "crag_score": _r(g.crag_score),
                "unresolved": g.unresolved,
            }
        )
    return Table.from_records(rows, columns=["capability", "n", "pass_rate", "ci_low", "ci_high", "vakra_score", "crag_score", "unresolved"])


def waterfall(run: RunData, keys: tuple[str, ...] = ("capability", "domain")) -> Table:
    """Mutually exclusive outcome counts: pass, each earliest failing stage, unresolved."""
    s = run.summary
    groups: list[tuple[str, str, GroupStats]] = [("overall", "all", s)]
    for key in keys:
        for value, g in s.by.get(key, {}).items():
            groups.append((key, value, g))
    rows = []
    for by, value, g in groups:
        row: dict[str, Any] = {"by": by, "group": value, "n": g.n, "pass": g.passed}
        for st in STAGES:
            row[st] = g.failure_stages.get(st, 0)
        row["unresolved"] = g.unresolved
        row["pass_rate"] = _r(g.pass_rate)
        rows.append(row)
    return Table.from_records(rows, columns=["by", "group", "n", "pass", *STAGES, "unresolved", "pass_rate"])


def _policy_label(r: Row) -> str:
    # the grader writes "no_policy" for a task without a policy; None means a policy without a label
    return r.policy_condition if r.policy_condition is not None else "policy (unlabelled)"


def hop_type(pattern: str | None) -> str:
    """VAKRA hop type from a hop pattern: the distinct sources, sorted (API-RAG-API -> API-RAG)."""
    if not pattern:
        return "unknown"
    return "-".join(sorted({part.strip() for part in pattern.split("-") if part.strip()}))


def _hop_value(dim: str) -> Callable[[Row], str]:
    """The hop dimension of a row as a label (hop_type is derived from the hop pattern)."""
    if dim == "hop_type":
        return lambda r: hop_type(r.hop_pattern)

    def value(r: Row) -> str:
        v = getattr(r, dim)
        return "unknown" if v is None else str(v)

    return value


def accuracy_by_hops(run: RunData) -> Table:
    """Pass rate by hop count, hop type (API / RAG / API-RAG) and hop pattern; overall and per
    policy condition. Rows present in the summary (hop_count, hop_pattern) take its numbers; the
    other cells (``calibration.group_metrics`` of their rows) a Wilson interval."""
    rows = []
    graded = run.graded
    for dim in ("hop_count", "hop_type", "hop_pattern"):
        value_of = _hop_value(dim)
        cells: dict[tuple[str, str], list[str]] = defaultdict(list)
        for r in graded:
            for pol in ("all", _policy_label(r)):
                cells[(value_of(r), pol)].append(r.verdict)
        from_summary = run.summary.by.get(dim, {})
        policies = {p for _, p in cells} - {"all"}
        for (value, pol), verdicts in sorted(cells.items(), key=lambda kv: (kv[0][1] != "all", natural(kv[0][0]), kv[0][1])):
            if pol != "all" and len(policies) < 2:
                continue  # a single policy condition equals the "all" rows
            g = from_summary.get(value) if pol == "all" else None
            if g is not None:
                n, k, rate, ci, method = g.n, g.passed, g.pass_rate, g.pass_rate_ci95, "cluster bootstrap (summary)"
            else:
                m = group_metrics(verdicts, ci="wilson")
                n, k, rate, ci, method = m["n"], m["pass"], m["pass_rate"], m["pass_rate_ci95"], "Wilson"
            lo, hi = ci or (None, None)
            rows.append(
                {
                    "dimension": dim,
                    "value": value,
                    "policy_condition": pol,
                    "n": n,
                    "pass": k,
                    "pass_rate": _r(rate),
                    "ci_low": _r(lo),
                    "ci_high": _r(hi),
                    "ci_method": method,
                }
            )
    return Table.from_records(rows, columns=["dimension", "value", "policy_condition", "n", "pass", "pass_rate", "ci_low", "ci_high", "ci_method"])


def tool_bottlenecks(run: RunData) -> Table:
    """Conditional failure rate of each reference tool: P(unsatisfied | the step required it)."""
    counts: dict[str, Counter] = defaultdict(Counter)
    for r in run.graded:
        for name, status in r.tools:
            counts[name]["required"] += 1
            counts[name][status] += 1
    rows = []
    for name, c in counts.items():
        req = c["required"]
        rows.append(
            {
                "tool": name,
                "required": req,
                "satisfied": c["satisfied"],
                "unsatisfied": c["unsatisfied"],
                "no_counterpart": c["no_counterpart"],
                "failure_rate": _r(c["unsatisfied"] / req),
                "failure_rate_incl_undecided": _r((c["unsatisfied"] + c["no_counterpart"]) / req),
            }
        )
    df = Table.from_records(rows, columns=["tool", "required", "satisfied", "unsatisfied", "no_counterpart", "failure_rate", "failure_rate_incl_undecided"])
    return df.sort(["failure_rate_incl_undecided", "required", "tool"], ascending=[False, False, True])


def seed_metrics(run: RunData) -> Table:
    """Mean seed metric per agent (``calibration.group_metrics`` of the agent's rows; None values
    are not applicable and left out), plus 'all' (from the summary), and the recovery axis (pooled
    recovered / failed calls; 1 for an agent with no failed call)."""
    by_agent: dict[str, list[Row]] = defaultdict(list)
    for r in run.graded:
        by_agent[r.agent or "unknown"].append(r)
    positions = [(m, SCORE_NAMES.index(m)) for m in SEED_METRICS]
    recovery = recovery_axis(run)
    rows = []
    for agent in sorted(by_agent, key=natural):
        mine = by_agent[agent]
        scores = {m: [math.nan if (x := r.score_values[i]) is None else float(x) for r in mine] for m, i in positions}
        g = group_metrics([r.verdict for r in mine], scores=scores, ci=None)
        row: dict[str, Any] = {"agent": agent, "n": g["n"], **{m: g["scores"][m]["mean"] for m in SEED_METRICS}}
        row["recovery"] = recovery.get(agent)
        rows.append(row)
    summary_scores = run.summary.scores
    overall = {m: _r(summary_scores[m].mean) if m in summary_scores else None for m in SEED_METRICS}
    rows.append({"agent": "all", "n": run.summary.counts.graded, **overall, "recovery": recovery.get("all")})
    return Table.from_records(rows, columns=["agent", "n", *RADAR_AXES])


def scores_table(run: RunData) -> Table:
    rows = []
    for key, sc in run.summary.scores.items():
        ci = sc.ci95 or (None, None)
        rows.append({"metric": key, "mean": _r(sc.mean), "ci_low": _r(ci[0]), "ci_high": _r(ci[1]), "n": sc.n})
    return Table.from_records(rows, columns=["metric", "mean", "ci_low", "ci_high", "n"])


# ---------------------------------------------------------------------------------------------
def decisions(run: RunData) -> Table:
    """How verdicts were decided: one row per decided_by value (from the summary)."""
    s = run.summary
    n = max(s.counts.graded, 1)
    rows = [{"decided_by": k, "count": v, "share": _r(v / n)} for k, v in s.decided_by.items()]
    return Table.from_records(rows, columns=["decided_by", "count", "share"])


_AGREEMENT_COLUMNS = [
    "source",
    "n",
    "both_decided",
    "agreement",
    "cohen_kappa",
    "kappa_ci95",
    "unresolved_by_us",
    "disagreements",
    *[f"ours_{o}_theirs_{t}" for o in ("pass", "fail", "unresolved") for t in ("pass", "fail")],
]
_DISAGREEMENT_COLUMNS = ["source", "task_id", "trajectory_id", "ours", "failure_stage", "our_reason", "theirs", "their_value", "their_reason"]


def external_agreement(run: RunData) -> tuple[Table, Table]:
    """Agreement with each source's own verdicts (summary ``external_agreement``), and every
    disagreement with both sides' reasons."""
    rows, disagreements = [], []
    for source, ext in (run.summary.external_agreement or {}).items():
        kappa = ext.cohen_kappa
        row: dict[str, Any] = {
            "source": source,
            "n": ext.n,
            "both_decided": ext.both_decided,
            "agreement": ext.agreement,
            "cohen_kappa": kappa.value,
            "kappa_ci95": None if kappa.ci95 is None else f"{kappa.ci95[0]:.3f} to {kappa.ci95[1]:.3f}",
            "unresolved_by_us": ext.unresolved_by_us,
            "disagreements": len(ext.disagreements),
        }
        for ours, cells in ext.confusion.items():
            for theirs in ("pass", "fail"):
                row[f"ours_{ours}_theirs_{theirs}"] = cells[theirs]
        rows.append(row)
        for d in ext.disagreements:
            disagreements.append(
                {
                    "source": source,
                    "task_id": d.task_id,
                    "trajectory_id": d.trajectory_id,
                    "ours": d.ours["verdict"],
                    "failure_stage": d.ours["failure_stage"],
                    "our_reason": d.ours["reason"],
                    "theirs": d.theirs["verdict"],
                    "their_value": json.dumps(d.theirs["value"]),
                    "their_reason": d.theirs["reason"],
                }
            )
    return Table.from_records(rows, columns=_AGREEMENT_COLUMNS), Table.from_records(disagreements, columns=_DISAGREEMENT_COLUMNS)


def judge_votes(run: RunData) -> tuple[Table, dict[str, Any]]:
    """Per judge: votes, abstentions (by reason), agreement with the panel decision, cost."""
    per: dict[str, Counter] = defaultdict(Counter)
    cost: dict[str, float] = defaultdict(float)
    reasons: dict[str, Counter] = defaultdict(Counter)
    agreements: list[float] = []
    decisions_n = inconclusive = 0
    for r in run.graded:
        for d in r.decisions:
            decisions_n += 1
            inconclusive += d.outcome == "inconclusive"
            if d.agreement is not None:
                agreements.append(d.agreement)
            for v in d.votes:
                c = per[v.judge]
                c["votes"] += 1
                c["cached"] += v.cached
                cost[v.judge] += v.cost_usd
                if v.abstained:
                    c["abstained"] += 1
                    reasons[v.judge][v.abstain_reason or "unspecified"] += 1
                elif d.label is not None:
                    c["with_label"] += 1
                    c["agree"] += v.label == d.label
    rows = []
    for judge in sorted(per):
        c = per[judge]
        rows.append(
            {
                "judge": judge,
                "votes": c["votes"],
                "abstained": c["abstained"],
                "abstain_reasons": ", ".join(f"{k} {v}" for k, v in sorted(reasons[judge].items())),
                "agrees_with_panel": _r(c["agree"] / c["with_label"]) if c["with_label"] else None,
                "cached": c["cached"],
                "cost_usd": round(cost[judge], 6),
            }
        )
    df = Table.from_records(rows, columns=["judge", "votes", "abstained", "abstain_reasons", "agrees_with_panel", "cached", "cost_usd"])
    j = run.summary.judges
    graded = max(run.summary.counts.graded, 1)
    facts = {
        "panel_decisions": decisions_n,
        "panel_inconclusive": inconclusive,
        "mean_panel_agreement": _r(np_mean(agreements)) if agreements else None,
        "judge_calls": j.calls,
        "judge_cost_usd": j.cost_usd,
        "calls_per_100_trajectories": j.calls_per_100_trajectories,
        "cost_per_100_trajectories": round(100 * float(j.cost_usd) / graded, 6),
    }
    return df, facts


_CONTROL_COLUMNS = ["judge", "rubric", "n", "known_pass_passed", "known_fail_failed", "abstained", "accuracy", "gated"]


def judge_controls(run: RunData) -> tuple[Table, dict[str, Any]]:
    """Each judge's control items per rubric (``summary.json`` ``judges.controls``), and how far the
    judge-decided verdicts rest on a measured judge: ``unmeasured`` counts them when the run has
    neither control figures nor a calibration.json; ``gated`` lists (judge, rubric, accuracy)."""
    controls = run.summary.judges.controls or {}
    rows = []
    for judge, per in sorted((controls.get("judges") or {}).items()):
        for rubric, f in sorted(per.items()):
            rows.append(
                {
                    "judge": judge,
                    "rubric": rubric,
                    "n": f["n"],
                    "known_pass_passed": f"{f['known_pass_passed']} / {f['known_pass']}",
                    "known_fail_failed": f"{f['known_fail_failed']} / {f['known_fail']}",
                    "abstained": f["abstained"],
                    "accuracy": f["accuracy"],
                    "gated": f["gated"],
                }
            )
    judged = sum(n for by, n in run.summary.decided_by.items() if by.startswith("judge:"))
    measured = bool(run.calibration) or any(r["n"] for r in rows)
    facts = {
        "mode": controls.get("mode", "off"),
        "threshold": controls.get("threshold"),
        "calls": controls.get("calls", 0),
        "judge_decided": judged,
        "unmeasured": 0 if measured else judged,
        "gated": [(r["judge"], r["rubric"], r["accuracy"]) for r in rows if r["gated"]],
    }
    return Table.from_records(rows, columns=_CONTROL_COLUMNS), facts


def _estimate(stats: dict[str, Any], key: str) -> float | None:
    v = stats.get(key)
    if isinstance(v, dict):
        v = v.get("value")
    return None if v is None else float(v)


def _calibration_source(run: RunData) -> str:
    # relative to the run when it lives there, so the report does not depend on where the run sits
    path = run.calibration_path
    if path is not None and path.resolve().parent == run.path.resolve():
        return f"{path.name} in the run directory"
    return str(path)


def calibration_tables(run: RunData) -> tuple[Table, dict[str, Any] | None]:
    """Judges' and panels' agreement with human gold, and the pass rate corrected for judge error.

    Correction (Rogan-Gladen, ``calibration.corrected_pass_rate``) applies to the judge-decided
    trajectories only; deterministic verdicts are taken as exact. The rater whose TPR/TNR is used:
    the calibration panel named like the run's panel, else the only judge, else the first panel.
    """
    cal = run.calibration
    cols = ["rater", "kind", "used_in_run", "n", "accuracy", "cohen_kappa", "tpr", "tnr", "leniency"]
    if not cal:
        return Table.from_records([], columns=cols), None
    used = {v.judge for r in run.graded for d in r.decisions for v in d.votes}
    used |= {r.decided_by.split(":", 1)[1] for r in run.graded if r.decided_by.startswith("judge:")}
    sections = cal.get("rubrics") if "judges" not in cal and isinstance(cal.get("rubrics"), dict) else None  # calibrated per rubric
    rows = []
    for rubric, part in sorted(sections.items()) if sections else [(None, cal)]:
        for kind in ("judges", "panels"):
            for name, st in sorted(((part if isinstance(part, dict) else {}).get(kind) or {}).items()):
                if not isinstance(st, dict):
                    continue
                rater = name if rubric is None else f"{name} ({rubric})"
                rows.append({"rater": rater, "kind": kind[:-1], "used_in_run": name in used, "n": st.get("n"), **{k: _r(_estimate(st, k)) for k in cols[4:]}})
    table = Table.from_records(rows, columns=cols)
    if sections:
        return table, {
            "note": f"calibration.json holds one section per rubric ({', '.join(sorted(sections))}): no single TPR/TNR to correct the pass rate with "
            "(calibrate with --rubric NAME for the rubric the judges decided)"
        }
    try:
        from calibration import corrected_pass_rate
    except ImportError:  # the calibration package is optional for reports
        return table, {"note": "calibration package not importable: no corrected pass rate"}
    judged = [r for r in run.graded if r.decided_by.startswith("judge:")]
    panels = cal.get("panels") or {}
    judges = cal.get("judges") or {}
    run_panels = sorted({r.decided_by.split(":", 1)[1] for r in judged})
    chosen = next((p for p in run_panels if p in panels), None)
    source = panels.get(chosen) if chosen else None
    if source is None and len(judges) == 1:
        chosen, source = next(iter(judges.items()))
    if source is None and panels:
        chosen = sorted(panels)[0]
        source = panels[chosen]
    if source is None:
        return table, {"note": "calibration.json holds no judge or panel statistics"}
    tpr, tnr = _estimate(source, "tpr"), _estimate(source, "tnr")
    n_graded = run.summary.counts.graded
    det_pass = group_metrics([r.verdict for r in run.graded if not r.decided_by.startswith("judge:")], ci=None)["pass"]
    facts: dict[str, Any] = {"rater": chosen, "tpr": _r(tpr), "tnr": _r(tnr), "judge_decided": len(judged), "source": _calibration_source(run)}
    if not judged or tpr is None or tnr is None:
        facts["note"] = "no judge-decided trajectories" if not judged else "TPR/TNR missing in calibration.json"
        facts["corrected_pass_rate"] = _r(run.summary.pass_rate) if not judged else None
        return table, facts
    by_judges = group_metrics([r.verdict for r in judged], ci=None)
    p_obs = by_judges["pass"] / by_judges["n"]
    corrected = corrected_pass_rate(p_obs, tpr, tnr)
    facts["judge_decided_pass_rate"] = _r(p_obs)
    facts["judge_decided_pass_rate_corrected"] = _r(corrected)
    facts["corrected_pass_rate"] = None if math.isnan(corrected) else _r((det_pass + corrected * len(judged)) / n_graded)
    if math.isnan(corrected):
        facts["note"] = "TPR + TNR <= 1: the judge is no better than chance, no correction possible"
    return table, facts


# ---------------------------------------------------------------------------------------------
def repeated_runs(run: RunData) -> tuple[Table, Table]:
    """pass@k / pass^k per agent over tasks it ran more than once; mean +- std over run index."""
    outcomes: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for r in run.graded:
        outcomes[(r.agent or "unknown", r.task_id or "")].append(r.verdict == "pass")
    per_agent: dict[str, list[list[bool]]] = defaultdict(list)
    for (agent, _task), outs in sorted(item for item in outcomes.items() if len(item[1]) >= 2):  # only repeats count (sorting 100k single runs took 0.4 s)
        per_agent[agent].append(outs)
    krows, srows = [], []
    if per_agent:  # numpy only for a run with repeats
        import numpy as np

        from calibration import pass_curves
    for agent in sorted(per_agent, key=natural):
        tasks = per_agent[agent]
        kmax = min(len(o) for o in tasks)
        curves = [pass_curves(len(o), sum(o), kmax) for o in tasks]  # O(runs) per task: near-linear in the rows
        pk = np.array([at for at, _ in curves])
        hk = np.array([hat for _, hat in curves])
        for k in range(1, kmax + 1):
            krows.append({"agent": agent, "k": k, "tasks": len(tasks), "pass_at_k": _r(np.mean(pk[:, k - 1])), "pass_hat_k": _r(np.mean(hk[:, k - 1]))})
        by_index = [np.mean([o[i] for o in tasks]) for i in range(kmax)]
        srows.append(
            {
                "agent": agent,
                "tasks": len(tasks),
                "runs": kmax,
                "mean_pass_rate": _r(np.mean(by_index)),
                "std_over_runs": _r(np.std(by_index, ddof=1) if kmax > 1 else 0.0),
            }
        )
    return (
        Table.from_records(krows, columns=["agent", "k", "tasks", "pass_at_k", "pass_hat_k"]),
        Table.from_records(srows, columns=["agent", "tasks", "runs", "mean_pass_rate", "std_over_runs"]),
    )


SHOWN_K = 10  # the report shows pass@k for every k up to this, then powers of two and the largest k


def pass_at_k_shown(passk: Table) -> tuple[Table, str | None]:
    """The rows of the pass@k table a report shows: every k <= ``SHOWN_K``, then powers of two
    and each agent's largest k (50,000 runs of one task made a 50,000-row table and chart; the
    CSV keeps every k). The note says what was left out, None when nothing was."""
    if passk.empty:
        return passk, None
    largest: dict[Any, int] = {}
    for agent, k in zip(passk["agent"], passk["k"], strict=True):
        largest[agent] = max(k, largest.get(agent, k))
    shown = passk.where(lambda r: r["k"] <= SHOWN_K or (r["k"] & (r["k"] - 1)) == 0 or r["k"] == largest[r["agent"]])
    if len(shown) == len(passk):
        return passk, None
    return shown, f"k shown: 1 to {SHOWN_K}, powers of two and the largest; every k in tables/pass_at_k.csv"


TRAJECTORY_TEXT = ("task_id", "trajectory_id", "agent", "capability", "domain", "hop_pattern", "policy_condition",
                   "verdict", "failure_stage", "decided_by", "unresolved_stages")  # fmt: skip


def trajectories(run: RunData, start: int = 0, stop: int | None = None) -> Table:
    """One flat row per results.jsonl line (errors included), in file order; ``start``/``stop``
    select a chunk so that a 100k run is written without ever holding the whole table."""
    rows = run.rows[start:stop]
    columns: dict[str, list[Any]] = {f: [getattr(r, f) for r in rows] for f in TRAJECTORY_TEXT if f != "unresolved_stages"}
    columns["hop_count"] = [r.hop_count for r in rows]
    columns["unresolved_stages"] = [",".join(r.unresolved_stages) for r in rows]
    columns["judge_calls"] = [r.judge_calls for r in rows]
    columns["judge_cost_usd"] = [r.judge_cost_usd for r in rows]
    for i, name in enumerate(SCORE_NAMES):
        columns["score_" + name] = [r.score_values[i] for r in rows]
    for i, name in enumerate(ORCHESTRATION_COLUMNS):
        columns[name] = [None if r.orchestration is None else r.orchestration[i] for r in rows]
    order = ["task_id", "trajectory_id", "agent", "capability", "domain", "hop_count", "hop_pattern", "policy_condition", "verdict",
             "failure_stage", "decided_by", "unresolved_stages", "judge_calls", "judge_cost_usd", *("score_" + n for n in SCORE_NAMES),
             *ORCHESTRATION_COLUMNS]  # fmt: skip
    kinds = {"hop_count": "Int64", **{"score_" + name: "float" for name in SCORE_NAMES}, "looping": "boolean"}
    kinds.update(dict.fromkeys(("failed_calls", "recovered_calls", "rounds_used", "rounds_minimum", "loop_repeats"), "Int64"))
    kinds.update(dict.fromkeys(("recovery_rate", "parallel_efficiency"), "float"))
    return Table.from_columns({k: columns[k] for k in order}, kinds)


# ---------------------------------------------------------------------------------------------
def ci_overlap(a: Any, b: Any) -> bool | None:
    if not a or not b:
        return None
    return bool(a[0] <= b[1] and b[0] <= a[1])


def comparison(runs: list[RunData]) -> Table:
    """Runs side by side; deltas against the first run and whether the 95% CIs overlap."""
    base = runs[0].summary
    rows = []
    for pos, run in enumerate(runs):
        s = run.summary
        first = pos == 0  # the baseline: no delta against itself
        ci = s.pass_rate_ci95 or (None, None)
        row: dict[str, Any] = {
            "run": run.name,
            "graded": s.counts.graded,
            "pass_rate": _r(s.pass_rate),
            "ci_low": _r(ci[0]),
            "ci_high": _r(ci[1]),
            "delta_pass_rate": _r(s.pass_rate - base.pass_rate) if not first and s.pass_rate is not None and base.pass_rate is not None else None,
            "ci_overlaps_first": None if first else ci_overlap(s.pass_rate_ci95, base.pass_rate_ci95),
            "vakra_score": _r(s.leaderboard.score),
            "crag_score": _r(s.crag_score),
            "unresolved": s.counts.unresolved,
        }
        for st in STAGES:
            row[st] = s.failure_stages.get(st, 0)
        rows.append(row)
    cols = ["run", "graded", "pass_rate", "ci_low", "ci_high", "delta_pass_rate", "ci_overlaps_first", "vakra_score", "crag_score", "unresolved", *STAGES]
    return Table.from_records(rows, columns=cols)


def comparison_by(runs: list[RunData], key: str) -> Table:
    """Pass rate per group of ``key`` for every run; deltas and CI overlap against the first run."""
    values = sorted({v for run in runs for v in run.summary.by.get(key, {})}, key=natural)
    rows = []
    for v in values:
        base = runs[0].summary.by.get(key, {}).get(v)
        for pos, run in enumerate(runs):
            g = run.summary.by.get(key, {}).get(v)
            both = g is not None and base is not None and g.pass_rate is not None and base.pass_rate is not None
            comparable = pos > 0 and both
            rows.append(
                {
                    "by": key,
                    "group": v,
                    "run": run.name,
                    "n": g.n if g else 0,
                    "pass_rate": _r(g.pass_rate) if g else None,
                    "delta_pass_rate": _r(g.pass_rate - base.pass_rate)
                    if comparable and g and base and g.pass_rate is not None and base.pass_rate is not None
                    else None,
                    "ci_overlaps_first": ci_overlap(g.pass_rate_ci95, base.pass_rate_ci95) if comparable and g and base else None,
                }
            )
    return Table.from_records(rows, columns=["by", "group", "run", "n", "pass_rate", "delta_pass_rate", "ci_overlaps_first"])
