"""The decisive step: every failed trajectory names where it went wrong next to its stage.

A rule names it where a call or write decided (the policy violation, the wrong attempt, the surplus
write, the call made out of order), the answer where the answer decided, the turn's end where a
needed call was never made or the run stopped; a judge names it in its structured verdict (the
policy and sufficiency rubrics), and the HTML drill-down highlights it.
"""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from judge import Check, Trajectory, VerdictLabel
from pipelines.cli import app
from tests.pipelines.helpers import BOOK, MEDALS, SEARCH, call, grade, task, traj
from tests.servers.loopback import Reply


def _decisive(t, tr):
    result = grade(t, tr).result()
    assert result.verdict == VerdictLabel.FAIL
    return result.decisive_step


def test_a_policy_violation_names_its_call_and_call_id():
    t = task([], gold=None, policy={"forbidden_tools": ["book_seat"]})
    steps = [call("get_medals", athlete_id=7), {**call("book_seat", flight="F", seat="1"), "call_id": "call_9"}]
    d = _decisive(t, traj(steps, answer=None))
    assert (d.turn_id, d.step, d.at, d.call_id, d.tool, d.check, d.decided_by) == ("1", 1, "call", "call_9", "book_seat", Check.POLICY, "deterministic")


def test_a_wrong_attempt_a_surplus_write_and_an_out_of_order_call_are_calls():
    wrong = _decisive(
        task([{"name": "get_medals", "arguments": {"athlete_id": 7}}]), traj([call("search_athletes", country="KE"), call("get_medals", athlete_id=8)])
    )
    assert (wrong.at, wrong.step, wrong.tool) == ("call", 1, "get_medals")
    surplus = _decisive(task([], gold=None), traj([call("get_medals", athlete_id=7), call("book_seat", flight="F", seat="2")], answer=None))
    assert (surplus.at, surplus.step, surplus.tool) == ("call", 1, "book_seat")
    ordered = task(
        [
            {"id": "a", "name": "search_athletes", "arguments": {"country": "KE"}},
            {"id": "b", "name": "get_medals", "arguments": {"athlete_id": 7}, "depends_on": ["a"]},
        ],
        tools=[SEARCH, MEDALS, BOOK],
    )
    early = _decisive(ordered, traj([call("get_medals", athlete_id=7), call("search_athletes", country="KE")]))
    assert (early.at, early.step, early.tool) == ("call", 0, "get_medals")


def test_within_the_earliest_stage_the_earliest_call_decides():
    # a surplus write at step 0 and a write never made: both tool selection; the call made comes first
    t = task([{"name": "book_seat", "arguments": {"flight": "F1", "seat": "1A"}}], gold=None)
    d = _decisive(t, traj([call("book_seat", flight="F9", seat="9Z"), call("book_seat", flight="F8", seat="8Z")], answer=None))
    result = grade(t, traj([call("book_seat", flight="F9", seat="9Z"), call("book_seat", flight="F8", seat="8Z")], answer=None)).result()
    reason = next(c for c in result.turns[0].checks if c.check == Check.CALLS).reason
    assert d.at == "call" and d.step == 1 and reason == "surplus write book_seat at step 1"  # the reason is the decisive item's


def test_a_call_never_made_is_the_turns_end_and_a_wrong_answer_the_answer():
    missed = _decisive(
        task([{"name": "book_seat", "arguments": {"flight": "F1", "seat": "1A"}}], gold=None), traj([call("get_medals", athlete_id=7)], answer=None)
    )
    assert (missed.at, missed.step, missed.call_id, missed.check) == ("end", 1, None, Check.CALLS)
    answer = _decisive(task([{"name": "get_medals", "arguments": {"athlete_id": 7}}], gold="3"), traj([call("get_medals", athlete_id=7)], answer="5"))
    assert (answer.at, answer.step, answer.check) == ("answer", 1, Check.ANSWER)


def test_a_run_that_stopped_ends_there():
    t = task([{"name": "get_medals", "arguments": {"athlete_id": 7}}], gold="3")
    stopped = Trajectory.model_validate(
        {
            "task_id": "t1",
            "trajectory_id": "s",
            "steps": [call("get_medals", athlete_id=7)],
            "final_answer": "3",
            "ended_early": {"kind": "limit", "reason": "max_steps"},
        }
    )
    d = _decisive(t, stopped)
    assert (d.at, d.step, d.check) == ("end", 1, Check.ANSWER)


