"""Grounding check: is a correct answer supported by what the tools returned?

Deterministic support, in order:
1. the matched gold value (or, for a correct answer, the answer's own value) appears in a
   successful tool output of this or an earlier turn (numbers with tolerance, strings normalised);
2. every reference call was satisfied, and every number in the answer appears in the tool
   outputs, the question or the gold answer (the agent saw the same evidence the gold was
   derived from, and added no number from nowhere).
Anything else is inconclusive (claims may be derived or paraphrased: the groundedness rubric
decides). There is no deterministic 'ungrounded': absence of a string is not proof.
"""

from __future__ import annotations

from collections.abc import Mapping

from judge import Check, DecidedBy, Outcome, StageResult
from pipelines.checks._context import TurnContext
from pipelines.checks._waterfall import CheckOutcome
from pipelines.matching import numbers_in, value_in_text


class GroundingCheck:
    check: Check = Check.GROUNDING
    depends_on: tuple[Check, ...] = (Check.ANSWER, Check.CALLS)

    def run(self, ctx: TurnContext, decided: Mapping[Check, StageResult]) -> CheckOutcome:
        calls = decided[Check.CALLS]
        # "all reference calls satisfied" grounds an answer only when a rule, not a judge, said so
        calls_satisfied = calls.outcome == Outcome.MATCH and calls.decided_by == DecidedBy.DETERMINISTIC
        return CheckOutcome(self._result(ctx, decided[Check.ANSWER], calls_satisfied))

    def _result(self, ctx: TurnContext, answer: StageResult, calls_satisfied: bool) -> StageResult:
        if answer.outcome in (Outcome.SKIPPED, Outcome.MISMATCH):
            return StageResult(check=self.check, outcome=Outcome.SKIPPED, reason="no correct answer to ground")
        if not ctx.turn.reference_calls and not ctx.steps:
            return StageResult(check=self.check, outcome=Outcome.SKIPPED, reason="the task needs no tool evidence")
        outputs = ctx.prior_outputs + [v.result for v in ctx.steps if v.ok]
        if not outputs:
            return StageResult(check=self.check, outcome=Outcome.INCONCLUSIVE, reason="no successful tool output to ground the answer in")
        prediction = ctx.traj_turn.final_answer if ctx.traj_turn is not None else None
        gold = ctx.turn.gold_answers or []
        supported_value = next((g for g in gold if value_in_text(g, outputs)), None)
        unexplained = [n for n in numbers_in(prediction) if not any(value_in_text(n, src) for src in (outputs, ctx.turn.query, gold))]
        if supported_value is not None and not unexplained:
            return StageResult(check=self.check, outcome=Outcome.MATCH, reason=f"the answer value {supported_value!r} appears in the tool outputs")
        if calls_satisfied and not unexplained:
            return StageResult(check=self.check, outcome=Outcome.MATCH, reason="all reference calls satisfied and no number in the answer comes from nowhere")
        if unexplained:
            return StageResult(
                check=self.check,
                outcome=Outcome.INCONCLUSIVE,
                reason=f"numbers in the answer found in no tool output: {unexplained[:5]}",
            )
        return StageResult(check=self.check, outcome=Outcome.INCONCLUSIVE, reason="the answer value does not appear verbatim in the tool outputs")
