"""The orchestration sections of the report: recovery after failed calls, rounds used vs the
minimum, loops, difficulty tiers and failure modes.

Every number comes from ``summary.json`` (its ``orchestration`` section and ``by.tier``), never
recomputed, so the report cannot disagree with the summary. A summary written before these
metrics existed gives empty tables and a note, not an error.
"""

from __future__ import annotations

from html import escape
from typing import Any

from judge import DIFFICULTY_TIERS, FAILURE_STAGE_ORDER, RECOVERY_OUTCOMES
from reports import _svg
from reports._format import PERCENT_COLUMNS, md_table, pct
from reports._frame import Table
from reports._run import RunData

STAGES = tuple(s.value for s in FAILURE_STAGE_ORDER if s.value != "none")
PERCENT = PERCENT_COLUMNS | {"recovery_rate", "parallel_efficiency_mean", "serialised_share", "looping_share"}
OUTCOME_COLORS = {
    "retried_fixed": "#3a9d5d",
    "switched_tool": "#1b7837",
    "recovered_later": "#91cf60",
    "repeated_unchanged": "#fc8d59",
    "retried_unrecorded": "#fee08b",
    "gave_up": "#d7301f",
    "cut_off": "#969696",
}
MAX_TOOL_ROWS = 30
TOP_AGENTS, TOP_TOOLS = 8, 5  # per failure mode in the tables (the summary keeps all)
NO_DATA = "no orchestration figures in this run's summary.json (graded before they existed): regrade to see them"


def _r(x: Any) -> Any:
    return None if x is None else round(float(x), 6)


def _outcomes(group: dict[str, Any]) -> dict[str, int]:
    """Every outcome's count, 0 for one a summary written before it existed does not list."""
    return {o: int(group["outcomes"].get(o, 0)) for o in RECOVERY_OUTCOMES}


def section(run: RunData) -> dict[str, Any] | None:
    orch = run.summary.orchestration
    return orch if isinstance(orch, dict) else None


# ---- tables -----------------------------------------------------------------------------------
def recovery_table(run: RunData, key: str) -> Table:
    """Failed calls, recovered calls, rate and outcome counts per agent / tool / fault kind."""
    cols = [key, "failed_calls", "recovered_calls", "recovery_rate", *RECOVERY_OUTCOMES]
    orch = section(run)
    groups = (orch or {}).get("recovery", {}).get(f"by_{key}", {})
    rows = [
        {key: name, "failed_calls": g["failed_calls"], "recovered_calls": g["recovered_calls"], "recovery_rate": _r(g["recovery_rate"]), **_outcomes(g)}
        for name, g in groups.items()
        if key == "agent" or g["failed_calls"]
    ]
    df = Table.from_records(rows, columns=cols)
    if key != "agent" and not df.empty:  # the most failing first
        df = df.sort(["failed_calls", key], ascending=[False, True])
    return df


def recovery_axis(run: RunData) -> dict[str, float | None]:
    """Per agent (and 'all'): the pooled recovery rate; 1 when the agent had no failed call
    (nothing to recover, as ``tool_order`` is 1 without dependency edges)."""
    orch = section(run)
    if orch is None:
        return {}
    rec = orch.get("recovery", {})
    out: dict[str, float | None] = {name: (1.0 if not g["failed_calls"] else _r(g["recovery_rate"])) for name, g in rec.get("by_agent", {}).items()}
    out["all"] = 1.0 if not rec.get("failed_calls") else _r(rec.get("recovery_rate"))
    return out


def rounds_table(run: RunData) -> Table:
    cols = [
        "agent",
        "trajectories_with_rounds",
        "rounds_used_mean",
        "rounds_minimum_mean",
        "parallel_efficiency_mean",
        "independent_pairs",
        "serialised_pairs",
        "serialised_share",
    ]
    orch = section(run)
    if orch is None:
        return Table.from_records([], columns=cols)
    rounds = orch.get("rounds", {})
    rows = [{"agent": name, **{c: g.get(c) for c in cols[1:]}} for name, g in rounds.get("by_agent", {}).items()]
    rows.append({"agent": "all", **{c: rounds.get(c) for c in cols[1:]}})
    return Table.from_records(rows, columns=cols)


