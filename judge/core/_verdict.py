"""What grading produces: per-check results, judge votes, per-turn and per-trajectory verdicts.

Invariants (checked in tests):
- a ``StageResult`` has ``failure_stage`` set iff its outcome is ``mismatch``;
- a ``TrajectoryResult`` with verdict ``pass`` has failure stage ``none``; ``fail`` has a real
  stage; ``unresolved`` and ``error`` have none (``unresolved_stages`` says what stayed open);
- ``decided_by`` is ``deterministic``, ``judge:<panel>``, ``unresolved`` or (input-error rows) ``error``.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, Field, model_validator

from judge.core._errors import InputErrorInfo, SourceRef
from judge.core._orchestration import Orchestration
from judge.core._stages import Check, DecidedBy, FailureStage, Outcome, VerdictLabel, check_decided_by
from judge.core._trajectory import ExternalLabel

DecidedByValue = Annotated[str, AfterValidator(check_decided_by)]


class EvidenceKind(StrEnum):
    """What an evidence item records (reports and clustering group by it, never by its prose)."""

    MATCHED_STRUCTURAL = "matched_structural"  # a reference call met by a call with matching arguments
    MATCHED_RESPONSE = "matched_response"  # a reference read met by a call that got its response
    UNSATISFIED = "unsatisfied"  # a required reference call no call met (decisive)
    NO_COUNTERPART = "no_counterpart"  # a reference read no call met, but another path may exist
    UNDECLARED_KEYS = "undeclared_keys"  # a reference write met but for nested keys no schema declares
    ADVISORY_UNMATCHED = "advisory_unmatched"  # an advisory reference call no call met
    EXTRA_WRITE = "extra_write"  # a surplus call (a write, or any call when extra calls are forbidden)
    STATE_MISMATCH = "state_mismatch"  # the final state differs from the reference's
    STATE_MATCH = "state_match"  # the benchmark environment found the state equal to the reference's (BFCL multi-turn)
    RESPONSE_MISSING = "response_missing"  # a reference call's result no call of the agent got (BFCL multi-turn)
    POLICY_VIOLATION = "policy_violation"
    POLICY_NOT_AUDITED = "policy_not_audited"  # a domain-wide policy document kept as judge context, not audited
    WRITE_CONFIRMED = "write_confirmed"  # a write the agent described and the user confirmed first (confirm_writes)
    CONFIRMATION_UNCLEAR = "confirmation_unclear"  # a write whose confirmation the rule cannot decide (confirm_writes)
    ANSWER = "answer"
    REQUIRED_CONTENT = "required_content"
    ENDED_EARLY = "ended_early"  # the run stopped (a limit, a crash) before the agent finished: no answer delivered
    INSTRUCTION_LIKE_TEXT = "instruction_like_text"  # text addressed to the grader: set aside, kept from judges
    BORROWED_OUTPUT = "borrowed_output"  # a call with no recorded result takes the output of the identical reference call
    NOT_RECORDED = "not_recorded"  # what the rule needs was not recorded (a call's arguments, the answer): undecided, never asked of a judge


class Evidence(BaseModel):
    """One fact a check relied on: which reference call met which predicted step, and why.

    ``tool`` names the tool the fact is about (the reference call's for reference evidence, the
    step's otherwise) so that no consumer has to parse ``message``."""

    kind: EvidenceKind
    message: str
    reference: int | None = None  # index into the turn's reference calls
    step: int | None = None  # index into the trajectory turn's steps
    tool: str | None = None
    expected: Any = None
    actual: Any = None


class AbstainReason(StrEnum):
    """Why a judge gave no vote. An abstention is never a negative vote."""

    RATE_LIMIT = "rate_limit"  # 429 after retries
    SERVER = "server"  # 5xx / 408 after retries
    TIMEOUT = "timeout"
    CONNECTION = "connection"
    ERROR = "error"  # any other failed call (a 4xx, an SDK error)
    REFUSAL = "refusal"  # the model declined to give a verdict
    UNPARSEABLE = "unparseable"  # no verdict the schema accepts
    BUDGET = "budget"  # --max-cost reached before the call
    OFFLINE_MISS = "offline_miss"  # --offline and no cached answer
    PENDING = "pending"  # sent in a provider batch that has not answered yet (never published)
    BATCH_EXPIRED = "batch_expired"  # the provider batch expired before answering this request
    BATCH_CANCELLED = "batch_cancelled"  # the provider batch was cancelled before answering it
    BATCH_FAILED = "batch_failed"  # the provider rejected the whole batch (validation failed)
    CONTROL_FAILED = "control_failed"  # set aside: the judge's control accuracy on this rubric is below the threshold
    UNVERIFIED = "unverified"  # a pass whose evidence does not check out against the trusted material (judge.core._evidence)


class Vote(BaseModel):
    """One judge's verdict on one escalated check. Abstentions are recorded, never counted as no."""

    judge: str  # provider:model
    label: str | None = None
    score: float | None = None
    abstained: bool = False
    abstain_reason: AbstainReason | None = None
    rationale: str = ""
    evidence: list[str] = Field(default_factory=list)
    confidence: float | None = None
    model_version: str | None = None
    decisive_step: int | None = None  # the step the judge named as where the trajectory went wrong (policy, calls rubrics)
    # What reading the judge's answer took (judge.llm._reading): "confidence: 78 is outside 0..1, read
    # as a percentage (0.78)", "control_characters: ...". None: the answer needed no repair.
    repairs: list[str] | None = None
    # The evidence the judge gave (exact text from named data blocks) and, where the check is about a
    # value the answer states, that value; ``verification``: what checking a pass against the
    # trusted material found (judge.core._evidence). None where the schema or the label asks none.
    quotes: list[dict[str, str]] | None = None
    candidate_answer: str | None = None
    verification: str | None = None
    said: str | None = None  # the judge's own label where checking its evidence refused it or the code replaced it
    cached: bool = False
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0


class PanelDecision(BaseModel):
    """A panel's decision on one request. ``outcome`` is inconclusive on a tie or all abstentions."""

    panel: str
    rule: str  # majority, unanimous, weighted
    label: str | None = None
    outcome: Outcome
    votes: list[Vote] = Field(default_factory=list)
    agreement: float | None = None  # share of non-abstaining votes that agree with the decision
    rubric: str | None = None
    rubric_version: str | None = None
    reason: str = ""
    decisive_step: int | None = None  # the step most votes for the decided label named (ties: the earliest)
    flags: list[str] = Field(default_factory=list)  # verdict-like text found in the untrusted material (never evidence)


class StageResult(BaseModel):
    """One check's result. ``decisive_step``, for a mismatch: the index (in the turn's steps) of the
    call where the turn went wrong, when one call did (None: a needed call was never made, or the
    answer decided)."""

    check: Check
    outcome: Outcome
    failure_stage: FailureStage | None = None
    reason: str = ""
    label: str | None = None  # e.g. CRAG answer label correct / incorrect / missing
    evidence: list[Evidence] = Field(default_factory=list)
    decided_by: DecidedByValue = DecidedBy.DETERMINISTIC
    decision: PanelDecision | None = None
    decisive_step: int | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _stage_iff_mismatch(self) -> StageResult:
        if (self.outcome == Outcome.MISMATCH) != (self.failure_stage is not None):
            raise ValueError("failure_stage must be set exactly when the outcome is mismatch")
        if self.failure_stage == FailureStage.NONE:
            raise ValueError("a mismatch must name a real failure stage")
        return self


class Scores(BaseModel):
    """Per-trajectory metrics (seed metrics + tool-chain scores). None: not applicable."""

    answer_accuracy: float | None = None
    crag: float | None = None  # mean over turns of correct 1 / missing 0 / incorrect -1
    path_completeness: float | None = None
    policy_compliance: float | None = None
    tool_efficiency: float | None = None
    tool_selection: float | None = None
    tool_order: float | None = None
    parameter: float | None = None
    success: float | None = None
    weighted_total: float | None = None


class DecisiveStep(BaseModel):
    """Where a failed trajectory went wrong, beside its failure stage.

    ``at``: ``call`` (the step ``step`` of turn ``turn_id``: a forbidden call, a wrong attempt, a
    surplus write), ``answer`` (the final answer, after the turn's calls) or ``end`` (the turn ended
    without a call it needed, or the run stopped). ``step`` indexes the turn's steps as graded (an
    episode's steps run on across its messages); for ``answer`` and ``end`` it is the number of steps,
    the position after the last call. ``decided_by`` says whether a rule or a judge named it."""

    turn_id: str
    step: int = Field(ge=0)
    at: Literal["call", "answer", "end"]
    call_id: str | None = None
    tool: str | None = None
    check: Check
    decided_by: DecidedByValue = DecidedBy.DETERMINISTIC


class TurnResult(BaseModel):
    turn_id: str
    verdict: VerdictLabel
    failure_stage: FailureStage | None = None
    checks: list[StageResult] = Field(default_factory=list)
    reason: str | None = None  # why an unresolved turn stays open when no check says (e.g. nothing to check)


class TrajectoryResult(BaseModel):
    """One line of results.jsonl: every input trajectory appears, graded or with its error."""

    task_id: str | None = None
    trajectory_id: str | None = None
    agent: str | None = None
    capability: str | None = None
    domain: str | None = None
    hop_count: int | None = None
    hop_pattern: str | None = None
    multi_source: bool = False
    policy_condition: str | None = None
    verdict: VerdictLabel
    failure_stage: FailureStage | None = None
    unresolved_stages: list[FailureStage] = Field(default_factory=list)
    decided_by: DecidedByValue
    turns: list[TurnResult] = Field(default_factory=list)
    decisive_step: DecisiveStep | None = None  # for a fail: where it went wrong
    scores: Scores = Field(default_factory=Scores)
    orchestration: Orchestration | None = None  # how the calls were orchestrated (None for error rows)
    judge_calls: int = 0
    judge_cost_usd: float = 0.0
    source: SourceRef | None = None
    error: InputErrorInfo | None = None
    external_labels: list[ExternalLabel] | None = None  # the source's own verdicts, for agreement reports

    @property
    def reason(self) -> str:
        """One line saying why the verdict is what it is (for disagreement lists and reports)."""
        if self.error is not None:
            return self.error.message
        for turn in self.turns:
            if self.verdict == VerdictLabel.FAIL and turn.verdict == VerdictLabel.FAIL:
                check = next((c for c in turn.checks if c.outcome == Outcome.MISMATCH), None)
                return f"turn {turn.turn_id}: {check.check.value}: {check.reason}" if check is not None else f"turn {turn.turn_id} failed"
            if self.verdict == VerdictLabel.UNRESOLVED and turn.verdict == VerdictLabel.UNRESOLVED:
                if turn.reason:
                    return f"turn {turn.turn_id}: {turn.reason}"
                check = next((c for c in turn.checks if c.outcome == Outcome.INCONCLUSIVE), None)
                return f"turn {turn.turn_id}: {check.check.value} inconclusive: {check.reason}" if check is not None else f"turn {turn.turn_id} unresolved"
        return "every check passed" if self.verdict == VerdictLabel.PASS else self.verdict.value

    @model_validator(mode="after")
    def _consistent(self) -> TrajectoryResult:
        v, s = self.verdict, self.failure_stage
        if v == VerdictLabel.PASS and s != FailureStage.NONE:
            raise ValueError("a pass has failure_stage none")
        if v == VerdictLabel.FAIL and (s is None or s == FailureStage.NONE):
            raise ValueError("a fail names its failure stage")
        if v in (VerdictLabel.UNRESOLVED, VerdictLabel.ERROR) and s is not None:
            raise ValueError("unresolved and error results carry no failure stage")
        if v == VerdictLabel.ERROR and self.error is None:
            raise ValueError("an error result carries its error")
        return self
