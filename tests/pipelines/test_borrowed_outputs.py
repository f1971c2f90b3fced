"""Borrowed outputs (pipelines/checks/_borrowed.py): a call with no recorded result that is identical
to a reference call whose output the task records takes that output as grounding evidence: only
for a declared read tool, identical arguments (schema defaults filled, canonical JSON), the same
state, and never instead of a result of its own. Each rule with the case it allows and the cases
it refuses; then the same on VAKRA predictions whose call lost its response."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judge import Check, FailureStage, Outcome, Task, Trajectory, VerdictLabel
from pipelines.run import GradeOptions, run_grading
from tests.pipelines.helpers import BOOK, MEDALS, grade, task, traj

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "formats"
LENT = "the answer value '42' appears in the output of the identical reference call get_medals (step 0 recorded no result)"
REF = {"name": "get_medals", "arguments": {"athlete_id": 7}, "expected_output": {"medals": 42}}


def unknown(name: str, **arguments):
    """A call the log kept without its result."""
    return {"name": name, "arguments": arguments}


def grounding(case, turn: int = 0):
    return case.turns[turn].checks[Check.GROUNDING]


def borrowed(case, turn: int = 0) -> list[tuple[int | None, int | None]]:
    return [(e.reference, e.step) for e in grounding(case, turn).evidence if e.kind == "borrowed_output"]


# ---- what is borrowed -------------------------------------------------------------------------
def test_an_identical_read_call_without_result_is_grounded_in_the_reference_output():
    case = grade(task([REF]), traj([unknown("get_medals", athlete_id=7)]))
    result = grounding(case)
    assert (result.outcome, result.reason) == (Outcome.MATCH, LENT)
    assert borrowed(case) == [(0, 0)]
    assert case.result().verdict == VerdictLabel.PASS
    # the same task without a recorded output: nothing to borrow, a judge would be asked (as before)
    plain = grade(task([{"name": "get_medals", "arguments": {"athlete_id": 7}}]), traj([unknown("get_medals", athlete_id=7)]))
    assert (grounding(plain).outcome, grounding(plain).reason) == (Outcome.INCONCLUSIVE, "no successful tool output to ground the answer in")
    assert plain.result().verdict == VerdictLabel.UNRESOLVED
    assert plain.next_escalation() == (0, Check.GROUNDING) and case.next_escalation() is None


def test_a_wrong_answer_value_is_not_grounded_by_borrowing():
    case = grade(task([REF]), traj([unknown("get_medals", athlete_id=7)], answer="41"))
    assert (case.result().verdict, case.result().failure_stage) == (VerdictLabel.FAIL, FailureStage.ANSWER_CORRECTNESS)
    assert grounding(case).outcome == Outcome.SKIPPED and borrowed(case) == []


def test_a_number_the_borrowed_output_lacks_is_still_unexplained():
    case = grade(task([REF], gold=None, gold_answer_pattern="42"), traj([unknown("get_medals", athlete_id=7)], answer="42 medals since 1896"))
    result = grounding(case)
    assert result.outcome == Outcome.INCONCLUSIVE and result.reason == "numbers in the answer found in no tool output: [1896.0]"
    assert borrowed(case) == [(0, 0)]  # searched, and said so in the evidence


def test_schema_defaults_are_filled_on_both_sides():
    ref = {"name": "search_athletes", "arguments": {"country": "Kenya"}, "expected_output": {"count": 42}}
    same = grade(task([ref]), traj([unknown("search_athletes", country="Kenya", limit=10)]))  # 10 is the schema default
    assert grounding(same).outcome == Outcome.MATCH and borrowed(same) == [(0, 0)]
    other = grade(task([ref]), traj([unknown("search_athletes", country="Kenya", limit=5)]))
    assert borrowed(other) == [] and grounding(other).outcome == Outcome.INCONCLUSIVE


def test_identical_reference_calls_must_agree_on_their_output():
    twice = [REF, {**REF, "expected_output": {"medals": 42}}]
    agreed = grade(task(twice), traj([unknown("get_medals", athlete_id=7), unknown("get_medals", athlete_id=7)]))
    assert borrowed(agreed) == [(0, 0), (0, 1)] and grounding(agreed).outcome == Outcome.MATCH
    differing = [REF, {**REF, "expected_output": {"medals": 41}}]  # the tool is not a function of its arguments
    case = grade(task(differing), traj([unknown("get_medals", athlete_id=7), unknown("get_medals", athlete_id=7)]))
    assert borrowed(case) == [] and grounding(case).outcome == Outcome.INCONCLUSIVE


# ---- what is not ------------------------------------------------------------------------------
def _not_borrowed(case) -> None:
    assert borrowed(case) == []
    assert grounding(case).outcome != Outcome.MATCH or "identical reference call" not in grounding(case).reason


def test_a_write_tool_lends_nothing():
    ref = {"name": "book_seat", "arguments": {"flight": "AF1", "seat": "4A"}, "expected_output": {"booking": "42"}}
    case = grade(task([ref]), traj([unknown("book_seat", flight="AF1", seat="4A")]))
    _not_borrowed(case)
    assert grounding(case).reason == "no successful tool output to ground the answer in"


def test_a_tool_the_task_does_not_declare_lends_nothing():
    case = grade(task([REF], tools=[]), traj([unknown("get_medals", athlete_id=7)]))
    _not_borrowed(case)
    assert grounding(case).outcome == Outcome.INCONCLUSIVE


@pytest.mark.parametrize(
    ("ref_arguments", "step_arguments"),
    [
        ({"country": "Kenya"}, {"country": "kenya"}),  # BFCL-normalised equal: satisfies the reference, still another call
        ({"country": "Kenya"}, {"country": " Kenya"}),
        ({"country": "Kenya"}, {"country": "Chile"}),
    ],
)
def test_different_arguments_lend_nothing_even_when_they_match_after_normalisation(ref_arguments, step_arguments):
    ref = {"name": "search_athletes", "arguments": ref_arguments, "expected_output": {"count": 42}}
    case = grade(task([ref]), traj([unknown("search_athletes", **step_arguments)]))
    _not_borrowed(case)
    assert grounding(case).outcome == Outcome.INCONCLUSIVE


def test_a_call_that_satisfies_the_reference_by_its_rules_only_lends_nothing():
    # accepted by an alternative argument set, by a tolerance, and with an extra argument the
    # reference allows: each satisfies the reference call, none is the call whose output was recorded
    refs = [
        {**REF, "alternatives": [{"arguments": {"athlete_id": 8}}]},
        {**REF, "argument_rules": {"athlete_id": {"tolerance": 1}}},
        {**REF, "extra_arguments": "allow"},
    ]
    for ref, step in zip(refs, [unknown("get_medals", athlete_id=8), unknown("get_medals", athlete_id=8), unknown("get_medals", athlete_id=7, year=2016)]):
        case = grade(task([ref]), traj([step]))
        assert case.turns[0].checks[Check.CALLS].outcome == Outcome.MATCH
        _not_borrowed(case)
        assert grounding(case).outcome == Outcome.INCONCLUSIVE


OTHER = unknown("search_athletes", country="Chile")  # another call without result in the same turn


def test_a_failed_or_blocked_call_lends_nothing():
    for status in ("error", "blocked"):
        step = {**unknown("get_medals", athlete_id=7), "status": status}
        _not_borrowed(grade(task([REF]), traj([step])))
        _not_borrowed(grade(task([REF]), traj([step, OTHER])))


def test_a_call_with_its_own_result_keeps_it():
    own = {**unknown("get_medals", athlete_id=7), "result": {"medals": 3}}
    for steps in ([own], [own, OTHER], [{**own, "status": "unknown"}, OTHER]):  # a result recorded under an unknown status is not lent over either
        _not_borrowed(grade(task([REF], gold="Kipchoge"), traj(steps, answer="Kipchoge")))
    lent = grade(task([{**REF, "expected_output": {"winner": "Kipchoge"}}], gold="Kipchoge"), traj([unknown("get_medals", athlete_id=7)], answer="Kipchoge"))
    assert "identical reference call" in grounding(lent).reason  # the same call without its result borrows


def test_no_recorded_output_null_or_an_error_lends_nothing():
    for ref in (
        {"name": "get_medals", "arguments": {"athlete_id": 7}},
        {**REF, "expected_output": None},
        {**REF, "expected_output": {"error": "42 not found"}},
    ):
        _not_borrowed(grade(task([ref]), traj([unknown("get_medals", athlete_id=7)])))


def test_an_argument_naming_an_earlier_result_lends_nothing():
    ref = {"name": "get_medals", "arguments": {"athlete_id": "$ATH.id$"}, "expected_output": {"medals": 42}}
    tools = [{**MEDALS, "parameters": {"type": "object", "properties": {"athlete_id": {"type": "string"}}}}]
    case = grade(task([ref], tools=tools), traj([unknown("get_medals", athlete_id="$ATH.id$")]))  # the same text, each run's own label
    _not_borrowed(case)


def test_a_change_of_state_before_the_call_lends_nothing():
    write = {"name": "book_seat", "arguments": {"flight": "AF1", "seat": "4A"}, "result": "booked"}
    _not_borrowed(grade(task([REF]), traj([write, unknown("get_medals", athlete_id=7)])))
    _not_borrowed(grade(task([REF]), traj([{"name": "reset_db", "arguments": {}}, unknown("get_medals", athlete_id=7)])))  # undeclared: may write
    failed = {**write, "status": "error", "error": "full"}  # a failed write changed nothing
    assert borrowed(grade(task([REF]), traj([failed, unknown("get_medals", athlete_id=7)]))) == [(0, 1)]
    reference_write = {"name": "book_seat", "arguments": {"flight": "AF1", "seat": "4A"}, "id": "w"}
    after_write = grade(
        task([reference_write, {**REF, "depends_on": ["w"]}]), traj([unknown("book_seat", flight="AF1", seat="4A"), unknown("get_medals", athlete_id=7)])
    )
    assert borrowed(after_write) == []
    skipped_write = grade(task([reference_write, {**REF, "depends_on": ["w"]}]), traj([unknown("get_medals", athlete_id=7)]))
    assert borrowed(skipped_write) == []  # the reference read saw the state after the reference write


def test_a_write_in_an_earlier_turn_counts_too():
    turns = [
        {"turn_id": "1", "query": "Book 4A.", "reference_calls": [{"name": "book_seat", "arguments": {"flight": "AF1", "seat": "4A"}}]},
        {"turn_id": "2", "query": "How many medals?", "reference_calls": [REF], "gold_answer": "42"},
    ]
    t = Task.model_validate({"task_id": "t1", "tools": [MEDALS, BOOK], "turns": turns})
    done = [
        {"turn_id": "1", "steps": [unknown("book_seat", flight="AF1", seat="4A")]},
        {"turn_id": "2", "steps": [unknown("get_medals", athlete_id=7)], "final_answer": "42"},
    ]
    case = grade(t, Trajectory.model_validate({"task_id": "t1", "trajectory_id": "a", "turns": done}))
    assert borrowed(case, 1) == []
    assert grounding(case, 1).outcome == Outcome.INCONCLUSIVE


# ---- what a judge sees ------------------------------------------------------------------------
def test_the_groundedness_material_shows_the_borrowed_output_marked():
    case = grade(task([REF], gold=None, gold_answer_pattern="42"), traj([unknown("get_medals", athlete_id=7)], answer="42 medals since 1896"))
    request = case.request_for(0, Check.GROUNDING)
    [shown] = request.material["tool_outputs"]
    assert shown["result"] == json.dumps({"medals": 42}) and shown["step"] == 0
    assert "no result was recorded for this call" in shown["borrowed"] and "reference call 0 (get_medals)" in shown["borrowed"]
    recorded = grade(
        task([REF], gold=None, gold_answer_pattern="42"), traj([{**unknown("get_medals", athlete_id=7), "result": 42}], answer="42 medals since 1896")
    )
    assert "borrowed" not in recorded.request_for(0, Check.GROUNDING).material["tool_outputs"][0]  # a recorded output's wire form is unchanged


# ---- real format: VAKRA predictions whose call lost its response ---------------------------------
def _grade_vakra(tmp_path: Path, tool_specs: Path | None) -> dict[str, dict]:
    out = tmp_path / ("specs" if tool_specs else "plain")
    run_grading(
        GradeOptions(tasks=FIXTURES / "vakra_ground_truth.jsonl", trajectories=FIXTURES / "vakra_predictions_unexecuted.jsonl", out=out, tool_specs=tool_specs)
    )
    return {r["trajectory_id"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}


def test_vakra_prediction_without_its_response_is_grounded_in_the_ground_truth_response(tmp_path):
    results = _grade_vakra(tmp_path, FIXTURES / "vakra_tool_specs.json")
    right = results["cut-right"]
    assert (right["verdict"], right["decided_by"]) == ("pass", "deterministic")
    check = next(c for c in right["turns"][0]["checks"] if c["check"] == "grounding")
    assert (
        check["reason"]
        == "the answer value ['New York Rangers'] appears in the output of the identical reference call get_champion (step 0 recorded no result)"
    )
    assert (results["cut-wrong"]["verdict"], results["cut-wrong"]["failure_stage"]) == ("fail", "answer_correctness")
    # without tool specs the task declares no tool, so no tool is marked read: nothing is borrowed
    plain = _grade_vakra(tmp_path, None)["cut-right"]
    assert plain["verdict"] == "unresolved" and plain["unresolved_stages"] == ["answer_grounding"]