def loops_table(run: RunData) -> Table:
    cols = ["agent", "trajectories", "loop_repeats", "looping_trajectories", "looping_share"]
    orch = section(run)
    if orch is None:
        return Table.from_records([], columns=cols)
    loops = orch.get("loops", {})
    rows = [{"agent": name, **{c: g.get(c) for c in cols[1:]}} for name, g in loops.get("by_agent", {}).items()]
    rows.append({"agent": "all", **{c: loops.get(c) for c in cols[1:]}})
    return Table.from_records(rows, columns=cols)


def tiers_table(run: RunData) -> Table:
    """Pass rate (cluster-bootstrap CI) and earliest failing stages per difficulty tier."""
    cols = ["tier", "n", "pass", "pass_rate", "ci_low", "ci_high", *STAGES, "unresolved"]
    groups = run.summary.by.get("tier", {})
    rows = []
    for tier in [*DIFFICULTY_TIERS, *sorted(set(groups) - set(DIFFICULTY_TIERS))]:
        g = groups.get(tier)
        if g is None:
            continue
        ci = g.pass_rate_ci95 or (None, None)
        rows.append(
            {
                "tier": tier,
                "n": g.n,
                "pass": g.passed,
                "pass_rate": _r(g.pass_rate),
                "ci_low": _r(ci[0]),
                "ci_high": _r(ci[1]),
                **{st: g.failure_stages.get(st, 0) for st in STAGES},
                "unresolved": g.unresolved,
            }
        )
    return Table.from_records(rows, columns=cols)


def failure_modes_table(run: RunData) -> Table:
    cols = ["cluster", "label", "size", "share", "stage", "agents", "tools", "examples"]
    orch = section(run)
    modes = (orch or {}).get("failure_modes", {})
    rows = [
        {
            "cluster": c["id"],
            "label": c["label"],
            "size": c["size"],
            "share": _r(c["share"]),
            "stage": c["stage"],
            "agents": _top_items(c["agents"], TOP_AGENTS),
            "tools": _top_items(c["tools"], TOP_TOOLS),
            "examples": ", ".join(str(e["trajectory_id"]) for e in c["examples"]),
        }
        for c in modes.get("clusters", [])
    ]
    return Table.from_records(rows, columns=cols)


def _top_items(counts: dict[str, int], top: int) -> str:
    """'a (5), b (3), ... and 4 more' from a count map already sorted by count."""
    items = list(counts.items())
    text = ", ".join(f"{k} ({n})" for k, n in items[:top])
    return text + (f" and {len(items) - top} more" if len(items) > top else "")


def tables(run: RunData) -> dict[str, Table]:
    """Written to ``tables/`` as CSV + Parquet with the others."""
    return {
        "recovery_by_agent": recovery_table(run, "agent"),
        "recovery_by_tool": recovery_table(run, "tool"),
        "recovery_by_fault": recovery_table(run, "fault"),
        "rounds_by_agent": rounds_table(run),
        "loops_by_agent": loops_table(run),
        "tiers": tiers_table(run),
        "failure_modes": failure_modes_table(run),
    }


# ---- Markdown ---------------------------------------------------------------------------------
def _md(df: Table, empty: str) -> list[str]:
    return md_table(df, percent=PERCENT) if not df.empty else [f"_{empty}_"]


