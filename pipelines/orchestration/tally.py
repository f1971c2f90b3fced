"""Run-level orchestration figures for ``summary.json`` (``orchestration``), from per-trajectory facts.

Streaming: only counters and the compact failure-mode features are kept, never the results.
Merge-safe: every field is a count (summed) or a per-row column (appended), so partial tallies
made by workers merge into the one a single process would make (``pipelines.grade.aggregate``).
Definitions of the per-run figures:
- recovery: failed calls, recovered calls and ``recovery_rate = recovered / failed`` (pooled over
  calls), with the outcome counts, overall and by agent, by failed tool and by fault kind (the
  injected fault kind, else ``error`` / ``blocked``);
- rounds (trajectories whose rounds are known): means of ``rounds_used``, ``rounds_minimum`` and
  ``parallel_efficiency``, and the pooled independent / serialised pair counts, overall and by agent;
- loops: loop repeats, looping trajectories and ``looping_share`` (looping / trajectories),
  overall and by agent;
- tiers: trajectories per difficulty tier (pass rates and stages per tier are in ``by.tier``);
- failure modes: the clusters of ``pipelines.orchestration.clusters``.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

import msgspec

from judge import DIFFICULTY_TIERS, RECOVERY_OUTCOMES, Orchestration, TrajectoryResult
from pipelines.orchestration._child import PendingClustering
from pipelines.orchestration.failure_modes import FailureModes


def _rate(num: float, den: float) -> float | None:
    return round(num / den, 6) if den else None


class _Recovery(msgspec.Struct):
    failed: int = 0
    recovered: int = 0
    outcomes: Counter[str] = msgspec.field(default_factory=Counter)

    def dump(self) -> dict[str, Any]:
        return {
            "failed_calls": self.failed,
            "recovered_calls": self.recovered,
            "recovery_rate": _rate(self.recovered, self.failed),
            "outcomes": {o: self.outcomes.get(o, 0) for o in RECOVERY_OUTCOMES},
        }


class _Rounds(msgspec.Struct):
    n: int = 0
    used: int = 0
    minimum: int = 0
    efficiency_micro: int = 0  # sum of efficiencies in millionths: an integer sum is the same in any order (worker merges)
    pairs: int = 0
    serialised: int = 0

    def add(self, o: Orchestration) -> None:
        if o.rounds_used is None:
            return
        self.n += 1
        self.used += o.rounds_used
        self.minimum += o.rounds_minimum
        self.efficiency_micro += round((o.parallel_efficiency or 0.0) * 1_000_000)
        self.pairs += o.independent_pairs or 0
        self.serialised += o.serialised_pairs or 0

    def dump(self) -> dict[str, Any]:
        return {
            "trajectories_with_rounds": self.n,
            "rounds_used_mean": _rate(self.used, self.n),
            "rounds_minimum_mean": _rate(self.minimum, self.n),
            "parallel_efficiency_mean": _rate(self.efficiency_micro / 1_000_000, self.n),
            "independent_pairs": self.pairs,
            "serialised_pairs": self.serialised,
            "serialised_share": _rate(self.serialised, self.pairs),
        }


class _Loops(msgspec.Struct):
    n: int = 0
    repeats: int = 0
    looping: int = 0

    def dump(self) -> dict[str, Any]:
        return {"trajectories": self.n, "loop_repeats": self.repeats, "looping_trajectories": self.looping, "looping_share": _rate(self.looping, self.n)}


class OrchestrationTally(msgspec.Struct):
    recovery: _Recovery = msgspec.field(default_factory=_Recovery)
    recovery_by: dict[str, dict[str, _Recovery]] = msgspec.field(
        default_factory=lambda: {"agent": defaultdict(_Recovery), "tool": defaultdict(_Recovery), "fault": defaultdict(_Recovery)}
    )
    rounds: _Rounds = msgspec.field(default_factory=_Rounds)
    rounds_by_agent: dict[str, _Rounds] = msgspec.field(default_factory=lambda: defaultdict(_Rounds))
    loops: _Loops = msgspec.field(default_factory=_Loops)
    loops_by_agent: dict[str, _Loops] = msgspec.field(default_factory=lambda: defaultdict(_Loops))
    tiers: Counter[str] = msgspec.field(default_factory=Counter)
    failure_modes: FailureModes = msgspec.field(default_factory=FailureModes)

    def add(self, r: TrajectoryResult) -> None:
        o = r.orchestration
        if o is None:
            return
        agent = r.agent or "unknown"
        by_agent = self.recovery_by["agent"]
        if agent not in by_agent:  # every agent appears, with or without failed calls
            by_agent[agent] = _Recovery()
        for e in o.recovery:
            for acc in (self.recovery, self.recovery_by["agent"][agent], self.recovery_by["tool"][e.tool], self.recovery_by["fault"][e.failure]):
                acc.failed += 1
                acc.recovered += e.recovered
                acc.outcomes[e.outcome] += 1
        self.rounds.add(o)
        self.rounds_by_agent[agent].add(o)
        for loops in (self.loops, self.loops_by_agent[agent]):
            loops.n += 1
            loops.repeats += o.loop_repeats
            loops.looping += o.looping
        self.tiers[o.tier] += 1
        self.failure_modes.add(r)

    def start(self, seed: int = 0) -> PendingSummary:
        """Start the failure-mode clustering (a child process in large runs); the caller may do
        other work before ``result()``."""
        return PendingSummary(self, self.failure_modes.start(seed))

    def summary(self, seed: int = 0) -> dict[str, Any]:
        return self.start(seed).result()

    def _figures(self) -> dict[str, Any]:
        return {
            "recovery": {
                **self.recovery.dump(),
                **{f"by_{key}": {k: v.dump() for k, v in sorted(groups.items())} for key, groups in self.recovery_by.items()},
            },
            "rounds": {**self.rounds.dump(), "by_agent": {k: v.dump() for k, v in sorted(self.rounds_by_agent.items())}},
            "loops": {**self.loops.dump(), "by_agent": {k: v.dump() for k, v in sorted(self.loops_by_agent.items())}},
            "tiers": {t: self.tiers.get(t, 0) for t in DIFFICULTY_TIERS},
        }


class PendingSummary(msgspec.Struct):
    tally: OrchestrationTally
    clustering: PendingClustering

    def result(self) -> dict[str, Any]:
        return {**self.tally._figures(), "failure_modes": self.clustering.result().summary}
