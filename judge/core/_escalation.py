"""The seam between the deterministic waterfall and LLM judges.

``pipelines`` builds a ``JudgeRequest`` for each check it could not decide and hands a batch to an
``Escalator`` (a judge panel). ``judge`` never imports ``pipelines``: this protocol is the contract.

Materials per rubric (all JSON-serialisable; the rubric renders them as delimited data):
- answer_correctness:     {question, gold_answers: list, answer}
- trajectory_sufficiency: {question, gold_answers: list | None,
                           reference_calls: [{name, arguments, output?}],
                           predicted_calls: [{name, arguments, status, result}]}
- groundedness:           {question, answer, tool_outputs: [{step, name, arguments, result, borrowed?}]}
- policy_adherence:       {policy: str, question, calls: [{step, turn_id, name, arguments, status}]}
- step_equivalence:       {reference_call: {name, arguments}, predicted_call: {name, arguments},
                           tool: ToolSpec-as-dict | None}
- open_ended:             {question, criteria: [str], answer}
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel

from judge.core._verdict import PanelDecision

RUBRIC_FOR_CHECK = {
    "policy": "policy_adherence",
    "calls": "trajectory_sufficiency",
    "answer": "answer_correctness",
    "grounding": "groundedness",
}


class JudgeRequest(BaseModel):
    key: str  # stable: "<trajectory_id>/<turn_id>/<check>", used for logs, resume and review lists
    rubric: str
    material: dict[str, Any]


@runtime_checkable
class Escalator(Protocol):
    """Anything that can decide a batch of requests: a judge panel, or a test double."""

    name: str

    async def decide(self, requests: Sequence[JudgeRequest]) -> list[PanelDecision]: ...
