"""Every matching rule of the deterministic checks, each with a passing and a failing example."""

from __future__ import annotations

from judge import Check, FailureStage, Outcome, VerdictLabel
from tests.pipelines.helpers import MEDALS, SEARCH, call, grade, task, traj

REF_SEARCH = {"name": "search_athletes", "arguments": {"country": "Kenya"}}
REF_MEDALS = {"name": "get_medals", "arguments": {"athlete_id": 7}}


def verdict(case):
    r = case.result()
    return r.verdict, r.failure_stage


def check(case, which: Check, turn: int = 0):
    return case.turns[turn].checks[which]


# ---- tool selection ------------------------------------------------------------------------
def test_exact_calls_pass():
    case = grade(task([REF_SEARCH, REF_MEDALS]), traj([call("search_athletes", country="Kenya"), call("get_medals", athlete_id=7)]))
    assert verdict(case) == (VerdictLabel.PASS, FailureStage.NONE)


def test_wrong_tool_without_other_evidence_fails_at_tool_selection():
    case = grade(task([REF_MEDALS]), traj([], answer="41"))
    assert verdict(case) == (VerdictLabel.FAIL, FailureStage.TOOL_SELECTION)


def test_missing_call_with_spare_calls_and_right_answer_is_inconclusive():
    case = grade(task([REF_SEARCH, REF_MEDALS]), traj([call("search_athletes", country="Kenya"), call("search_athletes", country="Chile")]))
    assert check(case, Check.CALLS).outcome == Outcome.INCONCLUSIVE
    assert case.result().verdict == VerdictLabel.UNRESOLVED


def test_missing_call_with_spare_calls_and_wrong_answer_fails_at_tool_selection():
    case = grade(task([REF_MEDALS]), traj([call("search_athletes", country="Kenya")], answer="41"))
    assert verdict(case) == (VerdictLabel.FAIL, FailureStage.TOOL_SELECTION)


def test_call_only_task_is_strict_about_missing_calls():
    case = grade(task([REF_MEDALS], gold=None), traj([call("search_athletes", country="Kenya")], answer=None))
    assert verdict(case) == (VerdictLabel.FAIL, FailureStage.TOOL_SELECTION)


# ---- argument names --------------------------------------------------------------------------
def test_misnamed_argument_fails_at_argument_names():
    case = grade(task([REF_MEDALS]), traj([call("get_medals", athleteId=7)]))
    assert verdict(case) == (VerdictLabel.FAIL, FailureStage.ARGUMENT_NAMES)
    assert "unexpected argument 'athleteId'" in check(case, Check.CALLS).reason


def test_missing_required_argument_fails_at_argument_names():
    case = grade(task([{"name": "get_medals", "arguments": {"athlete_id": 7, "year": 2012}}]), traj([call("get_medals", athlete_id=7)]))
    assert verdict(case) == (VerdictLabel.FAIL, FailureStage.ARGUMENT_NAMES)


def test_declared_argument_at_its_default_is_not_unexpected():
    ok = grade(task([REF_SEARCH]), traj([call("search_athletes", country="Kenya", limit=10)]))
    assert verdict(ok)[0] == VerdictLabel.PASS
    bad = grade(task([REF_SEARCH]), traj([call("search_athletes", country="Kenya", limit=3)]))
    assert verdict(bad) == (VerdictLabel.FAIL, FailureStage.ARGUMENT_NAMES)


def test_optional_argument_may_be_omitted():
    ref = {"name": "get_medals", "arguments": {"athlete_id": 7, "year": 2012}, "argument_rules": {"year": {"optional": True}}}
    assert verdict(grade(task([ref]), traj([call("get_medals", athlete_id=7)])))[0] == VerdictLabel.PASS
    assert verdict(grade(task([ref]), traj([call("get_medals", athlete_id=7, year=2016)]))) == (VerdictLabel.FAIL, FailureStage.ARGUMENT_VALUES)


def test_without_schema_reference_arguments_are_the_declaration():
    ref = {"name": "lookup", "arguments": {"q": "x"}}
    t = task([ref], tools=[])
    assert verdict(grade(t, traj([call("lookup", q="x")])))[0] == VerdictLabel.PASS
    assert verdict(grade(t, traj([call("lookup", q="x", extra=1)]))) == (VerdictLabel.FAIL, FailureStage.ARGUMENT_NAMES)


