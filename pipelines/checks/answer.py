"""Answer check: CRAG labels decided deterministically where certain, else inconclusive.

A missing turn or an "I don't know" is ``missing`` (CRAG score 0), never ``incorrect``.
Rules, in order:
0. a run that ended early (``Trajectory.ended_early``: a limit hit, a crash) fails on the turn it
   stopped in, whatever that turn's last message says and also on a call-only turn: the agent never
   delivered its answer. Label ``missing`` (CRAG 0: no answer was given, so none was wrong; a
   call-only turn has no answer to label: no label), evidence ``ended_early`` with the run's reason.
   Decided here, never by a judge; an earlier stage's failure (policy, calls) still comes first.
1. ``required_content``: every item must appear in some agent message of the turn (or episode):
   tau2's rule (case-insensitive substring of the message with commas removed; a number not inside
   a longer one: "50" is not in "150") or, more lenient,
   the item's normalised words / numbers inside the message. An item found nowhere is ``incorrect``
   (the agent did not tell the user), as the source benchmark decides it.
2. ``gold_answer_pattern`` (RE2, searched in the final answer): a match is ``correct``; without gold
   answers, no match is ``incorrect``.
3. gold answers: CRAG comparison (``pipelines.matching.compare_answer``).
4. open-ended turns (``criteria`` and no gold answer) go to the open-ended rubric.
What the agent said that was not recorded (``TrajectoryTurn.answer_recorded`` False: tracing
without content) is unknown, never missing: rules 1 to 4 then decide only what the recorded
messages show (every required item found in them); anything else is inconclusive
(``not_recorded``), never sent to a judge, with the trajectory's ``not_recorded`` reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from judge import Check, Comparisons, Evidence, EvidenceKind, FailureStage, Outcome, StageResult, pattern_search, use_comparisons
from pipelines.checks._context import TurnContext
from pipelines.checks._waterfall import CheckOutcome
from pipelines.matching import AnswerLabel, AnswerThresholds, Haystack, compare_answer, is_missing, value_finder, value_in_text


def communicated(info: str, told: Told) -> bool:
    """Whether some agent message conveys ``info`` (see the module rules). tau2's substring rule
    is asked of every message first (a C-speed scan): only an item it finds in none of them needs
    the messages' words and numbers (``Haystack``, prepared once for all items)."""
    needle = info.lower()
    if any(_occurs(needle, plain) for plain in told.plain):
        return True
    return any(map(value_finder(info), told.haystacks))  # the item read once for all messages


def _occurs(needle: str, plain: str) -> bool:
    """tau2's substring rule, except that a number is not found inside a longer one: "50" is not
    in "150" nor in "50.5" (``value_finder`` then reads the message's numbers: "$50.00" is 50)."""
    if not needle or not (needle[0].isdigit() or needle[-1].isdigit()):
        return needle in plain
    at = plain.find(needle)
    while at >= 0:
        end = at + len(needle)
        if not (needle[0].isdigit() and _digit_at(plain, at - 1, -1)) and not (needle[-1].isdigit() and _digit_at(plain, end, 1)):
            return True
        at = plain.find(needle, at + 1)
    return False


def _digit_at(text: str, i: int, step: int) -> bool:
    """Whether the number at the needle's edge goes on at ``i`` (a digit, or a decimal point and a digit)."""
    if not 0 <= i < len(text):
        return False
    if text[i].isdigit():
        return True
    j = i + step
    return text[i] == "." and 0 <= j < len(text) and text[j].isdigit()


class Told:
    """The agent's messages prepared once for every required item asked of them: lower-cased
    without thousands separators, and as haystacks (tokenised and their numbers read once)."""

    def __init__(self, messages: list[str]):
        self.plain = [m.lower().replace(",", "") for m in messages]
        self.haystacks = [Haystack(m) for m in messages]


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
        kind=EvidenceKind.INSTRUCTION_LIKE_TEXT,
        message=f"instruction-like text addressed to the grader in {where}: set aside for grading and removed from what a judge sees",
        actual=list(removed),
    )


