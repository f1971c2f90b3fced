"""Failure-stage attribution: from check results to one verdict per turn and per trajectory.

Rules (earliest wins):
- Within a turn, checks run policy -> calls -> answer -> grounding. The first ``mismatch`` decides
  ``fail`` at its failure stage; inconclusive checks before it are listed as unresolved stages
  (they could only move the blame earlier, never turn the fail into a pass).
- With no mismatch, any inconclusive check leaves the turn ``unresolved``; so does a turn with
  nothing to check (no required reference call, no answer specification, no gating policy, no
  stated "no write") or one gated by assertions only the benchmark's environment evaluates: a pass
  must rest on something checked, never on an empty specification. Otherwise ``pass``.
- A trajectory passes iff every turn passes. It fails at the stage of its chronologically first
  failing turn (where it broke). Otherwise, any unresolved turn makes it ``unresolved``.
- ``decided_by`` is ``judge:<panel>`` when a judge decided a check the verdict rests on,
  ``deterministic`` when none did, ``unresolved`` when the verdict is unresolved.
"""

from __future__ import annotations

from judge import CHECK_DEFAULT_STAGE, DecidedBy, FailureStage, Outcome, StageResult, TurnResult, VerdictLabel


def attribute_turn(turn_id: str, checks: list[StageResult], open_reason: str | None = None) -> TurnResult:
    """``open_reason``: why the turn cannot pass on what is checked here (nothing to check, or a
    requirement only the benchmark's environment evaluates); a decisive failure still fails it."""
    for check in checks:
        if check.outcome == Outcome.MISMATCH:
            return TurnResult(turn_id=turn_id, verdict=VerdictLabel.FAIL, failure_stage=check.failure_stage, checks=checks)
    if open_reason is not None:
        return TurnResult(turn_id=turn_id, verdict=VerdictLabel.UNRESOLVED, checks=checks, reason=open_reason)
    if any(c.outcome == Outcome.INCONCLUSIVE for c in checks):
        return TurnResult(turn_id=turn_id, verdict=VerdictLabel.UNRESOLVED, checks=checks)
    return TurnResult(turn_id=turn_id, verdict=VerdictLabel.PASS, failure_stage=FailureStage.NONE, checks=checks)


def unresolved_before_failure(turn: TurnResult) -> list[FailureStage]:
    """Stages left inconclusive that precede the decisive result of the turn."""
    out: list[FailureStage] = []
    for check in turn.checks:
        if check.outcome == Outcome.MISMATCH:
            break
        if check.outcome == Outcome.INCONCLUSIVE:
            out.append(CHECK_DEFAULT_STAGE[check.check])
    return out


def attribute_trajectory(turns: list[TurnResult]) -> tuple[VerdictLabel, FailureStage | None, list[FailureStage], str]:
    """(verdict, failure_stage, unresolved_stages, decided_by)."""
    failing = next((i for i, t in enumerate(turns) if t.verdict == VerdictLabel.FAIL), None)
    considered = turns if failing is None else turns[: failing + 1]
    unresolved: list[FailureStage] = []
    for turn in considered:
        for stage in unresolved_before_failure(turn):
            if stage not in unresolved:
                unresolved.append(stage)
    if failing is not None:
        return VerdictLabel.FAIL, turns[failing].failure_stage, unresolved, _decided_by(considered)
    if any(t.verdict == VerdictLabel.UNRESOLVED for t in turns):
        return VerdictLabel.UNRESOLVED, None, unresolved, DecidedBy.UNRESOLVED
    return VerdictLabel.PASS, FailureStage.NONE, [], _decided_by(turns)


def _decided_by(turns: list[TurnResult]) -> str:
    judged: str | None = None
    for turn in turns:
        for check in turn.checks:
            if check.decided_by != DecidedBy.DETERMINISTIC and check.outcome in (Outcome.MATCH, Outcome.MISMATCH):
                judged = judged or check.decided_by
            if check.outcome == Outcome.MISMATCH:
                break
    return judged or DecidedBy.DETERMINISTIC
