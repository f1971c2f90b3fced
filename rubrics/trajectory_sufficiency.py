"""Whether the predicted tool calls gathered the information the reference calls provide."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from judge import Outcome
from rubrics._base import StepVerdict, TemplateRubric


class TrajectorySufficiencyVerdict(StepVerdict):
    label: Literal["sufficient", "insufficient"] = Field(
        description="sufficient: the successful calls obtained all needed information; insufficient: something needed is missing."
    )


RUBRIC = TemplateRubric(
    name="trajectory_sufficiency",
    template="trajectory_sufficiency.j2",
    verdict_schema=TrajectorySufficiencyVerdict,
    label_scores={"sufficient": 1.0, "insufficient": 0.0},
    label_outcomes={"sufficient": Outcome.MATCH, "insufficient": Outcome.MISMATCH},
    required=("question", "reference_calls", "predicted_calls"),
    optional=("gold_answers",),
    description=__doc__.strip().splitlines()[0],
    check="calls",
)
