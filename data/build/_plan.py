"""Task plans: reference calls plus how the gold answer is read off their results.

A plan is turned into a native task by *executing* its reference calls in a fresh session of
the live environment: ``expected_output`` is what the tools returned and the gold answer is
computed from those results, never written by hand.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from pipelines.env import Environment


class Call(msgspec.Struct):
    name: str
    arguments: dict[str, Any]
    id: str
    depends_on: list[str] = msgspec.field(default_factory=list)
    label: str | None = None


class TurnPlan(msgspec.Struct):
    query: str
    calls: list[Call]
    answer: Callable[[list[Any]], Any]  # results (one per call, in order) -> gold answer
    kind: str = "number"  # number | text | list
    hop_type: str = "API"  # API | RAG | API-RAG
    answer_column: str | None = None  # where a wrong text answer can be drawn from


class TaskPlan(msgspec.Struct):
    task_id: str
    capability: str
    domain: str
    turns: list[TurnPlan]
    policy: dict[str, Any] | None = None
    policy_condition: str | None = None
    hop_count: int | None = None
    tool_names: list[str] | None = None  # None: every tool of the domain
    tags: dict[str, Any] = msgspec.field(default_factory=dict)
    write_variants: dict[int, TurnPlan] = msgspec.field(default_factory=dict)  # build-only: the write a read-only policy forbids


class PlanRejected(ValueError):
    """The instance did not execute cleanly (empty result, error): the generator draws another."""


def execute_plan(plan: TaskPlan, env: Environment) -> tuple[list[list[Any]], list[Any]]:
    """Run the reference calls of every turn in one fresh session; return results and gold answers."""
    session = env.session()
    all_results, golds = [], []
    for turn in plan.turns:
        results = []
        for call in turn.calls:
            res = session.execute(call.name, call.arguments, label=call.label or call.id)
            if not res.ok:
                raise PlanRejected(f"{plan.task_id}: {call.name} failed: {res.error}")
            results.append(res.result)
        gold = turn.answer(results)
        if gold is None or gold == [] or gold == "":
            raise PlanRejected(f"{plan.task_id}: empty gold answer")
        all_results.append(results)
        golds.append(gold)
    return all_results, golds


def to_task(plan: TaskPlan, env: Environment) -> dict[str, Any]:
    results, golds = execute_plan(plan, env)
    turns = []
    for t_index, (turn, turn_results, gold) in enumerate(zip(plan.turns, results, golds), start=1):
        refs = []
        for call, res in zip(turn.calls, turn_results):
            ref: dict[str, Any] = {"id": call.id, "name": call.name, "arguments": call.arguments, "expected_output": res}
            if call.depends_on:
                ref["depends_on"] = call.depends_on
            if call.label:
                ref["label"] = call.label
            refs.append(ref)
        turn_out: dict[str, Any] = {"turn_id": str(t_index), "query": turn.query, "reference_calls": refs, "gold_answers": [gold]}
        if isinstance(gold, float):
            turn_out["answer_tolerance"] = 0.001
        turns.append(turn_out)
    names = plan.tool_names
    tools = [t.model_dump(mode="json", exclude_none=True) for t in env.tools if names is None or t.name in names]
    metadata: dict[str, Any] = {
        "capability": plan.capability,
        "domain": plan.domain,
        "hop_types": [t.hop_type for t in plan.turns] if plan.capability == "4" else [],
        "tags": plan.tags,
    }
    if plan.hop_count is not None:
        metadata["hop_count"] = plan.hop_count
    if plan.policy_condition is not None:
        metadata["policy_condition"] = plan.policy_condition
    task = {"task_id": plan.task_id, "environment": plan.domain, "turns": turns, "tools": tools, "metadata": metadata}
    if plan.policy is not None:
        task["policy"] = plan.policy
    return task
