"""Vote weights measured by calibration (the file format is shared with ``calibration``; keep it).

``{"version": 1, "method": "log_odds", "rubric": "answer_correctness" | null,
"positive_label": "correct", "prior_log_odds": 0.0,
"judges": {"openai:gpt-4.1-mini": {"weight": 1.7, "tpr": 0.95, "tnr": 0.90, "n": 812}}}``

A gold set of several rubrics is calibrated per rubric, and its file keeps each rubric's figures
apart (a judge's TPR / TNR on one rubric says nothing of another): ``"rubric": null, "judges": {}``
and ``"rubrics": {"answer_correctness": {"positive_label": "correct", "prior_log_odds": 0.1,
"judges": {...}}, "groundedness": {...}}``. A decision of a rubric the file has no entry for is then
a plain (unweighted) plurality, every judge counted as missing from the file.
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


class RubricWeights(BaseModel):
    """One rubric's entry of a per-rubric weights file."""

    model_config = ConfigDict(extra="forbid")

    positive_label: str | None = None
    prior_log_odds: float = 0.0
    judges: dict[str, JudgeWeight] = Field(default_factory=dict)


class VoteWeights(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int = 1
    method: str = "log_odds"
    rubric: str | None = None
    positive_label: str | None = None
    prior_log_odds: float = 0.0
    judges: dict[str, JudgeWeight] = Field(default_factory=dict)
    rubrics: dict[str, RubricWeights] | None = None  # per rubric (then ``rubric`` is null and ``judges`` empty)

    def applies_to(self, rubric: str) -> bool:
        return self.rubric is None or self.rubric == rubric

    def for_rubric(self, rubric: str) -> VoteWeights:
        """The weights that decide a ``rubric`` decision: the file itself, or its entry for the
        rubric (no entry: no judge weighed)."""
        if self.rubrics is None:
            return self
        entry = self.rubrics.get(rubric) or RubricWeights()
        return VoteWeights(version=self.version, method=self.method, rubric=rubric, **entry.model_dump())

    def tables(self) -> dict[str | None, dict[str, JudgeWeight]]:
        """The judges weighed, per rubric entry (``None``: a file for one rubric or for all)."""
        if self.rubrics is None:
            return {None: self.judges}
        return {name: entry.judges for name, entry in self.rubrics.items()}


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
    if weights.rubrics is not None and (weights.judges or weights.rubric is not None):
        raise JudgeConfigError(
            f"{path}: field rubrics: a file of per-rubric weights keeps its judges under rubrics.<name>.judges; rubric must be null and judges empty"
        )
    if weights.method not in ("log_odds", "weight"):
        raise JudgeConfigError(f"{path}: field method: unknown method {weights.method!r} (expected log_odds)")
    return weights
