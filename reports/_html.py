"""``report.html``: one self-contained file. Inline CSS, inline SVG charts, ~1 KB of inline JS for
the drill-down filters; a Content-Security-Policy meta tag forbids every network fetch, so a
stray external reference fails loudly (a console error) instead of phoning home.

Deterministic: the same runs give the same bytes except the single line holding
``class="generated"`` (the timestamp; ``SOURCE_DATE_EPOCH`` pins it).
"""

from __future__ import annotations

from collections.abc import Iterator
from html import escape
from typing import Any

from judge import Check, DecisiveStep, TrajectoryResult, missing
from reports import _orchestration as O
from reports import _svg
from reports._analysis import RunReport
from reports._format import calibration_sentence, cell, num, pct, pct_ci, pivot_comparison, rows, trust_sentence
from reports._frame import Table
from reports._shown import ShownTrajectory, ShownTurn, shown_text
from reports._tables import RADAR_AXES, STAGES, natural, pass_at_k_shown

CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"
COLLAPSE_ROWS = 25
MIN_TOOL_SUPPORT = 5  # a rate over fewer required steps is noise in a ranking chart (still in the table)

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#222;background:#fafafa}
header{background:#263238;color:#fff;padding:14px 24px}header h1{margin:0;font-size:22px}
header .generated{margin:4px 0 0;font-size:12px;color:#b0bec5}
nav{padding:6px 24px;background:#eceff1;font-size:13px}nav a{margin-right:14px;color:#1565c0}
main{padding:8px 24px 40px;max-width:1200px}
section{background:#fff;border:1px solid #e0e0e0;border-radius:6px;padding:10px 18px;margin:14px 0}
h2{font-size:18px;margin:8px 0}h3{font-size:15px;margin:14px 0 6px}
table{border-collapse:collapse;font-size:12px;margin:6px 0}th,td{border:1px solid #e0e0e0;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f5f5f5}td.n{text-align:right;font-variant-numeric:tabular-nums}
.cards{display:flex;flex-wrap:wrap;gap:10px}.card{border:1px solid #e0e0e0;border-radius:6px;padding:8px 14px;min-width:150px;background:#fcfcfc}
.card .v{font-size:22px;font-weight:600}.card .l{font-size:12px;color:#555}
.badge{display:inline-block;padding:0 6px;border-radius:3px;color:#fff;font-size:11px;margin-right:6px}
.pass{background:#3a9d5d}.fail{background:#d7301f}.unresolved{background:#9e9e9e}.error{background:#555}
details.traj{border-bottom:1px solid #eee;padding:3px 0}details.traj>summary{cursor:pointer;font-size:13px}
details.traj .body{padding:4px 12px 10px}tr.decisive td,p.decisive{background:#ffebee;outline:2px solid #d7301f}tr.msg td{background:#f5f5f5;font-size:11px;color:#555}pre{white-space:pre-wrap;word-break:break-word;margin:0;font-size:11px}
.filters{margin:6px 0;font-size:13px}.filters select{margin-right:10px}.note{font-size:12px;color:#555}
ol.modes li{font-size:13px;margin:0 0 8px}.tw{overflow-x:auto;max-width:100%}.grid{display:flex;flex-wrap:wrap;gap:8px 24px;align-items:flex-start}p{font-size:14px}h4{font-size:14px;margin:10px 0 4px}
"""

# Filters trajectories by every <select> in their .drill container; fills the shown counter;
# opens the drill-down entry a link points at (failure-mode examples link there).
JS = """
document.querySelectorAll('.drill').forEach(function(d){
var sel=d.querySelectorAll('select');
function apply(){var n=0;d.querySelectorAll('details.traj').forEach(function(t){var ok=true;
sel.forEach(function(s){if(s.value&&t.getAttribute('data-'+s.name)!==s.value)ok=false});t.hidden=!ok;if(ok)n++});
d.querySelector('.shown').textContent=String(n)}
sel.forEach(function(s){s.addEventListener('change',apply)});apply();d.setAttribute('data-ready','1')});
function openHash(){var t=location.hash?document.getElementById(location.hash.slice(1)):null;
if(t&&t.tagName==='DETAILS'){t.hidden=false;t.open=true;t.scrollIntoView()}}
window.addEventListener('hashchange',openHash);openHash();
"""


def _table(df: Table, columns: list[str] | None = None, cls: str = "", percent: set[str] | None = None) -> str:
    if df.empty:
        return '<p class="note">none</p>'
    cols, body = rows(df, columns, percent)
    numeric = [df.is_numeric(c) for c in cols]
    out = [f'<div class="tw"><table class="{cls}"><thead><tr>' + "".join(f"<th>{escape(c)}</th>" for c in cols) + "</tr></thead><tbody>"]
    for r in body:
        out.append("<tr>" + "".join(f'<td class="n">{escape(x)}</td>' if n else f"<td>{escape(x)}</td>" for x, n in zip(r, numeric)) + "</tr>")
    out.append("</tbody></table></div>")
    if len(body) > COLLAPSE_ROWS:  # long tables start folded; still in the DOM (tests, find-in-page)
        return f'<details class="table"><summary>table: {len(body)} rows</summary>' + "".join(out) + "</details>"
    return "".join(out)


def _segments(row: dict[str, Any]) -> list[tuple[str, int, str]]:
    segs = [("pass", int(row["pass"]), _svg.PASS_COLOR)]
    segs += [(st, int(row[st]), _svg.STAGE_COLORS[st]) for st in STAGES]
    segs.append(("unresolved", int(row["unresolved"]), _svg.UNRESOLVED_COLOR))
    return segs


def _waterfall_chart(wf: Table, by: str, title: str) -> str:
    part = wf.where(lambda r: r["by"] == by)
    if part.empty:
        return ""
    label = (lambda g: "all") if by == "overall" else (lambda g: f"{by} {g}" if by == "capability" else str(g))
    return _svg.stacked_bars(title, [(label(r["group"]), _segments(r)) for r in part.records()])


def _hops_chart(hops: Table, dim: str) -> str:
    part = hops.where(lambda r: r["dimension"] == dim)
    if part.empty:
        return ""
    cats = sorted(set(part["value"]), key=natural)
    series = []
    for pol in ["all"] + sorted(set(part["policy_condition"]) - {"all"}):
        sub = {r["value"]: r for r in part.records() if r["policy_condition"] == pol}
        vals = []
        for c in cats:
            if c in sub:
                r = sub[c]
                vals.append((r["pass_rate"], None if missing(r["ci_low"]) else r["ci_low"], None if missing(r["ci_high"]) else r["ci_high"]))
            else:
                vals.append((None, None, None))
        series.append((pol, vals))
    return _svg.grouped_bars(f"Pass rate by {dim.replace('_', ' ')}", cats, series, width=max(360, min(760, 90 * len(cats) * max(1, len(series)) // 2)))


def _headline_cards(rep: RunReport) -> str:
    s = rep.run.summary
    c = s.counts
    cards = [
        ("pass rate (95% CI)", f"{pct(s.pass_rate)}", pct_ci(s.pass_rate_ci95)),
        ("VAKRA leaderboard score", pct(s.leaderboard.score), "mean of capability scores"),
        ("CRAG score", num(s.crag_score), "correct 1 / missing 0 / incorrect -1"),
        ("graded", str(c.graded), f"{c.passed} pass, {c.fail} fail, {c.unresolved} unresolved, {c.errors} errors"),
    ]
    if c.policy_not_audited:
        cards.append(("policy not audited", str(c.policy_not_audited), "domain policy document kept as judge context (--policy-text gate audits it)"))
    facts = rep.control_facts
    if facts.get("unmeasured"):
        cards.append(("verdicts on an unmeasured judge", str(facts["unmeasured"]), "no control items, no calibration.json"))
    elif facts.get("gated"):
        cards.append(("judges set aside", str(len(facts["gated"])), trust_sentence(facts)))
    cf = rep.calibration_facts
    if cf and cf.get("corrected_pass_rate") is not None:
        cards.append(("pass rate corrected for judge error", pct(cf["corrected_pass_rate"]), f"Rogan-Gladen, {cf['rater']}"))
    out = ['<div class="cards">']
    for label, value, sub in cards:
        out.append(f'<div class="card"><div class="v">{escape(value)}</div><div class="l">{escape(label)}</div><div class="l">{escape(sub)}</div></div>')
    out.append("</div>")
    return "".join(out)


_short = shown_text


def _stage_key(r: TrajectoryResult) -> str:
    """Filter value: the failure stage of a fail, else the verdict (pass, unresolved, error)."""
    return r.failure_stage.value if r.failure_stage is not None and r.failure_stage.value != "none" else r.verdict.value


def _drill_anchors(rep: RunReport, anchor: str) -> dict[str, str]:
    """Trajectory id -> the element id of its drill-down entry (ids are unique among graded rows)."""
    out: dict[str, str] = {}
    for i in rep.run.drill:
        tid = rep.run.full[i].trajectory_id
        if tid is not None:
            out.setdefault(tid, f"{anchor}-t{i}")
    return out


def _orchestration_line(r: TrajectoryResult) -> str:
    o = r.orchestration
    if o is None:
        return ""
    parts = [f"tier {o.tier}"]
    if o.failed_calls:
        outcomes = "; ".join(
            f"step {e.step} {e.tool} ({e.failure}): {e.outcome}" + (f" by step {e.by_step}" if e.by_step is not None else "") for e in o.recovery
        )
        parts.append(f"{o.recovered_calls}/{o.failed_calls} failed calls recovered ({outcomes})")
    if o.rounds_used is not None:
        parts.append(f"rounds {o.rounds_used} used / {o.rounds_minimum} minimum")
    if o.loop_repeats:
        parts.append(f"{o.loop_repeats} loop repeats" + (" (looping)" if o.looping else ""))
    return '<p class="note">orchestration: ' + escape(" · ".join(parts)) + "</p>"


def _drill_item(r: TrajectoryResult, traj: ShownTrajectory | None, item_id: str | None = None) -> str:
    stage = r.failure_stage.value if r.failure_stage else ""
    v = r.verdict.value
    attrs = {"verdict": v, "stage": _stage_key(r), "cap": r.capability or "unknown", "domain": r.domain or "unknown", "agent": r.agent or "unknown"}
    attrs["tier"] = r.orchestration.tier if r.orchestration is not None else "unknown"
    data = " ".join(f'data-{k}="{escape(val)}"' for k, val in attrs.items())
    if item_id is not None:
        data += f' id="{escape(item_id)}"'
    head = (
        f'<span class="badge {v}">{v}</span>{escape(r.trajectory_id or "?")} · task {escape(r.task_id or "?")} · agent {escape(r.agent or "?")}'
        f" · cap {escape(r.capability or '?')} · {escape(r.domain or '?')}"
        + (f" · <b>{escape(stage)}</b>" if stage and stage != "none" else "")
        + f" · {escape(r.decided_by)}"
    )
    body = []
    if r.error is not None:
        body.append(f"<p>input error: {escape(r.error.render() if hasattr(r.error, 'render') else str(r.error))}</p>")
    sc = {k: x for k, x in r.scores.model_dump().items() if x is not None}
    if sc:
        body.append(
            '<p class="note">scores: '
            + escape(", ".join(f"{k} {x:.3f}" for k, x in sc.items()))
            + f" · judge calls {r.judge_calls}, ${r.judge_cost_usd:.4f}</p>"
        )
    body.append(_orchestration_line(r))
    decisive = r.decisive_step
    if decisive is not None:
        body.append(f'<p class="note"><b>decisive step:</b> {escape(_decisive_text(decisive))}</p>')
    # a dialogue graded as one episode (one result turn, several messages) shows all its messages
    episode = traj is not None and len(r.turns) == 1 and len(traj.turns) > 1
    for t_no, turn in enumerate(r.turns):
        body.append(
            f"<h4>turn {escape(turn.turn_id)}: {escape(turn.verdict.value)}"
            + (f" at {escape(turn.failure_stage.value)}" if turn.failure_stage and turn.failure_stage.value != "none" else "")
            + "</h4>"
        )
        shown = (traj.turns if episode else traj.turns[t_no : t_no + 1]) if traj is not None else []
        mark = decisive if decisive is not None and decisive.turn_id == turn.turn_id else None
        if shown:
            body.append(_steps_table(shown, episode, mark))
            answer = next((t.final_answer for t in reversed(shown) if t.final_answer is not None), None)
            cls = ' class="decisive"' if mark is not None and mark.at == "answer" else ""
            body.append(f"<p{cls}><b>final answer:</b> {escape(_short(None) if answer is None else answer)}</p>")
        body.append("<table><thead><tr><th>check</th><th>outcome</th><th>stage</th><th>decided by</th><th>reason</th><th>evidence</th></tr></thead><tbody>")
        for ch in turn.checks:
            ev = "<br>".join(
                escape(
                    f"{e.kind}: {e.message}"
                    + (f" [ref {e.reference}]" if e.reference is not None else "")
                    + (f" [step {e.step}]" if e.step is not None else "")
                    + (f" expected={_short(e.expected)}" if e.expected is not None and e.kind != "answer" else "")
                    + (f" expected={_short(e.expected)} actual={_short(e.actual)}" if e.kind == "answer" else "")
                )
                for e in ch.evidence
            )
            body.append(
                f"<tr><td>{escape(ch.check.value)}</td><td>{escape(ch.outcome.value)}</td><td>{escape(ch.failure_stage.value if ch.failure_stage else '')}</td>"
                f"<td>{escape(ch.decided_by)}</td><td>{escape(_short(ch.reason))}</td><td>{ev}</td></tr>"
            )
        body.append("</tbody></table>")
        for ch in turn.checks:
            d = ch.decision
            if d is None:
                continue
            body.append(
                f'<p class="note">panel {escape(d.panel)} ({escape(d.rule)}) on {escape(ch.check.value)}: <b>{escape(str(d.label))}</b> → {escape(d.outcome.value)}'
                f"; agreement {pct(d.agreement)}; rubric {escape(str(d.rubric))} {escape(str(d.rubric_version or ''))}</p>"
            )
            body.append(
                "<table><thead><tr><th>judge</th><th>label</th><th>score</th><th>abstained</th><th>confidence</th><th>cached</th><th>rationale</th></tr></thead><tbody>"
            )
            for vote in d.votes:
                body.append(
                    f"<tr><td>{escape(vote.judge)}</td><td>{escape(str(vote.label))}</td><td>{escape(cell('score', vote.score))}</td>"
                    f"<td>{escape(vote.abstain_reason or 'abstained') if vote.abstained else 'no'}</td><td>{escape(cell('confidence', vote.confidence))}</td>"
                    f"<td>{'yes' if vote.cached else 'no'}</td><td>{escape(_short(vote.rationale))}</td></tr>"
                )
            body.append("</tbody></table>")
    return f'<details class="traj" {data}><summary>{head}</summary><div class="body">{"".join(body)}</div></details>'


def _decisive_text(d: DecisiveStep) -> str:
    where = {
        "call": f"step {d.step} ({d.tool}" + (f", call id {d.call_id}" if d.call_id else "") + ")",
        "answer": "the final answer",
        "end": "the end of the turn",
    }[d.at]
    return f"turn {d.turn_id}, {where}: {d.check.value} check, {d.decided_by}"


def _steps_table(turns: list[ShownTurn], episode: bool, mark: DecisiveStep | None) -> str:
    """The turns' queries and steps; steps numbered as graded (an episode's run on across its
    messages); the decisive step's row highlighted; in an episode each user message is a row."""
    rows: list[str] = []
    index = 0
    for tt in turns:
        if tt.query and episode:
            rows.append(f'<tr class="msg"><td colspan="5">user: {escape(tt.query)}</td></tr>')
        for st in tt.steps:
            cls = ' class="decisive"' if mark is not None and mark.at == "call" and mark.step == index else ""
            rows.append(
                f'<tr{cls}><td class="n">{index}</td><td>{escape(st.name)}</td><td><pre>{escape(st.arguments)}</pre></td><td>{escape(st.status)}</td><td><pre>{escape(st.output)}</pre></td></tr>'
            )
            index += 1
    head = "" if episode or not turns[0].query else f"<p><b>query:</b> {escape(turns[0].query)}</p>"
    if mark is not None and mark.at == "end":
        what = "the run stopped here, before the agent finished" if mark.check == Check.ANSWER else "the turn ended here without a call it needed"
        rows.append(f'<tr class="decisive"><td class="n">{index}</td><td colspan="4">{what}</td></tr>')
    if not rows:
        return head
    return (
        head
        + "<table><thead><tr><th>#</th><th>tool</th><th>arguments</th><th>status</th><th>output</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
    )


def _drilldown_chunks(rep: RunReport, anchor: str = "") -> Iterator[str]:
    run = rep.run
    picked = [run.full[i] for i in run.drill]
    options = {
        "stage": sorted({_stage_key(r) for r in picked}, key=lambda s: (STAGES.index(s) if s in STAGES else len(STAGES), s)),
        "cap": sorted({r.capability or "unknown" for r in picked}, key=natural),
        "domain": sorted({r.domain or "unknown" for r in picked}, key=natural),
        "agent": sorted({r.agent or "unknown" for r in picked}, key=natural),
        "verdict": sorted({r.verdict.value for r in picked}),
        "tier": sorted({r.orchestration.tier if r.orchestration is not None else "unknown" for r in picked}),
    }
    labels = {"stage": "failure stage", "cap": "capability", "domain": "domain", "agent": "agent", "verdict": "verdict", "tier": "difficulty tier"}
    sel = []
    for name, values in options.items():
        opts = '<option value="">all</option>' + "".join(f'<option value="{escape(v)}">{escape(v)}</option>' for v in values)
        sel.append(f'<label>{labels[name]} <select name="{name}">{opts}</select></label>')
    prefix = anchor or "run"
    head = (
        f'<div class="drill"><p class="note">Shown here: {escape(run.drill_note)}. Click a row for steps, arguments, tool outputs, matching evidence and votes.</p>'
        f'<div class="filters">{"".join(sel)} <span class="shown"></span> shown</div>\n'
    )
    yield head
    for n, i in enumerate(run.drill):  # one item at a time: a long conversation's steps are held only while written
        yield ("\n" if n else "") + _drill_item(run.full[i], run.trajectories.get(i), f"{prefix}-t{i}")
    yield "\n</div>"


def _drilldown(rep: RunReport, anchor: str = "") -> str:
    return "".join(_drilldown_chunks(rep, anchor))


def render_run_chunks(rep: RunReport, anchor: str) -> Iterator[str]:
    """One run's sections, in pieces: the drill-down item by item (``render_run`` joins them)."""
    t = rep.tables
    s = rep.run.summary
    wf = t["failure_stages"]
    parts = [f'<section id="{anchor}-headline"><h2>Headline</h2>', _headline_cards(rep)]
    parts.append("<h3>Per capability</h3>" + _table(t["capabilities"]) + "</section>")

    parts.append(f'<section id="{anchor}-stages"><h2>Failure stages (earliest failure, mutually exclusive)</h2>')
    parts.append(_waterfall_chart(wf, "overall", "Outcome of every graded trajectory"))
    parts.append("<h3>By capability</h3>" + _waterfall_chart(wf, "capability", "Outcomes by capability"))
    parts.append("<h3>By domain</h3>" + _waterfall_chart(wf, "domain", "Outcomes by domain"))
    parts.append(_table(wf) + "</section>")

    hops = t["accuracy_by_hops"]
    parts.append(f'<section id="{anchor}-hops"><h2>Accuracy by hop depth and hop type, with and without policy</h2>')
    if hops.empty:
        parts.append('<p class="note">no hop metadata</p>')
    else:
        parts.append(
            '<p class="note">Bars: pass rate per policy condition ("all": every trajectory); whiskers: 95% CI. Hop type = the distinct sources of the hop pattern.</p>'
        )
        parts.append(
            '<div class="grid"><div><h3>By hop depth</h3>'
            + _hops_chart(hops, "hop_count")
            + "</div><div><h3>By hop type</h3>"
            + _hops_chart(hops, "hop_type")
            + "</div></div>"
        )
    parts.append(_table(hops) + "</section>")

    seeds = t["seed_metrics"]
    parts.append(
        f'<section id="{anchor}-metrics"><h2>Seed metrics per agent</h2><p class="note">One radar per agent (0 to 1 on every axis); dashed grey: all agents together. Recovery: the share of the agent\'s failed calls it recovered from (1 with no failed call).</p>'
    )
    values = {str(r["agent"]): [None if missing(r[m]) else float(r[m]) for m in RADAR_AXES] for r in seeds.records()}
    overall = values.pop("all", None)
    ref = ("all agents", overall) if overall is not None else None
    parts.append(
        '<div class="grid">'
        + "".join(_svg.radar(f"Seed metrics: {agent}", list(RADAR_AXES), [(agent, v)], reference=ref) for agent, v in values.items())
        + "</div>"
    )
    parts.append(_table(seeds) + "<h3>All scores (95% CI)</h3>" + _table(t["scores"], percent=set()) + "</section>")

    tools = t["tool_bottlenecks"]
    parts.append(
        f'<section id="{anchor}-tools"><h2>Per-tool bottlenecks</h2><p class="note">For each reference tool: among reference steps that required it, the share the agent left unsatisfied (incl. undecided no-counterpart cases). Chart: the 25 highest rates among tools required at least {MIN_TOOL_SUPPORT} times; the table lists every tool.</p>'
    )
    charted = tools.where(lambda r: r["required"] >= MIN_TOOL_SUPPORT).head(25)
    if not charted.empty:
        parts.append(
            _svg.hbars(
                "Conditional failure rate per reference tool",
                [
                    (str(r["tool"]), float(r["failure_rate_incl_undecided"]), f"{r['unsatisfied'] + r['no_counterpart']}/{r['required']}")
                    for r in charted.records()
                ],
            )
        )
    parts.append(_table(tools) + "</section>")

    parts += O.render_html(rep.run, t, anchor, _table, _drill_anchors(rep, anchor))
    vf = rep.vote_facts
    parts.append(f'<section id="{anchor}-decisions"><h2>How verdicts were decided</h2>')
    parts.append(_table(t["decided_by"]))
    parts.append(
        f"<p>Judge calls: <b>{vf['judge_calls']}</b> ({vf['calls_per_100_trajectories']} per 100 trajectories); cost ${vf['judge_cost_usd']:.4f} "
        f"(${vf['cost_per_100_trajectories']:.4f} per 100 trajectories). Panel decisions: {vf['panel_decisions']} ({vf['panel_inconclusive']} inconclusive); "
        f"mean panel agreement {pct(vf['mean_panel_agreement'])}.</p>"
    )
    if s.unresolved_stages:
        parts.append("<p>Unresolved stages: " + escape(", ".join(f"{k} {v}" for k, v in s.unresolved_stages.items())) + "</p>")
    parts.append("<h3>Judges</h3>" + (_table(t["judge_votes"]) if not t["judge_votes"].empty else '<p class="note">no judge votes in this run</p>'))
    if not t["judge_controls"].empty:
        cfx = rep.control_facts
        parts.append(
            f'<h3>Control items</h3><p class="note">questions whose verdict is known from the tasks, asked among the real ones (mode {escape(str(cfx["mode"]))}, '
            f"threshold {escape(str(cfx['threshold']))}, {cfx['calls']} calls)</p>" + _table(t["judge_controls"])
        )
    parts.append("<h3>Calibration (agreement with human gold)</h3>")
    if t["calibration"].empty:
        parts.append('<p class="note">no calibration.json for this run: pass rates are not corrected for judge error</p>')
    else:
        parts.append(_table(t["calibration"]))
    cf = rep.calibration_facts
    if cf:
        parts.append("<p>" + escape(calibration_sentence(cf, s.pass_rate)) + "</p>")
    parts.append("</section>")

    parts.append(f'<section id="{anchor}-repeats"><h2>Repeated runs (pass@k, pass^k)</h2>')
    if t["pass_at_k"].empty:
        parts.append('<p class="note">no agent ran any task more than once</p>')
    else:
        pk, note = pass_at_k_shown(t["pass_at_k"])
        for agent in sorted(set(pk["agent"]), key=natural):
            sub = pk.where(lambda r: r["agent"] == agent)  # noqa: B023 (used at once)
            cats = [str(k) for k in sub["k"]]
            parts.append(
                _svg.grouped_bars(
                    f"pass@k and pass^k, {agent}",
                    cats,
                    [("pass@k", [(v, None, None) for v in sub["pass_at_k"]]), ("pass^k", [(v, None, None) for v in sub["pass_hat_k"]])],
                    y_label=f"{agent}",
                )
            )
        parts.append(_table(t["repeated_runs"]) + _table(pk) + (f'<p class="note">{escape(note)}</p>' if note else ""))
    parts.append("</section>")

    if not t["external_agreement"].empty:
        parts.append(
            f'<section id="{anchor}-agreement"><h2>Agreement with the source\'s own verdicts</h2><p class="note">Ours (pass / fail / unresolved) against the verdict '
            "the trajectories' source gave them; kappa on the cases both decided (95% cluster-bootstrap CI over tasks).</p>"
            + _table(t["external_agreement"], percent={"agreement"})
            + "<h3>Disagreements (both sides' reasons)</h3>"
            + _table(t["external_disagreements"])
            + "</section>"
        )
    if s.input_warnings:
        warn = Table.from_records(
            [{"kind": k, "field": f, **w.model_dump()} for k, fields in s.input_warnings.items() for f, w in fields.items()],
            columns=["kind", "field", "count", "first", "message"],
        )
        parts.append(f'<section id="{anchor}-warnings"><h2>Input warnings (read, graded, worth a look)</h2>' + _table(warn) + "</section>")
    if s.errors:
        err = Table.from_records(
            [{k: getattr(e, k) for k in ("file", "line", "field", "kind", "message")} for e in s.errors], columns=["file", "line", "field", "kind", "message"]
        )
        parts.append(f'<section id="{anchor}-errors"><h2>Input errors (listed, not graded)</h2>' + _table(err) + "</section>")
    if rep.notes:
        parts.append(f'<section id="{anchor}-notes"><h2>Notes</h2><ul>' + "".join(f"<li>{escape(n)}</li>" for n in rep.notes) + "</ul></section>")
    yield "\n".join(p for p in parts if p) + ("\n" if any(parts) else "")
    yield f'<section id="{anchor}-drill"><h2>Trajectories (drill-down)</h2>'
    yield from _drilldown_chunks(rep, anchor)
    yield "</section>"


def render_run(rep: RunReport, anchor: str) -> str:
    return "".join(render_run_chunks(rep, anchor))


def _comparison(reports: list[RunReport], comparison: dict[str, Table]) -> str:
    comp = comparison["comparison"]
    cats = list(comp["run"])
    chart = _svg.grouped_bars("Pass rate per run (95% CI)", cats, [("pass rate", [(r["pass_rate"], r["ci_low"], r["ci_high"]) for r in comp.records()])])
    out = [
        '<section id="comparison"><h2>Comparison of runs</h2><p class="note">Deltas are against the first run; "ci_overlaps_first" says whether the 95% CIs overlap (overlap: the difference may be noise); in the group tables a * marks a delta whose CIs do not overlap.</p>',
        chart,
        _table(comp),
    ]
    wf_rows = [(rep.run.name, _segments(rep.tables["failure_stages"].first())) for rep in reports]
    out.append(_svg.stacked_bars("Outcomes per run", wf_rows))
    for key, df in comparison.items():
        if key == "comparison" or df.empty:
            continue
        name = key.removeprefix("comparison_by_")
        out.append(f"<h3>By {escape(name)}</h3>" + _table(pivot_comparison(df)))
    out.append("</section>")
    return "\n".join(out)


def html_chunks(reports: list[RunReport], comparison: dict[str, Table] | None, generated: str) -> Iterator[str]:
    """report.html in pieces, in order (``render_html`` joins them; the writer streams them)."""
    multi = len(reports) > 1
    anchors = [f"run{i + 1}" for i in range(len(reports))]
    nav = []
    if multi:
        nav.append('<a href="#comparison">comparison</a>')
        nav += [f'<a href="#{a}-headline">{escape(rep.run.name)}</a>' for a, rep in zip(anchors, reports)]
    else:
        a = anchors[0]
        nav += [
            f'<a href="#{a}-{k}">{label}</a>'
            for k, label in (
                ("headline", "headline"),
                ("stages", "failure stages"),
                ("hops", "hops"),
                ("metrics", "metrics"),
                ("tools", "tools"),
                ("orchestration", "orchestration"),
                ("modes", "failure modes"),
                ("decisions", "decisions"),
                ("repeats", "repeated runs"),
                ("drill", "trajectories"),
            )
        ]
    title = "trajectory-judge report: " + ", ".join(rep.run.name for rep in reports)
    yield (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
        f"<title>{escape(title)}</title>\n<style>{CSS}</style></head><body>\n"
        f"<header><h1>{escape(title)}</h1>\n"
        f'<p class="generated">Generated {escape(generated)}</p>\n'
        f"</header><nav>{''.join(nav)}</nav><main>\n"
    )
    first = True
    if multi:
        assert comparison is not None
        yield _comparison(reports, comparison)
        first = False
    for a, rep in zip(anchors, reports):
        if multi:
            yield ("" if first else "\n") + f'<h2 id="{a}">Run {escape(rep.run.name)}</h2>'
            first = False
        yield "" if first else "\n"
        first = False
        yield from render_run_chunks(rep, a)
    yield f"\n</main><script>{JS}</script></body></html>\n"


def render_html(reports: list[RunReport], comparison: dict[str, Table] | None, generated: str) -> str:
    return "".join(html_chunks(reports, comparison, generated))
