"""The orchestration facts from the turns the grader aligned equal those from aligning again.

``GradedCase.result`` hands ``assess_orchestration`` the turns it graded (task turn, resolved
steps, whether the run ended there) instead of letting it align the trajectory once more; the
facts must be those of the re-alignment, in every turn mode, for runs that ended early too.
"""

from __future__ import annotations

import random

import pytest

from bench.conversations import conversations
from judge import InputError, Task, Trajectory
from pipelines.alignment import TurnAlignmentError
from pipelines.config import GradingConfig
from pipelines.grade import grade_case
from pipelines.ingest import convert_trajectory
from pipelines.orchestration import assess_orchestration


def _items():
    rng = random.Random(7)
    for conv in conversations(30, seed=3):
        traj = convert_trajectory(conv.trajectory, "openai", file="x").trajectory
        assert traj is not None
        if rng.random() < 0.4:  # a run stopped early, in some turn or the last
            turn_id = rng.choice([None, *(t.turn_id for t in traj.turns)])
            traj = Trajectory.model_validate({**traj.model_dump(), "ended_early": {"kind": "limit", "reason": "the step limit", "turn_id": turn_id}})
        for variant in (conv.task_episode, conv.task_turns):
            yield Task.model_validate(variant), traj


@pytest.mark.parametrize("mode", ["auto", "episode", "per-message"])
def test_graded_turns_give_the_facts_of_a_fresh_alignment(mode):
    config = GradingConfig(turns=mode)
    compared = 0
    for task, traj in _items():
        try:
            result = grade_case(task, traj, config).result()
        except (InputError, TurnAlignmentError):
            continue
        assert result.orchestration == assess_orchestration(task, traj, result, mode)
        compared += 1
    assert compared >= 30


def test_the_turn_a_run_stopped_in_is_cut_off_from_the_graded_turns():
    from tests.orchestration.helpers import TOOLS, step

    medals = {"id": "m", "name": "get_medals", "arguments": {"athlete_id": 7}, "expected_output": {"gold": 3}}
    two = Task.model_validate(
        {
            "task_id": "t",
            "tools": TOOLS,
            "turns": [
                {"turn_id": 1, "query": "a", "gold_answer": "3", "reference_calls": [medals]},
                {"turn_id": 2, "query": "b", "gold_answer": "3", "reference_calls": [medals]},
            ],
        }
    )
    failed = step("get_medals", "Error: athlete_id is required", status="error")
    turns = [{"turn_id": 1, "steps": [failed], "final_answer": "I cannot tell."}, {"turn_id": 2, "steps": [failed]}]
    for stopped_in in (None, 1, 2):
        tr = Trajectory.model_validate(
            {"task_id": "t", "trajectory_id": "a", "turns": turns, "ended_early": {"kind": "error", "reason": "crash", "turn_id": stopped_in}}
        )
        for mode in ("auto", "episode", "per-message"):
            result = grade_case(two, tr, GradingConfig(turns=mode)).result()
            assert result.orchestration is not None and any(e.outcome == "cut_off" for e in result.orchestration.recovery)
            assert result.orchestration == assess_orchestration(two, tr, result, mode)
