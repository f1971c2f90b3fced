"""Agent trajectories: every call the agent made, what came back, and what it finally said.

A step's ``status`` is taken from the input when present; otherwise it is inferred: a result that
starts with "Error" or is a JSON object with an ``error`` key marks the call as failed. A failed
call changed nothing (it never satisfies a reference call and is never an unexpected side effect).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from judge.core._task import _as_str_id

_OK = {"ok", "success", "succeeded", "successful", "done"}
_ERROR = {"error", "failed", "failure", "fail", "blocked", "exception", "timeout"}


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
                parsed = json.loads(text)
            except ValueError:
                return False
            return isinstance(parsed, dict) and "error" in parsed
    return False


def normalise_status(value: Any) -> Literal["ok", "error"]:
    if isinstance(value, bool):
        return "ok" if value else "error"
    text = str(value).strip().lower()
    if text in _OK:
        return "ok"
    if text in _ERROR:
        return "error"
    raise ValueError(f"unknown status {value!r}: use 'ok' or 'error'")


class Step(BaseModel):
    """One tool call the agent made."""

    model_config = ConfigDict(extra="forbid")

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: Any = None
    status: Literal["ok", "error"] = "ok"
    error: str | None = None
    latency_ms: float | None = Field(default=None, ge=0)
    call_id: str | None = None

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
        else:
            data["status"] = "error" if looks_like_error(data.get("result")) else "ok"
        return data

    @property
    def ok(self) -> bool:
        return self.status == "ok"


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
