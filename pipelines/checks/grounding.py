"""Grounding check: is a correct answer supported by what the tools returned?

Deterministic support, in order:
1. the matched gold value (or, for a correct answer, the answer's own value) appears in a
   successful tool output of this or an earlier turn (numbers with tolerance, strings normalised);
2. every reference call was satisfied, and every number in the answer appears in the tool
   outputs, the question or the gold answer (the agent saw the same evidence the gold was
   derived from, and added no number from nowhere).
Anything else is inconclusive (claims may be derived or paraphrased: the groundedness rubric
decides). There is no deterministic 'ungrounded': absence of a string is not proof.

A call of this turn with no recorded result that is identical to a reference call whose output the
task records borrows that output (``_borrowed``: a read tool, the same arguments, the same state).
Borrowed outputs are searched after the recorded ones (and a number after the question and the gold
too), so the reason names the identical reference call only when the decision rests on it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from judge import Check, DecidedBy, Evidence, EvidenceKind, Outcome, StageResult
from pipelines.checks._context import StepView, TurnContext
from pipelines.checks._waterfall import CheckOutcome
from pipelines.matching import Haystack, HaystackParts, numbers_in, value_in_text


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
        if ctx.traj_turn is not None and not ctx.traj_turn.answer_recorded:
            return StageResult(check=self.check, outcome=Outcome.SKIPPED, reason="the answer was not recorded: nothing to ground")
        if not ctx.turn.reference_calls and not ctx.steps:
            return StageResult(check=self.check, outcome=Outcome.SKIPPED, reason="the task needs no tool evidence")
        outputs = ctx.prior_outputs + [v.result for v in ctx.steps if v.ok]
        lent = [v for v in ctx.steps if v.borrowed_from is not None]
        evidence = [_borrowed_evidence(v) for v in lent]
        if not outputs and not lent:
            return StageResult(check=self.check, outcome=Outcome.INCONCLUSIVE, reason="no successful tool output to ground the answer in")
        prediction = ctx.traj_turn.final_answer if ctx.traj_turn is not None else None
        gold = ctx.turn.gold_answers or []
        # one prepared part per output, kept for the later turns: searched per gold value and per
        # number, newest first (every rule is per part, so the order changes only how many parts a
        # search prepares before it finds the value, never what it finds: a turn's answer is most
        # often in its own latest outputs, and the earlier turns' outputs then stay unprepared)
        parts = [_part(ctx.memo, o) for o in reversed(outputs)]
        sources: list[Haystack | HaystackParts] = [HaystackParts(parts)]
        with_lent = HaystackParts(parts + [Haystack(v.borrowed) for v in lent]) if lent else None
        supported_value = next((g for g in gold if value_in_text(g, sources[0])), None)
        value_lent = False
        if supported_value is None and with_lent is not None:
            supported_value = next((g for g in gold if value_in_text(g, with_lent)), None)
            value_lent = supported_value is not None
        unexplained: list[Any] = []
        numbers_lent = False
        for n in numbers_in(prediction):
            if any(value_in_text(n, src) for src in _lazy(sources, ctx.turn.query, gold)):
                continue
            if with_lent is not None and value_in_text(n, with_lent):
                numbers_lent = True
            else:
                unexplained.append(n)

        def result(outcome: Outcome, reason: str) -> StageResult:
            return StageResult(check=self.check, outcome=outcome, reason=reason, evidence=evidence)

        if supported_value is not None and not unexplained:
            if value_lent:
                return result(Outcome.MATCH, f"the answer value {supported_value!r} appears in {_lenders(_holding(lent, supported_value))}")
            reason = f"the answer value {supported_value!r} appears in the tool outputs"
            return result(Outcome.MATCH, reason + (f", and its other numbers in {_lenders(lent)}" if numbers_lent else ""))
        if calls_satisfied and not unexplained:
            reason = "all reference calls satisfied and no number in the answer comes from nowhere"
            if numbers_lent:
                reason += f" (numbers found in {_lenders(lent)})"
            elif not outputs:  # the only tool outputs there are to search are borrowed
                reason += f" (the only tool output is {_lenders(lent)})" if len(lent) == 1 else f" (the only tool outputs are {_lenders(lent)})"
            return result(Outcome.MATCH, reason)
        if unexplained:
            return result(Outcome.INCONCLUSIVE, f"numbers in the answer found in no tool output: {unexplained[:5]}")
        return result(Outcome.INCONCLUSIVE, "the answer value does not appear verbatim in the tool outputs")


def _holding(lent: list[StepView], value: Any) -> list[StepView]:
    """The borrowing steps whose output alone holds ``value`` (all of them when it is spread over several)."""
    return [v for v in lent if value_in_text(value, v.borrowed)] or lent


def _lenders(lent: list[StepView]) -> str:
    """'the output of the identical reference call NAME (step K recorded no result)', for one or several."""
    named = ", ".join(f"{v.step.name} (step {v.index} recorded no result)" for v in lent)
    return f"the output of the identical reference call {named}" if len(lent) == 1 else f"the outputs of the identical reference calls {named}"


def _borrowed_evidence(view: StepView) -> Evidence:
    return Evidence(
        kind=EvidenceKind.BORROWED_OUTPUT,
        reference=view.borrowed_from,
        step=view.index,
        tool=view.step.name,
        message=f"step {view.index} recorded no result; it is identical to reference call {view.borrowed_from} ({view.step.name}), whose recorded output stands in for grounding",
    )


def _part(memo: dict[str, Any], output: Any) -> Haystack:
    """``output`` prepared for search, once per trajectory: the same object is an earlier turn's
    output on every later turn. Keyed by identity; the entry holds the object, so the id stays its own."""
    parts: dict[int, tuple[Any, Haystack]] = memo.setdefault("grounding.parts", {})
    hit = parts.get(id(output))
    if hit is not None and hit[0] is output:
        return hit[1]
    hay = Haystack(output)
    parts[id(output)] = (output, hay)
    return hay


def _lazy(sources: list[Haystack | HaystackParts], *more: Any) -> Iterator[Haystack | HaystackParts]:
    """The haystacks in order, each extra one prepared on first need and kept for the next number."""
    yield sources[0]
    for k, text in enumerate(more, 1):
        if len(sources) <= k:
            sources.append(Haystack(text))
        yield sources[k]
