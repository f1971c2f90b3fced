"""How the agent orchestrated its calls: recovery after failed calls, rounds, loops, difficulty tier.

These facts sit beside the verdict (``TrajectoryResult.orchestration``): they never change
whether a trajectory passed, they say *how* it got there. ``pipelines.orchestration`` computes
them; the definitions are in its modules and in docs/orchestration.md.

Invariants (checked here):
- ``failed_calls == len(recovery)`` and ``recovered_calls`` counts the events with
  ``recovered``; ``recovery_rate = recovered_calls / failed_calls`` (None without a failed call);
- ``parallel_efficiency = min(1, rounds_minimum / rounds_used)``, None when rounds are unknown
  (no step carries a ``round``) or no round was used;
- ``serialised_pairs <= independent_pairs``; both are None when rounds are unknown;
- ``looping`` implies ``loop_repeats >= 2``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, model_validator

RecoveryOutcome = Literal["retried_fixed", "switched_tool", "repeated_unchanged", "retried_unrecorded", "recovered_later", "gave_up", "cut_off"]
RECOVERY_OUTCOMES: tuple[RecoveryOutcome, ...] = (
    "retried_fixed",
    "switched_tool",
    "repeated_unchanged",
    "retried_unrecorded",
    "recovered_later",
    "gave_up",
    "cut_off",
)
DifficultyTier = Literal["linear", "branching", "recovery"]
DIFFICULTY_TIERS: tuple[DifficultyTier, ...] = ("linear", "branching", "recovery")


class RecoveryEvent(BaseModel):
    """What the agent did after one failed call, and whether it got what the call was for."""

    turn_id: str
    step: int = Field(ge=0)  # index of the failed call within the turn's steps
    tool: str
    failure: str  # the injected fault kind (error, timeout, empty, malformed, ...), else tool_error | blocked
    outcome: RecoveryOutcome
    recovered: bool
    by_step: int | None = Field(default=None, ge=0)  # the later step that reached the goal

    @model_validator(mode="after")
    def _recovered_has_a_step(self) -> RecoveryEvent:
        if self.recovered != (self.by_step is not None):
            raise ValueError("by_step is set exactly when the failed call was recovered")
        if self.outcome in ("gave_up", "cut_off") and self.recovered:
            raise ValueError(f"{self.outcome} means the goal was never reached")
        return self


class Orchestration(BaseModel):
    """Per-trajectory orchestration metrics (see the module docstring for the invariants)."""

    failed_calls: int = Field(default=0, ge=0)
    recovered_calls: int = Field(default=0, ge=0)
    recovery_rate: float | None = Field(default=None, ge=0, le=1)
    recovery: list[RecoveryEvent] = Field(default_factory=list)
    rounds_used: int | None = Field(default=None, ge=0)
    rounds_minimum: int = Field(default=0, ge=0)
    parallel_efficiency: float | None = Field(default=None, ge=0, le=1)
    independent_pairs: int | None = Field(default=None, ge=0)  # satisfied reference pairs one round could hold (same DAG depth)
    serialised_pairs: int | None = Field(default=None, ge=0)  # of those, issued in different rounds
    loop_repeats: int = Field(default=0, ge=0)
    looping: bool = False
    tier: DifficultyTier = "linear"

    @model_validator(mode="after")
    def _consistent(self) -> Orchestration:
        if self.failed_calls != len(self.recovery):
            raise ValueError("failed_calls must equal the number of recovery events")
        if self.recovered_calls != sum(e.recovered for e in self.recovery):
            raise ValueError("recovered_calls must count the recovered events")
        if (self.recovery_rate is None) != (self.failed_calls == 0):
            raise ValueError("recovery_rate is set exactly when there is a failed call")
        if (self.independent_pairs is None) != (self.serialised_pairs is None):
            raise ValueError("independent_pairs and serialised_pairs are known together")
        if self.independent_pairs is not None and self.serialised_pairs is not None and self.serialised_pairs > self.independent_pairs:
            raise ValueError("serialised_pairs cannot exceed independent_pairs")
        if self.looping and self.loop_repeats < 2:
            raise ValueError("looping needs at least two repeats")
        return self
