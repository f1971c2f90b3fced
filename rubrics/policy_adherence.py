"""Whether the tool calls comply with a plain-text tool-use policy."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from judge import Outcome
from rubrics._base import StepVerdict, TemplateRubric


class PolicyAdherenceVerdict(StepVerdict):
    label: Literal["compliant", "violated"] = Field(description="compliant: no call breaks the policy; violated: at least one does.")


RUBRIC = TemplateRubric(
    name="policy_adherence",
    template="policy_adherence.j2",
    verdict_schema=PolicyAdherenceVerdict,
    label_scores={"compliant": 1.0, "violated": 0.0},
    label_outcomes={"compliant": Outcome.MATCH, "violated": Outcome.MISMATCH},
    required=("policy", "question", "calls"),
    optional=(),
    description=__doc__.strip().splitlines()[0],
    check="policy",
)
