"""Rounds used vs the reference DAG's critical path; independent calls issued in separate rounds."""

from __future__ import annotations

import pytest

from judge import ReferenceCall, Task, Trajectory
from pipelines.orchestration import critical_path_depth, independent_pairs, same_depth_pairs
from tests.orchestration.helpers import orchestration, step, task, trajectory

# a: athlete, b: country (independent of a), c: medals after both -> critical path 2
FAN_IN = [
    {"id": "a", "name": "get_athlete", "arguments": {"name": "Ann"}},
    {"id": "b", "name": "get_country", "arguments": {"code": "KE"}},
    {"id": "c", "name": "get_medals", "arguments": {"athlete_id": 7}, "depends_on": ["a", "b"]},
]


def refs(*edges: tuple[str, list[str]]) -> list[ReferenceCall]:
    return [ReferenceCall(id=i, name="get_medals", depends_on=deps) for i, deps in edges]


def test_critical_path_depth_and_independent_pairs():
    assert critical_path_depth([]) == 0
    assert critical_path_depth(refs(("a", []), ("b", []))) == 1
    assert critical_path_depth(refs(("a", []), ("b", ["a"]), ("c", ["b"]))) == 3
    assert critical_path_depth(refs(("a", []), ("b", []), ("c", ["a", "b"]), ("d", ["a"]))) == 2
    chain = refs(("a", []), ("b", ["a"]), ("c", ["b"]))
    assert independent_pairs(chain) == []  # c depends on a through b
    assert independent_pairs(refs(("a", []), ("b", []), ("c", ["a"]))) == [(0, 1), (1, 2)]
    assert same_depth_pairs(refs(("a", []), ("b", []), ("c", ["a"]))) == [(0, 1)]  # b and c: independent, but c must wait for a


def test_an_optimal_schedule_of_two_chains_serialises_nothing():
    two_chains = [
        {"id": "a", "name": "get_athlete", "arguments": {"name": "Ann"}},
        {"id": "b", "name": "get_athlete", "arguments": {"name": "Bo"}},
        {"id": "c", "name": "get_medals", "arguments": {"athlete_id": 1}, "depends_on": ["a"]},
        {"id": "d", "name": "get_medals", "arguments": {"athlete_id": 2}, "depends_on": ["b"]},
    ]
    steps = [step("get_athlete", {"id": 1}, round=0, name="Ann"), step("get_athlete", {"id": 2}, round=0, name="Bo"),
             step("get_medals", {"gold": 3}, round=1, athlete_id=1), step("get_medals", {"gold": 0}, round=1, athlete_id=2)]  # fmt: skip
    o = orchestration(task(two_chains), trajectory(steps))
    assert (o.rounds_used, o.rounds_minimum, o.independent_pairs, o.serialised_pairs, o.parallel_efficiency) == (2, 2, 2, 0, 1.0)


def test_parallel_issue_meets_the_minimum():
    steps = [
        step("get_athlete", {"id": 7}, round=0, name="Ann"),
        step("get_country", {"n": "Kenya"}, round=0, code="KE"),
        step("get_medals", {"gold": 3}, round=1, athlete_id=7),
    ]
    o = orchestration(task(FAN_IN), trajectory(steps))
    assert (o.rounds_used, o.rounds_minimum, o.parallel_efficiency) == (2, 2, 1.0)
    assert (o.independent_pairs, o.serialised_pairs) == (1, 0)
    assert o.tier == "branching"


def test_serial_issue_wastes_a_round():
    steps = [
        step("get_athlete", {"id": 7}, round=0, name="Ann"),
        step("get_country", {"n": "Kenya"}, round=1, code="KE"),
        step("get_medals", {"gold": 3}, round=2, athlete_id=7),
    ]
    o = orchestration(task(FAN_IN), trajectory(steps))
    assert (o.rounds_used, o.rounds_minimum) == (3, 2)
    assert o.parallel_efficiency == pytest.approx(2 / 3)
    assert (o.independent_pairs, o.serialised_pairs) == (1, 1)


def test_without_round_information_rounds_are_unknown_not_guessed():
    steps = [step("get_athlete", {"id": 7}, name="Ann"), step("get_country", {"n": "Kenya"}, code="KE"), step("get_medals", {"gold": 3}, athlete_id=7)]
    o = orchestration(task(FAN_IN), trajectory(steps))
    assert o.rounds_used is None and o.parallel_efficiency is None and o.independent_pairs is None and o.serialised_pairs is None
    assert o.rounds_minimum == 2


def test_a_step_without_a_round_counts_as_its_own_round_when_others_have_one():
    steps = [
        step("get_athlete", {"id": 7}, round=0, name="Ann"),
        step("get_country", {"n": "Kenya"}, code="KE"),
        step("get_medals", {"gold": 3}, round=1, athlete_id=7),
    ]
    assert orchestration(task(FAN_IN), trajectory(steps)).rounds_used == 3


def test_efficiency_is_bounded_by_one():
    # the agent skipped two calls (and fails): one round used against a minimum of two
    o = orchestration(task(FAN_IN), trajectory([step("get_medals", {"gold": 3}, round=0, athlete_id=7)]))
    assert (o.rounds_used, o.rounds_minimum, o.parallel_efficiency) == (1, 2, 1.0)


