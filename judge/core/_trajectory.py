"""Agent trajectories: every call the agent made, what came back, and what it finally said.

A step's ``status`` says what is known of the call's outcome:
- ``ok``: the tool ran and returned ``result``;
- ``error``: the tool failed (an explicit status, ``is_error``, an ``error`` field, or a result that
  starts with "Error" / is a JSON object with an ``error`` key when the format has no status);
- ``blocked``: a run-time policy refused to execute the call (``judge run --enforce-policy``);
- ``unknown``: no result was recorded (a model output whose calls were never executed, or a log
  that kept only the calls). The call was *made*; its outcome is unknown, never a failure.

A failed call (``error`` / ``blocked``) changed nothing: it never satisfies a reference call and is
never an unexpected side effect. ``round`` numbers the model messages that issued calls (parallel
calls share a round); ``fault`` names a fault injected by the runner (error, timeout, empty,
malformed) so recovery can be measured.

What a source did not record is unknown, never absent (tracing keeps no message content unless
asked: OTel GenAI's default). ``Step.arguments`` is ``None`` when the call's arguments were not
recorded: the call was made, with arguments nobody knows (``{}`` means it was called with none).
``TrajectoryTurn.answer_recorded`` is False when what the agent said in the turn was not recorded:
``final_answer`` is then None because it is unknown, not because the agent gave none, and
``agent_messages`` holds only what was recorded. ``Trajectory.not_recorded`` says why, in the
source's words (how to record it); grading leaves a check that needs the missing content
undecided with that reason and asks no judge about it, while what was recorded still decides (a
call to the wrong tool is still a wrong tool).

``ended_early`` on a trajectory says the run stopped before the agent finished: a step, token,
time or error limit was hit, or something crashed. Such a run did not deliver its answer, whatever
its last message says (tau2 gives it reward 0); grading fails it at answer correctness unless it
failed earlier (``pipelines.checks.answer``).
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from judge.core._depth import parse_json_bounded
from judge.core._extras import Open
from judge.core._task import _as_str_id

_OK = {"ok", "success", "succeeded", "successful", "done"}
_ERROR = {"error", "failed", "failure", "fail", "exception", "timeout"}
_BLOCKED = {"blocked", "refused", "denied"}
_UNKNOWN = {"unknown", "pending", "not_executed"}

StepStatus = Literal["ok", "error", "blocked", "unknown"]
NOT_RECORDED_DEFAULT = "content not recorded by the source"  # the reason when a source marks content unrecorded without saying why


def looks_like_error(result: Any) -> bool:
    """The documented fallback when a format carries no status field."""
    if isinstance(result, dict):
        return "error" in result
    if isinstance(result, str):
        text = result.lstrip()
        if text[:5].lower() == "error" and not text[5:6].isalpha():  # "Error: ..." but not "Errors are rare"
            return True
        if text.startswith("{"):
            try:
                parsed = parse_json_bounded(text)
            except ValueError:
                return False
            return isinstance(parsed, dict) and "error" in parsed
    return False


def normalise_status(value: Any) -> StepStatus:
    if isinstance(value, bool):
        return "ok" if value else "error"
    text = str(value).strip().lower()
    if text in _OK:
        return "ok"
    if text in _ERROR:
        return "error"
    if text in _BLOCKED:
        return "blocked"
    if text in _UNKNOWN:
        return "unknown"
    raise ValueError(f"unknown status {value!r}: use 'ok', 'error', 'blocked' or 'unknown'")


class Step(BaseModel):
    """One tool call the agent made."""

    model_config = Open

    name: str
    arguments: dict[str, Any] | None = Field(default_factory=dict)  # None: made with arguments the source did not record
    result: Any = None
    status: StepStatus = "ok"
    error: str | None = None
    latency_ms: float | None = Field(default=None, ge=0)
    call_id: str | None = None
    round: int | None = Field(default=None, ge=0)  # index of the model message that issued the call
    fault: str | None = None  # a fault injected by the runner: error, timeout, empty, malformed

    @model_validator(mode="before")
    @classmethod
    def _infer_status(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        if data.get("status") is not None:
            data["status"] = normalise_status(data["status"])
        elif data.get("error"):
            data["status"] = "error"
        elif "result" not in data:  # the call was made but nothing recorded what came back
            data["status"] = "unknown"
        else:
            data["status"] = "error" if looks_like_error(data.get("result")) else "ok"
        return data

    @property
    def ok(self) -> bool:
        """The tool ran and returned a result."""
        return self.status == "ok"

    @property
    def failed(self) -> bool:
        """The call changed nothing: the tool failed or a policy blocked it."""
        return self.status in ("error", "blocked")

    @property
    def arguments_recorded(self) -> bool:
        return self.arguments is not None


class TrajectoryTurn(BaseModel):
    """One user turn of a dialogue: the calls the agent made and what it said.

    ``agent_messages`` holds every text the agent sent in the turn, in order (the last one is
    normally ``final_answer``); required content may be communicated in any of them.
    """

    model_config = Open

    turn_id: str = "1"
    query: str | None = None
    steps: list[Step] = Field(default_factory=list)
    final_answer: Any = None
    agent_messages: list[str] = Field(default_factory=list)
    answer_recorded: bool = True  # False: what the agent said here was not recorded (final_answer unknown)

    coerce_ids = field_validator("turn_id", mode="before")(_as_str_id)

    @model_validator(mode="after")
    def _unrecorded_answer_is_none(self) -> TrajectoryTurn:
        if not self.answer_recorded and self.final_answer is not None:
            raise ValueError("answer_recorded is false but a final_answer is given: an answer that was not recorded has no value")
        return self


class TokenUsage(BaseModel):
    model_config = Open

    input_tokens: int | None = Field(default=None, ge=0)
    output_tokens: int | None = Field(default=None, ge=0)
    cost_usd: float | None = Field(default=None, ge=0)


_PASS_WORDS = {"pass", "passed", "true", "correct", "c", "success", "succeeded", "yes", "1"}
_FAIL_WORDS = {"fail", "failed", "false", "incorrect", "i", "failure", "no", "0", "p", "partial", "n"}


def label_passed(value: Any) -> bool | None:
    """A source's own verdict as pass/fail: booleans; pass/fail words (Inspect's C / I, and P
    partial or N no-answer count as fail); a number is a reward in [0, 1] that passes only at full
    credit (tau2: reward 1.0). None when the value says neither (e.g. a dict of sub-scores)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        if math.isnan(value) or not 0 <= value <= 1:
            return None
        return value >= 1
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _PASS_WORDS:
            return True
        if word in _FAIL_WORDS:
            return False
    return None