def test_an_episode_counts_its_steps_across_messages():
    t = task([{"name": "get_medals", "arguments": {"athlete_id": 7}}], gold=None)
    dialogue = Trajectory.model_validate(
        {
            "task_id": "t1",
            "trajectory_id": "d",
            "turns": [
                {"turn_id": "1", "query": "medals?", "steps": [call("search_athletes", country="KE")], "agent_messages": ["Which athlete?"]},
                {"turn_id": "2", "query": "athlete 7", "steps": [call("get_medals", athlete_id=8)], "final_answer": "done"},
            ],
        }
    )
    d = _decisive(t, dialogue)
    assert (d.turn_id, d.step, d.tool) == ("1", 1, "get_medals")


def test_every_failure_of_the_bundled_sample_names_its_decisive_step(tmp_path):
    root = Path(__file__).resolve().parents[2] / "data" / "sample"
    out = tmp_path / "run"
    res = CliRunner().invoke(app, ["grade", "--tasks", str(root / "tasks.jsonl"), "--trajectories", str(root / "trajectories.jsonl"), "--out", str(out)])
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    failed = [r for r in rows if r["verdict"] == "fail"]
    assert failed and all(r.get("decisive_step") for r in failed)
    assert not any(r.get("decisive_step") for r in rows if r["verdict"] != "fail")
    for r in failed:
        d = r["decisive_step"]
        turn = next(t for t in r["turns"] if t["turn_id"] == d["turn_id"])
        assert turn["verdict"] == "fail" and d["check"] == next(c["check"] for c in turn["checks"] if c["outcome"] == "mismatch")
    html = (out / "report.html").read_text()
    assert 'class="decisive"' in html and "decisive step:" in html


# ---- judged -----------------------------------------------------------------------------------------
def _judged(server, tmp_path, steps: list[dict], reply: Reply) -> dict:
    """Grade one trajectory that needs the sufficiency judge (the reference read was never made)."""
    tools = [
        {"name": "winner", "parameters": {"type": "object", "properties": {"year": {"type": "integer"}}}},
        {"name": "news", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}},
    ]
    the_task = {"task_id": "t", "question": "Who won in 2012?", "gold_answer": "Usain Bolt", "tools": tools}
    the_task["reference_calls"] = [{"name": "winner", "arguments": {"year": 2012}}]
    (tmp_path / "tasks.jsonl").write_text(json.dumps(the_task) + "\n")
    (tmp_path / "traj.jsonl").write_text(json.dumps({"task_id": "t", "trajectory_id": "news", "steps": steps, "final_answer": "Usain Bolt"}) + "\n")
    server.set_default("judge-a", reply)
    out = tmp_path / "run"
    args = ["grade", "--tasks", str(tmp_path / "tasks.jsonl"), "--trajectories", str(tmp_path / "traj.jsonl"), "--out", str(out)]
    res = CliRunner().invoke(app, [*args, "--judge", "openai:judge-a", "--cache", str(tmp_path / "c.sqlite3")])
    assert res.exit_code == 0, res.output
    (row,) = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    return row


def test_a_judge_names_the_decisive_call_in_its_verdict(server, tmp_path):
    steps = [
        {"name": "news", "arguments": {"q": "2008 winner"}, "result": "Bolt wins"},
        {"name": "news", "arguments": {"q": "2012 winner"}, "result": "Bolt again"},
    ]
    row = _judged(server, tmp_path, steps, Reply("insufficient", decisive_step=1))
    assert (row["verdict"], row["failure_stage"]) == ("fail", "tool_selection")
    d = row["decisive_step"]
    assert (d["at"], d["step"], d["tool"], d["check"], d["decided_by"]) == ("call", 1, "news", "calls", "judge:panel")
    calls = next(c for c in row["turns"][0]["checks"] if c["check"] == "calls")
    assert calls["decision"]["decisive_step"] == 1 and calls["decision"]["votes"][0]["decisive_step"] == 1
    sent = next(b for b in (json.dumps(r.body) for r in server.requests) if "2008 winner" in b)  # the real question, not a control
    # the judge saw each call's step and was asked for decisive_step
    assert "decisive_step" in sent and '\\"step\\": 1' in sent


def test_a_step_the_judge_names_outside_the_turn_is_not_kept(server, tmp_path):
    row = _judged(server, tmp_path, [{"name": "news", "arguments": {"q": "2012"}, "result": "Bolt"}], Reply("insufficient", decisive_step=7))
    assert row["decisive_step"]["at"] == "end" and row["decisive_step"]["step"] == 1  # no call 7: the judged turn's end
