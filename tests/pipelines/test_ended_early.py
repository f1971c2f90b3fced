"""A run that ended before the agent finished (a limit hit, a crash: ``Trajectory.ended_early``) fails at
answer correctness on the turn it stopped in, unless it broke earlier; it is never a judge's question,
and the calls check does not read it as a wrong answer."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from judge import Check, EvidenceKind, FailureStage, Outcome, Task, Trajectory, VerdictLabel
from pipelines.config import GradingConfig
from tests.pipelines.helpers import call, grade, task, traj

REF_SEARCH = {"name": "search_athletes", "arguments": {"country": "Kenya"}}
REF_MEDALS = {"name": "get_medals", "arguments": {"athlete_id": 7}}
STEPS = [call("search_athletes", country="Kenya"), call("get_medals", athlete_id=7)]
LIMIT = {"kind": "limit", "reason": "the harness's step limit (30) was reached"}
CRASH = {"kind": "error", "reason": "the agent raised RuntimeError('context lost')"}


def verdict(case):
    r = case.result()
    return r.verdict, r.failure_stage


def answer(case, turn: int = 0):
    return case.turns[turn].checks[Check.ANSWER]


def test_a_finished_run_is_unaffected():
    case = grade(task([REF_SEARCH, REF_MEDALS]), traj(STEPS))
    assert verdict(case) == (VerdictLabel.PASS, FailureStage.NONE)


@pytest.mark.parametrize("ended", [LIMIT, CRASH])
def test_a_run_that_ended_early_fails_at_answer_correctness_with_its_reason(ended):
    case = grade(task([REF_SEARCH, REF_MEDALS]), traj(STEPS, ended_early=ended))  # right calls, right answer "42"
    assert verdict(case) == (VerdictLabel.FAIL, FailureStage.ANSWER_CORRECTNESS)
    result = answer(case)
    assert result.label == "missing"  # the agent never delivered its answer: nothing wrong was said, CRAG 0
    assert result.reason == f"the run ended before the agent finished ({ended['kind']}): {ended['reason']}"
    (evidence,) = result.evidence
    assert evidence.kind == EvidenceKind.ENDED_EARLY and evidence.expected == ended["kind"] and evidence.actual == "42"
    graded = case.result()
    assert graded.decided_by == "deterministic" and graded.unresolved_stages == []
    assert ended["reason"] in graded.reason
    assert case.next_escalation() is None  # decided: no judge is asked
    assert graded.scores.crag == 0.0 and graded.scores.answer_accuracy == 0.0
    assert graded.scores.success == 1.0  # the calls themselves were all made: a tool-chain score, not the verdict


def test_an_earlier_policy_failure_still_wins():
    t = task([REF_MEDALS], policy={"forbidden_tools": ["search_athletes"]})
    case = grade(t, traj(STEPS, ended_early=LIMIT))
    assert verdict(case) == (VerdictLabel.FAIL, FailureStage.POLICY)


def test_an_earlier_calls_failure_still_wins():
    case = grade(task([REF_MEDALS]), traj([call("get_medals", athlete_id=8)], ended_early=CRASH))
    assert verdict(case) == (VerdictLabel.FAIL, FailureStage.ARGUMENT_VALUES)
    assert answer(case).evidence[0].kind == EvidenceKind.ENDED_EARLY  # recorded all the same


def test_a_call_only_task_fails_too_without_an_answer_label():
    t = task([REF_MEDALS], gold=None)
    finished = grade(t, traj([call("get_medals", athlete_id=7)], answer=None))
    assert verdict(finished) == (VerdictLabel.PASS, FailureStage.NONE) and answer(finished).outcome == Outcome.SKIPPED
    ended = grade(t, traj([call("get_medals", athlete_id=7)], answer=None, ended_early=LIMIT))
    assert verdict(ended) == (VerdictLabel.FAIL, FailureStage.ANSWER_CORRECTNESS)
    assert answer(ended).label is None  # no answer was asked for: none to label
    assert ended.result().scores.crag is None and ended.result().scores.answer_accuracy is None


def test_the_calls_check_does_not_read_an_early_end_as_a_wrong_answer():
    # a missed read, another call made, and an answer that does not match: decisive when the run finished
    t = task([REF_MEDALS])
    steps = [call("search_athletes", country="Kenya")]
    finished = grade(t, traj(steps, answer="41"))
    assert verdict(finished) == (VerdictLabel.FAIL, FailureStage.TOOL_SELECTION)
    assert "the answer is wrong" in finished.turns[0].checks[Check.CALLS].reason
    # cut off: the last message is no answer, so whether the other call could stand in stays open
    ended = grade(t, traj(steps, answer="41", ended_early=LIMIT))
    assert ended.turns[0].checks[Check.CALLS].outcome == Outcome.INCONCLUSIVE
    assert verdict(ended) == (VerdictLabel.FAIL, FailureStage.ANSWER_CORRECTNESS)
    assert ended.result().unresolved_stages == [FailureStage.TOOL_SELECTION]  # a judge could only move the blame earlier
    assert ended.next_escalation() == (0, Check.CALLS)  # the open calls question, never the answer


def test_a_missed_write_is_decisive_whatever_the_ending():
    t = task([{"name": "book_seat", "arguments": {"flight": "LH1", "seat": "3A"}}], gold=None)
    case = grade(t, traj([], answer=None, ended_early=CRASH))
    assert verdict(case) == (VerdictLabel.FAIL, FailureStage.TOOL_SELECTION)


# ---- multi-turn ---------------------------------------------------------------------------------
TWO_TURNS = {"task_id": "t1", "turns": [{"turn_id": 1, "query": "a", "gold_answer": "1"}, {"turn_id": 2, "query": "b", "gold_answer": "2"}]}


def _two(turns, ended=None):
    data = {"task_id": "t1", "trajectory_id": "x", "turns": turns}
    if ended is not None:
        data["ended_early"] = ended
    return Trajectory.model_validate(data)


def test_per_message_the_turn_the_run_stopped_in_fails_and_the_one_never_reached_is_missing():
    t = Task.model_validate(TWO_TURNS)
    case = grade(t, _two([{"turn_id": 1, "final_answer": "1"}], ended=LIMIT))
    assert [c.checks[Check.ANSWER].outcome for c in case.turns] == [Outcome.MISMATCH, Outcome.MISMATCH]
    assert answer(case, 0).evidence[0].kind == EvidenceKind.ENDED_EARLY  # "1" was right, but the run stopped there
    assert answer(case, 1).reason == "the trajectory has no turn 2" and answer(case, 1).label == "missing"
    r = case.result()
    assert (r.verdict, r.failure_stage) == (VerdictLabel.FAIL, FailureStage.ANSWER_CORRECTNESS) and r.reason.startswith("turn 1: answer: the run ended")


def test_per_message_a_named_turn_fails_and_later_turns_are_graded_as_recorded():
    t = Task.model_validate(TWO_TURNS)
    turns = [{"turn_id": 1, "final_answer": "1"}, {"turn_id": 2, "final_answer": "2"}]
    case = grade(t, _two(turns, ended={**CRASH, "turn_id": 1}))
    assert answer(case, 0).outcome == Outcome.MISMATCH and answer(case, 1).outcome == Outcome.MATCH
    assert case.result().turns[0].verdict == VerdictLabel.FAIL and case.result().turns[1].verdict == VerdictLabel.PASS
    finished = grade(t, _two(turns))
    assert finished.result().verdict == VerdictLabel.PASS


def test_an_episode_holds_the_turn_it_stopped_in():
    t = task([], gold="42")  # one goal: the dialogue is one episode
    tr = Trajectory.model_validate(
        {"task_id": "t1", "trajectory_id": "x", "turns": [{"turn_id": 1, "final_answer": "hm"}, {"turn_id": 2, "final_answer": "42"}], "ended_early": LIMIT}
    )
    case = grade(t, tr)
    assert len(case.turns) == 1 and verdict(case) == (VerdictLabel.FAIL, FailureStage.ANSWER_CORRECTNESS)
    two = Task.model_validate(TWO_TURNS)  # a multi-turn task collapsed into one episode too
    tr2 = tr.model_copy(update={"turns": [tr.turns[0].model_copy(update={"final_answer": "1"}), tr.turns[1].model_copy(update={"final_answer": "2"})]})
    assert verdict(grade(two, tr2.model_copy(update={"ended_early": None}), GradingConfig(turns="episode"))) == (VerdictLabel.PASS, FailureStage.NONE)
    assert verdict(grade(two, tr2, GradingConfig(turns="episode"))) == (VerdictLabel.FAIL, FailureStage.ANSWER_CORRECTNESS)


# ---- the field ------------------------------------------------------------------------------------
def test_the_native_format_reads_and_checks_the_field(tmp_path):
    from pipelines.ingest import iter_trajectories

    good = {"task_id": "t1", "trajectory_id": "a", "final_answer": "x", "ended_early": {"kind": "limit", "reason": "message limit 10", "turn_id": 1}}
    bad_kind = {"task_id": "t1", "trajectory_id": "b", "final_answer": "x", "ended_early": {"kind": "tired", "reason": "?"}}
    no_turn = {"task_id": "t1", "trajectory_id": "c", "final_answer": "x", "ended_early": {"kind": "error", "reason": "crash", "turn_id": "9"}}
    no_reason = {"task_id": "t1", "trajectory_id": "d", "final_answer": "x", "ended_early": {"kind": "error", "reason": ""}}
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in [good, bad_kind, no_turn, no_reason]))
    loaded = list(iter_trajectories(path))
    assert loaded[0].error is None and loaded[0].trajectory.ended_early.turn_id == "1"  # ids are strings
    assert loaded[0].trajectory.ended_turn is loaded[0].trajectory.turns[0]
    errors = [x.error for x in loaded[1:]]
    assert all(e is not None and e.line == i for i, e in enumerate(errors, start=2))
    assert errors[0].field.startswith("ended_early.kind")
    assert "ended_early.turn_id '9' names no turn" in errors[1].message
    assert errors[2].field.startswith("ended_early.reason")


def test_a_trajectory_that_finished_has_no_ended_turn_and_writes_no_field():
    tr = traj(STEPS)
    assert tr.ended_early is None and tr.ended_turn is None
    assert "ended_early" not in json.loads(tr.model_dump_json(exclude_none=True))
    with pytest.raises(ValidationError):
        traj(STEPS, ended_early={"kind": "limit"})  # a reason is required


def test_a_turn_never_reached_is_missing_whatever_its_answer_specification():
    spec = [{"required_content": ["14"]}, {"gold_answer_pattern": "^1"}, {"criteria": ["says a number"]}, {"gold_answer": "1"}]
    for extra in spec:
        t = Task.model_validate({"task_id": "t1", "turns": [{"turn_id": 1, "query": "a", "gold_answer": "1"}, {"turn_id": 2, "query": "b", **extra}]})
        case = grade(t, _two([{"turn_id": 1, "final_answer": "1"}], ended=LIMIT))
        assert (answer(case, 1).label, answer(case, 1).reason) == ("missing", "the trajectory has no turn 2"), extra
