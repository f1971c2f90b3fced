"""One hand-made trajectory per recovery class, graded for real, then classified."""

from __future__ import annotations

from judge import RecoveryEvent, Task, Trajectory
from tests.orchestration.helpers import TOOLS, orchestration, step, task, trajectory

MEDALS_7 = {"id": "m", "name": "get_medals", "arguments": {"athlete_id": 7}, "expected_output": {"gold": 3}}


def events(steps, reference=(MEDALS_7,), answer="3", **extra) -> list[RecoveryEvent]:
    return orchestration(task(list(reference), **extra), trajectory(steps, answer)).recovery


def outcome(e: RecoveryEvent) -> tuple[str, bool, int | None]:
    return e.outcome, e.recovered, e.by_step


def test_retried_fixed_same_tool_changed_arguments_then_success():
    got = events([step("get_medals", "Error: athlete_id is required", status="error"), step("get_medals", {"gold": 3}, athlete_id=7)])
    assert [outcome(e) for e in got] == [("retried_fixed", True, 1)]
    assert got[0].tool == "get_medals" and got[0].failure == "tool_error" and got[0].turn_id == "1" and got[0].step == 0


def test_switched_tool_another_tool_reaches_the_same_reference_call():
    steps = [step("get_medals", status="error", fault="timeout", athlete_id=7), step("medal_count", {"gold": 3}, athlete=7)]
    got = events(steps)
    assert [outcome(e) for e in got] == [("switched_tool", True, 1)]
    assert got[0].failure == "timeout"  # the injected fault kind, not the status


def test_repeated_unchanged_that_never_succeeds_is_a_stall_then_the_agent_gives_up():
    bad = step("get_medals", "Error: unknown argument 'athlete'", status="error", athlete=7)
    got = events([bad, bad, bad], answer="I could not find it.")
    assert [outcome(e) for e in got] == [("repeated_unchanged", False, None), ("repeated_unchanged", False, None), ("gave_up", False, None)]


def test_an_unchanged_retry_after_a_transient_fault_is_recovered():
    got = events([step("get_medals", status="error", fault="timeout", athlete_id=7), step("get_medals", {"gold": 3}, athlete_id=7)])
    assert [outcome(e) for e in got] == [("repeated_unchanged", True, 1)]


def test_recovered_later_after_a_second_failed_attempt():
    steps = [
        step("get_medals", "Error: athlete_id is required", status="error"),
        step("get_medals", "Error: unknown argument 'id'", status="error", id=7),
        step("get_medals", {"gold": 3}, athlete_id=7),
    ]
    got = events(steps)
    assert [outcome(e) for e in got] == [("recovered_later", True, 2), ("retried_fixed", True, 2)]


def test_gave_up_answering_without_the_missing_information():
    got = events([step("get_medals", "Error: athlete_id is required", status="error")], answer="Sorry, I cannot tell.")
    assert [outcome(e) for e in got] == [("gave_up", False, None)]


def test_a_run_stopped_before_any_attempt_reached_the_goal_was_cut_off_not_given_up():
    failed = step("get_medals", "Error: athlete_id is required", status="error")
    t = task([MEDALS_7])

    def stopped(steps, answer=None):
        tr = trajectory(steps, answer)
        return Trajectory.model_validate({**tr.model_dump(), "ended_early": {"kind": "limit", "reason": "the step limit was reached"}})

    assert [outcome(e) for e in orchestration(t, trajectory([failed], answer=None)).recovery] == [("gave_up", False, None)]  # finished
    assert [outcome(e) for e in orchestration(t, stopped([failed])).recovery] == [("cut_off", False, None)]
    bad = step("get_medals", "Error: unknown argument 'athlete'", status="error", athlete=7)
    stalled = orchestration(t, stopped([bad, bad])).recovery
    assert [outcome(e) for e in stalled] == [("repeated_unchanged", False, None), ("cut_off", False, None)]  # what it did is still said
    fixed = [failed, step("get_medals", {"gold": 3}, athlete_id=7)]
    assert [outcome(e) for e in orchestration(t, stopped(fixed, "3")).recovery] == [("retried_fixed", True, 1)]


def test_an_earlier_turn_of_a_run_that_stopped_later_still_gave_up():
    two = Task.model_validate(
        {
            "task_id": "t",
            "tools": TOOLS,
            "turns": [
                {"turn_id": 1, "query": "a", "gold_answer": "3", "reference_calls": [MEDALS_7]},
                {"turn_id": 2, "query": "b", "gold_answer": "3", "reference_calls": [MEDALS_7]},
            ],
        }
    )
    failed = step("get_medals", "Error: athlete_id is required", status="error")
    turns = [{"turn_id": 1, "steps": [failed], "final_answer": "I cannot tell."}, {"turn_id": 2, "steps": [failed]}]
    tr = Trajectory.model_validate({"task_id": "t", "trajectory_id": "a", "turns": turns, "ended_early": {"kind": "error", "reason": "crash"}})
    assert [(e.turn_id, e.outcome) for e in orchestration(two, tr).recovery] == [("1", "gave_up"), ("2", "cut_off")]


