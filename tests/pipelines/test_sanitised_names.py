"""A call by a tool's sanitised name (``math_factorial`` for ``math.factorial``, as function-calling
APIs require) is a call to that tool, for every check, when exactly one known tool sanitises to it."""

from __future__ import annotations

from judge import Check, EvidenceKind, FailureStage, Outcome, Task, VerdictLabel
from tests.pipelines.helpers import call, grade, traj

FACTORIAL = {"name": "math.factorial", "parameters": {"type": "object", "properties": {"number": {"type": "integer"}}, "required": ["number"]}}
HYPOT = {"name": "math.hypot", "parameters": {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}}, "required": ["x", "y"]}}
REF = {"name": "math.factorial", "arguments": {"number": 5}}
NOTE = "matched after name sanitisation: math_factorial -> math.factorial"


def task(reference_calls=(REF,), tools=(FACTORIAL, HYPOT), **extra) -> Task:
    data = {"task_id": "t1", "question": "5!?", "reference_calls": list(reference_calls), "gold_answer": "120", **extra}
    if tools is not None:
        data["tools"] = list(tools)
    return Task.model_validate(data)


def outcome(case):
    r = case.result()
    return r.verdict, r.failure_stage


def calls_check(case):
    return case.turns[0].checks[Check.CALLS]


def test_a_sanitised_name_satisfies_its_reference_call_and_the_evidence_names_both():
    trajectory = traj([call("math_factorial", 120, number=5)], answer="120")
    case = grade(task(), trajectory)
    assert outcome(case) == (VerdictLabel.PASS, FailureStage.NONE)
    (matched,) = calls_check(case).evidence
    assert matched.kind == EvidenceKind.MATCHED_STRUCTURAL and NOTE in matched.message and matched.tool == "math.factorial"
    assert trajectory.steps[0].name == "math_factorial"  # the recorded trajectory keeps what the agent wrote
    assert case.turns[0].ctx.steps[0].written_name == "math_factorial"


def test_a_sanitised_call_is_diagnosed_against_its_reference_call():
    case = grade(task(), traj([call("math_factorial", 24, number=4)], answer="24"))
    assert outcome(case) == (VerdictLabel.FAIL, FailureStage.ARGUMENT_VALUES)
    (unsatisfied,) = calls_check(case).evidence
    assert unsatisfied.kind == EvidenceKind.UNSATISFIED and NOTE in unsatisfied.message and "number" in unsatisfied.message
    assert case.result().scores.tool_selection == 1.0  # the right tool was called


def test_without_tool_specs_the_reference_calls_name_the_known_tools():
    case = grade(task(tools=None), traj([call("math_factorial", 120, number=5)], answer="120"))
    assert outcome(case) == (VerdictLabel.PASS, FailureStage.NONE)
    assert NOTE in calls_check(case).evidence[0].message


def test_two_tools_sanitising_alike_leave_the_name_unmatched():
    slash = {**FACTORIAL, "name": "math/factorial"}
    case = grade(task(tools=(FACTORIAL, slash), gold_answer=None), traj([call("math_factorial", 120, number=5)], answer=None))
    assert outcome(case) == (VerdictLabel.FAIL, FailureStage.TOOL_SELECTION)
    assert "math.factorial was never called" in calls_check(case).reason
    assert "sanitisation" not in calls_check(case).reason


def test_an_exact_name_wins_over_a_sanitised_one():
    underscored = {**FACTORIAL, "name": "math_factorial"}
    exact = grade(task(tools=(FACTORIAL, underscored), gold_answer=None), traj([call("math_factorial", 120, number=5)], answer=None))
    assert outcome(exact) == (VerdictLabel.FAIL, FailureStage.TOOL_SELECTION)  # it called the other tool
    other = grade(
        task(reference_calls=[{"name": "math_factorial", "arguments": {"number": 5}}], tools=(FACTORIAL, underscored)),
        traj([call("math_factorial", 120, number=5)], answer="120"),
    )
    assert outcome(other) == (VerdictLabel.PASS, FailureStage.NONE) and "sanitisation" not in calls_check(other).evidence[0].message


def test_a_surplus_sanitised_call_under_bfcls_exact_count_names_both():
    trajectory = traj([call("math_factorial", 120, number=5), call("math_hypot", 5.0, x=3, y=4)], answer="120")
    case = grade(task(extra_calls="forbid"), trajectory)
    assert outcome(case) == (VerdictLabel.FAIL, FailureStage.TOOL_SELECTION)
    (surplus,) = [e for e in calls_check(case).evidence if e.kind == EvidenceKind.EXTRA_WRITE]
    assert surplus.message == "surplus call math.hypot at step 1 (matched after name sanitisation: math_hypot -> math.hypot)"


def test_the_policy_reads_the_tool_a_sanitised_name_means():
    allowed = grade(task(policy={"allowed_tools": ["math.factorial"]}), traj([call("math_factorial", 120, number=5)], answer="120"))
    assert allowed.turns[0].checks[Check.POLICY].outcome == Outcome.MATCH
    forbidden = grade(task(policy={"forbidden_tools": ["math.factorial"]}), traj([call("math_factorial", 120, number=5)], answer="120"))
    policy = forbidden.turns[0].checks[Check.POLICY]
    assert (policy.outcome, forbidden.result().failure_stage) == (Outcome.MISMATCH, FailureStage.POLICY)
    assert policy.reason == f"tool 'math.factorial' is forbidden ({NOTE})"