def render_markdown(run: RunData, t: dict[str, Table], level: str) -> list[str]:
    orch = section(run)
    lines = ["", f"{level} Orchestration: recovery, rounds, loops, tiers", ""]
    if orch is None:
        return lines + [f"_{NO_DATA}_"]
    rec = orch["recovery"]
    rounds = orch["rounds"]
    loops = orch["loops"]
    lines.append(
        f"- Failed calls (tool errors, policy blocks, injected faults): {rec['failed_calls']}, recovered {rec['recovered_calls']} "
        f"(recovery rate {pct(rec['recovery_rate'])}); outcomes: " + ", ".join(f"{o} {n}" for o, n in _outcomes(rec).items())
    )
    if rounds["trajectories_with_rounds"]:
        lines.append(
            f"- Rounds (model messages that issued calls; {rounds['trajectories_with_rounds']} trajectories record them): mean {rounds['rounds_used_mean']:.2f} used "
            f"vs {rounds['rounds_minimum_mean']:.2f} minimum; parallel efficiency {pct(rounds['parallel_efficiency_mean'])}; "
            f"{rounds['serialised_pairs']} of {rounds['independent_pairs']} same-depth independent call pairs issued in separate rounds"
        )
    else:
        lines.append("- Rounds: no step records its round (chat formats do; native steps may carry `round`), so rounds are not reported")
    lines.append(
        f"- Loops: {loops['loop_repeats']} repeated identical calls with identical results; {loops['looping_trajectories']} looping trajectories ({pct(loops['looping_share'])})"
    )
    lines += ["", f"{level}# Recovery after failed calls, by agent", ""] + _md(t["recovery_by_agent"], "no agent")
    lines += ["", f"{level}# Recovery by fault kind", ""] + _md(t["recovery_by_fault"], "no failed call")
    tools = t["recovery_by_tool"]
    lines += ["", f"{level}# Recovery by failed tool", ""] + _md(tools.head(MAX_TOOL_ROWS), "no failed call")
    if len(tools) > MAX_TOOL_ROWS:
        lines.append(f"\n_{len(tools) - MAX_TOOL_ROWS} more tools in tables/recovery_by_tool.csv_")
    lines += ["", f"{level}# Rounds used vs minimum (parallel vs serial), by agent", ""] + _md(t["rounds_by_agent"], "no rounds recorded")
    lines += ["", f"{level}# Loops, by agent", ""] + _md(t["loops_by_agent"], "no agent")
    lines += ["", f"{level}# Difficulty tiers", ""] + _md(t["tiers"], "no tiers")
    modes = orch.get("failure_modes", {})
    lines += ["", f"{level} Failure modes (clusters of failing and unresolved trajectories)", ""]
    if not modes.get("clusters"):
        return lines + ["_no failing or unresolved trajectory_"]
    sil = modes.get("silhouette")
    lines.append(
        f"{modes['clustered']} trajectories in {modes['k']} clusters" + (f" (silhouette {sil:.3f})" if sil is not None else "") + f"; {modes['method']}."
    )
    lines += [""] + md_table(t["failure_modes"], percent=PERCENT)
    return lines


# ---- HTML -------------------------------------------------------------------------------------
def _recovery_chart(df: Table, key: str, title: str) -> str:
    part = df.where(lambda r: r["failed_calls"] > 0)
    if part.empty:
        return ""
    rows: list[tuple[str, list[tuple[str, int, str]]]] = [
        (str(r[key]), [(str(o), int(r[o]), OUTCOME_COLORS[o]) for o in RECOVERY_OUTCOMES]) for r in part.records()
    ]
    return _svg.stacked_bars(title, rows)


def _rounds_chart(df: Table) -> str:
    part = df.where(lambda r: r["agent"] != "all" and r["trajectories_with_rounds"] > 0)
    if part.empty:
        return ""
    cats = [str(a) for a in part["agent"]]
    series = [
        ("rounds used (mean)", [float(v) for v in part["rounds_used_mean"]]),
        ("minimum (critical path, mean)", [float(v) for v in part["rounds_minimum_mean"]]),
    ]
    return _svg.value_bars("Rounds used vs minimum per agent", cats, series, y_label="rounds per trajectory")


def _tiers_chart(df: Table) -> str:
    if df.empty:
        return ""
    rows = []
    for r in df.records():
        segs = [("pass", int(r["pass"]), _svg.PASS_COLOR)] + [(st, int(r[st]), _svg.STAGE_COLORS[st]) for st in STAGES]
        segs.append(("unresolved", int(r["unresolved"]), _svg.UNRESOLVED_COLOR))
        rows.append((str(r["tier"]), segs))
    return _svg.stacked_bars("Outcomes by difficulty tier", rows)


