"""Control items among the judges' questions (pipelines.controls), over the loopback server with the
real SDKs and instructor: a judge that says yes to everything fails its controls and is set aside;
an honest one passes them; a rerun is answered by the cache; batch mode asks the same controls.

The bundled sample's gold (``metadata.expected_verdict``, set by construction) says which escalated
cases a lenient judge would wrongly pass.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from typer.testing import CliRunner

from judge import JudgeRequest, Outcome
from pipelines.cli import app
from pipelines.controls import ControlLedger, build_controls
from pipelines.matching import AnswerLabel, compare_answer, value_in_text
from tests.servers.graders import honest_verdict, material_of, obedient_verdict
from tests.servers.loopback import Reply

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample"
runner = CliRunner()
YES = {
    "AnswerCorrectnessVerdict": "correct",
    "GroundednessVerdict": "supported",
    "TrajectorySufficiencyVerdict": "sufficient",
    "PolicyAdherenceVerdict": "compliant",
    "OpenEndedVerdict": "meets",
}


def _tool(body: dict) -> str:
    tool = (body.get("tools") or [{}])[0]
    return (tool.get("function") or {}).get("name") or tool.get("name")


def _fields(body: dict) -> list[str]:
    """The verdict schema's fields, as the request declares the tool."""
    tool = (body.get("tools") or [{}])[0]
    schema = (tool.get("function") or {}).get("parameters") or tool.get("input_schema") or {}
    return list(schema.get("properties") or {})


def _material(body: dict) -> dict:
    return material_of(body["messages"])


def lenient(body: dict) -> Reply:
    """Says yes to everything, with the evidence most likely to get a yes accepted (it copies the
    material as the obedient grader does)."""
    return Reply.of(obedient_verdict(_tool(body), _material(body), _fields(body), payloads=[""]))


def honest(body: dict) -> Reply:
    """Reads the material as a careful grader would (a stand-in for a good judge)."""
    return Reply.of(honest_verdict(_tool(body), _material(body), _fields(body)))


def _grade(out: Path, *extra: str) -> tuple[list[dict], dict]:
    res = runner.invoke(
        app,
        ["grade", "--tasks", str(SAMPLE / "tasks.jsonl"), "--trajectories", str(SAMPLE / "trajectories.jsonl"), "--out", str(out), "--workers", "1", *extra],
    )
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    return rows, json.loads((out / "summary.json").read_text())


def _gold() -> dict[str, str]:
    return {t["trajectory_id"]: t["metadata"]["expected_verdict"] for t in map(json.loads, (SAMPLE / "trajectories.jsonl").read_text().splitlines())}


def _wrong_passes(rows: list[dict]) -> int:
    gold = _gold()
    return sum(1 for r in rows if r["verdict"] == "pass" and r["decided_by"].startswith("judge:") and gold[r["trajectory_id"]] == "fail")


def test_a_judge_saying_yes_to_everything_is_gated_and_moves_no_verdict(server, tmp_path):
    server.set_responder("judge-a", lenient)
    judge = ["--judge", "openai:judge-a", "--cache", str(tmp_path / "c.sqlite3")]
    reported, summary_r = _grade(tmp_path / "report", *judge, "--controls", "report")
    assert _wrong_passes(reported) > 0  # measured only: the lenient judge's passes stand
    measured = summary_r["judges"]["controls"]["judges"]["openai:judge-a"]
    assert all(f["accuracy"] < 0.8 and not f["gated"] for f in measured.values())
    gated, summary = _grade(tmp_path / "gate", *judge)
    controls = summary["judges"]["controls"]
    assert controls["mode"] == "gate" and controls["threshold"] == 0.8
    figures = controls["judges"]["openai:judge-a"]
    assert all(f["gated"] and f["known_fail_failed"] == 0 and f["known_fail"] > 0 for f in figures.values())
    assert _wrong_passes(gated) == 0  # none of the lenient judge's wrong passes stands
    assert not any(r["decided_by"].startswith("judge:") for r in gated)  # a one-judge panel set aside decides nothing
    votes = [v for r in gated for t in r["turns"] for c in t["checks"] if c.get("decision") for v in c["decision"]["votes"]]
    # set aside, or refused before that: a yes whose evidence does not check out is an unverified abstention
    assert votes and all(v["abstain_reason"] in ("control_failed", "unverified") for v in votes)
    assert any(v["abstain_reason"] == "control_failed" for v in votes)
    report = (tmp_path / "gate" / "report.md").read_text()
    assert "Control items" in report and "gated" in report
    # the same controls, asked again: every answer from the cache
    server.reset_log()
    again, _ = _grade(tmp_path / "again", *judge)
    assert server.calls() == 0 and [r["verdict"] for r in again] == [r["verdict"] for r in gated]


