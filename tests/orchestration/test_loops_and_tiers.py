"""Loops (identical calls after identical results) and difficulty tiers."""

from __future__ import annotations

from tests.orchestration.helpers import orchestration, step, task, trajectory

MEDALS_7 = {"id": "m", "name": "get_medals", "arguments": {"athlete_id": 7}}
SAME = step("get_medals", {"gold": 3}, athlete_id=7)


def test_three_identical_calls_with_identical_results_are_a_loop():
    o = orchestration(task([MEDALS_7]), trajectory([SAME, SAME, SAME]))
    assert (o.loop_repeats, o.looping) == (2, True)


def test_one_duplicate_is_counted_but_is_not_looping():
    o = orchestration(task([MEDALS_7]), trajectory([SAME, SAME]))
    assert (o.loop_repeats, o.looping) == (1, False)


def test_argument_order_and_response_order_do_not_hide_a_repeat():
    a = step("get_medals", [{"g": 1}, {"g": 2}], athlete_id=7, year=2012)
    b = {**step("get_medals", [{"g": 2}, {"g": 1}]), "arguments": {"year": 2012, "athlete_id": 7}}
    o = orchestration(task([MEDALS_7]), trajectory([a, b, a]))
    assert (o.loop_repeats, o.looping) == (2, True)


def test_a_repeat_with_a_different_result_is_not_a_loop():
    o = orchestration(task([MEDALS_7]), trajectory([step("get_medals", {"gold": 2}, athlete_id=7), SAME, step("get_medals", {"gold": 4}, athlete_id=7)]))
    assert (o.loop_repeats, o.looping) == (0, False)


def test_repeating_the_same_error_is_a_loop_too():
    bad = step("get_medals", "Error: unknown argument 'athlete'", status="error", athlete=7)
    o = orchestration(task([MEDALS_7]), trajectory([bad, bad, bad], answer="no idea"))
    assert (o.loop_repeats, o.looping) == (2, True)


def test_calls_with_no_recorded_result_are_never_repeats():
    unknown = step("get_medals", status="unknown", athlete_id=7)
    o = orchestration(task([MEDALS_7]), trajectory([unknown, unknown, unknown]))
    assert (o.loop_repeats, o.looping) == (0, False)


def test_tiers_linear_branching_recovery():
    chain = [MEDALS_7, {"id": "n", "name": "get_country", "arguments": {"code": "KE"}, "depends_on": ["m"]}]
    ok = [SAME, step("get_country", {"n": "Kenya"}, code="KE")]
    assert orchestration(task(chain), trajectory(ok)).tier == "linear"
    assert orchestration(task([MEDALS_7]), trajectory([SAME])).tier == "linear"
    branching = [MEDALS_7, {"id": "n", "name": "get_country", "arguments": {"code": "KE"}}]
    assert orchestration(task(branching), trajectory(ok)).tier == "branching"
    failed = [step("get_country", status="error", fault="timeout", code="KE"), *ok]
    assert orchestration(task(branching), trajectory(failed)).tier == "recovery"
    assert orchestration(task(chain), trajectory(failed)).tier == "recovery"
