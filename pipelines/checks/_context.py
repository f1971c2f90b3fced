"""Everything one turn's checks may look at, gathered once so each check stays a pure function."""

from __future__ import annotations

from functools import cached_property
from typing import Any

import msgspec

from judge import EndedEarly, Policy, Step, Task, Trajectory, TrajectoryTurn, Turn, parse_json_text
from pipelines.checks._borrowed import borrow_outputs
from pipelines.config import GradingConfig


class StepView(msgspec.Struct, frozen=True):
    """A predicted step as grading sees it: replay (when available) overrides the recorded result,
    and ``step`` carries the name of the tool the call means (``Task.tool_names``: a sanitised name
    such as ``math_factorial`` read as ``math.factorial``), so every check reads the same name.

    ``ok``: the call ran and ``result`` is what it returned. ``failed``: it changed nothing (a tool
    error, a blocked call). Neither: the call was made but its outcome is unknown (no result
    recorded, no replay); it counts for selection, names and values, never as evidence, except
    that an unknown-outcome call identical to a reference call whose output the task records may
    borrow that output for grounding (``borrowed_from``, ``borrowed``: see ``_borrowed``)."""

    index: int  # index within the turn's steps
    step: Step
    ok: bool
    result: Any
    failed: bool = False
    written_name: str | None = None  # the name the agent wrote, when grading reads it as another tool's
    borrowed_from: int | None = None  # the identical reference call whose recorded output stands in
    borrowed: Any = None  # that output (parsed)

    @property
    def name_note(self) -> str:
        """What evidence about this step adds when its name was read back from a sanitised one."""
        if self.written_name is None:
            return ""
        return f" (matched after name sanitisation: {self.written_name} -> {self.step.name})"

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


class TurnContext(msgspec.Struct, dict=True):
    task: Task
    turn: Turn
    trajectory: Trajectory
    traj_turn: TrajectoryTurn | None  # None: the agent never reached this turn
    config: GradingConfig
    steps: list[StepView] = msgspec.field(default_factory=list)
    reference_outputs: list[Any] | None = None  # per reference call; None entries: unknown
    reference_state: str | None = None
    predicted_state: str | None = None
    prior_outputs: list[Any] = msgspec.field(default_factory=list)  # successful outputs of earlier turns
    calls_before: int = 0  # calls made in earlier turns (max_calls counts the whole trajectory)
    replayed: bool = False
    ended_early: EndedEarly | None = None  # set on the turn the run stopped in, when it stopped before the agent finished
    environment: Any = None  # the benchmark environment's own checks of this turn (replay's ``environment``: BFCL multi-turn)
    memo: dict[str, Any] = msgspec.field(default_factory=dict)  # shared by the turns of one trajectory: what a check prepared once for later turns

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
    ended_early: EndedEarly | None = None,
    memo: dict[str, Any] | None = None,
) -> TurnContext:
    """Merge the recorded trajectory with an optional replay (``pipelines.grade.replay.TurnReplay``);
    each step's name is read as the task's tool it means (the recorded step is left as written).
    ``ended_early``: the trajectory's, when this turn is the one its run stopped in. ``memo``: one
    dict per trajectory, passed to every turn, so checks reuse what they prepared on earlier turns."""
    raw_steps = traj_turn.steps if traj_turn else []
    views: list[StepView] = []
    names = task.tool_names
    for i, recorded in enumerate(raw_steps):
        step = names.resolve_step(recorded)
        written = recorded.name if step is not recorded else None
        if step.status == "blocked":  # a refused call was never executed, replay or not
            ok, result, failed = False, step.result, True
        elif replay is not None and i < len(replay.predicted):
            res = replay.predicted[i]
            if res.ok and (step.status == "error" or step.fault is not None):
                # the agent saw this call fail (a tool error, an injected fault): replay cannot undo that
                ok, result, failed = False, parse_json_text(step.result) if step.result is not None else step.error, True
            else:
                ok, result, failed = res.ok, parse_json_text(res.result) if res.ok else res.error, not res.ok
        elif step.fault is not None:  # an injected fault: what came back is not the tool's answer
            ok, result, failed = False, parse_json_text(step.result), True
        else:
            ok, result, failed = step.ok, parse_json_text(step.result), step.failed
        views.append(StepView(i, step, ok, result, failed=failed, written_name=written))
    if replay is not None:
        ref_out: list[Any] | None = [parse_json_text(r.result) if r.ok else None for r in replay.reference]
    else:
        views = borrow_outputs(task, turn, trajectory, traj_turn, views)  # the no-result case: replay gave every step a result
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
        ended_early=ended_early,
        environment=getattr(replay, "environment", None),
        memo={} if memo is None else memo,
    )
