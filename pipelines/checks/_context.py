"""Everything one turn's checks may look at, gathered once so each check stays a pure function."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from judge import Step, Task, Trajectory, TrajectoryTurn, Turn, parse_json_text
from pipelines.config import GradingConfig


@dataclass(frozen=True)
class StepView:
    """A predicted step as grading sees it: replay (when available) overrides the recorded result."""

    index: int  # index within the turn's steps
    step: Step
    ok: bool
    result: Any


@dataclass
class TurnContext:
    task: Task
    turn: Turn
    trajectory: Trajectory
    traj_turn: TrajectoryTurn | None  # None: the agent never reached this turn
    config: GradingConfig
    steps: list[StepView] = field(default_factory=list)
    reference_outputs: list[Any] | None = None  # per reference call; None entries: unknown
    reference_state: str | None = None
    predicted_state: str | None = None
    prior_outputs: list[Any] = field(default_factory=list)  # successful outputs of earlier turns
    calls_before: int = 0  # calls made in earlier turns (max_calls counts the whole trajectory)
    replayed: bool = False


def build_context(
    task: Task,
    turn: Turn,
    trajectory: Trajectory,
    traj_turn: TrajectoryTurn | None,
    config: GradingConfig,
    *,
    replay: Any = None,
    prior_outputs: list[Any] | None = None,
    calls_before: int = 0,
) -> TurnContext:
    """Merge the recorded trajectory with an optional replay (``pipelines.replay.TurnReplay``)."""
    raw_steps = traj_turn.steps if traj_turn else []
    views: list[StepView] = []
    for i, step in enumerate(raw_steps):
        # a call the agent saw fail (error, blocked, injected fault) stays failed whatever replay
        # returns: the agent never got that answer; a call with no recorded result is replay's to decide
        usable = step.status in ("ok", "unknown") and step.fault is None
        if replay is not None and i < len(replay.predicted):
            res = replay.predicted[i]
            ok = usable and res.ok
            views.append(StepView(i, step, ok, parse_json_text(res.result) if ok else res.error if not res.ok else step.error or step.result))
        else:
            views.append(StepView(i, step, step.ok and step.fault is None, parse_json_text(step.result)))
    if replay is not None:
        ref_out: list[Any] | None = [parse_json_text(r.result) if r.ok else None for r in replay.reference]
    else:
        ref_out = [parse_json_text(c.expected_output) if c.has_expected_output else None for c in turn.reference_calls]
    return TurnContext(
        task=task,
        turn=turn,
        trajectory=trajectory,
        traj_turn=traj_turn,
        config=config,
        steps=views,
        reference_outputs=ref_out,
        reference_state=getattr(replay, "reference_state", None),
        predicted_state=getattr(replay, "predicted_state", None),
        prior_outputs=list(prior_outputs or []),
        calls_before=calls_before,
        replayed=replay is not None,
    )
