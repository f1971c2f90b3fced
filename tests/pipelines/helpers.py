"""Builders that keep the check tests short and readable."""

from __future__ import annotations

from typing import Any

from judge import Task, Trajectory
from pipelines.config import GradingConfig
from pipelines.grade import GradedCase, grade_case

SEARCH = {
    "name": "search_athletes",
    "parameters": {"type": "object", "properties": {"country": {"type": "string"}, "limit": {"type": "integer", "default": 10}}, "required": ["country"]},
}
MEDALS = {
    "name": "get_medals",
    "parameters": {"type": "object", "properties": {"athlete_id": {"type": "integer"}, "year": {"type": "integer"}}, "required": ["athlete_id"]},
}
BOOK = {
    "name": "book_seat",
    "side_effect": "write",
    "parameters": {"type": "object", "properties": {"flight": {"type": "string"}, "seat": {"type": "string"}}, "required": ["flight", "seat"]},
}
# one task for the escalation runs (judges over the loopback server): the right call, or a news
# search that may stand in for it (the sufficiency, answer and grounding questions in turn)
WINNER_CALL = {"name": "winner", "arguments": {"year": 2012}, "result": {"name": "Usain Bolt"}}
NEWS_CALL = {"name": "news", "arguments": {"q": "2012 winner"}, "result": "Bolt wins gold"}
WINNER_TASK = {
    "task_id": "t",
    "question": "Who won the 100 m in 2012?",
    "gold_answer": "Usain Bolt",
    "tools": [
        {"name": "winner", "parameters": {"type": "object", "properties": {"year": {"type": "integer"}}}},
        {"name": "news", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}},
    ],
    "reference_calls": [{"name": "winner", "arguments": {"year": 2012}}],
}
DOCS = {"name": "search_docs", "source": "rag", "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}


def task(reference_calls: list[dict], gold: Any = "42", tools: list[dict] | None = None, **extra: Any) -> Task:
    data = {
        "task_id": "t1",
        "question": "How many medals?",
        "tools": tools if tools is not None else [SEARCH, MEDALS, BOOK, DOCS],
        "reference_calls": reference_calls,
    }
    if gold is not None:
        data["gold_answer"] = gold
    data.update(extra)
    return Task.model_validate(data)


def traj(steps: list[dict], answer: Any = "42", **extra: Any) -> Trajectory:
    return Trajectory.model_validate({"task_id": "t1", "trajectory_id": "a", "steps": steps, "final_answer": answer, **extra})


def grade(t: Task, tr: Trajectory, config: GradingConfig | None = None) -> GradedCase:
    return grade_case(t, tr, config or GradingConfig())


def call(name: str, result: Any = "ok", **arguments: Any) -> dict:
    return {"name": name, "arguments": arguments, "result": result}
