"""Parallel vs serial planning: rounds used against the minimum the reference dependency DAG allows.

- A **round** is one model message that issued calls: steps sharing a ``round`` value were issued
  together (the chat readers set it, one assistant message = one round; the native format may
  carry it per step). Rounds are counted per turn (a message belongs to one turn).
- Rounds are **unknown** when no step of the trajectory carries a ``round``: then ``rounds_used``,
  ``parallel_efficiency`` and the pair counts are None rather than a guess. When only some steps
  carry one, a step without it counts as a round of its own.
- ``rounds_minimum`` = the sum over turns of the critical-path depth of the turn's reference DAG
  (``depends_on``): the fewest messages that can issue every reference call in dependency order.
- ``parallel_efficiency`` = ``rounds_minimum / rounds_used``, bounded by 1 (an agent that skipped
  calls or found a shorter path does not score above a perfect planner).
- ``independent_pairs`` counts the pairs of reference calls at the same depth of the DAG (so
  neither depends on the other, and an as-soon-as-possible schedule issues them in one round)
  that the agent satisfied; ``serialised_pairs`` those whose satisfying steps were issued in
  different rounds: parallelism left unused. (Two independent calls at different depths are not
  counted: issuing them apart can be optimal.)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from judge import ReferenceCall, dependency_order
from pipelines.orchestration._alignment import TurnView

DagKey = tuple[tuple[str | None, tuple[str, ...]], ...]  # (id, depends_on) per reference call: all the DAG facts depend on


def dag_key(calls: list[ReferenceCall]) -> DagKey:
    return tuple((c.id, tuple(c.depends_on)) for c in calls)


@dataclass(frozen=True)
class DagFacts:
    critical_path: int
    same_depth_pairs: tuple[tuple[int, int], ...]
    branches: bool  # some pair of calls is independent


@lru_cache(maxsize=4096)
def dag_facts(key: DagKey) -> DagFacts:
    """The reference DAG's facts, computed once per distinct DAG shape (many trajectories share a task)."""
    calls = [ReferenceCall(name="_", id=i, depends_on=list(deps)) for i, deps in key]
    return DagFacts(critical_path_depth(calls), tuple(same_depth_pairs(calls)), bool(independent_pairs(calls)))


@dataclass(frozen=True)
class RoundFacts:
    rounds_used: int | None
    rounds_minimum: int
    parallel_efficiency: float | None
    independent_pairs: int | None
    serialised_pairs: int | None


def ancestors(calls: list[ReferenceCall]) -> list[frozenset[int]]:
    """For each reference call, every call it depends on directly or transitively."""
    index = {c.id: i for i, c in enumerate(calls) if c.id is not None}
    out: list[frozenset[int]] = [frozenset()] * len(calls)
    for i in dependency_order(calls):  # dependencies come first
        deps = [index[d] for d in calls[i].depends_on if d in index]
        acc: set[int] = set(deps)
        for d in deps:
            acc |= out[d]
        out[i] = frozenset(acc)
    return out


def depths(calls: list[ReferenceCall]) -> list[int]:
    """Each call's depth in the DAG: 1 + the depth of its deepest dependency (1 for a root)."""
    index = {c.id: i for i, c in enumerate(calls) if c.id is not None}
    depth = [0] * len(calls)
    for i in dependency_order(calls):
        depth[i] = 1 + max((depth[index[d]] for d in calls[i].depends_on if d in index), default=0)
    return depth


def critical_path_depth(calls: list[ReferenceCall]) -> int:
    """Calls on the longest dependency chain (0 without calls, 1 when all are independent)."""
    return max(depths(calls), default=0)


def independent_pairs(calls: list[ReferenceCall]) -> list[tuple[int, int]]:
    """Pairs of calls neither of which depends on the other, directly or transitively."""
    anc = ancestors(calls)
    return [(a, b) for a in range(len(calls)) for b in range(a + 1, len(calls)) if a not in anc[b] and b not in anc[a]]


def same_depth_pairs(calls: list[ReferenceCall]) -> list[tuple[int, int]]:
    """Pairs at the same depth (independent by construction): the calls one round can hold."""
    depth = depths(calls)
    return [(a, b) for a in range(len(calls)) for b in range(a + 1, len(calls)) if depth[a] == depth[b]]


def turn_dags(views: list[TurnView]) -> list[DagFacts]:
    return [dag_facts(dag_key(v.references)) for v in views]


def round_facts(views: list[TurnView], dags: list[DagFacts] | None = None) -> RoundFacts:
    dags = turn_dags(views) if dags is None else dags
    minimum = sum(d.critical_path for d in dags)
    if not any(s.round is not None for v in views for s in v.steps):
        return RoundFacts(None, minimum, None, None, None)
    used = 0
    pairs = serialised = 0
    for v, dag in zip(views, dags, strict=True):
        keys: list[Any] = [("round", s.round) if s.round is not None else ("alone", i) for i, s in enumerate(v.steps)]
        used += len(set(keys))
        for a, b in dag.same_depth_pairs:
            sa, sb = v.satisfied_by.get(a), v.satisfied_by.get(b)
            if sa is None or sb is None:
                continue
            pairs += 1
            serialised += keys[sa] != keys[sb]
    efficiency = min(1.0, minimum / used) if used else None
    return RoundFacts(used, minimum, round(efficiency, 6) if efficiency is not None else None, pairs, serialised)
