"""Whether a predicted tool call is equivalent to a reference call as the tool sees it."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from judge import Outcome
from judge.llm import JudgeVerdict
from rubrics._base import TemplateRubric


class StepEquivalenceVerdict(JudgeVerdict):
    label: Literal["equivalent", "not_equivalent"] = Field(
        description="equivalent: same information or change as the reference call; not_equivalent otherwise."
    )


RUBRIC = TemplateRubric(
    name="step_equivalence",
    template="step_equivalence.j2",
    verdict_schema=StepEquivalenceVerdict,
    label_scores={"equivalent": 1.0, "not_equivalent": 0.0},
    label_outcomes={"equivalent": Outcome.MATCH, "not_equivalent": Outcome.MISMATCH},
    required=("reference_call", "predicted_call"),
    optional=("tool",),
    description=__doc__.strip().splitlines()[0],
    check="step_equivalence",
)
