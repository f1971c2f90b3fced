"""One turn as the orchestration metrics see it: the reference calls, the agent's steps, and which
step satisfied which reference call according to the graded result.

Turns are aligned exactly as the grader aligns them (``pipelines.alignment``: one episode for a
one-goal task, else per message). The step-to-reference map is read from the
calls check's ``matched_*`` evidence, so the metrics agree with the verdict by construction; a
step's name is the tool it means, as grading reads it (``Task.tool_names``).
"""

from __future__ import annotations

import msgspec

from judge import Check, EvidenceKind, ReferenceCall, Step, Task, Trajectory, TrajectoryResult, Turn
from pipelines.alignment import TurnsMode
from pipelines.alignment import align as align_turns

MATCHED_KINDS = frozenset({EvidenceKind.MATCHED_STRUCTURAL, EvidenceKind.MATCHED_RESPONSE})


def is_failed_call(step: Step) -> bool:
    """A failed call: the tool failed (``error``), a policy refused it (``blocked``), or the runner
    injected a fault. ``unknown`` (no result recorded) is not a failure."""
    return step.status in ("error", "blocked") or step.fault is not None


def failure_kind(step: Step) -> str:
    """The injected fault kind when there is one (``error``, ``timeout``, ``empty``, ...), else
    ``tool_error`` (the tool itself failed) or ``blocked`` (a run-time policy refused the call)."""
    if step.fault is not None:
        return step.fault
    return "tool_error" if step.status == "error" else step.status


class TurnView(msgspec.Struct):
    turn_id: str
    references: list[ReferenceCall]
    steps: list[Step]
    satisfied_by: dict[int, int] = msgspec.field(default_factory=dict)  # reference index -> step index
    reached: dict[int, set[int]] = msgspec.field(default_factory=dict)  # step index -> reference indices it satisfied
    ended: bool = False  # the run ended early (a limit, a crash) in this turn, as the grader marks it

    def open_at(self, step: int) -> set[int]:
        """Reference calls not satisfied by any step before ``step``."""
        return {r for r in range(len(self.references)) if self.satisfied_by.get(r, step) >= step}


def align(task: Task, trajectory: Trajectory, result: TrajectoryResult, turns: TurnsMode = "auto") -> list[TurnView]:
    """One view per graded turn, in grading order (a turn the agent never reached has no steps).
    ``turns`` is the grading's turn-alignment mode (``[grading] turns``): the same pairing the
    grader used, so the graded turn results line up one to one."""
    alignment = align_turns(task, trajectory, turns)
    stopped = trajectory.ended_turn
    graded = [
        (
            turn,
            [task.tool_names.resolve_step(s) for s in traj_turn.steps] if traj_turn is not None else [],
            stopped is not None and (alignment.episode or traj_turn is stopped),
        )
        for turn, traj_turn in alignment.pairs
    ]
    return views_of(graded, result)


GradedTurn = tuple[Turn, list[Step], bool]  # a task turn, the steps graded against it (names resolved), whether the run ended in it


def views_of(graded: list[GradedTurn], result: TrajectoryResult) -> list[TurnView]:
    """The views of turns the grader aligned already (``align`` without aligning again)."""
    views: list[TurnView] = []
    for (turn, steps, ended), outcome in zip(graded, [*result.turns, *([None] * (len(graded) - len(result.turns)))], strict=True):
        view = TurnView(turn.turn_id, turn.reference_calls, steps, ended=ended)
        calls = next((c for c in outcome.checks if c.check == Check.CALLS), None) if outcome is not None else None
        for e in calls.evidence if calls is not None else ():
            if e.kind in MATCHED_KINDS and e.reference is not None and e.step is not None and e.step < len(steps):
                view.satisfied_by.setdefault(e.reference, e.step)
                view.reached.setdefault(e.step, set()).add(e.reference)
        views.append(view)
    return views
