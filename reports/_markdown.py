"""``report.md``: the summary as tables a person reads first. Deterministic: no timestamps."""

from __future__ import annotations

from typing import Any

STAGES = ("policy", "tool_selection", "argument_names", "argument_values", "answer_correctness", "answer_grounding")


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _ci(ci: list | tuple | None) -> str:
    return "" if not ci else f" [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def render_markdown(summary: dict[str, Any]) -> str:
    c = summary["counts"]
    lines = [
        "# trajectory-judge report",
        "",
        f"**{c['graded']}** trajectories graded ({c['errors']} input errors): "
        f"**{c['pass']} pass**, {c['fail']} fail, {c['unresolved']} unresolved.",
        "",
        f"- Pass rate: **{_pct(summary['pass_rate'])}**{_ci(summary['pass_rate_ci95'])} (95% bootstrap CI; "
        f"{_pct(summary['pass_rate_if_unresolved_pass'])} if every unresolved case passed)",
    ]
    lb = summary["leaderboard"]
    if lb["score"] is not None:
        caps = ", ".join(f"cap {k}: {_pct(v)}" for k, v in lb["capabilities"].items())
        lines.append(f"- VAKRA leaderboard score: **{_pct(lb['score'])}** ({caps}; {lb['rule']})")
    lines.append(f"- CRAG score: {_num(summary['crag_score'])} (accuracy minus hallucination rate)")
    j = summary["judges"]
    lines.append(f"- Decided by: " + ", ".join(f"{k} {v}" for k, v in summary["decided_by"].items()) + f"; judge calls {j['calls']} ({j['calls_per_100_trajectories']} per 100 trajectories), cost ${j['cost_usd']:.4f}")
    lines += ["", "## Where trajectories broke (earliest failing stage)", "", "| stage | count | share of graded |", "|---|---:|---:|"]
    n = max(c["graded"], 1)
    for stage in STAGES:
        count = summary["failure_stages"].get(stage, 0)
        lines.append(f"| {stage} | {count} | {_pct(count / n)} |")
    lines.append(f"| (pass) | {c['pass']} | {_pct(c['pass'] / n)} |")
    lines.append(f"| (unresolved) | {c['unresolved']} | {_pct(c['unresolved'] / n)} |")
    lines += ["", "## Scores", "", "| metric | mean | 95% CI | n |", "|---|---:|---|---:|"]
    for key, s in summary["scores"].items():
        ci = "" if not s["ci95"] else f"[{s['ci95'][0]:.3f}, {s['ci95'][1]:.3f}]"
        lines.append(f"| {key} | {_num(s['mean'])} | {ci} | {s['n']} |")
    for key, groups in summary["by"].items():
        if list(groups) == ["unknown"]:
            continue
        lines += [
            "",
            f"## By {key.replace('_', ' ')}",
            "",
            f"| {key} | n | pass rate | 95% CI | unresolved | " + " | ".join(STAGES) + " |",
            "|---|---:|---:|---|---:|" + "---:|" * len(STAGES),
        ]
        for value, g in groups.items():
            ci = "" if not g["pass_rate_ci95"] else f"[{100 * g['pass_rate_ci95'][0]:.1f}, {100 * g['pass_rate_ci95'][1]:.1f}]"
            stages = " | ".join(str(g["failure_stages"].get(s, 0)) for s in STAGES)
            lines.append(f"| {value} | {g['n']} | {_pct(g['pass_rate'])} | {ci} | {g['unresolved']} | {stages} |")
    if summary["errors"]:
        lines += ["", "## Input errors (listed, not graded)", "", "| file | line | field | kind | message |", "|---|---:|---|---|---|"]
        for e in summary["errors"]:
            msg = str(e.get("message", "")).replace("|", "\\|").replace("\n", " ")
            lines.append(f"| {e.get('file')} | {e.get('line') or ''} | {e.get('field') or ''} | {e.get('kind')} | {msg} |")
    return "\n".join(lines) + "\n"
