"""Grade one trajectory: deterministic checks per turn, escalation bookkeeping, final verdict.

A ``GradedCase`` holds the checks of every turn in waterfall order [policy, calls, answer,
grounding]. ``next_escalation`` names the one inconclusive check whose decision matters next
(earliest turn, earliest check before any decisive failure); after a judge decides it,
``apply_decision`` records the decision and re-derives the checks that depend on it (the calls
check depends on whether the answer is right; grounding on the answer). Checks decided by a
judge are never recomputed. A check left open because content it needs was not recorded
(``not_recorded`` evidence: tracing without content) is never escalated, and a turn with one
stays unresolved with the trajectory's ``not_recorded`` reason unless a check fails it.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
from pydantic import BaseModel

from judge import (
    CHECK_DEFAULT_STAGE,
    RUBRIC_FOR_CHECK,
    AnswerMaterial,
    CallShown,
    Check,
    DecidedBy,
    DecisiveStep,
    EvidenceKind,
    GroundednessMaterial,
    InputError,
    JudgeRequest,
    OpenEndedMaterial,
    Outcome,
    PanelDecision,
    PolicyCallShown,
    PolicyMaterial,
    ReferenceCallShown,
    SourceRef,
    StageResult,
    SufficiencyMaterial,
    Task,
    ToolOutputShown,
    Trajectory,
    TrajectoryResult,
    TurnResult,
    VerdictLabel,
    strip_instructions_deep,
)
from pipelines.alignment import TurnAlignmentError, align
from pipelines.checks import (
    CONFIRM_WRITES_RULE,
    WATERFALL,
    CallMatching,
    StepView,
    TurnContext,
    build_context,
    dependents,
    evaluation_order,
    instruction_evidence,
    policy_gates,
    writes_to_confirm,
)
from pipelines.config import GradingConfig
from pipelines.grade.attribution import attribute_trajectory, attribute_turn
from pipelines.grade.scoring import TurnFacts, compute_scores
from pipelines.orchestration import assess_orchestration

CHECK_ORDER = tuple(c.check for c in WATERFALL)  # waterfall order: attribution and escalation walk it
_EVALUATION_ORDER = evaluation_order(WATERFALL)
_MAX_TEXT = 4000  # characters of one tool output shown to a judge


class TurnState(msgspec.Struct):
    ctx: TurnContext
    checks: dict[Check, StageResult]
    facts: TurnFacts
    asked: set[Check] = msgspec.field(default_factory=set)  # escalated already (decided or left open)
    open_reason: str | None = None  # why the turn cannot pass on what is checked here: unresolved, never asked


class GradedCase(msgspec.Struct):
    task: Task
    trajectory: Trajectory
    source: SourceRef | None
    config: GradingConfig
    turns: list[TurnState]
    judge_calls: int = 0
    judge_cost: float = 0.0

    # ---- escalation -------------------------------------------------------------------------
    def next_escalation(self) -> tuple[int, Check] | None:
        for ti, ts in enumerate(self.turns):
            if ts.open_reason is not None and not any(c.outcome == Outcome.MISMATCH for c in ts.checks.values()):
                continue
            mismatch_seen = False
            for check in CHECK_ORDER:
                result = ts.checks[check]
                if result.outcome == Outcome.MISMATCH:
                    mismatch_seen = True
                    break
                if result.outcome == Outcome.INCONCLUSIVE and check not in ts.asked and not rests_on_unrecorded(result):
                    answer = ts.checks[Check.ANSWER]
                    if check == Check.CALLS and answer.outcome == Outcome.INCONCLUSIVE and Check.ANSWER not in ts.asked and not rests_on_unrecorded(answer):
                        return ti, Check.ANSWER  # the calls verdict hinges on the answer: ask that first
                    return ti, check
            if mismatch_seen:
                return None  # this turn fails decisively: later turns cannot change where it broke
        return None

    def request_for(self, ti: int, check: Check) -> JudgeRequest:
        """The judge request for one open check. What the agent or its tools wrote has its
        instruction-like sentences replaced by a marker; the removal is recorded on the check."""
        ts = self.turns[ti]
        material, removed = _without_instructions(_material(ts.ctx, check))
        if removed:
            old = ts.checks[check]
            if not any(e.kind == "instruction_like_text" and e.actual == list(removed) for e in old.evidence):
                ts.checks[check] = old.model_copy(update={"evidence": old.evidence + [instruction_evidence(removed, "the material for the judge")]})
        return JudgeRequest(
            key=f"{self.trajectory.trajectory_id}/{ts.ctx.turn.turn_id}/{check.value}",
            rubric=_rubric(ts, check),
            material=material,
        )

    def apply_decision(self, ti: int, check: Check, decision: PanelDecision, panel: str) -> None:
        ts = self.turns[ti]
        ts.asked.add(check)
        self.judge_calls += sum(1 for v in decision.votes if not v.cached and v.abstain_reason not in ("offline_miss", "budget"))
        self.judge_cost += sum(v.cost_usd for v in decision.votes)
        old = ts.checks[check]
        outcome = decision.outcome
        stage = CHECK_DEFAULT_STAGE[check] if outcome == Outcome.MISMATCH else None
        named = decision.decisive_step  # a step the judges named: kept only if it is one of the turn's calls
        decisive = named if outcome == Outcome.MISMATCH and check in (Check.POLICY, Check.CALLS) and named is not None and named < len(ts.ctx.steps) else None
        ts.checks[check] = old.model_copy(
            update={
                "outcome": outcome,
                "failure_stage": stage,
                "label": decision.label if check == Check.ANSWER else old.label,
                "decided_by": DecidedBy.judge(panel) if outcome != Outcome.INCONCLUSIVE else old.decided_by,
                "reason": decision.reason or old.reason,
                "decision": decision,
                "decisive_step": decisive,
            }
        )
        _rederive(ts, check)

    # ---- result -----------------------------------------------------------------------------
    def result(self) -> TrajectoryResult:
        turn_results = [attribute_turn(ts.ctx.turn.turn_id, [ts.checks[c] for c in CHECK_ORDER], ts.open_reason or self._unrecorded(ts)) for ts in self.turns]
        verdict, stage, unresolved, decided_by = attribute_trajectory(turn_results)
        for ts in self.turns:
            ts.facts.answer = ts.checks[Check.ANSWER]
        meta = self.task.metadata
        result = TrajectoryResult(
            task_id=self.task.task_id,
            trajectory_id=self.trajectory.trajectory_id,
            agent=self.trajectory.agent,
            capability=meta.capability,
            domain=meta.domain,
            hop_count=meta.hop_count,
            hop_pattern=meta.hop_pattern,
            multi_source=meta.multi_source,
            policy_condition=meta.policy_condition or ("no_policy" if self.task.policy is None else None),
            verdict=verdict,
            failure_stage=stage,
            unresolved_stages=unresolved,
            decided_by=decided_by,
            turns=turn_results,
            decisive_step=self._decisive_step(turn_results) if verdict == VerdictLabel.FAIL else None,
            scores=compute_scores(self.task, [ts.facts for ts in self.turns], self.config),
            judge_calls=self.judge_calls,
            judge_cost_usd=round(self.judge_cost, 6),
            source=self.source,
            external_labels=list(self.trajectory.external_labels) or None,
        )
        graded = [(ts.ctx.turn, [v.step for v in ts.ctx.steps], ts.ctx.ended_early is not None) for ts in self.turns]  # aligned once, here
        result.orchestration = assess_orchestration(self.task, self.trajectory, result, self.config.turns, graded=graded)
        return result

    def _unrecorded(self, ts: TurnState) -> str | None:
        """The trajectory's ``not_recorded`` reason when a check of the turn stays open for content
        the source did not record (the turn then cannot pass; a recorded failure still fails it)."""
        if any(c.outcome == Outcome.INCONCLUSIVE and rests_on_unrecorded(c) for c in ts.checks.values()):
            return self.trajectory.not_recorded
        return None

    def _decisive_step(self, turn_results: list[TurnResult]) -> DecisiveStep:
        """Where the first failing turn went wrong: the call its first mismatch names, else its
        answer (answer and grounding checks), else its end (a needed call never made, the run stopped)."""
        ti = next(i for i, t in enumerate(turn_results) if t.verdict == VerdictLabel.FAIL)
        ts = self.turns[ti]
        check = next(c for c in turn_results[ti].checks if c.outcome == Outcome.MISMATCH)
        steps, turn_id = ts.ctx.steps, ts.ctx.turn.turn_id
        if check.decisive_step is not None:
            step = steps[check.decisive_step].step
            return DecisiveStep(
                turn_id=turn_id, step=check.decisive_step, at="call", call_id=step.call_id, tool=step.name, check=check.check, decided_by=check.decided_by
            )
        stopped = any(e.kind == EvidenceKind.ENDED_EARLY for e in check.evidence)  # the run ended before an answer
        if check.check in (Check.ANSWER, Check.GROUNDING) and not stopped:
            return DecisiveStep(turn_id=turn_id, step=len(steps), at="answer", check=check.check, decided_by=check.decided_by)
        return DecisiveStep(turn_id=turn_id, step=len(steps), at="end", check=check.check, decided_by=check.decided_by)


def rests_on_unrecorded(result: StageResult) -> bool:
    """The check is open because content it needs was not recorded (a call's arguments, the
    answer): no judge is asked, it would see no more than the rule did."""
    return any(e.kind == EvidenceKind.NOT_RECORDED for e in result.evidence)


def grade_case(
    task: Task,
    trajectory: Trajectory,
    config: GradingConfig,
    *,
    source: SourceRef | None = None,
    replay: list[Any] | None = None,
) -> GradedCase:
    """Run every deterministic check of every turn (turns aligned by ``config.turns``, see
    ``pipelines.alignment``). A run that ended early (``Trajectory.ended_early``) is marked on the
    turn it stopped in (the answer check fails it there). Raises ``InputError`` when the turns
    cannot be aligned."""
    try:
        alignment = align(task, trajectory, config.turns)
    except TurnAlignmentError as exc:
        raise InputError.at("unknown_turn", str(exc), source.file if source else "<memory>", source.line if source else None, "turns") from None
    states: list[TurnState] = []
    prior_outputs: list[Any] = []
    calls_before = 0
    memo: dict[str, Any] = {}  # the checks' per-trajectory store (grounding's prepared outputs)
    stopped = trajectory.ended_turn
    for i, (turn, traj_turn) in enumerate(alignment.pairs):
        rep = replay[i] if replay else None
        # the turn the run stopped in: the episode holding it, or the message turn itself
        ended = trajectory.ended_early if stopped is not None and (alignment.episode or traj_turn is stopped) else None
        ctx = build_context(
            task, turn, trajectory, traj_turn, config, replay=rep, prior_outputs=prior_outputs, calls_before=calls_before, ended_early=ended, memo=memo
        )
        states.append(_evaluate(ctx))
        prior_outputs = prior_outputs + [v.result for v in ctx.steps if v.ok]
        calls_before += len(ctx.steps)
    memo.clear()  # the prepared outputs are not kept with the graded case
    return GradedCase(task=task, trajectory=trajectory, source=source, config=config, turns=states)


def _evaluate(ctx: TurnContext) -> TurnState:
    checks: dict[Check, StageResult] = {}
    matching: CallMatching | None = None
    for check in _EVALUATION_ORDER:
        outcome = check.run(ctx, checks)
        checks[check.check] = outcome.result
        if isinstance(outcome.detail, CallMatching):
            matching = outcome.detail
    assert matching is not None  # the calls check is part of the waterfall
    facts = TurnFacts(ctx, matching, checks[Check.POLICY], checks[Check.ANSWER])
    return TurnState(ctx=ctx, checks=checks, facts=facts, open_reason=_open_reason(ctx, matching))


def _open_reason(ctx: TurnContext, matching: CallMatching) -> str | None:
    """Why the turn cannot pass on what is checked here, or None: it specifies nothing to check, or
    it gates on assertions only the benchmark's own environment evaluates. Something to check: a
    required reference call, an answer specification (gold, pattern, criteria, required content), a
    gating policy, a ban on extra calls, a final state compared by replay, a turn that states its
    reference calls with none required (it expects no write: the calls check decides), a turn that
    requires a call (whichever), or, under
    ``[grading] confirm_writes``, a write that needed the user's confirmation (the rule the config
    adds to every task has something to check only there: a vacuous rule is no reason to pass)."""
    task, turn = ctx.task, ctx.turn
    if ctx.environment is not None:
        return None  # the benchmark's own environment checked the turn (its assertions included)
    if turn.environment_assertions:
        return (
            f"needs the environment: {len(turn.environment_assertions)} assertion(s) on the end state gate this task "
            "and only the benchmark's own environment evaluates them"
        )
    if any(not st.advisory for st in matching.refs) or turn.has_answer_spec or task.extra_calls == "forbid" or turn.requires_a_call:
        return None
    if task.policy is not None and policy_gates(task.policy, ctx.config):
        return None
    if ctx.config.confirm_writes and writes_to_confirm(ctx):
        return None
    if ctx.reference_state is not None and ctx.predicted_state is not None:
        return None
    if turn.states_calls and task.final_state == "checked":
        unknown = sorted({v.step.name for v in ctx.steps if v.made and task.tool(v.step.name) is None})
        if not unknown:
            return None  # no write expected: the calls check passes it or fails it at the first write
        return f"nothing to check: the turn expects no write, but the task does not declare {unknown}, so whether they write is unknown"
    return "nothing to check: the task gives no required reference call, no answer specification and no policy for this turn"


def _rederive(ts: TurnState, decided: Check) -> None:
    """Re-run the checks that depend on the judged one, never a check a judge decided."""
    stale = dependents(WATERFALL, decided)
    for check in _EVALUATION_ORDER:
        if check.check in stale and check.check not in ts.asked:
            outcome = check.run(ts.ctx, ts.checks)
            ts.checks[check.check] = outcome.result
            if isinstance(outcome.detail, CallMatching):
                ts.facts.matching = outcome.detail
    ts.facts.answer = ts.checks[Check.ANSWER]


def _rubric(ts: TurnState, check: Check) -> str:
    if check == Check.ANSWER and ts.ctx.turn.gold_answers is None and ts.ctx.turn.criteria:
        return "open_ended"
    return RUBRIC_FOR_CHECK[check.value]


def _clip(value: Any) -> Any:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= _MAX_TEXT else text[:_MAX_TEXT] + f"... [{len(text) - _MAX_TEXT} more characters]"


_UNTRUSTED = ("answer", "predicted_calls", "calls", "tool_outputs")  # written by the agent or its tools


def _without_instructions(material: dict[str, Any]) -> tuple[dict[str, Any], tuple[str, ...]]:
    removed: tuple[str, ...] = ()
    for key in _UNTRUSTED:
        if key in material:
            material[key], found = strip_instructions_deep(material[key])
            removed += found
    return material, removed


def _material(ctx: TurnContext, check: Check) -> dict[str, Any]:
    """The check's judge material (``judge.core._materials``), as the JSON object sent on the wire."""
    return _material_model(ctx, check).model_dump()


