"""Hand-made tasks and trajectories, graded for real, for the orchestration tests."""

from __future__ import annotations

from typing import Any

from judge import Orchestration, Task, Trajectory, TrajectoryResult
from pipelines.config import GradingConfig
from pipelines.grade import grade_case

MEDALS = {
    "name": "get_medals",
    "parameters": {"type": "object", "properties": {"athlete_id": {"type": "integer"}, "year": {"type": "integer"}}, "required": ["athlete_id"]},
}
MEDAL_COUNT = {  # a backup tool answering the same question
    "name": "medal_count",
    "parameters": {"type": "object", "properties": {"athlete": {"type": "integer"}}, "required": ["athlete"]},
}
ATHLETE = {"name": "get_athlete", "parameters": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}
COUNTRY = {"name": "get_country", "parameters": {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]}}
REFUND = {"name": "refund", "side_effect": "write", "parameters": {"type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"]}}
TOOLS = [MEDALS, MEDAL_COUNT, ATHLETE, COUNTRY, REFUND]


def task(reference_calls: list[dict[str, Any]], gold: Any = "3", **extra: Any) -> Task:
    return Task.model_validate(
        {"task_id": "t", "question": "How many medals?", "tools": TOOLS, "reference_calls": reference_calls, "gold_answer": gold, **extra}
    )


def step(tool: str, result: Any = None, /, status: str | None = None, round: int | None = None, fault: str | None = None, **arguments: Any) -> dict[str, Any]:
    """A step dict; keyword arguments other than status/round/fault are the call's arguments."""
    out: dict[str, Any] = {"name": tool, "arguments": arguments}
    if result is not None or status in ("ok", None):
        out["result"] = result
    if status is not None:
        out["status"] = status
    if round is not None:
        out["round"] = round
    if fault is not None:
        out["fault"] = fault
    return out


def trajectory(steps: list[dict[str, Any]], answer: Any = "3", trajectory_id: str = "a", agent: str | None = None) -> Trajectory:
    return Trajectory.model_validate({"task_id": "t", "trajectory_id": trajectory_id, "agent": agent, "steps": steps, "final_answer": answer})


def graded(t: Task, tr: Trajectory) -> TrajectoryResult:
    return grade_case(t, tr, GradingConfig()).result()


def orchestration(t: Task, tr: Trajectory) -> Orchestration:
    o = graded(t, tr).orchestration
    assert o is not None
    return o