# ---- argument values -------------------------------------------------------------------------
def test_wrong_value_fails_at_argument_values():
    case = grade(task([REF_MEDALS]), traj([call("get_medals", athlete_id=8)]))
    assert verdict(case) == (VerdictLabel.FAIL, FailureStage.ARGUMENT_VALUES)


def test_values_normalised_and_int_float_equal():
    case = grade(task([REF_SEARCH, REF_MEDALS]), traj([call("search_athletes", country="kenya "), call("get_medals", athlete_id=7.0)]))
    assert verdict(case)[0] == VerdictLabel.PASS


def test_acceptable_value_list():
    ref = {"name": "search_athletes", "arguments": {"country": "Kenya"}, "argument_rules": {"country": {"any_of": ["KEN", "Republic of Kenya"]}}}
    assert verdict(grade(task([ref]), traj([call("search_athletes", country="KEN")])))[0] == VerdictLabel.PASS
    assert verdict(grade(task([ref]), traj([call("search_athletes", country="Uganda")])))[1] == FailureStage.ARGUMENT_VALUES


def test_furthest_stage_of_same_name_attempts_is_blamed():
    # one attempt misnames, a later one gets names right but the value wrong: values is where it broke
    case = grade(task([REF_MEDALS]), traj([call("get_medals", id=7), call("get_medals", athlete_id=9)]))
    assert verdict(case) == (VerdictLabel.FAIL, FailureStage.ARGUMENT_VALUES)


# ---- failed calls, retries -------------------------------------------------------------------
def test_failed_call_never_satisfies_but_retry_does():
    failed = call("get_medals", result="Error: timeout", athlete_id=7)
    assert verdict(grade(task([REF_MEDALS]), traj([failed], answer="41")))[1] == FailureStage.ARGUMENT_VALUES
    retried = grade(task([REF_MEDALS]), traj([failed, call("get_medals", athlete_id=7)]))
    assert verdict(retried)[0] == VerdictLabel.PASS


def test_tool_error_at_misnamed_call_counts_at_argument_names():
    failed = call("get_medals", result={"error": "unknown argument athlete"}, athlete=7)
    assert verdict(grade(task([REF_MEDALS]), traj([failed], answer="I don't know"))) == (VerdictLabel.FAIL, FailureStage.ARGUMENT_NAMES)


def test_duplicates_never_inflate_scores():
    case = grade(task([REF_MEDALS]), traj([call("get_medals", athlete_id=7)] * 3))
    scores = case.result().scores
    assert scores.parameter == 1.0 and scores.path_completeness == 1.0
    assert abs(scores.tool_efficiency - 1 / 3) < 1e-9


def test_parameter_score_is_zero_when_no_call_is_made():
    scores = grade(task([REF_MEDALS]), traj([], answer="41")).result().scores
    assert scores.parameter == 0.0 and scores.tool_selection == 0.0 and scores.success == 0.0


# ---- order along dependencies ----------------------------------------------------------------
def test_order_matters_only_along_dependencies():
    refs = [dict(REF_SEARCH, id="s"), dict(REF_MEDALS, id="m", depends_on=["s"])]
    in_order = traj([call("search_athletes", country="Kenya"), call("get_medals", athlete_id=7)])
    reversed_ = traj([call("get_medals", athlete_id=7), call("search_athletes", country="Kenya")])
    assert verdict(grade(task(refs), in_order))[0] == VerdictLabel.PASS
    assert verdict(grade(task(refs), reversed_)) == (VerdictLabel.FAIL, FailureStage.TOOL_SELECTION)
    independent = [REF_SEARCH, REF_MEDALS]
    assert verdict(grade(task(independent), reversed_))[0] == VerdictLabel.PASS


def test_a_dependent_call_issued_beside_its_dependency_did_not_see_its_result():
    refs = [dict(REF_SEARCH, id="s"), dict(REF_MEDALS, id="m", depends_on=["s"])]
    parallel = traj([{**call("search_athletes", country="Kenya"), "round": 0}, {**call("get_medals", athlete_id=7), "round": 0}])
    assert verdict(grade(task(refs), parallel)) == (VerdictLabel.FAIL, FailureStage.TOOL_SELECTION)  # one model message
    serial = traj([{**call("search_athletes", country="Kenya"), "round": 0}, {**call("get_medals", athlete_id=7), "round": 1}])
    assert verdict(grade(task(refs), serial))[0] == VerdictLabel.PASS
    assert verdict(grade(task([REF_SEARCH, REF_MEDALS]), parallel))[0] == VerdictLabel.PASS  # no dependency: parallel is fine


