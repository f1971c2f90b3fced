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
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from judge.core._depth import parse_json_bounded
from judge.core._task import _as_str_id

_OK = {"ok", "success", "succeeded", "successful", "done"}
_ERROR = {"error", "failed", "failure", "fail", "exception", "timeout"}
_BLOCKED = {"blocked", "refused", "denied"}
_UNKNOWN = {"unknown", "pending", "not_executed"}

StepStatus = Literal["ok", "error", "blocked", "unknown"]


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

    model_config = ConfigDict(extra="forbid")

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
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


class TrajectoryTurn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    turn_id: str = "1"
    query: str | None = None
    steps: list[Step] = Field(default_factory=list)
    final_answer: Any = None

    coerce_ids = field_validator("turn_id", mode="before")(_as_str_id)


class TokenUsage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    input_tokens: int | None = Field(default=None, ge=0)
    output_tokens: int | None = Field(default=None, ge=0)
    cost_usd: float | None = Field(default=None, ge=0)


class Trajectory(BaseModel):
    """One run of an agent on one task. Single-turn shorthand: ``steps`` + ``final_answer``."""

    model_config = ConfigDict(extra="forbid")

    task_id: str = Field(min_length=1)
    trajectory_id: str = Field(min_length=1)
    agent: str | None = None
    turns: list[TrajectoryTurn] = Field(min_length=1)
    token_usage: TokenUsage | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

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

    @property
    def steps(self) -> list[Step]:
        return [s for t in self.turns for s in t.steps]

    @property
    def final_answer(self) -> Any:
        return self.turns[-1].final_answer
