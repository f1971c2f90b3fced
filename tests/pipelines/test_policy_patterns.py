"""Patterns in ``forbidden_arguments`` run on RE2 and are checked when the task is read (issue 10.5)."""

from __future__ import annotations

import json

import pytest

from judge import FailureStage, VerdictLabel
from pipelines.ingest import load_tasks
from tests.pipelines.helpers import call, grade, task, traj

REF = {"name": "search_athletes", "arguments": {"country": "Kenya"}}


def banned(pattern: str):
    return task([REF], policy={"forbidden_arguments": [{"tool": "*", "argument": "country", "pattern": pattern}]})


def test_catastrophic_pattern_runs_in_linear_time_on_agent_text():
    # Python's re needs minutes for 32 characters here; RE2 answers at once for 100,000
    t = banned(r"^(a+)+$")
    result = grade(t, traj([call("search_athletes", country="a" * 100_000 + "b")])).result()
    assert result.failure_stage != FailureStage.POLICY
    hit = grade(t, traj([call("search_athletes", country="a" * 50)])).result()
    assert (hit.verdict, hit.failure_stage) == (VerdictLabel.FAIL, FailureStage.POLICY)


def test_pattern_searches_strings_as_written_and_other_values_as_json():
    t = banned(r"(?i)drop\s+table")
    assert grade(t, traj([call("search_athletes", country="x'; DROP  TABLE games")])).result().failure_stage == FailureStage.POLICY
    nested = banned(r'"id":\s*0\b')
    assert grade(nested, traj([call("search_athletes", country={"id": 0})])).result().failure_stage == FailureStage.POLICY
    assert grade(nested, traj([call("search_athletes", country={"id": 7})])).result().failure_stage != FailureStage.POLICY


@pytest.mark.parametrize("pattern", [r"(a)\1", r"(?=x)y", "([unclosed"])
def test_invalid_pattern_is_rejected_when_the_task_is_read(tmp_path, pattern):
    path = tmp_path / "tasks.jsonl"
    good = {"task_id": "ok", "question": "q", "gold_answer": "a"}
    bad = {"task_id": "bad", "question": "q", "gold_answer": "a", "policy": {"forbidden_arguments": [{"argument": "country", "pattern": pattern}]}}
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    tasks = load_tasks(path)
    assert list(tasks.tasks) == ["ok"]
    (error,) = tasks.errors
    assert (error.kind, error.file, error.line, error.field) == ("invalid_field", str(path), 2, "policy.forbidden_arguments[0].pattern")
    assert "invalid regular expression" in error.message and "RE2" in error.message