def test_order_score_counts_respected_edges():
    refs = [dict(REF_SEARCH, id="s"), dict(REF_MEDALS, id="m", depends_on=["s"])]
    ok = grade(task(refs), traj([call("search_athletes", country="Kenya"), call("get_medals", athlete_id=7)])).result().scores
    assert ok.tool_order == 1.0


# ---- side effects ----------------------------------------------------------------------------
def test_writes_match_as_multiset_and_extra_write_fails():
    ref = {"name": "book_seat", "arguments": {"flight": "LH1", "seat": "3A"}}
    once = traj([call("book_seat", flight="LH1", seat="3A")])
    twice = traj([call("book_seat", flight="LH1", seat="3A"), call("book_seat", flight="LH1", seat="3A")])
    assert verdict(grade(task([ref]), once))[0] == VerdictLabel.PASS
    assert verdict(grade(task([ref]), twice)) == (VerdictLabel.FAIL, FailureStage.TOOL_SELECTION)
    wrong_seat = traj([call("book_seat", flight="LH1", seat="9F")])
    assert verdict(grade(task([ref]), wrong_seat)) == (VerdictLabel.FAIL, FailureStage.ARGUMENT_VALUES)
    both = task([ref, ref])
    assert verdict(grade(both, twice))[0] == VerdictLabel.PASS


def test_unexpected_write_to_other_tool_fails_at_tool_selection():
    extra = traj([call("get_medals", athlete_id=7), call("book_seat", flight="X", seat="1A")])
    assert verdict(grade(task([REF_MEDALS]), extra)) == (VerdictLabel.FAIL, FailureStage.TOOL_SELECTION)


def test_failed_write_is_never_an_unexpected_side_effect():
    extra = traj([call("get_medals", athlete_id=7), call("book_seat", result="Error: sold out", flight="X", seat="1A")])
    assert verdict(grade(task([REF_MEDALS]), extra))[0] == VerdictLabel.PASS


# ---- response coverage (alternative paths) -------------------------------------------------
def test_alternative_call_covering_expected_output_satisfies_read():
    ref = dict(REF_MEDALS, expected_output=[{"year": 2012, "medals": 42}])
    alt = traj([call("search_athletes", result=[{"medals": 42, "year": 2012}], country="Kenya")])
    case = grade(task([ref]), alt)
    assert verdict(case)[0] == VerdictLabel.PASS
    assert check(case, Check.CALLS).evidence[0].kind == "matched_response"


def test_trivially_empty_output_is_only_covered_by_the_same_tool():
    ref = dict(REF_MEDALS, expected_output=[])
    alt = traj([call("search_athletes", result=[], country="Kenya")], answer="41")
    assert verdict(grade(task([ref]), alt)) == (VerdictLabel.FAIL, FailureStage.TOOL_SELECTION)


def test_an_acknowledgement_is_only_covered_by_the_same_tool():
    for output in ({"status": "success"}, True, "OK", '{"status": "success", "ok": true}'):
        ref = dict(REF_MEDALS, expected_output=output)
        other = traj([call("search_athletes", result=output, country="Kenya")], answer="41")
        assert verdict(grade(task([ref]), other)) == (VerdictLabel.FAIL, FailureStage.TOOL_SELECTION), output
    informative = dict(REF_MEDALS, expected_output={"status": "success", "medals": 41})
    case = grade(task([informative]), traj([call("search_athletes", result={"medals": 41, "status": "success"}, country="Kenya")], answer="41"))
    assert check(case, Check.CALLS).evidence[0].kind == "matched_response"