def test_a_retry_that_runs_but_misses_the_reference_is_not_a_recovery():
    steps = [step("get_medals", "Error: athlete_id is required", status="error"), step("get_medals", {"gold": 1}, athlete_id=8)]
    assert [outcome(e) for e in events(steps, answer="1")] == [("gave_up", False, None)]


def test_a_call_with_no_recorded_result_is_not_a_failure():
    o = orchestration(task([MEDALS_7]), trajectory([step("get_medals", status="unknown", athlete_id=7)]))
    assert o.failed_calls == 0 and o.recovery == [] and o.recovery_rate is None and o.tier == "linear"


def test_a_faulted_step_with_an_ok_status_is_failed_and_never_satisfies_the_reference():
    steps = [step("get_medals", [], status="ok", fault="empty", athlete_id=7), step("get_medals", {"gold": 3}, athlete_id=7)]
    got = events(steps)
    assert [outcome(e) for e in got] == [("repeated_unchanged", True, 1)]  # the retry, not the faulted call, satisfied it


def test_a_misspelt_tool_then_the_right_one_is_a_switch():
    got = events([step("get_medal", "Error: unknown tool get_medal", status="error", athlete_id=7), step("get_medals", {"gold": 3}, athlete_id=7)])
    assert [outcome(e) for e in got] == [("switched_tool", True, 1)]


def test_a_blocked_write_followed_by_the_read_the_task_wanted_is_a_switch():
    reference = [{"id": "r", "name": "get_medals", "arguments": {"athlete_id": 7}}]
    steps = [step("refund", "blocked by policy: read_only", status="blocked", order="A1"), step("get_medals", {"gold": 3}, athlete_id=7)]
    got = events(steps, reference=reference, policy={"text": "read only", "read_only": True})
    assert [(e.failure, *outcome(e)) for e in got] == [("blocked", "switched_tool", True, 1)]


def test_a_failed_call_whose_reference_was_already_satisfied_aims_at_itself():
    steps = [step("get_medals", {"gold": 3}, athlete_id=7), step("get_medals", status="error", fault="timeout", athlete_id=7, year=2012)]
    assert [outcome(e) for e in events(steps)] == [("gave_up", False, None)]
    retried = [*steps, step("get_medals", {"gold": 3}, athlete_id=7, year=2016)]
    assert [outcome(e) for e in events(retried)] == [("retried_fixed", True, 2)]
    repeated = [*steps, step("get_medals", {"gold": 3}, athlete_id=7, year=2012)]
    assert [outcome(e) for e in events(repeated)] == [("repeated_unchanged", True, 2)]


def test_recovery_rate_counts_recovered_failed_calls():
    steps = [
        step("get_medals", "Error: athlete_id is required", status="error"),
        step("get_medals", {"gold": 3}, athlete_id=7),
        step("get_country", "Error: upstream", status="error", code="KE"),
    ]
    o = orchestration(task([MEDALS_7]), trajectory(steps))
    assert (o.failed_calls, o.recovered_calls, o.recovery_rate) == (2, 1, 0.5)
    assert o.tier == "recovery"


def test_a_dialogue_graded_as_one_episode_recovers_across_user_messages():
    # a one-goal task, a dialogue of two user messages: graded as one episode, the second message's
    # call recovers the first message's failed one
    tr = Trajectory.model_validate(
        {
            "task_id": "t",
            "trajectory_id": "d",
            "turns": [
                {"turn_id": "1", "steps": [step("get_medals", "Error: athlete_id is required", status="error", round=0)], "final_answer": "Which athlete?"},
                {"turn_id": "2", "steps": [step("get_medals", {"gold": 3}, round=1, athlete_id=7)], "final_answer": "3"},
            ],
        }
    )
    o = orchestration(task([MEDALS_7]), tr)
    assert [outcome(e) for e in o.recovery] == [("retried_fixed", True, 1)] and o.rounds_used == 2


def test_a_retry_under_the_tools_declared_name_is_the_same_tool_as_its_sanitised_name():
    """``medals_get`` (a sanitised name) failed, then ``medals.get`` succeeded: one tool, retried."""
    from judge import Task

    dotted = {**MEDALS_7, "name": "medals.get"}
    t = Task.model_validate(
        {
            "task_id": "t",
            "question": "How many medals?",
            "tools": [{"name": "medals.get"}, {"name": "medal_count"}],
            "reference_calls": [dotted],
            "gold_answer": "3",
        }
    )
    steps = [step("medals_get", "Error: athlete_id is required", status="error"), step("medals.get", {"gold": 3}, athlete_id=7)]
    got = orchestration(t, trajectory(steps)).recovery
    assert [outcome(e) for e in got] == [("retried_fixed", True, 1)] and got[0].tool == "medals.get"


