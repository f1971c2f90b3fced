"""Grading configuration: score weights, answer thresholds, bootstrap settings.

Loaded from the ``[grading]`` section of an optional TOML file (``judge grade --config``, the
same file whose other sections configure the judges); every field has a documented
default so a run with no config is fully specified (and recorded in manifest.json).
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from judge import Policy, Task


class ScoreWeights(BaseModel):
    """Weights of the tool-chain total (the seed article's 0.4 / 0.3 / 0.2 / 0.1)."""

    model_config = ConfigDict(extra="forbid")

    selection: float = Field(0.4, ge=0)
    order: float = Field(0.3, ge=0)
    parameter: float = Field(0.2, ge=0)
    success: float = Field(0.1, ge=0)


class AnswerSettings(BaseModel):
    """Deterministic answer tolerances (calibration's threshold tuning writes this section)."""

    model_config = ConfigDict(extra="forbid")

    accept_similarity: float = Field(1.0, ge=0, le=1)
    reject_similarity: float | None = Field(None, ge=0, le=1)
    short_answer_tokens: int = Field(8, ge=1)
    numeric_relative_tolerance: float = Field(1e-6, ge=0)


class GradingConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    weights: ScoreWeights = Field(default_factory=ScoreWeights)
    critical_weight: float = Field(2.0, ge=1, description="weight of a reference call marked critical")
    answer: AnswerSettings = Field(default_factory=AnswerSettings)
    bootstrap_samples: int = Field(2000, ge=100)
    seed: int = 0
    multi_source_capability: str = Field("4", description="capability whose multi-source cases count 2x on the leaderboard")
    multi_source_weight: float = Field(2.0, ge=1)
    controls: Literal["off", "report", "gate"] = Field(
        "gate",
        description="control items among the judges' questions (pipelines.controls): off, report their accuracy, or gate (set aside a judge below the threshold)",
    )
    control_threshold: float = Field(0.8, ge=0, le=1, description="control accuracy below which a judge's votes on that rubric are set aside (controls = gate)")
    policy_text: Literal["context", "gate"] = Field(
        "context",
        description="a benchmark's domain-wide policy document (tau2's environment policy): context for the judges, or a gate the policy rubric audits",
    )
    turns: Literal["auto", "episode", "per-message"] = Field(
        "auto", description="auto: a one-goal task grades a dialogue as one episode; episode / per-message force one way (see pipelines.alignment)"
    )
    confirm_writes: bool = Field(
        False,
        description="grade every task as if its policy said confirm_writes: true (a task without a policy gets one with that rule alone); "
        "see pipelines.checks.policy",
    )

    def policy_for(self, task: Task) -> Policy | None:
        """The policy grading checks for ``task``: its own, plus the rules this config adds to every task."""
        from judge import Policy

        if not self.confirm_writes or (task.policy is not None and task.policy.confirm_writes):
            return task.policy
        return (task.policy or Policy()).model_copy(update={"confirm_writes": True})

    @classmethod
    def load(cls, path: Path | None) -> GradingConfig:
        if path is None:
            return cls()
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
        unknown = sorted(set(data) - set(CONFIG_KEYS))
        if unknown:  # a misspelt section ([gradingg]) would otherwise be a judge configuration error, or ignored
            import difflib

            first = unknown[0]
            close = difflib.get_close_matches(first, CONFIG_KEYS, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise ValueError(f"unknown top-level key or section {', '.join(unknown)}{hint}; a config file holds {', '.join(CONFIG_KEYS)}")
        return cls.model_validate(data.get("grading", {}))


# The top-level keys and sections of a --config file: [grading] (this module's), the rest the judges'
# (judge.llm._settings.ConfigFile, whose fields these are: tests/pipelines/test_cli_usage.py checks it).
CONFIG_KEYS = ("grading", "default_panel", "panels", "providers", "prices", "retry", "concurrency", "timeout_s")