# ---- policy ----------------------------------------------------------------------------------
def test_policy_rules():
    t = task([REF_MEDALS], policy={"text": "Only medals API, at most 2 calls.", "allowed_tools": ["get_medals"], "max_calls": 2})
    assert verdict(grade(t, traj([call("get_medals", athlete_id=7)])))[0] == VerdictLabel.PASS
    assert verdict(grade(t, traj([call("search_athletes", country="Kenya"), call("get_medals", athlete_id=7)])))[1] == FailureStage.POLICY
    assert verdict(grade(t, traj([call("get_medals", athlete_id=7)] * 3)))[1] == FailureStage.POLICY


def test_policy_read_only_forbidden_arguments_and_sources():
    ro = task([REF_MEDALS], policy={"read_only": True})
    assert verdict(grade(ro, traj([call("get_medals", athlete_id=7), call("book_seat", result="Error", flight="X", seat="1")])))[1] == FailureStage.POLICY
    banned = task([REF_SEARCH], policy={"forbidden_arguments": [{"tool": "search_athletes", "argument": "country", "values": ["north korea"]}]})
    assert verdict(grade(banned, traj([call("search_athletes", country="North Korea")])))[1] == FailureStage.POLICY
    assert verdict(grade(banned, traj([call("search_athletes", country="Kenya")])))[0] == VerdictLabel.PASS
    signed = task([REF_SEARCH], policy={"forbidden_arguments": [{"tool": "search_athletes", "argument": "country", "values": ["-100"]}]})
    assert verdict(grade(signed, traj([call("search_athletes", country="-100")])))[1] == FailureStage.POLICY
    assert check(grade(signed, traj([call("search_athletes", country="100")])), Check.POLICY).outcome == Outcome.MATCH  # not the banned -100
    rag_only = task([], policy={"allowed_sources": [{"allowed": ["rag"]}]})
    assert verdict(grade(rag_only, traj([call("search_docs", query="medals")])))[0] == VerdictLabel.PASS
    assert verdict(grade(rag_only, traj([call("get_medals", athlete_id=7)])))[1] == FailureStage.POLICY


def test_policy_violation_wins_over_later_stages():
    t = task([REF_MEDALS], policy={"forbidden_tools": ["search_athletes"]})
    case = grade(t, traj([call("search_athletes", country="Kenya")], answer="1"))
    assert verdict(case) == (VerdictLabel.FAIL, FailureStage.POLICY)


def test_text_only_policy_is_inconclusive_not_guessed():
    t = task([REF_MEDALS], policy={"text": "Do not use external sources."})
    case = grade(t, traj([call("get_medals", athlete_id=7)]))
    assert check(case, Check.POLICY).outcome == Outcome.INCONCLUSIVE
    assert case.result().verdict == VerdictLabel.UNRESOLVED


def test_text_only_policy_with_later_decisive_failure_is_fail_with_open_stage():
    t = task([REF_MEDALS], policy={"text": "Do not use external sources."})
    r = grade(t, traj([call("get_medals", athlete_id=8)])).result()
    assert (r.verdict, r.failure_stage) == (VerdictLabel.FAIL, FailureStage.ARGUMENT_VALUES)
    assert r.unresolved_stages == [FailureStage.POLICY]


# ---- answers and grounding -------------------------------------------------------------------
def test_answer_stages():
    calls = [call("get_medals", result={"medals": 42}, athlete_id=7)]
    assert verdict(grade(task([REF_MEDALS]), traj(calls, answer="42"))) == (VerdictLabel.PASS, FailureStage.NONE)
    assert verdict(grade(task([REF_MEDALS]), traj(calls, answer="41"))) == (VerdictLabel.FAIL, FailureStage.ANSWER_CORRECTNESS)
    idk = grade(task([REF_MEDALS]), traj(calls, answer="I don't know")).result()
    assert idk.failure_stage == FailureStage.ANSWER_CORRECTNESS and idk.turns[0].checks[2].label == "missing"
    assert idk.scores.crag == 0.0


def test_grounding_unexplained_number_is_inconclusive():
    calls = [call("get_medals", result={"medals": 42}, athlete_id=7)]
    case = grade(task([REF_MEDALS]), traj(calls, answer="42, a record since 1896"))
    assert check(case, Check.GROUNDING).outcome == Outcome.INCONCLUSIVE


def test_no_gold_answer_skips_answer_checks():
    case = grade(task([REF_MEDALS], gold=None), traj([call("get_medals", athlete_id=7)], answer=None))
    assert check(case, Check.ANSWER).outcome == Outcome.SKIPPED
    assert verdict(case)[0] == VerdictLabel.PASS


