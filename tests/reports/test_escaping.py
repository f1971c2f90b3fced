"""Hostile text from trajectories stays data in every report (issue 10.11): no spreadsheet formula
in a CSV cell, no HTML or image link in report.md, everything escaped in report.html."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pandas as pd

from pipelines.config import GradingConfig
from pipelines.run import GradeOptions, run_grading
from reports._escape import csv_cell, csv_safe, md_text

FORMULAS = ['=HYPERLINK("http://evil.example/x","click")', "+cmd|' /C calc'!A0", "-2+3+cmd|' /C calc'!A0", "@SUM(1+1)*cmd|' /C calc'!A0", "\t=1+1"]
SCRIPT = "<script>alert('x')</script>"
IMAGE = "![pixel](https://evil.example/track.png)"


def test_csv_cell_neutralises_formulas_but_not_numbers():
    for text in FORMULAS:
        assert csv_cell(text) == "'" + text
    for keep in ("-3", "+1.5", "-0.25%", "1e-3", "plain", "a=b", 7, None, -2.5):
        assert csv_cell(keep) == keep


def test_csv_safe_replaces_columns_without_touching_the_input():
    df = pd.DataFrame({"agent": ["=1+1", "ok"], "n": [1, -2], "note": [None, "@x"]})
    safe = csv_safe(df)
    assert list(safe["agent"]) == ["'=1+1", "ok"] and pd.isna(safe["note"][0]) and safe["note"][1] == "'@x" and list(safe["n"]) == [1, -2]
    assert list(df["agent"]) == ["=1+1", "ok"]


def test_md_text_shows_markup_as_characters():
    assert md_text(SCRIPT) == r"\<script\>alert('x')\</script\>"
    assert md_text(IMAGE) == r"!\[pixel\](https://evil.example/track.png)"
    assert md_text("a|b\nc\\") == r"a\|b c\\"


def _hostile_run(tmp_path: Path) -> Path:
    tasks, trajs = [], []
    for i, text in enumerate([*FORMULAS, SCRIPT, IMAGE]):
        tid = f"{text}-{i}"
        meta = {"capability": text, "domain": text, "policy_condition": text, "hop_types": [text]}
        tasks.append({"task_id": tid, "question": "q?", "gold_answer": "a", "metadata": meta})
        trajs.append({"task_id": tid, "trajectory_id": text + str(i), "agent": text, "steps": [], "final_answer": "a" if i % 2 else text})
    (tmp_path / "tasks.jsonl").write_text("\n".join(json.dumps(t) for t in tasks) + "\n")
    (tmp_path / "runs.jsonl").write_text("\n".join(json.dumps(t) for t in trajs) + "\n" + '{"task_id": "<b>unknown</b>", "steps": []}\n')
    out = tmp_path / "out"
    run_grading(GradeOptions(tasks=tmp_path / "tasks.jsonl", trajectories=tmp_path / "runs.jsonl", out=out, config=GradingConfig(bootstrap_samples=100)))
    return out


def test_reports_of_a_hostile_run(tmp_path):
    out = _hostile_run(tmp_path)
    cells = []
    for path in sorted((out / "tables").glob("*.csv")):
        with open(path, newline="", encoding="utf-8") as fh:
            cells += [c for row in csv.reader(fh) for c in row]
    assert any(c.startswith("'=HYPERLINK") for c in cells)  # the hostile text is there, made inert
    dangerous = [c for c in cells if c[:1] in ("=", "+", "@", "\t", "\r") or (c.startswith("-") and not c.lstrip("-").replace(".", "", 1).isdigit())]
    assert dangerous == []
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "<script>" not in md and "](https://evil" not in md.replace("\\](", "")
    assert r"\<script\>" in md
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "<script>alert" not in html and "&lt;script&gt;alert" in html
    assert "<b>unknown</b>" not in html and "<b>unknown</b>" not in md
