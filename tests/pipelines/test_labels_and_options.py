"""Agreement with another tool's verdicts (--labels, trajectories' own labels), tool specs from a
file, --turns, --strict, and the exit codes of runs that grade nothing (issue 9)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from pipelines.cli import EXIT_INPUT_ERROR, EXIT_USAGE, app

runner = CliRunner()

TOOLS = [{"name": "get_medals", "parameters": {"type": "object", "properties": {"athlete_id": {"type": "integer"}}}}]


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _tasks(tmp_path: Path) -> Path:
    rows = [
        {
            "task_id": f"t{i}",
            "question": "medals?",
            "tools": TOOLS,
            "reference_calls": [{"name": "get_medals", "arguments": {"athlete_id": i}}],
            "gold_answer": str(i),
        }
        for i in range(4)
    ]
    return _jsonl(tmp_path / "tasks.jsonl", rows)


def _trajectories(tmp_path: Path, answers: list[str]) -> Path:
    rows = [
        {
            "task_id": f"t{i}",
            "trajectory_id": f"r{i}",
            "steps": [{"name": "get_medals", "arguments": {"athlete_id": i}, "result": {"n": int(a)}}],
            "final_answer": a,
        }
        for i, a in enumerate(answers)
    ]
    return _jsonl(tmp_path / "traj.jsonl", rows)


def _summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


def test_labels_file_gives_agreement_with_both_sides_reasons(tmp_path):
    tasks = _tasks(tmp_path)
    traj = _trajectories(tmp_path, ["0", "1", "9", "9"])  # ours: pass, pass, fail, fail
    labels = _jsonl(
        tmp_path / "labels.jsonl",
        [
            {"trajectory_id": "r0", "label": True},
            {"trajectory_id": "r1", "label": "fail", "reason": "their checker disliked it"},
            {"trajectory_id": "r2", "label": 0.0},
            {"task_id": "t3", "label": "pass"},  # a task label covers its trajectories
            {"trajectory_id": "nobody", "label": 1},
        ],
    )
    out = tmp_path / "run"
    result = runner.invoke(app, ["grade", "--tasks", str(tasks), "--trajectories", str(traj), "--labels", str(labels), "--out", str(out)])
    assert result.exit_code == 0, result.output
    ext = _summary(out)["external_agreement"]["labels:labels"]
    assert ext["n"] == 4 and ext["both_decided"] == 4 and ext["agreement"] == 0.5
    assert ext["confusion"]["pass"] == {"pass": 1, "fail": 1, "no verdict": 0}
    assert ext["confusion"]["fail"] == {"pass": 1, "fail": 1, "no verdict": 0}
    first, second = ext["disagreements"]
    assert (first["trajectory_id"], first["ours"]["verdict"], first["theirs"]["reason"]) == ("r1", "pass", "their checker disliked it")
    assert second["trajectory_id"] == "r3" and "answer" in second["ours"]["reason"]
    warnings = _summary(out)["input_warnings"]["unused_label"]
    assert warnings["trajectory_id"]["count"] == 1
    assert "agreement with labels:labels" in result.output
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert rows[1]["external_labels"][0]["passed"] is False
    report = (out / "report.md").read_text()
    assert "## Agreement with the source's own verdicts" in report and "their checker disliked it" in report
    assert "Agreement with the source" in (out / "report.html").read_text()
    assert (out / "tables" / "external_disagreements.csv").read_text().count("\n") == 3  # header + 2 disagreements


def test_bad_label_lines_are_errors_naming_line_and_field(tmp_path):
    labels = _jsonl(tmp_path / "labels.jsonl", [{"trajectory_id": "r0", "label": "maybe"}, {"label": True}])
    out = tmp_path / "run"
    result = runner.invoke(
        app, ["grade", "--tasks", str(_tasks(tmp_path)), "--trajectories", str(_trajectories(tmp_path, ["0"])), "--labels", str(labels), "--out", str(out)]
    )
    assert result.exit_code == 0
    errors = [e for e in _summary(out)["errors"] if e["scope"] == "labels"]
    assert [(e["line"], e["field"]) for e in errors] == [(1, "label"), (2, "trajectory_id")]
    assert "labels error" in result.output


def test_tool_specs_file_tells_grading_which_tools_write(tmp_path):
    task = {"task_id": "t", "question": "q", "reference_calls": [{"name": "get_medals", "arguments": {"athlete_id": 1}}], "gold_answer": "1"}
    tasks = _jsonl(tmp_path / "tasks.jsonl", [task])
    steps = [{"name": "get_medals", "arguments": {"athlete_id": 1}, "result": 1}, {"name": "delete_all", "arguments": {}, "result": "ok"}]
    traj = _jsonl(tmp_path / "traj.jsonl", [{"task_id": "t", "trajectory_id": "x", "steps": steps, "final_answer": "1"}])
    specs = tmp_path / "specs.json"
    specs.write_text(json.dumps({"tools": [{"spec": {"name": "delete_all", "side_effect": "write"}}]}))
    plain, with_specs = tmp_path / "plain", tmp_path / "specs"
    assert runner.invoke(app, ["grade", "--tasks", str(tasks), "--trajectories", str(traj), "--out", str(plain)]).exit_code == 0
    assert _summary(plain)["counts"]["pass"] == 1  # an unknown tool is a read: evidence, not a failure
    assert (
        runner.invoke(app, ["grade", "--tasks", str(tasks), "--trajectories", str(traj), "--tool-specs", str(specs), "--out", str(with_specs)]).exit_code == 0
    )
    assert _summary(with_specs)["failure_stages"]["tool_selection"] == 1  # now a surplus write
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"description": "no name"}]))
    result = runner.invoke(app, ["grade", "--tasks", str(tasks), "--trajectories", str(traj), "--tool-specs", str(bad), "--out", str(tmp_path / "b")])
    assert result.exit_code == EXIT_USAGE and "bad.json:1" in result.output and "name" in result.output


def test_turns_option_and_strict(tmp_path):
    tasks = _tasks(tmp_path)
    dialogue = {
        "task_id": "t1",
        "trajectory_id": "d",
        "turns": [
            {"turn_id": "1", "steps": [], "agent_messages": ["Which athlete?"]},
            {"turn_id": "2", "steps": [{"name": "get_medals", "arguments": {"athlete_id": 1}, "result": 1}], "final_answer": "1"},
        ],
        "score": 1,
    }
    traj = _jsonl(tmp_path / "traj.jsonl", [dialogue])
    out = tmp_path / "auto"
    result = runner.invoke(app, ["grade", "--tasks", str(tasks), "--trajectories", str(traj), "--out", str(out)])
    assert result.exit_code == 0 and _summary(out)["counts"]["pass"] == 1  # one episode
    assert "unknown_field score" in result.output and _summary(out)["input_warnings"]["unknown_field"]["score"]["count"] == 1
    result = runner.invoke(app, ["grade", "--tasks", str(tasks), "--trajectories", str(traj), "--turns", "per-message", "--out", str(tmp_path / "pm")])
    assert result.exit_code == EXIT_INPUT_ERROR  # the only trajectory is an input error: nothing graded
    assert "--turns episode" in result.output and "nothing was graded" in result.output
    result = runner.invoke(app, ["grade", "--tasks", str(tasks), "--trajectories", str(traj), "--strict", "--out", str(tmp_path / "strict")])
    assert result.exit_code == EXIT_INPUT_ERROR and "unknown field 'score'" in result.output
    result = runner.invoke(app, ["grade", "--tasks", str(tasks), "--trajectories", str(traj), "--turns", "sometimes", "--out", str(tmp_path / "x")])
    assert result.exit_code == EXIT_USAGE and "--turns must be one of auto, episode, per-message" in result.output


def test_task_file_errors_are_shown_next_to_trajectory_errors(tmp_path):
    tasks = _jsonl(tmp_path / "tasks.jsonl", [{"task_id": "good", "question": "q", "gold_answer": "1"}, {"task_id": "bad", "question": 3}])
    traj = _jsonl(
        tmp_path / "traj.jsonl", [{"task_id": "good", "trajectory_id": "a", "final_answer": "1"}, {"task_id": "bad", "trajectory_id": "b", "final_answer": "1"}]
    )
    result = runner.invoke(app, ["grade", "--tasks", str(tasks), "--trajectories", str(traj), "--out", str(tmp_path / "r")])
    assert result.exit_code == 0
    assert "task error" in result.output and "tasks.jsonl:2" in result.output
    assert "trajectory error" in result.output and "could not be read" in result.output
