"""The report's numbers equal summary.json's (Markdown, HTML and tables), for a real graded run."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

import pandas as pd
import pytest

from reports import build_report

STAGES = ("policy", "tool_selection", "argument_names", "argument_values", "answer_correctness", "answer_grounding")


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def ci(c: list[float]) -> str:
    return f"[{100 * c[0]:.1f}, {100 * c[1]:.1f}]"


@pytest.fixture(scope="module")
def report(graded_run: Path, tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("report")
    build_report([graded_run], out)
    return out, json.loads((graded_run / "summary.json").read_text())


def test_grading_run_writes_every_format(graded_run: Path):
    for name in ("report.md", "report.html", "tables/failure_stages.csv", "tables/failure_stages.parquet", "tables/trajectories.parquet"):
        assert (graded_run / name).is_file(), name


def test_markdown_headline_and_waterfall_match_summary(report):
    out, s = report
    md = (out / "report.md").read_text()
    assert f"**{pct(s['pass_rate'])}** {ci(s['pass_rate_ci95'])}" in md
    assert f"VAKRA leaderboard score: **{pct(s['leaderboard']['score'])}**" in md
    assert f"CRAG score: {s['crag_score']:.3f}" in md
    c = s["counts"]
    overall = "| all | {} | {} | {} | {} | {} |".format(
        c["graded"], c["pass"], " | ".join(str(s["failure_stages"][st]) for st in STAGES), c["unresolved"], pct(s["pass_rate"])
    )
    assert overall in md
    for cap, g in s["by"]["capability"].items():
        row = f"| {cap} | {g['n']} | {pct(g['pass_rate'])} | {pct(g['pass_rate_ci95'][0])} | {pct(g['pass_rate_ci95'][1])} | {pct(s['leaderboard']['capabilities'][cap])} |"
        assert row in md, row
    for dom, g in s["by"]["domain"].items():
        assert f"| {dom} | {g['n']} | {g['pass']} | " + " | ".join(str(g["failure_stages"][st]) for st in STAGES) in md


def _html_rows(html: str) -> list[list[str]]:
    return [[unescape(re.sub(r"<[^>]+>", "", c)) for c in re.findall(r"<td[^>]*>(.*?)</td>", tr)] for tr in re.findall(r"<tr>(.*?)</tr>", html)]


def test_html_numbers_match_summary(report):
    out, s = report
    html = (out / "report.html").read_text()
    assert f'<div class="v">{pct(s["pass_rate"])}</div>' in html
    assert ci(s["pass_rate_ci95"]) in html
    assert f'<div class="v">{pct(s["leaderboard"]["score"])}</div>' in html
    rows = _html_rows(html)
    c = s["counts"]
    assert [
        "overall",
        "all",
        str(c["graded"]),
        str(c["pass"]),
        *(str(s["failure_stages"][st]) for st in STAGES),
        str(c["unresolved"]),
        pct(s["pass_rate"]),
    ] in rows
    for cap, g in s["by"]["capability"].items():
        assert [
            "capability",
            cap,
            str(g["n"]),
            str(g["pass"]),
            *(str(g["failure_stages"][st]) for st in STAGES),
            str(g["unresolved"]),
            pct(g["pass_rate"]),
        ] in rows
    for hop, g in s["by"]["hop_count"].items():
        assert [
            "hop_count",
            hop,
            "all",
            str(g["n"]),
            str(g["pass"]),
            pct(g["pass_rate"]),
            pct(g["pass_rate_ci95"][0]),
            pct(g["pass_rate_ci95"][1]),
            "cluster bootstrap (summary)",
        ] in rows
    for metric, sc in s["scores"].items():
        if sc["mean"] is not None:
            assert [metric, f"{sc['mean']:.3f}", f"{sc['ci95'][0]:.3f}", f"{sc['ci95'][1]:.3f}", str(sc["n"])] in rows


def test_tables_match_summary_and_results(report, graded_run: Path):
    out, s = report
    wf = pd.read_parquet(out / "tables" / "failure_stages.parquet")
    overall = wf[wf["by"] == "overall"].iloc[0]
    assert int(overall["pass"]) == s["counts"]["pass"]
    assert {st: int(overall[st]) for st in STAGES} == {st: s["failure_stages"][st] for st in STAGES}
    # stages are mutually exclusive: every graded trajectory lands in exactly one column
    assert int(overall["pass"]) + sum(int(overall[st]) for st in STAGES) + int(overall["unresolved"]) == s["counts"]["graded"]
    traj = pd.read_csv(out / "tables" / "trajectories.csv")
    lines = (graded_run / "results.jsonl").read_text().splitlines()
    assert len(traj) == len(lines)
    assert (traj["verdict"] == "pass").sum() == s["counts"]["pass"]
    for name in ("headline", "failure_stages", "accuracy_by_hops", "tool_bottlenecks", "seed_metrics", "pass_at_k", "trajectories"):
        csv = pd.read_csv(out / "tables" / f"{name}.csv")
        pq = pd.read_parquet(out / "tables" / f"{name}.parquet")
        assert list(csv.columns) == list(pq.columns) and len(csv) == len(pq), name


def test_accuracy_by_hops_crossed_with_policy(report, graded_run: Path):
    out, _s = report
    hops = pd.read_csv(out / "tables" / "accuracy_by_hops.csv", dtype={"value": str})
    lines = [json.loads(x) for x in (graded_run / "results.jsonl").read_text().splitlines()]
    crossed = hops[(hops["dimension"] == "hop_count") & (hops["policy_condition"] != "all")]
    assert not crossed.empty, "the bench data mixes tasks with and without a policy"
    for _, row in crossed.iterrows():
        pol = None if row["policy_condition"] == "policy (unlabelled)" else row["policy_condition"]
        cell = [x for x in lines if str(x.get("hop_count")) == row["value"] and x.get("policy_condition") == pol and x["verdict"] != "error"]
        assert row["n"] == len(cell)
        assert row["pass"] == sum(x["verdict"] == "pass" for x in cell)
        assert row["ci_low"] <= row["pass_rate"] <= row["ci_high"]
