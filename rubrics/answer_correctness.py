"""CRAG-style answer correctness against gold answers: correct 1, missing 0, incorrect -1 (only correct passes)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from judge import CRAG_SCORES, Outcome
from judge.llm import AnswerVerdict
from rubrics._base import TemplateRubric


class AnswerCorrectnessVerdict(AnswerVerdict):
    label: Literal["correct", "incorrect", "missing"] = Field(description="correct: states a gold answer; missing: gives no answer; incorrect: anything else.")


RUBRIC = TemplateRubric(
    name="answer_correctness",
    template="answer_correctness.j2",
    verdict_schema=AnswerCorrectnessVerdict,
    label_scores={label.value: score for label, score in CRAG_SCORES.items()},
    label_outcomes={"correct": Outcome.MATCH, "incorrect": Outcome.MISMATCH, "missing": Outcome.MISMATCH},
    required=("question", "gold_answers", "answer"),
    optional=(),
    description=__doc__.strip().splitlines()[0],
    check="answer",
)
