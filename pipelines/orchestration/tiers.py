"""Difficulty tiers, from the reference DAG and the run (first that applies):

- ``recovery``: a call failed during the run (tool error, policy block or injected fault), so the
  agent had to recover, whatever the task's shape;
- ``branching``: some turn's reference DAG has independent required calls (two calls neither of
  which depends on the other: parallel branches, or calls whose order is free), or a reference
  call accepting alternative argument sets (``alternatives``: a choice point);
- ``linear``: every turn's reference calls form a chain (or there are none or one).

Pass rates and failure stages per tier live in ``summary.json`` (``by.tier``).
"""

from __future__ import annotations

from judge import DifficultyTier
from pipelines.orchestration._alignment import TurnView, is_failed_call
from pipelines.orchestration.rounds import DagFacts, turn_dags


def difficulty_tier(views: list[TurnView], dags: list[DagFacts] | None = None, failed: bool | None = None) -> DifficultyTier:
    """``dags`` and ``failed`` (whether any call failed) may be passed in when already known."""
    if failed if failed is not None else any(is_failed_call(s) for v in views for s in v.steps):
        return "recovery"
    if any(d.branches for d in (turn_dags(views) if dags is None else dags)):
        return "branching"
    return "linear"
