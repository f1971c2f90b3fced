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

``grade_trajectories(pairs)`` is the batch form (a reward function's batch, e.g. a GRPO group of
completions per prompt): each distinct task is read once (a task given as a dict is keyed by its
content) and tool specs met before are shared, not validated again, as ``judge grade`` reads a
tasks file; the results are those of ``grade_trajectory`` on each pair, in order.
``examples/trl_reward.py`` wraps it as a TRL-style ``reward_fn(prompts, completions, **kwargs)``.

A task dict is read as a line of a native tasks file is (``judge grade``'s checks, errors and
field moves), so a result equals the CLI's line for the same task and trajectory, ``source``
aside (here ``<memory>``).

Invariants: pure (the same arguments give an equal result; nothing is read or written), total
(a malformed task or trajectory gives a ``verdict: error`` result naming the field, it never
raises), and thread- and process-safe (no shared state is written; the collector's freeze during a
batch is shared by concurrent batches and undone when the last ends, ``judge.core._heap``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from judge import InputError, InputErrorInfo, SourceRef, Task, Trajectory, TrajectoryResult, VerdictLabel
from judge.core._heap import frozen_heap
from pipelines.alignment import TurnAlignmentError
from pipelines.config import GradingConfig
from pipelines.grade.case import grade_case
from pipelines.ingest import ItemError, TaskCollector, convert_task, convert_trajectory, read_task_item

__all__ = ["grade_trajectories", "grade_trajectory"]

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
    return _grade(_read_task(task, None), trajectory, config or GradingConfig(), fmt, replayer)


def grade_trajectories(
    pairs: Iterable[tuple[Task | dict[str, Any], Trajectory | dict[str, Any]]],
    config: GradingConfig | None = None,
    *,
    fmt: str = "native",
    replayer: Any = None,
) -> list[TrajectoryResult]:
    """``grade_trajectory`` of each (task, trajectory) pair, in order; each distinct task read once.

    The caller's heap (a training loop's rollouts, model state) is set aside from the collector for
    the batch (``judge.core._heap.frozen_heap``): none of it can become garbage because of grading,
    and the full collections a batch triggers would otherwise walk all of it."""
    config = config or GradingConfig()
    collector = TaskCollector()
    read: dict[Any, Task | TrajectoryResult] = {}
    out = []
    with frozen_heap():
        for task, trajectory in pairs:
            key = _task_key(task)
            model = read.get(key) if key is not None else None
            if model is None:
                model = _read_task(task, collector)
                if key is not None:
                    read[key] = model
            out.append(_grade(model, trajectory, config, fmt, replayer))
    return out


def _task_key(task: Task | dict[str, Any]) -> Any:
    """What identifies a task within one batch: the model itself, or a dict's content (None: a
    dict that is not plain JSON, read each time)."""
    if isinstance(task, Task):
        return ("model", id(task))
    try:
        return orjson.dumps(task, option=orjson.OPT_SORT_KEYS)
    except (TypeError, orjson.JSONEncodeError):
        return None


def _read_task(task: Task | dict[str, Any], collector: TaskCollector | None) -> Task | TrajectoryResult:
    """The task model, or the error result a malformed task gives. With a ``collector`` (a batch),
    tool specs met before are shared instead of validated again; alone, sharing would cost more
    (hashing each spec) than it saves."""
    if isinstance(task, Task):
        return task
    if not isinstance(task, dict):
        return _error(None, None, SourceRef(file=_MEMORY), "invalid_field", "task: a task must be a JSON object (a dict) or a judge.Task", "task")
    try:
        # warn=False: a reward reports no warnings, so unknown fields are not looked for
        model = read_task_item(task, collector, _MEMORY, warn=False)[0] if collector is not None else convert_task(task, _MEMORY, warn=False)[0]
    except ItemError as err:
        return _error(None, None, SourceRef(file=_MEMORY), err.kind, f"task: {err.message}", ".".join(["task", *filter(None, [err.field])]))
    return model


def _grade(task: Task | TrajectoryResult, trajectory: Trajectory | dict[str, Any], config: GradingConfig, fmt: str, replayer: Any) -> TrajectoryResult:
    if isinstance(task, TrajectoryResult):  # the task could not be read
        return task.model_copy(deep=True)  # one result per pair, none shared
    source = SourceRef(file=_MEMORY)
    if isinstance(trajectory, Trajectory):
        traj = trajectory
    else:
        loaded = convert_trajectory(trajectory, fmt, file=_MEMORY)
        if loaded.trajectory is None:
            assert loaded.error is not None
            return _error(task.task_id, loaded.trajectory_id, loaded.source, loaded.error.kind, loaded.error.message, loaded.error.field)
        traj = loaded.trajectory
    try:
        replay = replayer.replay(task, traj, config.turns) if replayer is not None and task.environment is not None else None
        return grade_case(task, traj, config, source=source, replay=replay).result()
    except InputError as exc:
        return _error(task.task_id, traj.trajectory_id, source, exc.info.kind, exc.info.message, exc.info.field)
    except TurnAlignmentError as exc:
        return _error(task.task_id, traj.trajectory_id, source, "unknown_turn", str(exc), "turns")


def _error(task_id: str | None, trajectory_id: str | None, source: SourceRef, kind: str, message: str, field: str | None) -> TrajectoryResult:
    return TrajectoryResult(
        task_id=task_id,
        trajectory_id=trajectory_id,
        verdict=VerdictLabel.ERROR,
        decided_by="error",
        source=source,
        error=InputErrorInfo(kind=kind, message=message, file=_MEMORY, field=field),
    )
