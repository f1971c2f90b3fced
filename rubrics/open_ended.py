"""Whether an open-ended answer meets a list of criteria."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from judge import Outcome
from judge.llm import JudgeVerdict
from rubrics._base import TemplateRubric


class OpenEndedVerdict(JudgeVerdict):
    label: Literal["meets", "partially_meets", "fails"] = Field(description="meets: every criterion met; partially_meets: some met; fails: none met.")


RUBRIC = TemplateRubric(
    name="open_ended",
    template="open_ended.j2",
    verdict_schema=OpenEndedVerdict,
    label_scores={"meets": 1.0, "partially_meets": 0.5, "fails": 0.0},
    label_outcomes={"meets": Outcome.MATCH, "partially_meets": Outcome.MISMATCH, "fails": Outcome.MISMATCH},
    required=("question", "criteria", "answer"),
    optional=("policy_document",),
    description=__doc__.strip().splitlines()[0],
    check="open_ended",
)