def _material_model(ctx: TurnContext, check: Check) -> BaseModel:
    turn = ctx.turn
    answer = ctx.traj_turn.final_answer if ctx.traj_turn is not None else None
    if check == Check.POLICY:
        policy = (ctx.policy.text if ctx.policy is not None else None) or ""
        if ctx.policy is not None and ctx.policy.confirm_writes:  # the judge is told the rule it is asked about
            policy = f"{policy}\n\n{CONFIRM_WRITES_RULE}" if policy else CONFIRM_WRITES_RULE
        calls = [PolicyCallShown(step=v.index, turn_id=turn.turn_id, name=v.step.name, arguments=v.step.arguments, status=v.status) for v in ctx.steps]
        return PolicyMaterial(policy=policy, question=turn.query, calls=calls)
    if check == Check.CALLS:
        outputs = ctx.reference_outputs or [None] * len(turn.reference_calls)
        return SufficiencyMaterial(
            question=turn.query,
            gold_answers=turn.gold_answers,
            reference_calls=[
                ReferenceCallShown(name=c.name, arguments=c.arguments, output=None if o is None else _clip(o)) for c, o in zip(turn.reference_calls, outputs)
            ],
            predicted_calls=[CallShown(step=v.index, name=v.step.name, arguments=v.step.arguments, status=v.status, result=_clip(v.result)) for v in ctx.steps],
        )
    if check == Check.ANSWER:
        if turn.gold_answers is None:
            document = ctx.task.policy.text if ctx.task.policy is not None else None
            return OpenEndedMaterial(question=turn.query, criteria=turn.criteria or [], answer=answer, policy_document=document)
        return AnswerMaterial(question=turn.query, gold_answers=turn.gold_answers, answer=answer)
    outputs_shown = [_output_shown(v) for v in ctx.steps if v.status == "ok" or v.borrowed_from is not None]
    return GroundednessMaterial(question=turn.query, answer=answer, tool_outputs=outputs_shown)


def _output_shown(view: StepView) -> ToolOutputShown:
    """A successful step's result, or the output a no-result step borrows, marked as such."""
    if view.borrowed_from is None:
        return ToolOutputShown(step=view.index, name=view.step.name, arguments=view.step.arguments, result=_clip(view.result))
    return ToolOutputShown(
        step=view.index,
        name=view.step.name,
        arguments=view.step.arguments,
        result=_clip(view.borrowed),
        borrowed=f"no result was recorded for this call; result is the recorded output of the identical reference call {view.borrowed_from} ({view.step.name})",
    )


__all__ = ["CHECK_ORDER", "GradedCase", "grade_case"]
