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

Near-linear in the steps of a turn (a trajectory of 10^5 steps with a failed call in every other
one is an ordinary input): instead of scanning every later step for every failed call, each
question ("the first later step of this tool", "the first later step that reached an open goal
reference call") is answered for all failed calls at once by one sweep (``_first_hits``).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import defaultdict

import msgspec

from judge import RecoveryEvent, RecoveryOutcome, canonical_json
from pipelines.orchestration._alignment import TurnView, failure_kind, is_failed_call

ANY_TOOL = None  # the key of a goal made of every open reference call (the failed tool is no reference tool)


def classify_recovery(views: list[TurnView]) -> list[RecoveryEvent]:
    """One event per failed call, in trajectory order."""
    return [event for view in views for event in _classify_turn(view)]


def recovery_rate(events: list[RecoveryEvent]) -> float | None:
    return sum(e.recovered for e in events) / len(events) if events else None


def _first_hits(candidates: list[tuple[int, float]], queries: list[int]) -> dict[int, int | None]:
    """For each query step ``i``: the smallest candidate step ``j > i`` whose value ``v >= i``, or None.

    ``v`` is the latest step (``satisfied_by``) among the goal reference calls the candidate reached:
    the candidate reached a call still open at ``i`` exactly when ``v >= i``. A candidate answers
    query ``i`` exactly when ``i <= min(j - 1, v)``, so sweeping the queries downwards while adding
    candidates by that bound answers them all in O((candidates + queries) log)."""
    bounds = sorted(((min(j - 1, v), j) for j, v in candidates), reverse=True)
    out: dict[int, int | None] = {}
    best: int | None = None
    k = 0
    for i in sorted(set(queries), reverse=True):
        while k < len(bounds) and bounds[k][0] >= i:
            best = bounds[k][1] if best is None else min(best, bounds[k][1])
            k += 1
        out[i] = best
    return out


def _next_after(positions: list[int], i: int) -> int | None:
    at = bisect_right(positions, i)
    return positions[at] if at < len(positions) else None


class _Goal(msgspec.Struct, frozen=True):
    key: str | None  # the tool whose open reference calls are the goal; ANY_TOOL: every open one
    empty: bool  # nothing open: the goal is the call itself


def _classify_turn(view: TurnView) -> list[RecoveryEvent]:
    steps = view.steps
    failed = [i for i, s in enumerate(steps) if is_failed_call(s)]
    if not failed:
        return []
    # when each reference call stops being open: open at step i while its satisfying step >= i
    open_until = [view.satisfied_by.get(r, math.inf) for r in range(len(view.references))]
    ref_names = {ref.name for ref in view.references}
    latest: dict[str | None, float] = defaultdict(lambda: -math.inf)  # per tool (and ANY_TOOL): the last step any of its calls is open at
    for r, ref in enumerate(view.references):
        latest[ref.name] = max(latest[ref.name], open_until[r])
        latest[ANY_TOOL] = max(latest[ANY_TOOL], open_until[r])

    def goal_of(i: int) -> _Goal:
        name = steps[i].name
        if latest[name] >= i:  # some reference call of this tool is still open
            return _Goal(name, False)
        if name in ref_names:  # this tool's reference calls are satisfied already: the goal is the call itself
            return _Goal(name, True)
        return _Goal(ANY_TOOL, latest[ANY_TOOL] < i)

    goals = {i: goal_of(i) for i in failed}
    # per goal key, the steps that reached one of its reference calls, with the latest step those calls are open at
    wanted = {g.key for g in goals.values() if not g.empty}
    hits: dict[str | None, list[tuple[int, float]]] = defaultdict(list)
    for j, refs in view.reached.items():
        if not 0 <= j < len(steps):
            continue
        best: dict[str | None, float] = {}
        for r in refs:
            if not 0 <= r < len(view.references):
                continue
            until = view.satisfied_by.get(r, math.inf)
            for key in (view.references[r].name, ANY_TOOL):
                if key in wanted:
                    best[key] = max(best.get(key, -math.inf), until)
        for key, v in best.items():
            hits[key].append((j, v))
    attempt_hit: dict[str | None, dict[int, int | None]] = {}
    success_hit: dict[str | None, dict[int, int | None]] = {}
    for key in wanted:
        queries = [i for i, g in goals.items() if g.key == key and not g.empty]
        attempt_hit[key] = _first_hits(hits[key], queries)
        success_hit[key] = _first_hits([(j, v) for j, v in hits[key] if not is_failed_call(steps[j])], queries)
    by_name: dict[str, list[int]] = defaultdict(list)
    ok_by_name: dict[str, list[int]] = defaultdict(list)
    for j, s in enumerate(steps):
        by_name[s.name].append(j)
        if s.ok and not is_failed_call(s):
            ok_by_name[s.name].append(j)

    events = []
    for i in failed:
        goal, name = goals[i], steps[i].name
        same_tool = _next_after(by_name[name], i)
        if goal.empty:
            first, success = same_tool, _next_after(ok_by_name[name], i)
        else:
            hit = attempt_hit[goal.key][i]
            first = min((j for j in (same_tool, hit) if j is not None), default=None)
            success = success_hit[goal.key][i]
        events.append(_event(view, i, first, success))
    return events


def _event(view: TurnView, i: int, first_attempt: int | None, success: int | None) -> RecoveryEvent:
    """The outcome from the first attempt and the first attempt that reached the goal (see above)."""
    failed = view.steps[i]
    outcome: RecoveryOutcome
    if first_attempt is None:
        outcome = "gave_up"
    else:
        first = view.steps[first_attempt]
        unchanged = first.name == failed.name and canonical_json(first.arguments) == canonical_json(failed.arguments)
        if first.name == failed.name and not (first.arguments_recorded and failed.arguments_recorded):
            outcome = "retried_unrecorded"
        elif unchanged:
            outcome = "repeated_unchanged" if success in (None, first_attempt) else "recovered_later"
        elif success == first_attempt:
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
