"""The second hostile sweep (issue 26): each class that broke, written from the issue's
description, with its outcome asserted (exit code, message, rows, nothing lost).

The classes of ``judge grade`` inputs live in the bad-input corpus (tests/fixtures/bad_input/);
the ones here reach other commands (gold export / label / import, the report writers) or need a
fault injected (a full disk).
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

from typer.testing import CliRunner

from pipelines.cli import app

runner = CliRunner()
TOOLS = [{"name": "f", "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}}}]
SEPARATORS = "\u2028\u2029\u0085"  # str.splitlines breaks at each; JSON strings hold them raw


def _invoke(*args: str, code: int = 0) -> str:
    res = runner.invoke(app, list(args), catch_exceptions=False)
    assert res.exit_code == code, res.output
    return res.output


def _write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line]


# ---------------------------------------------------------------- 12: line separators inside strings


def test_line_separators_in_answers_questions_and_notes_go_through_export_label_and_import(tmp_path: Path):
    """U+2028 / U+0085 in an answer broke ``judge gold export`` (results split with
    str.splitlines); in a question or a note, label / import rejected what export wrote."""
    tasks = _write_jsonl(
        tmp_path / "tasks.jsonl",
        [
            {
                "task_id": f"t{i}",
                "question": f"What is f{SEPARATORS}of 1? ({i})",
                "tools": TOOLS,
                "reference_calls": [{"name": "f", "arguments": {"x": 1}}],
                "gold_answer": "blue",
            }
            for i in range(3)
        ],
    )
    answers = ["blue", f"It is blue{SEPARATORS}(certainly)", f"red{SEPARATORS}"]
    trajectories = _write_jsonl(
        tmp_path / "trajectories.jsonl",
        [
            {
                "task_id": f"t{i}",
                "trajectory_id": f"r{i}-{j}",
                "steps": [{"name": "f", "arguments": {"x": 1}, "result": f"blue{SEPARATORS}"}],
                "final_answer": a,
            }
            for i in range(3)
            for j, a in enumerate(answers)
        ],
    )
    run = tmp_path / "run"
    _invoke("grade", "--tasks", str(tasks), "--trajectories", str(trajectories), "--no-replay", "--out", str(run))
    rows = _jsonl(run / "results.jsonl")
    assert [r["trajectory_id"] for r in rows] == [f"r{i}-{j}" for i in range(3) for j in range(3)]
    label_set = tmp_path / "set.jsonl"
    assert "9 cases drawn from 9 labellable rows of 9" in _invoke("gold", "export", str(run), "--n", "20", "--out", str(label_set))
    items = _jsonl(label_set)
    assert len(items) == 9 and any(SEPARATORS in it["context"]["question"] for it in items)
    page = Path(_invoke("gold", "label", str(label_set)).strip())
    assert page.is_file()
    note = f"looks{SEPARATORS}fine"
    labels = _write_jsonl(tmp_path / "labels.jsonl", [{"item_id": it["item_id"], "label": it["labels"][0], "annotator": "ann", "note": note} for it in items])
    gold = tmp_path / "gold.jsonl"
    assert "9 of 9 items labelled" in _invoke("gold", "import", str(label_set), str(labels), "--out", str(gold))
    assert [label["note"] for item in _jsonl(gold) for label in item["human_labels"]] == [note] * 9


# ---------------------------------------------------------------- 11: markup in report.md tables, CR in CSV cells


def test_unknown_field_names_are_text_in_report_md_and_a_carriage_return_stays_inside_its_csv_cell(tmp_path: Path):
    """report.md's "Input warnings" table wrote unknown-field names raw (``<script>`` ran when
    rendered as CommonMark); a CSV cell holding a carriage return was written unquoted, so a
    reader saw a new row starting ``=cmd|...``."""
    script = "<script>alert(1)</script>"
    agent = "ok\r=cmd|' /C calc'!A0"
    tasks = _write_jsonl(
        tmp_path / "tasks.jsonl",
        [{"task_id": "t1", "question": "f of 1?", "tools": TOOLS, "reference_calls": [{"name": "f", "arguments": {"x": 1}}], "gold_answer": "blue"}],
    )
    rows = [
        {
            "task_id": "t1",
            "trajectory_id": f"r{i}",
            "agent": agent,
            script: 1,
            "steps": [{"name": "f", "arguments": {"x": 1}, "result": 1, f"<img src=x onerror=alert({i})>": 2}],
            "final_answer": "blue",
        }
        for i in range(3)
    ]
    trajectories = _write_jsonl(tmp_path / "trajectories.jsonl", rows)
    out = tmp_path / "out"
    _invoke("grade", "--tasks", str(tasks), "--trajectories", str(trajectories), "--no-replay", "--out", str(out))
    assert [r["verdict"] for r in _jsonl(out / "results.jsonl")] == ["pass"] * 3
    md = (out / "report.md").read_text(encoding="utf-8")
    warnings = md[md.index("Input warnings") :]
    assert re.search(r"(?<!\\)<(script|img)", md) is None  # every < of the input escaped
    assert r"\<script\>alert(1)\</script\>" in warnings and r"\<img src=x onerror=alert(0)\>" in warnings
    with open(out / "tables" / "trajectories.csv", newline="", encoding="utf-8") as fh:
        table = list(csv.reader(fh))
    header, body = table[0], table[1:]
    assert len(body) == 3  # one row per trajectory: no row starts inside a cell
    assert [r[header.index("agent")] for r in body] == [agent] * 3
    assert not any(cell.startswith(("=", "+", "@")) for row in body for cell in row)


# ---------------------------------------------------------------- 13: many policy conditions in the charts


def test_twenty_five_policy_conditions_draw_no_bar_of_negative_width(tmp_path: Path):
    """25 policy conditions (26 series with "all") over a dozen hop counts: the bars' share of
    a fixed-width chart fell under their 2 px gap, and report.html held rects of negative width."""
    tasks, trajectories = [], []
    for i in range(25 * 12):
        policy, hops = f"policy-{i % 25}", 1 + i // 25
        tasks.append(
            {
                "task_id": f"t{i}",
                "question": "f of 1?",
                "tools": TOOLS,
                "reference_calls": [{"name": "f", "arguments": {"x": 1}}],
                "gold_answer": "blue",
                "metadata": {"policy_condition": policy, "hop_count": hops},
            }
        )
        trajectories.append(
            {
                "task_id": f"t{i}",
                "trajectory_id": f"r{i}",
                "steps": [{"name": "f", "arguments": {"x": 1}, "result": 1}],
                "final_answer": "blue" if i % 3 else "red",
            }
        )
    out = tmp_path / "out"
    _invoke(
        "grade",
        "--tasks",
        str(_write_jsonl(tmp_path / "tasks.jsonl", tasks)),
        "--trajectories",
        str(_write_jsonl(tmp_path / "t.jsonl", trajectories)),
        "--no-replay",
        "--out",
        str(out),
    )
    assert len(_jsonl(out / "results.jsonl")) == 300
    html = (out / "report.html").read_text(encoding="utf-8")
    charts = re.findall(r"<svg .*?</svg>", html, flags=re.S)
    hops = next(c for c in charts if "Pass rate by hop count" in c)
    assert all(f"policy-{p}" in hops for p in range(25))  # every condition is a series of the chart
    widths = [float(w) for c in charts for w in re.findall(r'<rect [^>]*?width="([^"]+)"', c)]
    assert widths and min(widths) >= 0  # a rate of 0 is a bar of width 0, never less
    bars = [float(w) for w in re.findall(r'<rect [^>]*?width="([^"]+)"[^>]*><title>', hops)]
    assert len(bars) >= 26 * 12 and min(bars) >= 2  # each pass-rate bar stays visible: the chart widens instead
