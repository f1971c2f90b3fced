"""The grading waterfall and everything that feeds it.

``ingest`` (formats -> Task, Trajectory, errors with file:line:field) -> ``checks`` (policy, calls,
answer, grounding; ``matching`` holds the value rules) with optional replay in an ``env`` ->
``grade`` (ONE trajectory in memory: the case, attribution, scoring, replay; results summed up by
its ``aggregate``) -> ``run`` (ONE run over files: inputs, shards, workers, merge, escalation,
resume, publish, the run state). ``cli`` is the ``judge`` command.

``grade_trajectory`` (``grade.reward``) grades one trajectory in memory: the reward-function entry point.
"""

from typing import Any

__all__ = ["grade_trajectory"]


def __getattr__(name: str) -> Any:
    """``pipelines.grade_trajectory`` loads the grader on first use (the CLI imports this package
    and must start fast)."""
    if name == "grade_trajectory":
        from pipelines.grade.reward import grade_trajectory

        return grade_trajectory
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
