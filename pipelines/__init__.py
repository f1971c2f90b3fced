"""The grading waterfall and everything that feeds it.

``ingest`` (formats -> Task, Trajectory, errors with file:line:field) -> ``checks`` (policy, calls,
answer, grounding; ``matching`` holds the value rules) with optional replay in an ``env`` ->
``grade`` (ONE trajectory in memory: the case, attribution, scoring, replay; results summed up by
its ``aggregate``) -> ``run`` (ONE run over files: inputs, shards, workers, merge, escalation,
resume, publish, the run state). ``cli`` is the ``judge`` command.

``grade_trajectory`` (``grade.reward``) grades one trajectory in memory, ``grade_trajectories`` a
batch: the reward-function entry points (``examples/trl_reward.py`` wraps them for TRL).
"""

from typing import Any

__all__ = ["grade_trajectories", "grade_trajectory"]


def __getattr__(name: str) -> Any:
    """``pipelines.grade_trajectory`` (and ``grade_trajectories``) loads the grader on first use (the CLI imports this package
    and must start fast)."""
    if name in ("grade_trajectory", "grade_trajectories"):
        from pipelines.grade import reward

        return getattr(reward, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
