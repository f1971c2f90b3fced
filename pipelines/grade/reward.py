"""``grade_trajectory``: one trajectory graded in memory, the reward-function entry point.

Reinforcement-learning pipelines score millions of rollouts, on Ray or anywhere else, with a
plain function call: no files, no output directory, no network, no judge. The same deterministic
waterfall as ``judge grade`` (policy -> calls -> answer -> grounding, attribution, scores) runs
on one task and one trajectory and returns the ``TrajectoryResult`` that would be its line of
``results.jsonl``.

What it does not do, by design: it never asks an LLM judge. A check the deterministic rules
cannot decide stays ``inconclusive`` and the verdict is ``unresolved`` (with
``unresolved_stages`` naming where); map that to a reward as the training recipe wants (e.g.
``0.0`` and drop the sample, or a partial score from ``result.scores``). Replay in an executable
environment is off unless a ``replayer`` is passed (it reads the bundled SQLite databases).

Example (a reward of 1 for a pass, else the tool-chain score)::

    from pipelines import grade_trajectory

    result = grade_trajectory(task_dict, {"task_id": "t1", "messages": rollout}, fmt="openai")
    reward = 1.0 if result.verdict == "pass" else (result.scores.weighted_total or 0.0)

Invariants: pure (the same arguments give an equal result; nothing is read or written), total
(a malformed task or trajectory gives a ``verdict: error`` result naming the field, it never
raises), and thread- and process-safe (no shared state is written).
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from judge import InputError, InputErrorInfo, SourceRef, Task, Trajectory, TrajectoryResult, VerdictLabel
from pipelines.alignment import TurnAlignmentError
from pipelines.config import GradingConfig
from pipelines.grade.case import grade_case
from pipelines.ingest import convert_trajectory

__all__ = ["grade_trajectory"]

_MEMORY = "<memory>"


def grade_trajectory(
    task: Task | dict[str, Any],
    trajectory: Trajectory | dict[str, Any],
    config: GradingConfig | None = None,
    *,
    fmt: str = "native",
    replayer: Any = None,
) -> TrajectoryResult:
    """Grade ``trajectory`` against ``task`` deterministically, in memory.

    ``task``: a ``judge.Task`` or its native JSON form. ``trajectory``: a ``judge.Trajectory`` or a
    dict in ``fmt`` (``native``, ``openai`` messages, ``anthropic`` messages, ``vakra``...; the
    streaming formats of ``judge grade --format``). ``config``: the ``[grading]`` settings
    (defaults when None). ``replayer``: a ``pipelines.grade.Replayer`` to re-execute calls in the
    task's environment (None: recorded results are compared as they are).
    """
    config = config or GradingConfig()
    source = SourceRef(file=_MEMORY)
    try:
        task_model = task if isinstance(task, Task) else Task.model_validate(task)
    except ValidationError as err:
        return _error(None, None, source, "invalid_field", f"task: {err.errors(include_url=False)[0]['msg']}", _loc(err, "task"))
    if isinstance(trajectory, Trajectory):
        traj = trajectory
    else:
        loaded = convert_trajectory(trajectory, fmt, file=_MEMORY)
        if loaded.trajectory is None:
            assert loaded.error is not None
            return _error(task_model.task_id, loaded.trajectory_id, loaded.source, loaded.error.kind, loaded.error.message, loaded.error.field)
        traj = loaded.trajectory
    try:
        replay = replayer.replay(task_model, traj, config.turns) if replayer is not None and task_model.environment is not None else None
        return grade_case(task_model, traj, config, source=source, replay=replay).result()
    except InputError as exc:
        return _error(task_model.task_id, traj.trajectory_id, source, exc.info.kind, exc.info.message, exc.info.field)
    except TurnAlignmentError as exc:
        return _error(task_model.task_id, traj.trajectory_id, source, "unknown_turn", str(exc), "turns")


def _loc(err: ValidationError, prefix: str) -> str:
    loc = err.errors(include_url=False)[0]["loc"]
    return ".".join([prefix, *(str(p) for p in loc)])


def _error(task_id: str | None, trajectory_id: str | None, source: SourceRef, kind: str, message: str, field: str | None) -> TrajectoryResult:
    return TrajectoryResult(
        task_id=task_id,
        trajectory_id=trajectory_id,
        verdict=VerdictLabel.ERROR,
        decided_by="error",
        source=source,
        error=InputErrorInfo(kind=kind, message=message, file=_MEMORY, field=field),
    )
