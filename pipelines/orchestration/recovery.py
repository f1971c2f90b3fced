"""Recovery: what the agent did after each failed call, classified deterministically.

A failed call is a step with status ``error`` or ``blocked``, or one carrying an injected
``fault`` (``unknown``, no recorded result, is not a failure). Its **goal** is what it was for:
- the reference calls of its tool still open (not satisfied by an earlier step) in the turn;
- if its tool is no reference tool of the turn (a wrong or misspelt tool, a blocked write), any
  reference call still open;
- if nothing is open (or the turn has no reference calls), the call itself.

A later step of the same turn is an **attempt** when it calls the same tool or satisfies a goal
reference call; it **reaches the goal** when it did not fail and satisfied a goal reference call
(per the graded calls check), or, when the goal is the call itself, when the same tool succeeded.
With ``first`` the first attempt and ``success`` the first attempt that reached the goal:

- ``retried_fixed``: ``first`` is the same tool with changed arguments and reached the goal;
- ``switched_tool``: ``first`` is another tool and reached the goal (the same reference call);
- ``repeated_unchanged``: ``first`` repeats the call unchanged (same tool, same arguments) and
  either reached the goal itself (a transient fault: recovered) or nothing ever did (a stall);
- ``retried_unrecorded``: ``first`` is the same tool, but its arguments or the failed call's were
  not recorded (tracing without content): whether it repeated or fixed them is unknown;
  ``recovered`` says whether some attempt reached the goal;
- ``recovered_later``: ``first`` did not reach the goal, a later attempt did;
- ``gave_up``: no attempt at all, or attempts that never reached the goal: the agent went on
  (answered) without what the failed call was for;
- ``cut_off``: the same, in the turn a run that ended early stopped in (``Trajectory.ended_early``:
  a limit, a crash): the agent did not go on, it was stopped; whether it would have recovered is
  unknown.

``recovered`` is true exactly when some attempt reached the goal.
"""

from __future__ import annotations

from judge import RecoveryEvent, RecoveryOutcome, canonical_json
from pipelines.orchestration._alignment import TurnView, failure_kind, is_failed_call


def classify_recovery(views: list[TurnView]) -> list[RecoveryEvent]:
    """One event per failed call, in trajectory order."""
    return [_classify(view, i) for view in views for i, step in enumerate(view.steps) if is_failed_call(step)]


def recovery_rate(events: list[RecoveryEvent]) -> float | None:
    return sum(e.recovered for e in events) / len(events) if events else None


def _goal(view: TurnView, i: int) -> set[int]:
    name = view.steps[i].name
    open_refs = view.open_at(i)
    same_tool = {r for r in open_refs if view.references[r].name == name}
    if same_tool:
        return same_tool
    if any(ref.name == name for ref in view.references):
        return set()  # this tool's reference calls are satisfied already: the goal is the call itself
    return open_refs


def _classify(view: TurnView, i: int) -> RecoveryEvent:
    failed = view.steps[i]
    goal = _goal(view, i)

    def reaches(j: int) -> bool:
        step = view.steps[j]
        if is_failed_call(step):
            return False
        if goal:
            return bool(view.reached.get(j, set()) & goal)
        return step.name == failed.name and step.ok

    def is_attempt(j: int) -> bool:
        return view.steps[j].name == failed.name or bool(goal and view.reached.get(j, set()) & goal)

    attempts = [j for j in range(i + 1, len(view.steps)) if is_attempt(j)]
    success = next((j for j in attempts if reaches(j)), None)
    outcome: RecoveryOutcome
    if not attempts:
        outcome = "gave_up"
    else:
        first = view.steps[attempts[0]]
        unchanged = first.name == failed.name and canonical_json(first.arguments) == canonical_json(failed.arguments)
        if first.name == failed.name and not (first.arguments_recorded and failed.arguments_recorded):
            outcome = "retried_unrecorded"
        elif unchanged:
            outcome = "repeated_unchanged" if success in (None, attempts[0]) else "recovered_later"
        elif success == attempts[0]:
            outcome = "retried_fixed" if first.name == failed.name else "switched_tool"
        elif success is not None:
            outcome = "recovered_later"
        else:
            outcome = "gave_up"
    if outcome == "gave_up" and view.ended:
        outcome = "cut_off"
    return RecoveryEvent(
        turn_id=view.turn_id,
        step=i,
        tool=failed.name,
        failure=failure_kind(failed),
        outcome=outcome,
        recovered=success is not None,
        by_step=success,
    )
