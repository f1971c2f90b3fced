"""Everything one turn's checks may look at, gathered once so each check stays a pure function."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from judge import Policy, Step, Task, Trajectory, TrajectoryTurn, Turn, parse_json_text
from pipelines.config import GradingConfig


@dataclass(frozen=True)
class StepView:
    """A predicted step as grading sees it: replay (when available) overrides the recorded result.

    ``ok``: the call ran and ``result`` is what it returned. ``failed``: it changed nothing (a tool
    error, a blocked call). Neither: the call was made but its outcome is unknown (no result
    recorded, no replay); it counts for selection, names and values, never as evidence."""

    index: int  # index within the turn's steps
    step: Step
    ok: bool
    result: Any
    failed: bool = False

    @property
    def made(self) -> bool:
        """The call happened and was not refused or failed: it can satisfy a reference call."""
        return not self.failed

    @property
    def status(self) -> str:
        if self.ok:
            return "ok"
        if self.failed:
            return "blocked" if self.step.status == "blocked" else "error"
        return "unknown"


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

    @cached_property
    def policy(self) -> Policy | None:
        """The policy the checks apply: the task's, plus what the grading config adds to every task."""
        return self.config.policy_for(self.task)


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
        if step.status == "blocked":  # a refused call was never executed, replay or not
            views.append(StepView(i, step, False, step.result, failed=True))
        elif replay is not None and i < len(replay.predicted):
            res = replay.predicted[i]
            if res.ok and (step.status == "error" or step.fault is not None):
                # the agent saw this call fail (a tool error, an injected fault): replay cannot undo that
                views.append(StepView(i, step, False, parse_json_text(step.result) if step.result is not None else step.error, failed=True))
            else:
                views.append(StepView(i, step, res.ok, parse_json_text(res.result) if res.ok else res.error, failed=not res.ok))
        elif step.fault is not None:  # an injected fault: what came back is not the tool's answer
            views.append(StepView(i, step, False, parse_json_text(step.result), failed=True))
        else:
            views.append(StepView(i, step, step.ok, parse_json_text(step.result), failed=step.failed))
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
