"""The failure-stage vocabulary, written once and used everywhere.

Invariant: stages are mutually exclusive and ordered; a failing case is attributed to the
*earliest* stage in ``FAILURE_STAGE_ORDER`` that broke. ``NONE`` means the case passed.
"""

from __future__ import annotations

from enum import StrEnum


class FailureStage(StrEnum):
    POLICY = "policy"
    TOOL_SELECTION = "tool_selection"
    ARGUMENT_NAMES = "argument_names"
    ARGUMENT_VALUES = "argument_values"
    ANSWER_CORRECTNESS = "answer_correctness"
    ANSWER_GROUNDING = "answer_grounding"
    NONE = "none"

    @property
    def rank(self) -> int:
        return FAILURE_STAGE_ORDER.index(self)


FAILURE_STAGE_ORDER: tuple[FailureStage, ...] = tuple(FailureStage)


class Check(StrEnum):
    """The deterministic checks of the waterfall, in the order they run.

    A check can produce more than one failure stage (``CALLS`` yields tool selection, argument
    names or argument values), so checks and failure stages are separate vocabularies.
    """

    POLICY = "policy"
    CALLS = "calls"
    ANSWER = "answer"
    GROUNDING = "grounding"


class Outcome(StrEnum):
    """What one check concluded. ``INCONCLUSIVE`` is an honest 'cannot tell', never a guess."""

    MATCH = "match"
    MISMATCH = "mismatch"
    INCONCLUSIVE = "inconclusive"
    SKIPPED = "skipped"  # not applicable: no policy, no gold answer, ...


class VerdictLabel(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    UNRESOLVED = "unresolved"
    ERROR = "error"


# The failure stage each check can blame when the check itself carries no finer attribution.
CHECK_DEFAULT_STAGE: dict[Check, FailureStage] = {
    Check.POLICY: FailureStage.POLICY,
    Check.CALLS: FailureStage.TOOL_SELECTION,
    Check.ANSWER: FailureStage.ANSWER_CORRECTNESS,
    Check.GROUNDING: FailureStage.ANSWER_GROUNDING,
}


class DecidedBy(StrEnum):
    """How a verdict or a check result was decided. A judge decision is ``judge:<panel>``
    (``DecidedBy.judge(panel)``); ``error`` marks an input-error row, which nobody graded."""

    DETERMINISTIC = "deterministic"
    UNRESOLVED = "unresolved"
    ERROR = "error"

    @staticmethod
    def judge(panel: str) -> str:
        return f"judge:{panel}"


def check_decided_by(value: str) -> str:
    """A valid ``decided_by``: one of ``DecidedBy`` or ``judge:<panel>`` (pydantic validator)."""
    if value in DecidedBy._value2member_map_ or (value.startswith("judge:") and len(value) > len("judge:")):
        return value
    raise ValueError(f"decided_by must be deterministic, unresolved, error or judge:<panel>, not {value!r}")


class AnswerLabel(StrEnum):
    """CRAG's answer labels. ``score`` is CRAG's: correct 1, missing 0 (an honest "I don't know"),
    incorrect -1 (a hallucination costs more than silence). The one table of these scores."""

    CORRECT = "correct"
    INCORRECT = "incorrect"
    MISSING = "missing"

    @property
    def score(self) -> float:
        return CRAG_SCORES[self]


CRAG_SCORES: dict[AnswerLabel, float] = {AnswerLabel.CORRECT: 1.0, AnswerLabel.MISSING: 0.0, AnswerLabel.INCORRECT: -1.0}
