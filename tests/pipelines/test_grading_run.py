"""End to end: files in, the four outputs out, every trajectory accounted for, reproducible."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench.generate import generate
from pipelines.cli import EXIT_INPUT_ERROR, app
from pipelines.run import GradeOptions, InputErrorsFound, run_grading

runner = CliRunner()


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> tuple[Path, Path]:
    return generate(tmp_path_factory.mktemp("gen"), 400, n_tasks=60, seed=3)


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_run_writes_four_outputs_and_accounts_for_every_trajectory(generated, tmp_path):
    tasks, trajectories = generated
    outcome = run_grading(GradeOptions(tasks=tasks, trajectories=trajectories, out=tmp_path))
    names = {p.name for p in outcome.files}
    assert {"results.jsonl", "summary.json", "report.md", "manifest.json"} <= names
    results = _lines(tmp_path / "results.jsonl")
    assert len(results) == 400
    ids = [r["trajectory_id"] for r in results]
    assert ids == [json.loads(line)["trajectory_id"] for line in trajectories.read_text().splitlines()]  # input order
    summary = json.loads((tmp_path / "summary.json").read_text())
    c = summary["counts"]
    assert c["pass"] + c["fail"] + c["unresolved"] == c["graded"] == 400
    assert sum(v for k, v in summary["failure_stages"].items() if k != "none") == c["fail"]
    assert summary["failure_stages"]["none"] == c["pass"]
    for r in results:
        assert r["verdict"] in {"pass", "fail", "unresolved", "error"}
        assert r["decided_by"] in {"deterministic", "unresolved"}
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["inputs"][0]["sha256"] and manifest["config"]["weights"]["selection"] == 0.4


def test_same_inputs_same_outputs_byte_for_byte(generated, tmp_path):
    tasks, trajectories = generated
    for name in ("a", "b"):
        run_grading(GradeOptions(tasks=tasks, trajectories=trajectories, out=tmp_path / name))
    for f in ("results.jsonl", "summary.json", "report.md"):
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes(), f


def _write(path: Path, lines: list[str | bytes]) -> Path:
    with open(path, "wb") as fh:
        for line in lines:
            fh.write((line if isinstance(line, bytes) else line.encode()) + b"\n")
    return path


@pytest.fixture()
def messy(tmp_path) -> tuple[Path, Path]:
    task = {"task_id": "t1", "question": "q", "reference_calls": [{"name": "f", "arguments": {"x": 1}}], "gold_answer": "1"}
    tasks = _write(tmp_path / "tasks.jsonl", [json.dumps(task), '{"task_id": "t2", "question": 5}'])
    good = {"task_id": "t1", "trajectory_id": "ok", "steps": [{"name": "f", "arguments": {"x": 1}, "result": 1}], "final_answer": "1"}
    trajectories = _write(
        tmp_path / "trajectories.jsonl",
        [
            json.dumps(good),
            '{"task_id": "t1", "trajectory_id": "broken", ',
            json.dumps(dict(good, task_id="nope", trajectory_id="orphan")),
            json.dumps(good),
            b'{"task_id": "t1", "trajectory_id": "bytes\xff"}',
            json.dumps(dict(good, trajectory_id="typed", steps=[{"name": "f", "arguments": [1]}])),
        ],
    )
    return tasks, trajectories


def test_bad_inputs_are_listed_not_lost(messy, tmp_path):
    tasks, trajectories = messy
    out = tmp_path / "run"
    outcome = run_grading(GradeOptions(tasks=tasks, trajectories=trajectories, out=out))
    results = _lines(out / "results.jsonl")
    assert len(results) == 6
    assert [r["verdict"] for r in results] == ["pass", "error", "error", "error", "error", "error"]
    kinds = [r["error"]["kind"] for r in results[1:]]
    assert kinds == ["malformed_json", "unknown_task", "duplicate_id", "encoding", "invalid_field"]
    for r in results[1:]:
        assert r["error"]["file"].endswith("trajectories.jsonl") and r["error"]["line"] == results.index(r) + 1
    assert results[5]["error"]["field"].startswith("turns[0].steps[0].arguments") or results[5]["error"]["field"].startswith("steps[0].arguments")
    summary = json.loads((out / "summary.json").read_text())  # the file other tools read
    assert outcome.summary.counts.errors == 5
    assert summary["counts"]["errors"] == 5 and summary["counts"]["graded"] == 1
    task_errors = [e for e in summary["errors"] if e.get("scope") == "task"]
    assert task_errors and task_errors[0]["line"] == 2 and "question" in (task_errors[0]["field"] or "")
    assert "Input errors" in (out / "report.md").read_text()


def test_on_error_fail_stops_with_the_first_error(messy, tmp_path):
    tasks, trajectories = messy
    with pytest.raises(InputErrorsFound) as err:
        run_grading(GradeOptions(tasks=tasks, trajectories=trajectories, out=tmp_path, on_error="fail"))
    assert "tasks.jsonl:2" in str(err.value)


def test_cli_grade_and_exit_codes(messy, generated, tmp_path):
    tasks, trajectories = generated
    ok = runner.invoke(app, ["grade", "--tasks", str(tasks), "--trajectories", str(trajectories), "--out", str(tmp_path / "ok")])
    assert ok.exit_code == 0, ok.output
    assert "pass rate" in ok.output and (tmp_path / "ok" / "summary.json").exists()
    bad_tasks, bad_traj = messy
    fail = runner.invoke(app, ["grade", "--tasks", str(bad_tasks), "--trajectories", str(bad_traj), "--out", str(tmp_path / "bad"), "--on-error", "fail"])
    assert fail.exit_code == EXIT_INPUT_ERROR
    missing = runner.invoke(app, ["grade", "--tasks", str(tmp_path / "nope.jsonl"), "--trajectories", str(bad_traj)])
    assert missing.exit_code == 2


@pytest.mark.parametrize("workers", [1, 2], ids=["in-process", "tasks-in-shards"])
def test_a_trajectory_whose_task_line_is_cut_short_is_told_which_lines_could_not_be_read(tmp_path, workers):
    """Its id may be on that line: the message names the file and line, the tasks given as
    standard input named as given (-), whether the tasks are read here or in worker shards."""
    task = {"task_id": "t1", "question": "q", "reference_calls": [{"name": "f", "arguments": {"x": 1}}], "gold_answer": "1"}
    tasks = _write(tmp_path / "tasks.jsonl", [json.dumps(task), json.dumps(dict(task, task_id="t2"))[:30], json.dumps(dict(task, task_id="t3"))])
    good = {"task_id": "t2", "trajectory_id": "r", "steps": [{"name": "f", "arguments": {"x": 1}, "result": 1}], "final_answer": "1"}
    trajectories = _write(tmp_path / "trajectories.jsonl", [json.dumps(good)])
    run_grading(GradeOptions(tasks=tasks, trajectories=trajectories, out=tmp_path / "run", workers=workers, shard_lines=1))
    (row,) = _lines(tmp_path / "run" / "results.jsonl")
    assert row["error"]["kind"] == "unknown_task"
    assert f"1 task item could not be read ({tasks}:2): the id may be on it" in row["error"]["message"]
    args = ["grade", "--tasks", "-", "--trajectories", str(trajectories), "--out", str(tmp_path / "piped"), "--no-replay"]
    piped = runner.invoke(app, args, input=tasks.read_bytes())
    assert piped.exit_code == 3, piped.output
    (row,) = _lines(tmp_path / "piped" / "results.jsonl")
    assert "1 task item could not be read (-:2): the id may be on it" in row["error"]["message"]
