"""Vote weights measured by calibration (the file format is shared with ``calibration``; keep it).

``{"version": 1, "method": "log_odds", "rubric": "answer_correctness" | null,
"positive_label": "correct", "prior_log_odds": 0.0,
"judges": {"openai:gpt-4.1-mini": {"weight": 1.7, "tpr": 0.95, "tnr": 0.90, "n": 812}}}``
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from judge.core._errors import field_path
from judge.llm._settings import JudgeConfigError

RATE_CLIP = (0.01, 0.99)


class JudgeWeight(BaseModel):
    model_config = ConfigDict(extra="allow")

    weight: float = Field(default=1.0, ge=0)
    tpr: float | None = Field(default=None, ge=0, le=1)
    tnr: float | None = Field(default=None, ge=0, le=1)
    n: int | None = None

    def log_odds(self, positive: bool) -> float | None:
        """log(tpr/(1-tnr)) for a positive vote, log((1-tpr)/tnr) for a negative one."""
        if self.tpr is None or self.tnr is None:
            return None
        tpr = min(max(self.tpr, RATE_CLIP[0]), RATE_CLIP[1])
        tnr = min(max(self.tnr, RATE_CLIP[0]), RATE_CLIP[1])
        return math.log(tpr / (1 - tnr)) if positive else math.log((1 - tpr) / tnr)


class VoteWeights(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int = 1
    method: str = "log_odds"
    rubric: str | None = None
    positive_label: str | None = None
    prior_log_odds: float = 0.0
    judges: dict[str, JudgeWeight] = Field(default_factory=dict)

    def applies_to(self, rubric: str) -> bool:
        return self.rubric is None or self.rubric == rubric


def load_weights(path: Path) -> VoteWeights:
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise JudgeConfigError(f"{path}: weights file not found") from None
    except json.JSONDecodeError as exc:
        raise JudgeConfigError(f"{path}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    try:
        weights = VoteWeights.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise JudgeConfigError(f"{path}: field {field_path(first['loc'])}: {first['msg']}") from None
    if weights.version != 1:
        raise JudgeConfigError(f"{path}: field version: unsupported weights version {weights.version} (expected 1)")
    if weights.method not in ("log_odds", "weight"):
        raise JudgeConfigError(f"{path}: field method: unknown method {weights.method!r} (expected log_odds)")
    return weights
