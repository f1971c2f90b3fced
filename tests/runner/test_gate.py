"""The run-time policy gate and grading share one rule book, and grading treats blocked steps as
attempted violations that changed nothing (replay included)."""

from __future__ import annotations

from typing import Any

import pytest

from judge import Step, Task, Trajectory
from pipelines.checks import build_context, policy_violations
from pipelines.config import GradingConfig
from pipelines.grade import Replayer, grade_case
from pipelines.runner import PolicyGate
from tests.pipelines.helpers import BOOK, DOCS, MEDALS, SEARCH

POLICIES: list[dict[str, Any]] = [
    {"allowed_tools": ["get_medals", "search_docs"]},
    {"forbidden_tools": ["book_seat"]},
    {"max_calls": 2},
    {"read_only": True},
    {"forbidden_arguments": [{"tool": "search_athletes", "argument": "country", "values": ["North Korea"]}]},
    {"forbidden_arguments": [{"argument": "seat", "pattern": "^1[A-F]$"}]},
    {"allowed_sources": [{"turn_id": "1", "allowed": ["rag"]}]},
]
STEPS = [
    {"name": "search_docs", "arguments": {"query": "medal rules"}},
    {"name": "search_athletes", "arguments": {"country": "north korea"}},
    {"name": "get_medals", "arguments": {"athlete_id": 7}},
    {"name": "book_seat", "arguments": {"flight": "LJ1", "seat": "1A"}},
    {"name": "book_seat", "arguments": {"flight": "LJ1", "seat": "22C"}},
]


def _task(policy: dict[str, Any]) -> Task:
    return Task.model_validate(
        {
            "task_id": "t1",
            "question": "How many medals?",
            "tools": [SEARCH, MEDALS, BOOK, DOCS],
            "reference_calls": [{"name": "get_medals", "arguments": {"athlete_id": 7}}],
            "gold_answer": "3",
            "policy": {"text": "rules", **policy},
        }
    )


@pytest.mark.parametrize("policy", POLICIES, ids=lambda p: next(iter(p)))
def test_the_gate_blocks_exactly_the_calls_grading_flags(policy):
    task = _task(policy)
    steps = [Step.model_validate({**s, "result": "ok"}) for s in STEPS]
    trajectory = Trajectory.model_validate({"task_id": "t1", "trajectory_id": "a", "steps": [s.model_dump() for s in steps], "final_answer": "3"})
    ctx = build_context(task, task.turns[0], trajectory, trajectory.turns[0], GradingConfig())
    flagged = {e.step for e in policy_violations(ctx, task.policy)}  # type: ignore[arg-type]
    gate = PolicyGate(task)
    blocked = {i for i, step in enumerate(steps) if gate.check(task.turns[0], steps[:i], 0, step) is not None}
    assert blocked == flagged and blocked  # every policy here bans at least one of the steps


def test_calls_of_earlier_turns_count_towards_max_calls():
    task = _task({"max_calls": 2})
    gate = PolicyGate(task)
    step = Step(name="get_medals", arguments={"athlete_id": 7}, result="ok")
    assert gate.check(task.turns[0], [], 1, step) is None
    assert gate.check(task.turns[0], [], 2, step) == "call 3 exceeds max_calls=2"


def test_a_text_only_policy_blocks_nothing():
    task = Task.model_validate({"task_id": "t", "question": "q", "policy": {"text": "Be nice."}})
    assert not PolicyGate(task).active


def test_a_blocked_call_is_an_attempted_violation_that_changed_nothing():
    task = _task({"forbidden_tools": ["get_medals"]})
    trajectory = Trajectory.model_validate(
        {
            "task_id": "t1",
            "trajectory_id": "a",
            "steps": [
                {"name": "get_medals", "arguments": {"athlete_id": 7}, "status": "blocked", "error": "blocked by policy: tool 'get_medals' is forbidden"}
            ],
            "final_answer": "3",
        }
    )
    result = grade_case(task, trajectory, GradingConfig()).result()
    assert (result.verdict, result.failure_stage) == ("fail", "policy")
    [turn] = result.turns
    calls = next(c for c in turn.checks if c.check == "calls")
    assert calls.outcome == "mismatch"  # the blocked call did not satisfy the reference call


def test_replay_does_not_execute_blocked_or_fault_failed_calls():
    """A write the policy blocked must not change the replayed state, nor count as done."""
    task = Task.model_validate(
        {
            "task_id": "bags",
            "environment": "flights",
            "question": "How many checked bags does booking B0002 have?",
            "tools": [{"name": "get_booking", "parameters": {"type": "object", "properties": {"booking_id": {"type": "string"}}}},
                      {"name": "add_checked_bag", "side_effect": "write", "parameters": {"type": "object", "properties": {"booking_id": {"type": "string"}}}}],
            "reference_calls": [{"name": "get_booking", "arguments": {"booking_id": "B0002"}}],
            "gold_answer": "1",
            "policy": {"text": "Read only.", "read_only": True},
        }
    )  # fmt: skip
    steps = [
        {"name": "add_checked_bag", "arguments": {"booking_id": "B0002"}, "status": "blocked", "error": "blocked by policy: ..."},
        {"name": "add_checked_bag", "arguments": {"booking_id": "B0002"}, "status": "error", "error": "injected fault: timeout", "fault": "timeout"},
        {"name": "get_booking", "arguments": {"booking_id": "B0002"}, "result": {"checked_bags": 1}},
    ]
    trajectory = Trajectory.model_validate({"task_id": "bags", "trajectory_id": "a", "steps": steps, "final_answer": "1"})
    [turn] = Replayer().replay(task, trajectory) or []
    assert [r.ok for r in turn.predicted] == [False, False, True]
    assert turn.predicted[2].result["checked_bags"] == 1  # nothing was written before it
    assert turn.predicted_state == turn.reference_state
