"""Content the source did not record is unknown, not the agent's failure (issue 24, part 3).

OTel GenAI instrumentations record no message content and no tool arguments unless asked: the
calls were made with unknown arguments, the answer is unknown, and the trajectory is unresolved
with the reason ("content not recorded: set OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true
..."), unless something recorded decides it. The real files were written by
opentelemetry-instrumentation-openai-v2 (fixtures/frameworks/otel_openai_v2/ORIGIN.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from judge import Check, FailureStage, Outcome, Trajectory, VerdictLabel
from pipelines.cli import app
from pipelines.ingest import read_trajectories
from pipelines.orchestration import assess_orchestration
from tests.pipelines.helpers import BOOK, MEDALS, call, grade, task
from tests.servers import LoopbackServer, Reply

FRAMEWORKS = Path(__file__).resolve().parents[1] / "fixtures" / "frameworks"
CONTENT_OFF = FRAMEWORKS / "otel_openai_v2" / "content_off.otlp.jsonl"
REASON = "content not recorded: set OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true"
MEDALS_REF = {"name": "get_medals", "arguments": {"athlete_id": 7}}


def blind(name: str, **extra: Any) -> dict:
    """A call whose arguments were not recorded."""
    return {"name": name, "arguments": None, **extra}


def traj(steps: list[dict], answer: Any = None, *, heard: bool = True, **extra: Any) -> Trajectory:
    turn = {"turn_id": "1", "steps": steps, "final_answer": answer if heard else None, "answer_recorded": heard}
    return Trajectory.model_validate({"task_id": "t1", "trajectory_id": "a", "turns": [turn], **extra})


def verdict(case):
    r = case.result()
    return r.verdict, r.failure_stage


# ---- the files the instrumentation wrote -------------------------------------------------------


def test_the_reader_marks_what_content_capture_off_left_out():
    items = list(read_trajectories(CONTENT_OFF).items)
    assert [i.task_id for i in items] == ["add-1", "add-2", "add-3"]
    for item in items:
        traj = item.trajectory
        (step,) = traj.steps
        assert (step.name, step.arguments, step.arguments_recorded) == ("add", None, False)
        (turn,) = traj.turns
        assert (turn.final_answer, turn.answer_recorded) == (None, False)
        assert traj.not_recorded.startswith(REASON) and "span_only" in traj.not_recorded


def test_content_capture_off_is_unresolved_with_the_reason_and_asks_no_judge(tmp_path):
    """Before: all three failed at argument_names ("missing argument 'a'", "the prediction gives no answer")."""
    out = tmp_path / "run"
    with LoopbackServer(default=Reply("correct")) as srv:
        args = ["grade", "--tasks", str(FRAMEWORKS / "add_tasks.jsonl"), "--trajectories", str(CONTENT_OFF), "--out", str(out), "--controls", "off"]
        result = CliRunner().invoke(
            app, [*args, "--judge", "openai:judge-a", "--no-cache"], env={"OPENAI_BASE_URL": srv.openai_base_url, "OPENAI_API_KEY": "x"}
        )
        assert result.exit_code == 0, result.output
        assert srv.calls() == 0  # a judge would see no more than the rule: nothing was asked
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [(r["task_id"], r["verdict"], r["decided_by"]) for r in rows] == [(f"add-{i}", "unresolved", "unresolved") for i in (1, 2, 3)]
    for row in rows:
        (turn,) = row["turns"]
        assert turn["reason"].startswith(REASON)
        checks = {c["check"]: c for c in turn["checks"]}
        assert checks["calls"]["outcome"] == checks["answer"]["outcome"] == "inconclusive"
        assert "add was called at step 0, but its arguments were not recorded" in checks["calls"]["reason"]
        assert [e["kind"] for e in checks["answer"]["evidence"]] == ["not_recorded"]
        assert row["scores"].get("parameter") is None  # unknown, not 0


# ---- the model -------------------------------------------------------------------------------


def test_native_trajectories_say_it_with_null_arguments_and_answer_recorded():
    tr = traj([blind("get_medals")], heard=False)
    assert tr.not_recorded == "content not recorded by the source"  # marked without a reason: a default one
    assert traj([call("get_medals", athlete_id=7)], "42").not_recorded is None
    with pytest.raises(ValidationError, match="answer_recorded is false but a final_answer is given"):
        Trajectory.model_validate({"task_id": "t", "trajectory_id": "a", "turns": [{"final_answer": "42", "answer_recorded": False}]})


# ---- what stays open ------------------------------------------------------------------------------


def test_the_right_tool_with_unrecorded_arguments_is_open_not_failed():
    case = grade(task([MEDALS_REF]), traj([blind("get_medals", result=42)], "42"))
    assert verdict(case) == (VerdictLabel.UNRESOLVED, None)
    assert case.turns[0].checks[Check.GROUNDING].outcome == Outcome.MATCH  # the recorded answer in the recorded output
    calls = case.turns[0].checks[Check.CALLS]
    assert calls.outcome == Outcome.INCONCLUSIVE and [e.kind for e in calls.evidence] == ["not_recorded"]
    assert case.result().turns[0].reason == "content not recorded by the source"
    assert case.next_escalation() is None


def test_an_unrecorded_answer_is_open_not_missing():
    case = grade(task([MEDALS_REF]), traj([call("get_medals", result=3, athlete_id=7)], heard=False))
    assert verdict(case) == (VerdictLabel.UNRESOLVED, None)
    answer = case.turns[0].checks[Check.ANSWER]
    assert answer.outcome == Outcome.INCONCLUSIVE and answer.label is None and "the answer was not recorded" in answer.reason
    assert case.turns[0].checks[Check.GROUNDING].outcome == Outcome.SKIPPED
    assert case.next_escalation() is None


def test_the_alternative_path_question_is_open_when_every_stand_in_is_unrecorded():
    case = grade(task([MEDALS_REF]), traj([blind("search_athletes")], heard=False))
    calls = case.turns[0].checks[Check.CALLS]
    assert calls.outcome == Outcome.INCONCLUSIVE and [e.kind for e in calls.evidence] == ["not_recorded"]
    assert "may have retrieved the same information, but their arguments were not recorded" in calls.reason
    assert case.next_escalation() is None


def test_required_content_found_in_what_was_recorded_still_counts():
    t = task([], gold=None, required_content=["flight AF12"])
    said = {"turn_id": "1", "steps": [], "agent_messages": ["Your flight AF12 is booked."], "answer_recorded": False}
    found = grade(t, Trajectory.model_validate({"task_id": "t1", "trajectory_id": "a", "turns": [said]}))
    assert found.turns[0].checks[Check.ANSWER].outcome == Outcome.MATCH
    unheard = grade(t, traj([], heard=False))
    assert unheard.turns[0].checks[Check.ANSWER].outcome == Outcome.INCONCLUSIVE  # not "never told the user"


# ---- what was recorded still decides -----------------------------------------------------------


def test_a_needed_write_never_called_still_fails_at_tool_selection():
    ref = {"name": "book_seat", "arguments": {"flight": "AF12", "seat": "3A"}}
    case = grade(task([ref], gold=None, tools=[MEDALS, BOOK]), traj([blind("get_medals")], heard=False))
    assert verdict(case) == (VerdictLabel.FAIL, FailureStage.TOOL_SELECTION)
    assert "book_seat was never called" in case.turns[0].checks[Check.CALLS].reason


def test_a_surplus_write_with_unrecorded_arguments_still_fails():
    case = grade(task([MEDALS_REF], tools=[MEDALS, BOOK]), traj([call("get_medals", result=3, athlete_id=7), blind("book_seat")], "42"))
    assert verdict(case) == (VerdictLabel.FAIL, FailureStage.TOOL_SELECTION)
    assert "surplus write book_seat" in case.turns[0].checks[Check.CALLS].reason


def test_a_forbidden_tool_still_fails_the_policy_and_a_banned_value_stays_open():
    forbidden = grade(task([MEDALS_REF], policy={"forbidden_tools": ["book_seat"]}), traj([blind("get_medals"), blind("book_seat")], heard=False))
    assert verdict(forbidden) == (VerdictLabel.FAIL, FailureStage.POLICY)
    ban = {"forbidden_arguments": [{"tool": "get_medals", "argument": "athlete_id", "values": [13]}]}
    banned = grade(task([MEDALS_REF], policy=ban), traj([blind("get_medals", result=42)], "42"))
    policy = banned.turns[0].checks[Check.POLICY]
    assert policy.outcome == Outcome.INCONCLUSIVE and [e.kind for e in policy.evidence] == ["not_recorded"]
    assert "whether it passed a forbidden value for get_medals.athlete_id is unknown" in policy.reason
    assert verdict(banned) == (VerdictLabel.UNRESOLVED, None) and banned.next_escalation() is None


def test_a_recorded_wrong_answer_fails_whatever_the_arguments_were():
    case = grade(task([MEDALS_REF]), traj([blind("get_medals", result=3)], "17"))
    result = case.result()
    assert (result.verdict, result.failure_stage) == (VerdictLabel.FAIL, FailureStage.ANSWER_CORRECTNESS)
    assert result.unresolved_stages == [FailureStage.TOOL_SELECTION]  # where it broke may be earlier: unknown
    assert case.next_escalation() is None  # the open calls check rests on what was not recorded


def test_recorded_wrong_values_fail_whatever_the_answer_was():
    case = grade(task([MEDALS_REF]), traj([call("get_medals", result=3, athlete_id=8)], heard=False))
    assert verdict(case) == (VerdictLabel.FAIL, FailureStage.ARGUMENT_VALUES)


def test_a_recorded_open_answer_is_still_judged():
    """The paraphrase was recorded: the answer judge may decide it; the calls check is not asked."""
    t = task([MEDALS_REF], gold="Usain Bolt won three gold medals at London 2012")
    case = grade(t, traj([blind("get_medals", result=3)], "At the London games of 2012 he took gold three times, Bolt did"))
    assert case.turns[0].checks[Check.ANSWER].outcome == Outcome.INCONCLUSIVE
    assert case.next_escalation() == (0, Check.ANSWER)


# ---- what the other measures make of it ---------------------------------------------------------


def test_unrecorded_repeats_are_no_loop_and_an_unrecorded_retry_is_not_called_a_fix():
    t = task([MEDALS_REF])
    same = [blind("get_medals", result=3) for _ in range(3)]
    result = grade(t, traj(same, heard=False)).result()
    assert not result.orchestration.looping and result.orchestration.loop_repeats == 0
    failed = blind("get_medals", status="error", error="timeout")
    retry = grade(t, traj([failed, blind("get_medals", result=3)], heard=False))
    events = assess_orchestration(t, retry.trajectory, retry.result(), "auto").recovery
    assert [e.outcome for e in events] == ["retried_unrecorded"]