class ExternalLabel(BaseModel):
    """A verdict the trajectory's source gave it (a reward, a checker result, a scorer value).

    Kept next to ours so a team moving to this tool sees where the two agree and where not."""

    model_config = Open

    source: str  # e.g. "tau2.reward", "inspect:match", "bfcl", "labels-file"
    value: Any = None
    passed: bool | None = None  # value normalised by label_passed (None: not a pass/fail value)
    reason: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _normalise(cls, data: Any) -> Any:
        if isinstance(data, dict) and "passed" not in data:
            data = {**data, "passed": label_passed(data.get("value"))}
        return data


EndedEarlyKind = Literal["limit", "error"]


class EndedEarly(BaseModel):
    """Why a run stopped before the agent finished.

    ``kind``: ``limit`` when a budget the harness set ran out (steps, messages, tokens, time,
    context window, errors in a row), ``error`` when something crashed (the agent, the user
    simulator, the infrastructure). ``reason`` says which, in the source's words (it is the
    reason of the failing check). ``turn_id`` names the trajectory turn the run stopped in; None
    means its last turn (the usual case: nothing after it ran)."""

    model_config = Open

    kind: EndedEarlyKind
    reason: str = Field(min_length=1)
    turn_id: str | None = None

    coerce_ids = field_validator("turn_id", mode="before")(_as_str_id)


class Trajectory(BaseModel):
    """One run of an agent on one task. Single-turn shorthand: ``steps`` + ``final_answer``.

    ``ended_early`` is set when the run stopped before the agent finished (see ``EndedEarly``);
    None means it ran to its end (the agent or the user stopped)."""

    model_config = Open

    task_id: str = Field(min_length=1)
    trajectory_id: str = Field(min_length=1)
    agent: str | None = None
    turns: list[TrajectoryTurn] = Field(min_length=1)
    token_usage: TokenUsage | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    external_labels: list[ExternalLabel] = Field(default_factory=list)
    ended_early: EndedEarly | None = None
    not_recorded: str | None = None  # why arguments or answers are missing from the record (set whenever some are)

    coerce_ids = field_validator("task_id", "trajectory_id", mode="before")(_as_str_id)

    @model_validator(mode="before")
    @classmethod
    def _single_turn_shorthand(cls, data: Any) -> Any:
        if isinstance(data, dict) and ("steps" in data or "final_answer" in data):
            if "turns" in data:
                raise ValueError("give either steps/final_answer or turns, not both")
            data = dict(data)
            data["turns"] = [{"turn_id": "1", "steps": data.pop("steps", []), "final_answer": data.pop("final_answer", None)}]
        return data

    @model_validator(mode="after")
    def _says_why_content_is_missing(self) -> Trajectory:
        if self.not_recorded is None and (any(not s.arguments_recorded for s in self.steps) or any(not t.answer_recorded for t in self.turns)):
            self.not_recorded = NOT_RECORDED_DEFAULT
        return self

    @model_validator(mode="after")
    def _ended_in_a_turn_it_has(self) -> Trajectory:
        where = self.ended_early.turn_id if self.ended_early is not None else None
        if where is not None and all(t.turn_id != where for t in self.turns):
            raise ValueError(f"ended_early.turn_id {where!r} names no turn of the trajectory {[t.turn_id for t in self.turns]}")
        return self

    @property
    def ended_turn(self) -> TrajectoryTurn | None:
        """The turn the run stopped in when it ended early (the first with ``ended_early.turn_id``,
        else the last turn); None when the run finished."""
        if self.ended_early is None:
            return None
        if self.ended_early.turn_id is None:
            return self.turns[-1]
        return next(t for t in self.turns if t.turn_id == self.ended_early.turn_id)

    @property
    def steps(self) -> list[Step]:
        return [s for t in self.turns for s in t.steps]

    @property
    def final_answer(self) -> Any:
        return self.turns[-1].final_answer
