"""`judge grade` with a real judge panel over HTTP: the OpenAI and Anthropic SDKs and instructor
talk to a loopback server; only inconclusive checks are sent; a rerun is answered by the cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipelines.cli import app
from tests.servers.loopback import Reply

runner = CliRunner()


@pytest.fixture()
def files(tmp_path) -> tuple[Path, Path]:
    task = {
        "task_id": "t",
        "question": "Who won the 100 m in 2012?",
        "gold_answer": "Usain Bolt",
        "tools": [{"name": "winner", "parameters": {"type": "object", "properties": {"year": {"type": "integer"}}}}],
        "reference_calls": [{"name": "winner", "arguments": {"year": 2012}}],
    }
    call = {"name": "winner", "arguments": {"year": 2012}, "result": {"name": "Usain Bolt"}}
    trajectories = [
        {"task_id": "t", "trajectory_id": "exact", "steps": [call], "final_answer": "Usain Bolt"},
        {"task_id": "t", "trajectory_id": "paraphrase", "steps": [call], "final_answer": "Bolt, the Jamaican sprinter, won it."},
        {"task_id": "t", "trajectory_id": "wrong-args", "steps": [dict(call, arguments={"year": 2008})], "final_answer": "Usain Bolt"},
    ]
    (tmp_path / "tasks.jsonl").write_text(json.dumps(task) + "\n")
    (tmp_path / "traj.jsonl").write_text("".join(json.dumps(t) + "\n" for t in trajectories))
    return tmp_path / "tasks.jsonl", tmp_path / "traj.jsonl"


def _grade(files, out: Path, *extra: str):
    tasks, traj = files
    res = runner.invoke(app, ["grade", "--tasks", str(tasks), "--trajectories", str(traj), "--out", str(out), *extra])
    assert res.exit_code == 0, res.output
    return {r["trajectory_id"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}


def test_panel_decides_only_the_inconclusive_case_and_the_cache_replays_it(server, files, tmp_path):
    server.set_default("judge-a", Reply("correct")).set_default("judge-b", Reply("correct")).set_default("judge-c", Reply("incorrect"))
    judges = ["--judge", "openai:judge-a", "--judge", "anthropic:judge-b", "--judge", "openai:judge-c", "--cache", str(tmp_path / "c.sqlite3")]
    judges += ["--controls", "off"]  # counted here: control items are tested in test_controls
    first = _grade(files, tmp_path / "run1", *judges)
    assert server.calls() == 3  # one request (the paraphrase), three judges
    assert (first["exact"]["decided_by"], first["wrong-args"]["failure_stage"]) == ("deterministic", "argument_values")
    para = first["paraphrase"]
    assert (para["verdict"], para["decided_by"]) == ("pass", "judge:panel")
    votes = para["turns"][0]["checks"][2]["decision"]["votes"]
    assert sorted(v["label"] for v in votes) == ["correct", "correct", "incorrect"]
    assert all(v["model_version"] for v in votes)
    server.reset_log()
    second = _grade(files, tmp_path / "run2", *judges)
    assert server.calls() == 0 and second["paraphrase"]["verdict"] == "pass"
    summary1 = (tmp_path / "run1" / "summary.json").read_text()
    assert json.loads(summary1)["counts"] == json.loads((tmp_path / "run2" / "summary.json").read_text())["counts"]


def test_offline_miss_ends_unresolved_with_the_reason(server, files, tmp_path):
    out = _grade(files, tmp_path / "off", "--judge", "openai:judge-a", "--offline", "--cache", str(tmp_path / "empty.sqlite3"))
    assert server.calls() == 0
    para = out["paraphrase"]
    assert para["verdict"] == "unresolved"
    assert para["turns"][0]["checks"][2]["decision"]["votes"][0]["abstain_reason"] == "offline_miss"
