"""Parallel vs serial planning: rounds used against the minimum the reference dependency DAG allows.

- A **round** is one model message that issued calls: steps sharing a ``round`` value were issued
  together (the chat readers set it, one assistant message = one round; the native format may
  carry it per step). Rounds are counted per turn (a message belongs to one turn).
- Rounds are **unknown** when no step of the trajectory carries a ``round``: then ``rounds_used``,
  ``parallel_efficiency`` and the pair counts are None rather than a guess. When only some steps
  carry one, a step without it counts as a round of its own.
- ``rounds_minimum`` = the sum over turns of the critical-path depth of the turn's reference DAG
  (``depends_on``): the fewest messages that can issue every required reference call in
  dependency order (advisory calls, ``required=False``, add no round of their own).
- ``parallel_efficiency`` = ``rounds_minimum / rounds_used``, bounded by 1 (an agent that skipped
  calls or found a shorter path does not score above a perfect planner).
- ``independent_pairs`` counts the pairs of reference calls at the same depth of the DAG (so
  neither depends on the other, and an as-soon-as-possible schedule issues them in one round)
  that the agent satisfied; ``serialised_pairs`` those whose satisfying steps were issued in
  different rounds: parallelism left unused. (Two independent calls at different depths are not
  counted: issuing them apart can be optimal.)
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache
from typing import Any

import msgspec

from judge import ReferenceCall, dependency_order
from pipelines.orchestration._alignment import TurnView

DagKey = tuple[tuple[str | None, tuple[str, ...], bool, bool], ...]  # (id, depends_on, required, has alternatives) per reference call


def dag_key(calls: list[ReferenceCall]) -> DagKey:
    """Everything the DAG facts depend on (many trajectories share one task: computed once per shape)."""
    return tuple((c.id, tuple(c.depends_on), c.required, bool(c.alternatives)) for c in calls)


class DagFacts(msgspec.Struct, frozen=True):
    critical_path: int
    same_depth_groups: tuple[tuple[int, ...], ...]  # required calls sharing a depth (two or more), by depth: every pair is one round's worth
    branches: bool  # two required calls are independent, or a call accepts alternative argument sets


@lru_cache(maxsize=4096)
def dag_facts(key: DagKey) -> DagFacts:
    """Linear in the calls and their dependencies (a task of 10^5 reference calls is an input like
    any other): pairs are counted per depth group, never listed. Two required calls are
    independent somewhere exactly when two share a depth: a required call of depth d has required
    ancestors of every depth below d (its longest chain), so distinct depths make a chain."""
    calls = [ReferenceCall(name="_", id=i, depends_on=list(deps), required=required) for i, deps, required, _ in key]
    alternatives = any(alt for *_, alt in key)
    depth = depths(calls)
    groups: dict[int, list[int]] = {}
    for i, c in enumerate(calls):
        if c.required:
            groups.setdefault(depth[i], []).append(i)
    shared = tuple(tuple(g) for _, g in sorted(groups.items()) if len(g) >= 2)
    return DagFacts(max(depth, default=0), shared, alternatives or bool(shared))


class RoundFacts(msgspec.Struct, frozen=True):
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
    """Each call's depth in the DAG: required calls on the longest chain ending at it (advisory
    calls, ``required=False``, count 0: the agent may skip them, their ordering still holds)."""
    index = {c.id: i for i, c in enumerate(calls) if c.id is not None}
    depth = [0] * len(calls)
    for i in dependency_order(calls):
        depth[i] = int(calls[i].required) + max((depth[index[d]] for d in calls[i].depends_on if d in index), default=0)
    return depth


def critical_path_depth(calls: list[ReferenceCall]) -> int:
    """Required calls on the longest dependency chain (0 without any, 1 when all are independent)."""
    return max(depths(calls), default=0)


def independent_pairs(calls: list[ReferenceCall]) -> list[tuple[int, int]]:
    """Pairs of required calls neither of which depends on the other, directly or transitively
    (the pairs themselves: quadratic by nature; the run's facts use ``dag_facts``)."""
    anc = ancestors(calls)
    req = [i for i, c in enumerate(calls) if c.required]
    return [(a, b) for x, a in enumerate(req) for b in req[x + 1 :] if a not in anc[b] and b not in anc[a]]


def same_depth_pairs(calls: list[ReferenceCall]) -> list[tuple[int, int]]:
    """Pairs of required calls at the same depth (independent by construction: a required
    descendant is always deeper): the calls one round can hold."""
    depth = depths(calls)
    req = [i for i, c in enumerate(calls) if c.required]
    return [(a, b) for x, a in enumerate(req) for b in req[x + 1 :] if depth[a] == depth[b]]


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
        for group in dag.same_depth_groups:  # of its satisfied pairs, those not sharing one round are serialised
            rounds = Counter(keys[v.satisfied_by[c]] for c in group if c in v.satisfied_by)
            m = sum(rounds.values())
            together = sum(k * (k - 1) // 2 for k in rounds.values())
            pairs += m * (m - 1) // 2
            serialised += m * (m - 1) // 2 - together
    efficiency = min(1.0, minimum / used) if used else None
    return RoundFacts(used, minimum, round(efficiency, 6) if efficiency is not None else None, pairs, serialised)