def test_rounds_add_up_over_turns():
    t = Task.model_validate(
        {
            "task_id": "t",
            "tools": task(FAN_IN).model_dump(mode="json")["tools"],
            "turns": [
                {"turn_id": "1", "query": "q1", "reference_calls": FAN_IN, "gold_answers": ["3"]},
                {"turn_id": "2", "query": "q2", "reference_calls": [{"name": "get_medals", "arguments": {"athlete_id": 8}}], "gold_answers": ["1"]},
            ],
        }
    )
    tr = Trajectory.model_validate(
        {
            "task_id": "t",
            "trajectory_id": "x",
            "turns": [
                {
                    "turn_id": "1",
                    "steps": [
                        step("get_athlete", {"id": 7}, round=0, name="Ann"),
                        step("get_country", {"n": "Kenya"}, round=0, code="KE"),
                        step("get_medals", {"gold": 3}, round=1, athlete_id=7),
                    ],
                    "final_answer": "3",
                },
                {"turn_id": "2", "steps": [step("get_medals", {"gold": 1}, round=2, athlete_id=8)], "final_answer": "1"},
            ],
        }
    )
    o = orchestration(t, tr)
    assert (o.rounds_used, o.rounds_minimum, o.parallel_efficiency) == (3, 3, 1.0)


def test_advisory_calls_add_no_round_and_alternatives_make_a_branch():
    chain = [
        {"id": "a", "name": "get_athlete", "arguments": {"name": "Ann"}},
        {"id": "b", "name": "get_country", "arguments": {"code": "KE"}, "depends_on": ["a"], "required": False},
        {"id": "c", "name": "get_medals", "arguments": {"athlete_id": 7}, "depends_on": ["b"]},
    ]
    t = task(chain)
    assert critical_path_depth(t.turns[0].reference_calls) == 2  # a, then c (b may be skipped, its order holds)
    steps = [step("get_athlete", {"id": 7}, round=0, name="Ann"), step("get_medals", {"gold": 3}, round=1, athlete_id=7)]
    o = orchestration(t, trajectory(steps))
    assert (o.rounds_minimum, o.tier) == (2, "linear")
    alternatives = [{"id": "m", "name": "get_medals", "arguments": {"athlete_id": 7}, "alternatives": [{"arguments": {"athlete_id": 7, "year": 2012}}]}]
    assert orchestration(task(alternatives), trajectory([step("get_medals", {"gold": 3}, athlete_id=7)])).tier == "branching"


def _random_dag(rng) -> list[ReferenceCall]:
    calls = []
    for i in range(rng.randint(0, 8)):
        deps = [f"r{j}" for j in range(i) if rng.random() < 0.3]
        calls.append(ReferenceCall(id=f"r{i}", name="get_medals", depends_on=deps, required=rng.random() < 0.8))
    return calls


def test_dag_facts_count_as_the_pairs_do_on_random_dags():
    """The linear facts (depth groups) agree with the explicit pair lists: the same branching
    verdict, the same counts of satisfied and serialised pairs."""
    import random

    from judge import Step
    from pipelines.orchestration import TurnView, round_facts
    from pipelines.orchestration.rounds import dag_facts, dag_key

    rng = random.Random(26)
    seen = set()
    for _ in range(3000):
        calls = _random_dag(rng)
        facts = dag_facts(dag_key(calls))
        assert facts.branches == bool(independent_pairs(calls)) and facts.critical_path == critical_path_depth(calls)
        steps = [Step(name="get_medals", arguments={}, result=1, round=rng.randint(0, 3)) for _ in range(len(calls))]
        view = TurnView("1", calls, steps)
        for r in range(len(calls)):
            if rng.random() < 0.7:
                view.satisfied_by[r] = rng.randrange(len(steps))
        rounds = round_facts([view])
        if not steps:  # rounds unknown
            assert rounds.independent_pairs is None
            continue
        satisfied = [(a, b) for a, b in same_depth_pairs(calls) if a in view.satisfied_by and b in view.satisfied_by]
        serialised = sum(steps[view.satisfied_by[a]].round != steps[view.satisfied_by[b]].round for a, b in satisfied)
        assert (rounds.independent_pairs, rounds.serialised_pairs) == (len(satisfied), serialised)
        seen.add((facts.branches, serialised > 0))
    assert seen == {(False, False), (True, False), (True, True)}


def test_a_hundred_thousand_reference_calls_are_counted_without_listing_pairs():
    """Hostile sweep 8: pairs of same-depth calls were listed (10^5 independent calls: 5 x 10^9
    pairs). Counted per depth group now, with the same meaning."""
    from judge import Step
    from pipelines.orchestration import TurnView, round_facts

    n = 100_000
    calls = [ReferenceCall(id=f"r{i}", name="get_medals") for i in range(n)]
    calls.append(ReferenceCall(id="last", name="get_medals", depends_on=[f"r{i}" for i in range(n)]))
    steps = [Step(name="get_medals", arguments={}, result=1, round=i % 2) for i in range(n)] + [Step(name="get_medals", arguments={}, result=1, round=2)]
    view = TurnView("1", calls, steps, satisfied_by={i: i for i in range(n + 1)})
    rounds = round_facts([view])
    half = n // 2
    assert rounds.rounds_minimum == 2 and rounds.rounds_used == 3
    assert rounds.independent_pairs == n * (n - 1) // 2
    assert rounds.serialised_pairs == n * (n - 1) // 2 - 2 * (half * (half - 1) // 2)  # pairs within round 0 or within round 1 are not
