"""Whether the final answer is grounded in the tool outputs; as in VAKRA only supported passes."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from judge import Outcome
from judge.llm import AnswerVerdict
from rubrics._base import TemplateRubric


class GroundednessVerdict(AnswerVerdict):
    label: Literal["supported", "partially", "unsupported", "unsure"] = Field(
        description="supported: every claim backed by tool outputs; partially: some are not; unsupported: the main claim is not; unsure: cannot tell."
    )


RUBRIC = TemplateRubric(
    name="groundedness",
    template="groundedness.j2",
    verdict_schema=GroundednessVerdict,
    label_scores={"supported": 1.0, "partially": 0.5, "unsupported": 0.0, "unsure": 0.0},
    label_outcomes={"supported": Outcome.MATCH, "partially": Outcome.MISMATCH, "unsupported": Outcome.MISMATCH, "unsure": Outcome.MISMATCH},
    required=("question", "answer", "tool_outputs"),
    optional=(),
    description=__doc__.strip().splitlines()[0],
    check="grounding",
)
