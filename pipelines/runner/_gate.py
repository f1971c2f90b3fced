"""The policy gate: a call that breaks a machine-checkable rule of the task's policy is not executed.

There is one rule book: the gate asks the grading policy check (``pipelines.checks
.policy_violations``) about the proposed call, seen after the calls already made, exactly as
grading will see it. So whatever grading would flag on that call, the gate blocks, and the
blocked step (``status="blocked"``) is graded as an attempted violation at the policy stage.
"""

from __future__ import annotations

from judge import Policy, Step, Task, Trajectory, TrajectoryTurn, Turn
from pipelines.checks import StepView, TurnContext, policy_violations
from pipelines.config import GradingConfig

_CONFIG = GradingConfig()


class PolicyGate:
    """One per trajectory. ``check`` returns the broken rule's message, or None to let the call run."""

    def __init__(self, task: Task):
        self.task = task
        self.policy: Policy | None = task.policy if task.policy is not None and task.policy.has_rules else None
        self._trajectory = Trajectory(task_id=task.task_id, trajectory_id="policy-gate", turns=[TrajectoryTurn()])

    @property
    def active(self) -> bool:
        return self.policy is not None

    def check(self, turn: Turn, earlier_in_turn: list[Step], calls_before: int, proposed: Step) -> str | None:
        """``earlier_in_turn``: this turn's steps so far; ``calls_before``: steps of earlier turns."""
        if self.policy is None:
            return None
        steps = [*earlier_in_turn, proposed]
        views = [StepView(i, s, s.ok, s.result, failed=s.failed) for i, s in enumerate(steps)]
        ctx = TurnContext(
            task=self.task,
            turn=turn,
            trajectory=self._trajectory,
            traj_turn=None,
            config=_CONFIG,
            steps=views,
            calls_before=calls_before,
        )
        index = len(earlier_in_turn)
        for evidence in policy_violations(ctx, self.policy):
            if evidence.step == index:
                return evidence.message
        return None
