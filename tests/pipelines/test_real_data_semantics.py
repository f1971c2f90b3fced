"""Semantics that real trajectories need (issue 9): unknown outcomes, partial and alternative
references, outcome grading, exact call counts, required content, answer patterns, episodes and
turns with nothing to check. Each rule with a passing and a failing example."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from judge import Check, FailureStage, Outcome, Task, Trajectory, VerdictLabel
from pipelines.config import GradingConfig
from tests.pipelines.helpers import BOOK, MEDALS, SEARCH, call, grade, task, traj

NOTE = {
    "name": "update_ticket",
    "side_effect": "write",
    "parameters": {
        "type": "object",
        "properties": {"ticket": {"type": "string"}, "status": {"type": "string"}, "reason": {"type": "string"}, "meta": {"type": "object"}},
        "required": ["ticket", "status"],
    },
}
TOOLS = [SEARCH, MEDALS, BOOK, NOTE]


def verdict(case):
    r = case.result()
    return r.verdict, r.failure_stage


def unknown(name: str, **arguments):
    """A call proposed but never executed: no result recorded."""
    return {"name": name, "arguments": arguments}


# ---- calls with no recorded result ------------------------------------------------------------
def test_a_call_without_result_is_made_not_failed():
    case = grade(task([{"name": "get_medals", "arguments": {"athlete_id": 7}}], gold=None), traj([unknown("get_medals", athlete_id=7)], answer=None))
    assert verdict(case) == (VerdictLabel.PASS, FailureStage.NONE)
    evidence = case.turns[0].checks[Check.CALLS].evidence[0]
    assert evidence.kind == "matched_structural" and "no result recorded" in evidence.message


def test_a_call_without_result_with_wrong_values_fails_at_values():
    case = grade(task([{"name": "get_medals", "arguments": {"athlete_id": 7}}], gold=None), traj([unknown("get_medals", athlete_id=8)], answer=None))
    assert verdict(case) == (VerdictLabel.FAIL, FailureStage.ARGUMENT_VALUES)


def test_only_an_explicit_error_fails_a_call():
    failed = {"name": "get_medals", "arguments": {"athlete_id": 7}, "status": "error", "error": "timeout"}
    case = grade(task([{"name": "get_medals", "arguments": {"athlete_id": 7}}], gold=None), traj([failed], answer=None))
    assert verdict(case) == (VerdictLabel.FAIL, FailureStage.ARGUMENT_VALUES)
    assert "failed (error)" in case.turns[0].checks[Check.CALLS].reason


# ---- partial references -----------------------------------------------------------------------
REF_NOTE = {"name": "update_ticket", "arguments": {"ticket": "T1", "status": "closed", "meta": {"source": "chat"}}}


def test_extra_arguments_allow_ignores_unmentioned_arguments_and_nested_keys():
    step = call("update_ticket", ticket="T1", status="closed", reason="user asked", meta={"source": "chat", "by": "agent"})
    strict = grade(task([REF_NOTE], gold=None, tools=TOOLS), traj([step], answer=None))
    assert verdict(strict) == (VerdictLabel.FAIL, FailureStage.ARGUMENT_NAMES)
    per_call = grade(task([{**REF_NOTE, "extra_arguments": "allow"}], gold=None, tools=TOOLS), traj([step], answer=None))
    assert verdict(per_call) == (VerdictLabel.PASS, FailureStage.NONE)
    task_default = grade(task([REF_NOTE], gold=None, tools=TOOLS, extra_arguments="allow"), traj([step], answer=None))
    assert verdict(task_default) == (VerdictLabel.PASS, FailureStage.NONE)


def test_extra_arguments_allow_still_rejects_arguments_the_tool_does_not_declare():
    step = call("update_ticket", ticket="T1", status="closed", meta={"source": "chat"}, colour="red")
    case = grade(task([{**REF_NOTE, "extra_arguments": "allow"}], gold=None, tools=TOOLS), traj([step], answer=None))
    assert verdict(case) == (VerdictLabel.FAIL, FailureStage.ARGUMENT_NAMES)


def test_extra_arguments_allow_does_not_relax_the_values_it_mentions():
    step = call("update_ticket", ticket="T1", status="open", meta={"source": "chat"})
    case = grade(task([{**REF_NOTE, "extra_arguments": "allow"}], gold=None, tools=TOOLS), traj([step], answer=None))
    assert verdict(case) == (VerdictLabel.FAIL, FailureStage.ARGUMENT_VALUES)


def test_an_advisory_reference_call_never_fails_the_trajectory():
    refs = [{"name": "get_medals", "arguments": {"athlete_id": 7}}, {"name": "search_athletes", "arguments": {"country": "Kenya"}, "required": False}]
    case = grade(task(refs, gold=None), traj([call("get_medals", athlete_id=7)], answer=None))
    assert verdict(case) == (VerdictLabel.PASS, FailureStage.NONE)
    assert [e.kind for e in case.turns[0].checks[Check.CALLS].evidence] == ["matched_structural", "advisory_unmatched"]
    assert case.result().scores.path_completeness == 1.0  # advisory calls count in no score


def test_alternative_argument_sets_any_one_satisfies():
    ref = {"name": "search_athletes", "arguments": {"country": "Kenya"}, "alternatives": [{"arguments": {"country": "KEN", "limit": 5}}]}
    ok = grade(task([ref], gold=None), traj([call("search_athletes", country="KEN", limit=5)], answer=None))
    assert verdict(ok) == (VerdictLabel.PASS, FailureStage.NONE)
    bad = grade(task([ref], gold=None), traj([call("search_athletes", country="Chile")], answer=None))
    assert verdict(bad) == (VerdictLabel.FAIL, FailureStage.ARGUMENT_VALUES)
    assert "none of the 2 accepted argument sets" in bad.turns[0].checks[Check.CALLS].reason


def test_pattern_rule_is_a_full_match_and_is_checked_when_the_task_is_read():
    ref = {"name": "update_ticket", "arguments": {"status": "closed"}, "argument_rules": {"ticket": {"pattern": r"T\d+"}}}
    ok = grade(task([ref], gold=None, tools=TOOLS), traj([call("update_ticket", ticket="T12", status="closed")], answer=None))
    assert verdict(ok) == (VerdictLabel.PASS, FailureStage.NONE)
    bad = grade(task([ref], gold=None, tools=TOOLS), traj([call("update_ticket", ticket="xT12", status="closed")], answer=None))
    assert verdict(bad) == (VerdictLabel.FAIL, FailureStage.ARGUMENT_VALUES)
    assert "does not match the pattern" in bad.turns[0].checks[Check.CALLS].reason
    with pytest.raises(ValidationError, match="invalid regular expression"):
        task([{"name": "update_ticket", "arguments": {}, "argument_rules": {"ticket": {"pattern": "(a)\\1"}}}], tools=TOOLS)


def test_outcome_grading_makes_reads_advisory_and_writes_decisive():
    refs = [{"name": "search_athletes", "arguments": {"country": "Kenya"}}, {"name": "book_seat", "arguments": {"flight": "F1", "seat": "2A"}}]
    booked = [call("book_seat", flight="F1", seat="2A")]
    outcome = grade(task(refs, gold=None, grading="outcome"), traj(booked, answer=None))
    assert verdict(outcome) == (VerdictLabel.PASS, FailureStage.NONE)
    trajectory = grade(task(refs, gold=None), traj(booked, answer=None))
    assert verdict(trajectory) == (VerdictLabel.FAIL, FailureStage.TOOL_SELECTION)
    wrong_write = grade(task(refs, gold=None, grading="outcome"), traj([call("book_seat", flight="F1", seat="9C")], answer=None))
    assert verdict(wrong_write) == (VerdictLabel.FAIL, FailureStage.ARGUMENT_VALUES)


def test_extra_calls_forbid_counts_calls_exactly():
    ref = [{"name": "get_medals", "arguments": {"athlete_id": 7}}]
    steps = [unknown("get_medals", athlete_id=7), unknown("search_athletes", country="Kenya")]
    assert verdict(grade(task(ref, gold=None), traj(steps, answer=None))) == (VerdictLabel.PASS, FailureStage.NONE)
    strict = grade(task(ref, gold=None, extra_calls="forbid"), traj(steps, answer=None))
    assert verdict(strict) == (VerdictLabel.FAIL, FailureStage.TOOL_SELECTION)
    assert "surplus call search_athletes" in strict.turns[0].checks[Check.CALLS].reason


def test_a_second_attempt_beyond_the_unsatisfied_references_is_surplus_but_the_first_is_diagnosed():
    refs = [{"name": "get_medals", "arguments": {"athlete_id": 7}}, {"name": "get_medals", "arguments": {"athlete_id": 8}}]
    steps = [unknown("get_medals", athlete_id=7), unknown("get_medals", athlete_id=9)]
    case = grade(task(refs, gold=None, extra_calls="forbid"), traj(steps, answer=None))
    assert verdict(case) == (VerdictLabel.FAIL, FailureStage.ARGUMENT_VALUES)  # the attempt at id 8, not "surplus"
    steps.append(unknown("get_medals", athlete_id=10))
    case = grade(task(refs, gold=None, extra_calls="forbid"), traj(steps, answer=None))
    assert verdict(case) == (VerdictLabel.FAIL, FailureStage.TOOL_SELECTION)  # one call more than the task has


# ---- answers ----------------------------------------------------------------------------------
def test_required_content_may_be_told_in_any_agent_message():
    t = task([], gold=None, required_content=["1,530", "refund"])
    told = Trajectory.model_validate(
        {
            "task_id": "t1",
            "trajectory_id": "a",
            "turns": [{"agent_messages": ["Your refund is on its way.", "The total was 1530 dollars."], "final_answer": "Bye!"}],
        }
    )
    assert verdict(grade(t, told)) == (VerdictLabel.PASS, FailureStage.NONE)
    untold = Trajectory.model_validate(
        {"task_id": "t1", "trajectory_id": "a", "turns": [{"agent_messages": ["Your refund is on its way."], "final_answer": "Bye!"}]}
    )
    case = grade(t, untold)
    assert verdict(case) == (VerdictLabel.FAIL, FailureStage.ANSWER_CORRECTNESS)
    assert "never told the user: ['1,530']" in case.turns[0].checks[Check.ANSWER].reason


def test_a_required_number_is_not_found_inside_a_longer_one():
    t = task([], gold=None, required_content=["50"])

    def told(message: str) -> Trajectory:
        return Trajectory.model_validate({"task_id": "t1", "trajectory_id": "a", "turns": [{"agent_messages": [message], "final_answer": "Bye!"}]})

    for message in ("The fee is 150.", "The fee is 50.5 dollars.", "Reference 5012."):
        assert verdict(grade(t, told(message))) == (VerdictLabel.FAIL, FailureStage.ANSWER_CORRECTNESS), message
    for message in ("The fee is $50.", "The fee is $50.00.", "A fee of 50, as agreed."):
        assert verdict(grade(t, told(message))) == (VerdictLabel.PASS, FailureStage.NONE), message


def test_gold_answer_pattern_is_searched_in_the_answer():
    t = task([], gold=None, gold_answer_pattern=r"\bB\d{4}\b")
    assert verdict(grade(t, traj([], answer="Booked: reference B1234."))) == (VerdictLabel.PASS, FailureStage.NONE)
    assert verdict(grade(t, traj([], answer="Booked: reference X1234."))) == (VerdictLabel.FAIL, FailureStage.ANSWER_CORRECTNESS)
    with_gold = task([], gold="forty-two", gold_answer_pattern=r"\b42\b")
    assert verdict(grade(with_gold, traj([], answer="It is 42."))) == (VerdictLabel.PASS, FailureStage.NONE)
    assert verdict(grade(with_gold, traj([], answer="forty-two"))) == (VerdictLabel.PASS, FailureStage.NONE)  # gold still accepted


# ---- nothing vacuous --------------------------------------------------------------------------
def _stating_nothing(**extra):
    """A task with no reference key at all, no answer and no policy: it states nothing."""
    return Task.model_validate({"task_id": "t1", "question": "Do something", "tools": [SEARCH, MEDALS, BOOK], **extra})


def test_a_turn_with_nothing_to_check_is_unresolved_never_pass():
    case = grade(_stating_nothing(), traj([call("get_medals", athlete_id=7)], answer="done"))
    result = case.result()
    assert (result.verdict, result.failure_stage, result.decided_by) == (VerdictLabel.UNRESOLVED, None, "unresolved")
    assert result.turns[0].reason.startswith("nothing to check")
    assert case.next_escalation() is None  # no judge is asked about an empty specification


def test_no_write_is_a_check_when_the_task_states_its_reference_calls():
    stated = task([], gold=None)  # reference_calls: [] -- the task says no call is needed: the state must stay unchanged
    assert stated.turns[0].states_calls and not _stating_nothing().turns[0].states_calls
    reads = grade(stated, traj([call("get_medals", athlete_id=7)], answer="done"))
    assert verdict(reads) == (VerdictLabel.PASS, FailureStage.NONE)
    assert "no write succeeded" in reads.turns[0].checks[Check.CALLS].reason
    writes = grade(stated, traj([call("get_medals", athlete_id=7), call("book_seat", flight="F1", seat="2A")], answer="done"))
    assert verdict(writes) == (VerdictLabel.FAIL, FailureStage.TOOL_SELECTION)
    assert writes.turns[0].checks[Check.CALLS].reason == "surplus write book_seat at step 1"
    failed = grade(stated, traj([call("book_seat", "Error: no seat", flight="F1", seat="2A")], answer="done"))
    assert verdict(failed) == (VerdictLabel.PASS, FailureStage.NONE)  # a failed write changed nothing


def test_no_write_needs_every_call_to_be_a_declared_tool():
    stated = task([], gold=None)
    case = grade(stated, traj([call("mystery_tool", x=1)], answer="done"))  # whether it writes is not known
    result = case.result()
    assert result.verdict == VerdictLabel.UNRESOLVED and "mystery_tool" in result.turns[0].reason


def test_an_unchecked_final_state_expects_no_write_and_forgives_surplus_writes():
    unchecked = task([], gold=None, final_state="unchecked")
    assert verdict(grade(unchecked, traj([call("book_seat", flight="F1", seat="2A")], answer=None)))[0] == VerdictLabel.UNRESOLVED
    required = task([{"name": "get_medals", "arguments": {"athlete_id": 7}}], gold=None, final_state="unchecked")
    surplus = grade(required, traj([call("get_medals", athlete_id=7), call("book_seat", flight="F1", seat="2A")], answer=None))
    assert verdict(surplus) == (VerdictLabel.PASS, FailureStage.NONE)


def test_environment_assertions_leave_a_turn_open_unless_something_else_fails():
    gated = task([], gold=None, environment_assertions=[{"func_name": "assert_mobile_data_status", "arguments": {"expected_status": True}}])
    case = grade(gated, traj([call("get_medals", athlete_id=7)], answer="done"))
    result = case.result()
    assert result.verdict == VerdictLabel.UNRESOLVED and result.turns[0].reason.startswith("needs the environment")
    assert case.next_escalation() is None
    wrote = grade(gated, traj([call("book_seat", flight="F1", seat="2A")], answer="done"))
    assert verdict(wrote) == (VerdictLabel.FAIL, FailureStage.TOOL_SELECTION)


def test_a_domain_policy_document_is_context_unless_the_run_gates_on_it():
    domain = task([], gold=None, policy={"text": "Confirm before any booking.", "scope": "domain"})
    case = grade(domain, traj([call("get_medals", athlete_id=7)], answer="done"))
    policy = case.turns[0].checks[Check.POLICY]
    assert policy.outcome == Outcome.SKIPPED and [e.kind for e in policy.evidence] == ["policy_not_audited"]
    assert verdict(case) == (VerdictLabel.PASS, FailureStage.NONE)  # decided by the "no write" check
    gated = grade(domain, traj([call("get_medals", athlete_id=7)], answer="done"), GradingConfig(policy_text="gate"))
    assert gated.turns[0].checks[Check.POLICY].outcome == Outcome.INCONCLUSIVE and gated.next_escalation() == (0, Check.POLICY)
    per_task = task([], gold=None, policy={"text": "Confirm before any booking."})  # a task's own policy always gates
    assert grade(per_task, traj([call("get_medals", athlete_id=7)], answer="done")).turns[0].checks[Check.POLICY].outcome == Outcome.INCONCLUSIVE
    only_domain = _stating_nothing(policy={"text": "Be polite.", "scope": "domain"})  # context is not something to check
    assert grade(only_domain, traj([], answer="done")).result().turns[0].reason.startswith("nothing to check")


def test_a_policy_alone_is_something_to_check():
    t = task([], gold=None, policy={"forbidden_tools": ["book_seat"]})
    assert verdict(grade(t, traj([call("get_medals", athlete_id=7)], answer=None))) == (VerdictLabel.PASS, FailureStage.NONE)
    assert verdict(grade(t, traj([call("book_seat", flight="F", seat="1")], answer=None))) == (VerdictLabel.FAIL, FailureStage.POLICY)


def test_nothing_to_check_never_hides_a_decisive_failure():
    case = grade(_stating_nothing(), traj([call("book_seat", flight="F1", seat="2A")], answer=None))
    assert verdict(case) == (VerdictLabel.FAIL, FailureStage.TOOL_SELECTION)  # an unasked write


# ---- episodes ---------------------------------------------------------------------------------
def _dialogue(*turns):
    return Trajectory.model_validate({"task_id": "t1", "trajectory_id": "d", "turns": list(turns)})


ONE_GOAL = Task.model_validate(
    {
        "task_id": "t1",
        "question": "Get me the medals of athlete 7",
        "tools": [SEARCH, MEDALS],
        "reference_calls": [{"name": "search_athletes", "arguments": {"country": "Kenya"}}, {"name": "get_medals", "arguments": {"athlete_id": 7}}],
        "gold_answer": "3",
    }
)
FOLLOW_UP = _dialogue(
    {"turn_id": "1", "query": "medals of athlete 7?", "steps": [call("search_athletes", country="Kenya")], "agent_messages": ["Which year?"]},
    {"turn_id": "2", "query": "all years", "steps": [call("get_medals", athlete_id=7)], "agent_messages": ["3 medals."], "final_answer": "3 medals."},
)


def test_a_dialogue_against_a_one_goal_task_is_one_episode():
    case = grade(ONE_GOAL, FOLLOW_UP)
    assert verdict(case) == (VerdictLabel.PASS, FailureStage.NONE)
    assert len(case.turns) == 1 and [v.step.name for v in case.turns[0].ctx.steps] == ["search_athletes", "get_medals"]


def test_per_message_grading_rejects_more_messages_than_task_turns_with_a_clear_error():
    from judge import InputError

    with pytest.raises(InputError, match=r"2 user turns but task 't1' defines 1.*--turns episode"):
        grade(ONE_GOAL, FOLLOW_UP, GradingConfig(turns="per-message"))


def test_episode_mode_collapses_a_multi_turn_task():
    two_turns = Task.model_validate(
        {
            "task_id": "t1",
            "tools": [SEARCH, MEDALS],
            "turns": [
                {"turn_id": "1", "query": "find", "reference_calls": [{"id": "a", "name": "search_athletes", "arguments": {"country": "Kenya"}}]},
                {"turn_id": "2", "query": "medals", "reference_calls": [{"id": "a", "name": "get_medals", "arguments": {"athlete_id": 7}}], "gold_answer": "3"},
            ],
        }
    )
    one_message = _dialogue({"steps": [call("search_athletes", country="Kenya"), call("get_medals", athlete_id=7)], "final_answer": "3"})
    per_message = grade(two_turns, one_message)  # auto on a multi-turn task: the message answers turn 1 only
    assert per_message.result().verdict == VerdictLabel.FAIL
    episode = grade(two_turns, one_message, GradingConfig(turns="episode"))
    assert verdict(episode) == (VerdictLabel.PASS, FailureStage.NONE)
    ids = [c.id for c in episode.turns[0].ctx.turn.reference_calls]
    assert ids == ["1:a", "2:a"]  # repeated ids stay unambiguous


def test_per_message_maps_by_turn_id_else_in_order():
    two_turns = Task.model_validate(
        {
            "task_id": "t1",
            "tools": [SEARCH, MEDALS],
            "turns": [
                {"turn_id": "q1", "query": "find", "reference_calls": [{"name": "search_athletes", "arguments": {"country": "Kenya"}}]},
                {"turn_id": "q2", "query": "medals", "reference_calls": [{"name": "get_medals", "arguments": {"athlete_id": 7}}], "gold_answer": "3"},
            ],
        }
    )
    in_order = _dialogue(
        {"turn_id": "1", "steps": [call("search_athletes", country="Kenya")]},
        {"turn_id": "2", "steps": [call("get_medals", athlete_id=7)], "final_answer": "3"},
    )
    assert verdict(grade(two_turns, in_order)) == (VerdictLabel.PASS, FailureStage.NONE)
    by_id = _dialogue({"turn_id": "q2", "steps": [call("get_medals", athlete_id=7)], "final_answer": "3"})
    case = grade(two_turns, by_id)
    assert case.turns[0].ctx.traj_turn is None and case.turns[1].ctx.traj_turn is not None


def test_a_call_that_satisfied_another_reference_is_no_attempt_at_a_missing_one():
    refs = [{"name": "get_medals", "arguments": {"athlete_id": 7}}, {"name": "get_medals", "arguments": {"athlete_id": 8}}]
    case = grade(task(refs, gold=None, extra_calls="forbid"), traj([unknown("get_medals", athlete_id=7)], answer=None))
    assert verdict(case) == (VerdictLabel.FAIL, FailureStage.TOOL_SELECTION)  # one call short: never made, not "wrong value"
    assert "get_medals was never called" in case.turns[0].checks[Check.CALLS].reason
