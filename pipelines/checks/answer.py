"""Answer check: CRAG labels decided deterministically where certain, else inconclusive.

A missing turn or an "I don't know" is ``missing`` (CRAG score 0), never ``incorrect``.
Open-ended turns (``criteria`` and no gold answer) always go to the open-ended rubric.
"""

from __future__ import annotations

from judge import Check, Evidence, FailureStage, Outcome, StageResult
from pipelines.checks._context import TurnContext
from pipelines.matching import AnswerLabel, AnswerThresholds, compare_answer, is_missing


def thresholds_from(ctx: TurnContext) -> AnswerThresholds:
    a = ctx.config.answer
    return AnswerThresholds(
        accept_similarity=a.accept_similarity,
        reject_similarity=a.reject_similarity,
        short_answer_tokens=a.short_answer_tokens,
        numeric_relative_tolerance=a.numeric_relative_tolerance,
    )


def instruction_evidence(removed: tuple[str, ...] | list[str], where: str = "the answer") -> Evidence:
    """The record that instruction-like text was found (and kept from any judge)."""
    return Evidence(
        kind="instruction_like_text",
        message=f"instruction-like text addressed to the grader in {where}: set aside for grading and removed from what a judge sees",
        actual=list(removed),
    )


class AnswerCheck:
    check = Check.ANSWER

    def run(self, ctx: TurnContext) -> StageResult:
        turn = ctx.turn
        prediction = ctx.traj_turn.final_answer if ctx.traj_turn is not None else None
        if turn.gold_answers is None:
            if turn.criteria:
                if is_missing(prediction):
                    return self._mismatch("missing", "no answer to judge against the criteria", prediction, None)
                return StageResult(check=self.check, outcome=Outcome.INCONCLUSIVE, reason="open-ended answer: judged against its criteria")
            return StageResult(check=self.check, outcome=Outcome.SKIPPED, reason="no gold answer (call-only task)")
        if ctx.traj_turn is None:
            return self._mismatch("missing", f"the trajectory has no turn {turn.turn_id}", None, turn.gold_answers)
        match = compare_answer(turn.gold_answers, prediction, ordered=turn.answer_ordered, tolerance=turn.answer_tolerance, thresholds=thresholds_from(ctx))
        flagged = [instruction_evidence(match.instructions)] if match.instructions else []
        if match.label is None:
            return StageResult(
                check=self.check,
                outcome=Outcome.INCONCLUSIVE,
                reason=match.reason,
                evidence=[Evidence(kind="answer", message=match.reason, expected=turn.gold_answers, actual=prediction), *flagged],
            )
        if match.label == AnswerLabel.CORRECT:
            return StageResult(
                check=self.check,
                outcome=Outcome.MATCH,
                label=match.label.value,
                reason=match.reason,
                evidence=[Evidence(kind="answer", message=match.reason, expected=turn.gold_answers[match.gold_index or 0], actual=prediction), *flagged],
            )
        result = self._mismatch(match.label.value, match.reason, prediction, turn.gold_answers)
        return result.model_copy(update={"evidence": result.evidence + flagged}) if flagged else result

    def _mismatch(self, label: str, reason: str, prediction, gold) -> StageResult:
        return StageResult(
            check=self.check,
            outcome=Outcome.MISMATCH,
            failure_stage=FailureStage.ANSWER_CORRECTNESS,
            label=label,
            reason=reason,
            evidence=[Evidence(kind="answer", message=reason, expected=gold, actual=prediction)],
        )