class AnswerCheck:
    check: Check = Check.ANSWER
    depends_on: tuple[Check, ...] = ()

    def run(self, ctx: TurnContext, decided: Mapping[Check, StageResult]) -> CheckOutcome:
        return CheckOutcome(self._result(ctx))

    def _result(self, ctx: TurnContext) -> StageResult:
        turn = ctx.turn
        prediction = ctx.traj_turn.final_answer if ctx.traj_turn is not None else None
        if ctx.ended_early is not None:
            return ended_early_result(ctx, prediction)
        if ctx.traj_turn is None and turn.has_answer_spec:  # never reached: nothing was said, so nothing wrong
            return self._mismatch("missing", f"the trajectory has no turn {turn.turn_id}", None, turn.gold_answers)
        unheard = ctx.traj_turn is not None and not ctx.traj_turn.answer_recorded
        told: list[Evidence] = []
        if turn.required_content:
            messages = _agent_messages(ctx)
            prepared = Told(messages)
            missing = [info for info in turn.required_content if not communicated(info, prepared)]
            if missing and unheard:
                return not_recorded_result(ctx, f"whether the agent told the user {missing} is unknown: what it said was not recorded")
            if missing:
                return self._mismatch("incorrect", f"the agent never told the user: {missing}", messages[-3:], turn.required_content)
            told.append(
                Evidence(
                    kind=EvidenceKind.REQUIRED_CONTENT,
                    message=f"all {len(turn.required_content)} required items were communicated",
                    expected=turn.required_content,
                )
            )
        if unheard and (turn.gold_answer_pattern is not None or turn.gold_answers is not None or turn.criteria):
            return not_recorded_result(ctx, "the answer was not recorded", told)
        if turn.gold_answer_pattern is not None:
            if isinstance(prediction, str) and pattern_search(turn.gold_answer_pattern, prediction):
                reason = f"the answer matches the pattern {turn.gold_answer_pattern!r}"
                return StageResult(
                    check=self.check,
                    outcome=Outcome.MATCH,
                    label=AnswerLabel.CORRECT.value,
                    reason=reason,
                    evidence=[*told, Evidence(kind=EvidenceKind.ANSWER, message=reason, expected=turn.gold_answer_pattern, actual=prediction)],
                )
            if turn.gold_answers is None:
                if is_missing(prediction):
                    return self._mismatch("missing", "no answer to match against the pattern", prediction, turn.gold_answer_pattern)
                return self._mismatch("incorrect", f"the answer does not match the pattern {turn.gold_answer_pattern!r}", prediction, turn.gold_answer_pattern)
        if turn.gold_answers is None:
            if turn.required_content and not turn.criteria:
                return StageResult(check=self.check, outcome=Outcome.MATCH, label=AnswerLabel.CORRECT.value, reason=told[0].message, evidence=told)
            if turn.criteria:
                if is_missing(prediction):
                    return self._mismatch("missing", "no answer to judge against the criteria", prediction, None)
                return StageResult(check=self.check, outcome=Outcome.INCONCLUSIVE, reason="open-ended answer: judged against its criteria")
            return StageResult(check=self.check, outcome=Outcome.SKIPPED, reason="no gold answer (call-only task)")
        match = compare_answer(turn.gold_answers, prediction, ordered=turn.answer_ordered, tolerance=turn.answer_tolerance, thresholds=thresholds_from(ctx))
        flagged = [instruction_evidence(match.instructions)] if match.instructions else []
        if match.label is None:
            return StageResult(
                check=self.check,
                outcome=Outcome.INCONCLUSIVE,
                reason=match.reason,
                evidence=[Evidence(kind=EvidenceKind.ANSWER, message=match.reason, expected=turn.gold_answers, actual=prediction), *flagged],
            )
        if match.label == AnswerLabel.CORRECT:
            return StageResult(
                check=self.check,
                outcome=Outcome.MATCH,
                label=match.label.value,
                reason=match.reason,
                evidence=[
                    Evidence(kind=EvidenceKind.ANSWER, message=match.reason, expected=turn.gold_answers[match.gold_index or 0], actual=prediction),
                    *flagged,
                ],
            )
        result = self._mismatch(match.label.value, match.reason, prediction, turn.gold_answers)
        return result.model_copy(update={"evidence": result.evidence + flagged}) if flagged else result

    def _mismatch(self, label: str, reason: str, prediction: Any, gold: Any) -> StageResult:
        return StageResult(
            check=self.check,
            outcome=Outcome.MISMATCH,
            failure_stage=FailureStage.ANSWER_CORRECTNESS,
            label=label,
            reason=reason,
            evidence=[Evidence(kind=EvidenceKind.ANSWER, message=reason, expected=gold, actual=prediction)],
        )


def ended_early_result(ctx: TurnContext, prediction: Any) -> StageResult:
    """Rule 0: the run stopped in this turn before the agent finished."""
    ended = ctx.ended_early
    assert ended is not None
    reason = f"the run ended before the agent finished ({ended.kind}): {ended.reason}"
    return StageResult(
        check=Check.ANSWER,
        outcome=Outcome.MISMATCH,
        failure_stage=FailureStage.ANSWER_CORRECTNESS,
        label=AnswerLabel.MISSING.value if ctx.turn.has_answer_spec else None,
        reason=reason,
        evidence=[Evidence(kind=EvidenceKind.ENDED_EARLY, message=reason, expected=ended.kind, actual=prediction)],
    )


def not_recorded_result(ctx: TurnContext, what: str, told: list[Evidence] | None = None) -> StageResult:
    """Undecided: the answer (or what the agent said) was not recorded."""
    reason = f"inconclusive: {what} ({ctx.trajectory.not_recorded})"
    return StageResult(
        check=Check.ANSWER, outcome=Outcome.INCONCLUSIVE, reason=reason, evidence=[*(told or []), Evidence(kind=EvidenceKind.NOT_RECORDED, message=reason)]
    )


def _agent_messages(ctx: TurnContext) -> list[str]:
    """Every text the agent sent in the turn; the final answer when no message was recorded."""
    if ctx.traj_turn is None:
        return []
    messages = list(ctx.traj_turn.agent_messages)
    final = ctx.traj_turn.final_answer
    if isinstance(final, str) and final not in messages:
        messages.append(final)
    return messages


def candidate_label(gold_answers: list[Any], candidate: str) -> str | None:
    """The CRAG label of a judge's candidate answer (a span it copied from the answer) against the
    gold answers, by this check's own comparison; None where it cannot tell."""
    if not gold_answers:
        return None
    label = compare_answer(gold_answers, candidate).label
    return None if label is None else label.value


def states_value(value: str, text: Any) -> bool:
    """Does ``text`` (a tool output, a call's result) state ``value``, as grounding reads it."""
    return bool(value.strip()) and value_in_text(value, text)


# a judge's pass is checked with the comparisons the checks use (judge cannot import pipelines)
use_comparisons(Comparisons(answer_label=candidate_label, states=states_value, name="the answer check's"))