# ---------------------------------------------------------------- near-linear, same classification


def _oracle(view, i):
    """The definition in the module docstring, written as directly as it reads (every later step
    scanned for every failed call): the reference the near-linear sweep must agree with."""
    from judge import canonical_json
    from pipelines.orchestration import is_failed_call

    failed = view.steps[i]
    open_refs = {r for r in range(len(view.references)) if view.satisfied_by.get(r, i) >= i}
    same = {r for r in open_refs if view.references[r].name == failed.name}
    goal = same or (set() if any(ref.name == failed.name for ref in view.references) else open_refs)

    def reaches(j):
        s = view.steps[j]
        if is_failed_call(s):
            return False
        return bool(view.reached.get(j, set()) & goal) if goal else (s.name == failed.name and s.ok)

    attempts = [j for j in range(i + 1, len(view.steps)) if view.steps[j].name == failed.name or (goal and view.reached.get(j, set()) & goal)]
    success = next((j for j in attempts if reaches(j)), None)
    if not attempts:
        outcome = "gave_up"
    else:
        first = view.steps[attempts[0]]
        if first.name == failed.name and not (first.arguments_recorded and failed.arguments_recorded):
            outcome = "retried_unrecorded"
        elif first.name == failed.name and canonical_json(first.arguments) == canonical_json(failed.arguments):
            outcome = "repeated_unchanged" if success in (None, attempts[0]) else "recovered_later"
        elif success == attempts[0]:
            outcome = "retried_fixed" if first.name == failed.name else "switched_tool"
        else:
            outcome = "recovered_later" if success is not None else "gave_up"
    if outcome == "gave_up" and view.ended:
        outcome = "cut_off"
    return (i, outcome, success is not None, success)


def _random_view(rng):
    from judge import ReferenceCall, Step
    from pipelines.orchestration import TurnView

    names = ["a", "b", "c", "d"]
    refs = [ReferenceCall(name=rng.choice(names[:3]), arguments={"x": rng.randint(0, 2)}) for _ in range(rng.randint(0, 5))]
    steps = []
    for _ in range(rng.randint(0, 14)):
        kind = rng.random()
        args = {"x": rng.randint(0, 2)}
        if kind < 0.35:
            steps.append(Step(name=rng.choice(names), arguments=args, status=rng.choice(["error", "blocked"]), result="Error"))
        elif kind < 0.45:
            steps.append(Step(name=rng.choice(names), arguments=args, result=1, fault="timeout"))
        elif kind < 0.5:
            steps.append(Step(name=rng.choice(names), arguments=args, status="unknown"))
        else:
            steps.append(Step(name=rng.choice(names), arguments=args, result=1))
    view = TurnView("1", refs, steps, ended=rng.random() < 0.3)
    # the calls check's evidence, as align() reads it (a reference may be matched by several steps)
    for r in range(len(refs)):
        for j in range(len(steps)):
            if rng.random() < 0.15:
                view.satisfied_by.setdefault(r, j)
                view.reached.setdefault(j, set()).add(r)
    return view


def test_the_sweep_classifies_as_the_definition_on_random_turns():
    import random

    from pipelines.orchestration import classify_recovery, is_failed_call

    rng = random.Random(26)
    compared = set()
    for _ in range(3000):
        view = _random_view(rng)
        got = [(e.step, e.outcome, e.recovered, e.by_step) for e in classify_recovery([view])]
        assert got == [_oracle(view, i) for i, s in enumerate(view.steps) if is_failed_call(s)]
        compared |= {g[1] for g in got}
    assert compared == {"retried_fixed", "switched_tool", "repeated_unchanged", "recovered_later", "gave_up", "cut_off"}


def test_a_hundred_thousand_steps_with_failing_calls_are_classified():
    """Hostile sweep 8: 10^5 steps with a failed call in every other one (recovery was
    O(failures x steps): killed at 10 minutes). Graded for real, every failed call classified."""
    n = 100_000
    steps = []
    for i in range(n // 2):
        steps.append(step("get_medals", "Error: athlete_id must be 7", status="error", athlete_id=i + 8))
        steps.append(step("get_athlete", {"id": i}, name=f"n{i}"))
    steps.append(step("get_medals", {"gold": 3}, athlete_id=7))
    o = orchestration(task([MEDALS_7]), trajectory(steps))
    assert o.failed_calls == len(o.recovery) == n // 2 and o.recovered_calls == n // 2
    # each failed call's first attempt is the next failed one; the last call (step n) reached the goal
    assert [(e.outcome, e.by_step) for e in o.recovery] == [("recovered_later", n)] * (n // 2 - 1) + [("retried_fixed", n)]
    assert [e.step for e in o.recovery] == list(range(0, n, 2))