# ---- multi-turn ------------------------------------------------------------------------------
def test_every_turn_is_scored_and_first_failing_turn_decides():
    from judge import Task, Trajectory

    t = Task.model_validate(
        {
            "task_id": "t1",
            "tools": [MEDALS, SEARCH],
            "turns": [
                {"turn_id": 1, "query": "medals of 7?", "reference_calls": [REF_MEDALS], "gold_answer": "42"},
                {"turn_id": 2, "query": "athletes of Kenya?", "reference_calls": [REF_SEARCH], "gold_answer": "3"},
            ],
        }
    )

    def run(answers):
        tr = Trajectory.model_validate(
            {
                "task_id": "t1",
                "trajectory_id": "x",
                "turns": [
                    {"turn_id": 1, "steps": [call("get_medals", result=42, athlete_id=7)], "final_answer": answers[0]},
                    {"turn_id": 2, "steps": [call("search_athletes", result=[1, 2, 3], country="Kenya")], "final_answer": answers[1]},
                ],
            }
        )
        return grade(t, tr).result()

    assert run(["42", "3"]).verdict == VerdictLabel.PASS
    last_wrong = run(["42", "4"])  # VAKRA's evaluator scored only this last turn; we score all
    assert (last_wrong.verdict, last_wrong.failure_stage) == (VerdictLabel.FAIL, FailureStage.ANSWER_CORRECTNESS)
    first_wrong = run(["41", "3"])
    assert first_wrong.verdict == VerdictLabel.FAIL and first_wrong.turns[0].verdict == VerdictLabel.FAIL


def test_missing_turn_is_a_missing_answer():
    from judge import Task, Trajectory

    t = Task.model_validate({"task_id": "t1", "turns": [{"turn_id": 1, "query": "a", "gold_answer": "1"}, {"turn_id": 2, "query": "b", "gold_answer": "2"}]})
    tr = Trajectory.model_validate({"task_id": "t1", "trajectory_id": "x", "turns": [{"turn_id": 1, "final_answer": "1"}]})
    r = grade(t, tr).result()
    assert (r.verdict, r.failure_stage) == (VerdictLabel.FAIL, FailureStage.ANSWER_CORRECTNESS)


def test_a_step_that_satisfied_another_reference_is_not_the_attempt_blamed():
    # two calls to the same tool are needed; the second attempt misnames an argument: the stage is
    # argument_names, not the value difference between the second reference and the first step
    refs = [{"name": "get_medals", "arguments": {"athlete_id": 7}}, {"name": "get_medals", "arguments": {"athlete_id": 8}}]
    case = grade(task(refs), traj([call("get_medals", athlete_id=7), call("get_medals", athleteId=8)], answer="41"))
    assert verdict(case) == (VerdictLabel.FAIL, FailureStage.ARGUMENT_NAMES)


# ---- the one check interface ---------------------------------------------------------------
def test_checks_share_one_interface_and_run_in_dependency_order():
    from pipelines.checks import WATERFALL, dependents, evaluation_order

    assert [c.check for c in WATERFALL] == [Check.POLICY, Check.CALLS, Check.ANSWER, Check.GROUNDING]
    assert [c.check for c in evaluation_order(WATERFALL)] == [Check.POLICY, Check.ANSWER, Check.CALLS, Check.GROUNDING]
    assert dependents(WATERFALL, Check.ANSWER) == {Check.CALLS, Check.GROUNDING}
    assert dependents(WATERFALL, Check.POLICY) == set()
    case = grade(task([REF_MEDALS]), traj([call("get_medals", athlete_id=7)]))
    ctx = case.turns[0].ctx
    for c in WATERFALL:
        outcome = c.run(ctx, case.turns[0].checks)
        assert outcome.result.check == c.check  # same context in, same result type out


def test_a_cyclic_dependency_is_refused():
    from pipelines.checks import evaluation_order

    class A:
        check, depends_on = Check.POLICY, (Check.ANSWER,)

    class B:
        check, depends_on = Check.ANSWER, (Check.POLICY,)

    import pytest

    with pytest.raises(ValueError, match="cycle"):
        evaluation_order([A(), B()])
