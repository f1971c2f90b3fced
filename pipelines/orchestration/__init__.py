"""Orchestration quality: recovery after failed calls, parallel vs serial planning, loops,
difficulty tiers (per trajectory), and failure modes found by clustering (per run).

Per trajectory, ``assess_orchestration(task, trajectory, result)`` is a pure function of the
task, the trajectory and its graded result (no I/O), so it serves the grading run and a reward
function alike; ``pipelines.grade.case`` attaches it to every graded ``TrajectoryResult``.
Per run, ``OrchestrationTally`` turns the results into the ``orchestration`` section of
``summary.json``. One concept per module: recovery, rounds, loops, tiers, clusters (the algorithm), failure_modes
(the run's collection), _child (the clustering in a child process), tally.
"""

from judge import Orchestration, Task, Trajectory, TrajectoryResult
from pipelines.alignment import TurnsMode
from pipelines.orchestration._alignment import GradedTurn, TurnView, align, failure_kind, is_failed_call, views_of
from pipelines.orchestration.clusters import Clustering, FailureFeatures, cluster_failures, failure_features
from pipelines.orchestration.failure_modes import FailureModes
from pipelines.orchestration.loops import LOOP_MIN_REPEATS, loop_facts
from pipelines.orchestration.recovery import classify_recovery, recovery_rate
from pipelines.orchestration.rounds import critical_path_depth, independent_pairs, round_facts, same_depth_pairs, turn_dags
from pipelines.orchestration.tally import OrchestrationTally
from pipelines.orchestration.tiers import difficulty_tier


def assess_orchestration(
    task: Task, trajectory: Trajectory, result: TrajectoryResult, turns: TurnsMode = "auto", *, graded: list[GradedTurn] | None = None
) -> Orchestration:
    """Recovery, rounds, loops and tier of one graded trajectory (see each module for definitions).
    ``turns``: the turn-alignment mode the result was graded with (``GradingConfig.turns``).
    ``graded``: the turns as the grader aligned them (task turn, resolved steps, whether the run
    ended in it), when known: they are not aligned again."""
    views = views_of(graded, result) if graded is not None else align(task, trajectory, result, turns)
    dags = turn_dags(views)
    events = classify_recovery(views)
    rate = recovery_rate(events)
    rounds = round_facts(views, dags)
    loops = loop_facts(views)
    return Orchestration(
        failed_calls=len(events),
        recovered_calls=sum(e.recovered for e in events),
        recovery_rate=round(rate, 6) if rate is not None else None,
        recovery=events,
        rounds_used=rounds.rounds_used,
        rounds_minimum=rounds.rounds_minimum,
        parallel_efficiency=rounds.parallel_efficiency,
        independent_pairs=rounds.independent_pairs,
        serialised_pairs=rounds.serialised_pairs,
        loop_repeats=loops.loop_repeats,
        looping=loops.looping,
        tier=difficulty_tier(views, dags, failed=bool(events)),
    )


__all__ = [
    "LOOP_MIN_REPEATS",
    "Clustering",
    "FailureFeatures",
    "FailureModes",
    "GradedTurn",
    "OrchestrationTally",
    "TurnView",
    "align",
    "assess_orchestration",
    "classify_recovery",
    "cluster_failures",
    "critical_path_depth",
    "difficulty_tier",
    "failure_features",
    "failure_kind",
    "independent_pairs",
    "is_failed_call",
    "loop_facts",
    "recovery_rate",
    "round_facts",
    "same_depth_pairs",
    "views_of",
]