def test_an_honest_judge_passes_its_controls_and_decides(server, tmp_path):
    server.set_responder("judge-a", honest)
    rows, summary = _grade(tmp_path / "run", "--judge", "openai:judge-a", "--no-cache")
    figures = summary["judges"]["controls"]["judges"]["openai:judge-a"]
    assert figures and all(f["accuracy"] == 1.0 and not f["gated"] for f in figures.values())
    assert sum(f["known_pass"] for f in figures.values()) > 0 and sum(f["known_fail"] for f in figures.values()) > 0
    assert any(r["decided_by"].startswith("judge:") for r in rows)
    real = sum(r["judge_calls"] for r in rows)
    assert server.calls() == real + summary["judges"]["controls"]["calls"]  # controls are counted apart
    per_rubric = [f["n"] for f in figures.values()]
    assert all(n <= max(6, 0.05 * summary["counts"]["graded"]) for n in per_rubric)


def test_controls_off_asks_none(server, tmp_path):
    server.set_responder("judge-a", lenient)
    rows, summary = _grade(tmp_path / "off", "--judge", "openai:judge-a", "--no-cache", "--controls", "off")
    assert "controls" not in summary["judges"] and server.calls() == sum(r["judge_calls"] for r in rows)
    assert "verdicts rest on an unmeasured judge" in (tmp_path / "off" / "report.md").read_text()


def test_batch_mode_asks_the_same_controls_and_writes_what_online_writes(server, tmp_path):
    from tests.servers.batches import BatchPlan

    server.set_responder("judge-a", lenient)
    server.batches.default_plan = BatchPlan(polls=0)
    online, _ = _grade(tmp_path / "online", "--judge", "openai:judge-a", "--cache", str(tmp_path / "online.sqlite3"))
    out = tmp_path / "batch"
    res = runner.invoke(
        app,
        ["grade", "--tasks", str(SAMPLE / "tasks.jsonl"), "--trajectories", str(SAMPLE / "trajectories.jsonl"), "--out", str(out), "--workers", "1"]
        + ["--judge", "openai:judge-a", "--judge-mode", "batch", "--cache", str(tmp_path / "batch.sqlite3")],
    )
    assert res.exit_code == 5, res.output
    for _ in range(10):
        res = runner.invoke(app, ["resume", str(out), "--workers", "1"])
        if res.exit_code == 0:
            break
        assert res.exit_code == 5, res.output
    batch = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    strip = lambda rows: [{k: v for k, v in r.items() if k not in ("judge_cost_usd",)} for r in rows]  # noqa: E731
    assert strip(batch) == strip(online)
    assert (
        json.loads((out / "summary.json").read_text())["judges"]["controls"]["judges"]
        == json.loads((tmp_path / "online" / "summary.json").read_text())["judges"]["controls"]["judges"]
    )


# ---- the builders ----------------------------------------------------------------------------------
def _requests(rubric: str, materials: list[dict]) -> list[JudgeRequest]:
    return [JudgeRequest(key=f"k{i}", rubric=rubric, material=m) for i, m in enumerate(materials)]


def test_answer_controls_are_known_by_the_deterministic_matcher():
    materials = [{"question": f"q{i}", "gold_answers": [g], "answer": "x"} for i, g in enumerate(["Paris", "42", "Usain Bolt", "1912"])]
    controls = build_controls("answer_correctness", _requests("answer_correctness", materials), random.Random(0))
    assert len(controls) == 6 and {c.expected for c in controls} == {Outcome.MATCH, Outcome.MISMATCH}
    for c in controls:
        label = compare_answer(c.request.material["gold_answers"], c.request.material["answer"]).label
        assert label == (AnswerLabel.CORRECT if c.expected == Outcome.MATCH else AnswerLabel.INCORRECT)
        assert c.request.key.startswith("control/answer_correctness/")


def test_grounded_controls_hold_the_claim_or_not():
    materials = [
        {"question": "q1", "answer": "a", "tool_outputs": [{"step": 0, "name": "t", "arguments": {}, "result": {"name": "Usain Bolt"}}]},
        {"question": "q2", "answer": "b", "tool_outputs": [{"step": 0, "name": "t", "arguments": {}, "result": {"city": "Lagos"}}]},
    ]
    controls = build_controls("groundedness", _requests("groundedness", materials), random.Random(0))
    assert controls
    for c in controls:
        m = c.request.material
        assert value_in_text(m["answer"], [o["result"] for o in m["tool_outputs"]]) == (c.expected == Outcome.MATCH)


def test_a_ledger_gates_below_the_threshold_only_in_gate_mode():
    from judge import PanelDecision, Vote

    controls = build_controls("open_ended", _requests("open_ended", [{"question": "q", "criteria": ["c"], "answer": "a"}]), random.Random(0))
    decisions = [PanelDecision(panel="p", rule="majority", outcome=Outcome.MATCH, votes=[Vote(judge="j", label="meets")]) for _ in controls]
    outcomes = {"open_ended": {"meets": Outcome.MATCH, "partially_meets": Outcome.MISMATCH, "fails": Outcome.MISMATCH}}
    for mode, gated in (("gate", {"j": 0.0}), ("report", {})):
        ledger = ControlLedger(mode=mode)
        ledger.record(controls, decisions, outcomes)
        assert ledger.gated("open_ended") == gated and ledger.gated("groundedness") == {}
