"""``summary.json`` as a typed model: what the aggregator writes and the CLI and the reports read.

The file is the contract (other tools read it too), so the model mirrors it key for key; the
writer dumps it by alias with sorted keys, byte-identical to what the aggregator always wrote.
Fields added later have defaults, so a summary written by an older version still loads. ``pass``
is a Python keyword: the field is ``passed``, serialised as ``pass``.

Invariants (checked): ``counts.graded == pass + fail + unresolved``; every rate lies in [0, 1];
``failure_stages["none"] == counts.pass`` for the whole run.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_serializer, model_validator

_Summary = ConfigDict(extra="allow", populate_by_name=True, serialize_by_alias=True)

Interval = tuple[float, float]


class Counts(BaseModel):
    model_config = _Summary

    trajectories: int  # every input trajectory, graded or an input error
    graded: int
    errors: int  # trajectory input errors
    task_errors: int = 0
    label_errors: int = 0
    policy_not_audited: int = 0  # graded trajectories whose domain-wide policy document was context only (--policy-text gate audits it)
    passed: int = Field(alias="pass")
    fail: int
    unresolved: int


class ScoreStat(BaseModel):
    model_config = _Summary

    mean: float | None
    ci95: Interval | None
    n: int


class GroupStats(BaseModel):
    """Pass/fail figures of a group of trajectories (a breakdown value, or the whole run)."""

    model_config = _Summary

    n: int
    passed: int = Field(alias="pass")
    fail: int
    unresolved: int
    pass_rate: float | None = Field(ge=0, le=1)
    pass_rate_ci95: Interval | None
    pass_rate_if_unresolved_pass: float | None = Field(ge=0, le=1)
    failure_stages: dict[str, int]
    crag_score: float | None = None


class Leaderboard(BaseModel):
    model_config = _Summary

    capabilities: dict[str, float] = Field(default_factory=dict)
    score: float | None = None
    rule: str = ""


class JudgeTotals(BaseModel):
    """``calls`` and cost are those made for the trajectories; ``controls`` (when the run asked
    control items): mode, threshold, their own calls and cost, and judge -> rubric -> figures."""

    model_config = _Summary

    calls: int = 0
    cost_usd: float = 0.0
    calls_per_100_trajectories: float = 0.0
    controls: dict[str, Any] | None = None

    @model_serializer(mode="wrap")
    def _omit_no_controls(self, handler: Any) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if data.get("controls") is None:
            data.pop("controls", None)
        return data


class ErrorEntry(BaseModel):
    """An input error listed in the summary; ``scope`` says which input: task, labels, trajectory."""

    model_config = _Summary

    scope: str
    task_id: str | None = None
    trajectory_id: str | None = None
    kind: str
    message: str
    file: str
    line: int | None = None
    field: str | None = None


class WarningCount(BaseModel):
    model_config = _Summary

    count: int
    first: str  # file:line where it was first seen
    message: str


class Kappa(BaseModel):
    model_config = _Summary

    value: float | None
    ci95: Interval | None


class Disagreement(BaseModel):
    model_config = _Summary

    task_id: str | None
    trajectory_id: str | None
    ours: dict[str, Any]  # verdict, failure_stage, reason
    theirs: dict[str, Any]  # verdict, value, reason


class ExternalAgreement(BaseModel):
    """Our verdicts beside a source's own (a tau2 reward, an Inspect scorer, --labels)."""

    model_config = _Summary

    n: int
    both_decided: int
    confusion: dict[str, dict[str, int]]  # ours (pass/fail/unresolved) -> theirs (pass/fail/no verdict)
    agreement: float | None
    cohen_kappa: Kappa
    unresolved_by_us: int
    disagreements: list[Disagreement]


ERRORS_LISTED = 1000  # summary.json lists at most this many errors; the rest are counted per kind and kept in errors_file
_OMITTED_WHEN_NONE = ("external_agreement", "errors_by_kind", "errors_file")


class RunSummary(GroupStats):
    """The whole run: its group figures plus counts, breakdowns, leaderboard, judges, errors."""

    schema_version: int = 1
    counts: Counts
    scores: dict[str, ScoreStat] = Field(default_factory=dict)
    decided_by: dict[str, int] = Field(default_factory=dict)
    unresolved_stages: dict[str, int] = Field(default_factory=dict)
    by: dict[str, dict[str, GroupStats]] = Field(default_factory=dict)  # breakdown -> value -> figures
    leaderboard: Leaderboard = Field(default_factory=Leaderboard)
    judges: JudgeTotals = Field(default_factory=JudgeTotals)
    errors: list[ErrorEntry] = Field(default_factory=list)  # the first ERRORS_LISTED, in input order (all of them when errors_file is None)
    errors_by_kind: dict[str, dict[str, int]] | None = None  # scope (trajectory, task, labels) -> kind -> count, when there are errors
    errors_file: str | None = None  # beside summary.json: every error, one JSON line each, when more than the listed ones
    input_warnings: dict[str, dict[str, WarningCount]] = Field(default_factory=dict)  # kind -> field pattern -> count
    external_agreement: dict[str, ExternalAgreement] | None = None
    orchestration: dict[str, Any] | None = None  # recovery, rounds, loops, tiers, failure modes (pipelines.orchestration)

    @model_validator(mode="after")
    def _consistent(self) -> RunSummary:
        c = self.counts
        if c.graded != c.passed + c.fail + c.unresolved:
            raise ValueError(f"counts: graded {c.graded} != pass {c.passed} + fail {c.fail} + unresolved {c.unresolved}")
        return self

    def to_json(self) -> str:
        """The file's bytes: sorted keys, two-space indent, UTF-8 text (as it was always written)."""
        import json

        return (
            json.dumps(
                self.model_dump(mode="json", exclude_none=False, exclude={name for name in _OMITTED_WHEN_NONE if getattr(self, name) is None}),
                indent=2,
                sort_keys=True,
                ensure_ascii=False,
            )
            + "\n"
        )
