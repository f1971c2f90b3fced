"""The core data model rejects inconsistent tasks with a message naming the problem."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from judge import Step, Task, Trajectory, TrajectoryResult, response_key


def _task(**over):
    data = {"task_id": "t", "question": "q", "reference_calls": [{"name": "f", "arguments": {}}]}
    data.update(over)
    return Task.model_validate(data)


def test_shorthand_and_turns_are_equivalent():
    short = _task(gold_answer="1")
    full = Task.model_validate({"task_id": "t", "turns": [{"turn_id": 1, "query": "q", "reference_calls": [{"name": "f"}], "gold_answers": ["1"]}]})
    assert short.turns == full.turns


@pytest.mark.parametrize(
    ("over", "needle"),
    [
        ({"reference_calls": [{"name": "f", "id": "a", "depends_on": ["b"]}]}, "unknown id 'b'"),
        ({"reference_calls": [{"name": "f", "id": "a", "depends_on": ["b"]}, {"name": "f", "id": "b", "depends_on": ["a"]}]}, "cycle"),
        ({"tools": [{"name": "g"}]}, "undeclared tool 'f'"),
        ({"reference_calls": [{"name": "f", "argument_rules": {"x": {"optional": True}}}]}, "no reference value"),
        ({"gold_answer": "1", "gold_answers": ["1"]}, "not both"),
    ],
)
def test_inconsistent_tasks_are_rejected(over, needle):
    with pytest.raises(ValidationError) as err:
        _task(**over)
    assert needle in str(err.value)


def test_omit_only_rule_is_valid():
    task = _task(reference_calls=[{"name": "f", "argument_rules": {"x": {"optional": True, "any_of": []}}}])
    assert task.turns[0].reference_calls[0].argument_rules["x"].any_of == []


@pytest.mark.parametrize(
    ("step", "status"),
    [
        ({"name": "f", "result": "Error: boom"}, "error"),
        ({"name": "f", "result": "error 500"}, "error"),
        ({"name": "f", "result": '{"error": "x"}'}, "error"),
        ({"name": "f", "result": {"error": None}}, "error"),
        ({"name": "f", "result": "Errors are rare"}, "ok"),
        ({"name": "f", "result": "No error here"}, "ok"),
        ({"name": "f", "result": {"data": 1}}, "ok"),
        ({"name": "f", "result": "Error: boom", "status": "success"}, "ok"),
        ({"name": "f", "result": 1, "status": "failed"}, "error"),
        ({"name": "f", "error": "timeout"}, "error"),
    ],
)
def test_status_from_field_else_inferred(step, status):
    assert Step.model_validate(step).status == status


def test_unknown_status_is_an_error():
    with pytest.raises(ValidationError, match="unknown status"):
        Step.model_validate({"name": "f", "status": "maybe"})


def test_trajectory_shorthand():
    t = Trajectory.model_validate({"task_id": 1, "trajectory_id": 2, "steps": [{"name": "f"}], "final_answer": "x"})
    assert (t.task_id, t.trajectory_id, t.final_answer, len(t.steps)) == ("1", "2", "x", 1)


def test_result_invariants():
    with pytest.raises(ValidationError):
        TrajectoryResult(verdict="pass", failure_stage="policy", decided_by="deterministic")
    with pytest.raises(ValidationError):
        TrajectoryResult(verdict="fail", failure_stage="none", decided_by="deterministic")
    with pytest.raises(ValidationError):
        TrajectoryResult(verdict="error", decided_by="error")


def test_response_keys_ignore_order_duplicates_and_spelling_but_keep_columns():
    assert response_key([[1, "a"], [2, "b"], [1, "a"]]) == response_key('[[2, "b"], [1.0, "a"]]')
    assert response_key("42") == response_key(42)
    assert response_key([[1, "a"]]) != response_key([[1, "b"]])  # second column kept
    assert response_key({"x": 1.2587000000001}) == response_key({"x": 1.2587})