def _modes_list(run: RunData, modes: dict[str, Any], anchors: dict[str, str]) -> str:
    out = ['<ol class="modes">']
    for c in modes.get("clusters", []):
        examples = []
        for e in c["examples"]:
            tid = str(e["trajectory_id"])
            target = anchors.get(tid)
            examples.append(f'<a href="#{escape(target)}">{escape(tid)}</a>' if target else escape(tid) + " (not in the drill-down)")
        agents = escape(_top_items(c["agents"], TOP_AGENTS))
        stages = ", ".join(f"{escape(s)} {n}" for s, n in c["stages"].items())
        tools = escape(_top_items(c["tools"], TOP_TOOLS)) or "none named"
        out.append(
            f'<li><b>{escape(c["label"])}</b> <span class="note">cluster {c["id"]}: {c["size"]} trajectories ({pct(c["share"])})</span>'
            f'<div class="note">stages: {stages} · tools: {tools} · evidence: {escape(", ".join(c["evidence_kinds"]) or "none")}</div>'
            f'<div class="note">agents: {agents}</div><div class="note">examples: {", ".join(examples)}</div></li>'
        )
    out.append("</ol>")
    return "".join(out)


def render_html(run: RunData, t: dict[str, Table], anchor: str, table: Any, drill_anchors: dict[str, str]) -> list[str]:
    """Two sections: orchestration (recovery, rounds, loops, tiers) and failure modes.
    ``table`` renders a DataFrame (reports._html._table); ``drill_anchors`` maps trajectory ids
    to their drill-down element ids."""
    orch = section(run)
    parts = [f'<section id="{anchor}-orchestration"><h2>Orchestration: recovery, rounds, loops, difficulty tiers</h2>']
    if orch is None:
        return parts + [f'<p class="note">{escape(NO_DATA)}</p></section>']
    rec = orch["recovery"]
    parts.append(
        f"<p>Failed calls (tool errors, policy blocks, injected faults): <b>{rec['failed_calls']}</b>, recovered <b>{rec['recovered_calls']}</b> "
        f"(recovery rate {pct(rec['recovery_rate'])}). A failed call is recovered when a later call of the same turn reached what it was for.</p>"
    )
    parts.append("<h3>Recovery after failed calls</h3>")
    parts.append(_recovery_chart(t["recovery_by_agent"], "agent", "What agents did after a failed call"))
    parts.append(table(t["recovery_by_agent"], percent=PERCENT))
    parts.append(_recovery_chart(t["recovery_by_fault"], "fault", "Recovery by fault kind"))
    parts.append(table(t["recovery_by_fault"], percent=PERCENT) + "<h4>By failed tool</h4>" + table(t["recovery_by_tool"], percent=PERCENT))
    rounds = orch["rounds"]
    parts.append(
        '<h3>Rounds used vs minimum (parallel vs serial)</h3><p class="note">A round is one model message that issued calls; the minimum is the critical-path depth of the reference dependency DAG; parallel efficiency = minimum / used, at most 1.</p>'
    )
    if rounds["trajectories_with_rounds"]:
        parts.append(_rounds_chart(t["rounds_by_agent"]))
    else:
        parts.append('<p class="note">no step records its round (chat formats do; native steps may carry <code>round</code>)</p>')
    parts.append(table(t["rounds_by_agent"], percent=PERCENT))
    parts.append(
        '<h3>Loops</h3><p class="note">A loop repeat is an identical call made after the same call got the same result in the turn; looping = one call made three times or more with one outcome.</p>'
    )
    parts.append(table(t["loops_by_agent"], percent=PERCENT))
    parts.append(
        '<h3>Difficulty tiers</h3><p class="note">recovery: a call failed during the run; branching: the reference DAG has independent calls; linear: chains.</p>'
    )
    parts.append(_tiers_chart(t["tiers"]) + table(t["tiers"], percent=PERCENT) + "</section>")

    modes = orch.get("failure_modes", {})
    parts.append(f'<section id="{anchor}-modes"><h2>Failure modes</h2>')
    if not modes.get("clusters"):
        parts.append('<p class="note">no failing or unresolved trajectory</p></section>')
        return parts
    sil = modes.get("silhouette")
    parts.append(
        f'<p class="note">{modes["clustered"]} failing or unresolved trajectories in {modes["k"]} clusters'
        + (f" (silhouette {sil:.3f})" if sil is not None else "")
        + f"; {escape(modes['method'])}. Examples are the trajectories nearest each cluster's centre; click one for its drill-down.</p>"
    )
    bars = [(f"{c['id']}. {c['stage']}"[:34], float(c["share"]), str(c["size"])) for c in modes["clusters"]]
    parts.append(_svg.hbars("Share of failing and unresolved trajectories per failure mode", bars))
    parts.append(_modes_list(run, modes, drill_anchors) + "</section>")
    return parts
