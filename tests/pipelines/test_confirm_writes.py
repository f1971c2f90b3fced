"""The confirm_writes policy rule (pipelines.checks._confirmation): every successful write follows an
agent message describing it and a user message confirming it. Native dialogues built here for each
case of the rule, then the real tau2 runs in ../shared (see their SOURCE.md), read as they are."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from judge import Check, EvidenceKind, FailureStage, Outcome, Policy, Step, Task, Trajectory, VerdictLabel
from pipelines.checks import CONFIRM_WRITES_RULE, Reply, read_reply
from pipelines.config import GradingConfig
from tests.pipelines.helpers import BOOK, SEARCH, call, grade

SHARED_TAU2 = Path(__file__).resolve().parents[3] / "shared" / "data" / "external" / "formats" / "tau2"
RULE = {"confirm_writes": True}
BOOKING = {"name": "book_seat", "arguments": {"flight": "BA117", "seat": "12A"}}
RESET = {"name": "reset_all", "side_effect": "write", "parameters": {"type": "object", "properties": {}}}
CANCEL = {"name": "cancel_booking", "side_effect": "write", "parameters": {"type": "object", "properties": {"booking": {"type": "string"}}}}


def booking_task(policy: dict[str, Any] | None = RULE, **extra: Any) -> Task:
    data: dict[str, Any] = {
        "task_id": "t1",
        "question": "Book me seat 12A on BA117.",
        "tools": [SEARCH, BOOK, RESET, CANCEL],
        "reference_calls": [BOOKING],
        **extra,
    }
    if policy is not None:
        data["policy"] = policy
    return Task.model_validate(data)


def book(call_id: str = "c1", flight: str = "BA117", seat: str = "12A", **extra: Any) -> dict[str, Any]:
    return {**call("book_seat", result={"status": "booked"}, flight=flight, seat=seat), "call_id": call_id, **extra}


def turn(query: str | None, *steps: dict[str, Any], say: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"query": query, "steps": list(steps), "agent_messages": list(say)}


def dialogue(*turns: dict[str, Any]) -> Trajectory:
    return Trajectory.model_validate({"task_id": "t1", "trajectory_id": "a", "turns": [{"turn_id": str(i + 1), **t} for i, t in enumerate(turns)]})


ASK = "Shall I book seat 12A on flight BA117 for you?"


def policy_check(case, turn_index: int = 0):
    return case.turns[turn_index].checks[Check.POLICY]


def kinds(result) -> list[str]:
    return [e.kind for e in result.evidence]


# ---- the rule on native dialogues ---------------------------------------------------------------
def test_described_and_confirmed_passes_with_evidence_naming_the_write_and_the_messages():
    case = grade(booking_task(), dialogue(turn("Book me a seat on BA117.", say=(ASK,)), turn("Yes, please.", book(), say=("Booked: seat 12A on BA117.",))))
    result = policy_check(case)
    assert (result.outcome, case.result().verdict) == (Outcome.MATCH, VerdictLabel.PASS)
    (evidence,) = result.evidence
    assert (evidence.kind, evidence.step, evidence.tool) == (EvidenceKind.WRITE_CONFIRMED, 0, "book_seat")
    assert "write book_seat (step 0, call c1) confirmed" in evidence.message and '"Yes, please."' in evidence.message
    assert evidence.actual["call_id"] == "c1" and evidence.actual["status"] == "ok" and evidence.actual["turn_id"] == "2"
    assert evidence.actual["description"] == {"turn_id": "1", "text": ASK}
    assert evidence.actual["confirmation"] == {"turn_id": "2", "text": "Yes, please."}


def test_no_agent_message_describes_the_write_is_a_violation():
    case = grade(booking_task(), dialogue(turn("Book me a seat.", say=("Let me check what is available.",)), turn("OK.", book())))
    result = policy_check(case)
    assert (case.result().verdict, case.result().failure_stage) == (VerdictLabel.FAIL, FailureStage.POLICY)
    (evidence,) = result.evidence
    assert evidence.kind == EvidenceKind.POLICY_VIOLATION and evidence.step == 0 and evidence.actual["call_id"] == "c1"
    assert "no agent message before it describes it" in result.reason and "'BA117'" in result.reason


def test_a_description_in_the_writes_own_turn_has_no_reply_before_the_write():
    """Inside one turn the order of messages and calls is not recorded: the message may even have
    come after the write, and no user message can lie between them."""
    case = grade(booking_task(), dialogue(turn("Book me seat 12A on BA117.", book(), say=("I will book seat 12A on BA117 now.",))))
    assert policy_check(case).outcome == Outcome.MISMATCH and "no agent message before it describes it" in policy_check(case).reason


def test_the_user_declines_and_the_agent_writes_anyway():
    case = grade(booking_task(), dialogue(turn("Book me a seat on BA117.", say=(ASK,)), turn("No, don't book it.", book())))
    result = policy_check(case)
    assert result.outcome == Outcome.MISMATCH and result.failure_stage == FailureStage.POLICY
    assert "every user reply after that declines" in result.reason
    assert result.evidence[0].actual["replies"] == [{"turn_id": "2", "text": "No, don't book it.", "reads": "declines"}]


def test_an_unclear_reply_is_inconclusive_with_the_reason_and_the_judge_is_told_the_rule():
    case = grade(booking_task({"text": "Ask before booking.", **RULE}), dialogue(turn("Book me a seat on BA117.", say=(ASK,)), turn("How much is it?", book())))
    result = policy_check(case)
    assert result.outcome == Outcome.INCONCLUSIVE and case.result().verdict == VerdictLabel.UNRESOLVED
    assert kinds(result) == [EvidenceKind.CONFIRMATION_UNCLEAR] and "no user reply after that clearly affirms" in result.reason
    material = case.request_for(0, Check.POLICY).material
    assert material["policy"] == f"Ask before booking.\n\n{CONFIRM_WRITES_RULE}"


def test_an_open_write_with_another_rule_violated_is_a_mismatch():
    policy = {**RULE, "forbidden_tools": ["search_athletes"]}
    steps = (call("search_athletes", country="Kenya"), book())
    case = grade(booking_task(policy), dialogue(turn("Book me a seat on BA117.", say=(ASK,)), turn("How much is it?", *steps)))
    result = policy_check(case)
    assert result.outcome == Outcome.MISMATCH and "forbidden" in result.reason  # the violation decides
    assert kinds(result) == [EvidenceKind.POLICY_VIOLATION, EvidenceKind.CONFIRMATION_UNCLEAR]


@pytest.mark.parametrize("status", ["error", "blocked"])
def test_a_failed_or_blocked_write_changed_nothing_and_needs_no_confirmation(status):
    failed = book(status=status, result="Error: no such seat")
    case = grade(booking_task(), dialogue(turn("Book me seat 12A on BA117.", failed)))
    assert policy_check(case).outcome == Outcome.MATCH and policy_check(case).evidence == []


def test_a_write_of_unknown_outcome_needs_confirmation():
    unknown = {"name": "book_seat", "arguments": {"flight": "BA117", "seat": "12A"}, "call_id": "c1"}  # no result recorded
    case = grade(booking_task(), dialogue(turn("Book me seat 12A on BA117.", unknown)))
    result = policy_check(case)
    assert result.outcome == Outcome.MISMATCH and result.evidence[0].actual["status"] == "unknown"


def test_a_read_never_needs_confirmation():
    case = grade(booking_task(reference_calls=[]), dialogue(turn("Who runs for Kenya?", call("search_athletes", country="Kenya"), say=("Kipchoge.",))))
    assert policy_check(case).outcome == Outcome.MATCH and policy_check(case).evidence == []


def test_two_writes_one_confirmed_one_not():
    second = {**call("cancel_booking", result="cancelled", booking="BK-99"), "call_id": "c2"}
    case = grade(booking_task(), dialogue(turn("Book me a seat on BA117.", say=(ASK,)), turn("Yes.", book(), second)))
    result = policy_check(case)
    assert result.outcome == Outcome.MISMATCH
    assert [(e.kind, e.step, e.actual["call_id"]) for e in result.evidence] == [
        (EvidenceKind.POLICY_VIOLATION, 1, "c2"),
        (EvidenceKind.WRITE_CONFIRMED, 0, "c1"),
    ]
    assert result.reason.startswith("write cancel_booking (step 1, call c2) made without confirmation")
    # a second booking the agent never mentioned by its values, only by the name of the action it had
    # proposed for another seat, is open, not a violation: "book the seat" may have meant it
    other_seat = grade(booking_task(), dialogue(turn("Book me a seat on BA117.", say=(ASK,)), turn("Yes.", book(), book("c3", flight="LH400", seat="3C"))))
    assert policy_check(other_seat).outcome == Outcome.INCONCLUSIVE


def test_a_decline_after_the_confirmation_reopens_it_and_a_confirmation_after_a_decline_closes_it():
    withdrawn = dialogue(turn("Book BA117.", say=(ASK,)), turn("Yes."), turn("Wait, not yet.", book()))
    result = policy_check(grade(booking_task(), withdrawn))
    assert result.outcome == Outcome.INCONCLUSIVE and "affirmed in turn 2 but declined in turn 3" in result.reason
    reconsidered = dialogue(turn("Book BA117.", say=(ASK,)), turn("No.", say=("Sure, tell me when.",)), turn("OK, go ahead.", book()))
    assert policy_check(grade(booking_task(), reconsidered)).outcome == Outcome.MATCH


def test_a_final_answer_not_among_the_messages_counts_as_said():
    talk = dialogue({"query": "Book BA117.", "steps": [], "final_answer": ASK}, turn("Yes.", book()))
    assert policy_check(grade(booking_task(), talk)).outcome == Outcome.MATCH


def test_the_confirmation_rests_on_the_last_description_before_it():
    talk = dialogue(turn("Book BA117.", say=("BA117 has seats left.",)), turn("Which ones?", say=(ASK,)), turn("Yes.", book()))
    (evidence,) = policy_check(grade(booking_task(), talk)).evidence
    assert evidence.actual["description"] == {"turn_id": "2", "text": ASK}


def test_naming_the_action_without_its_details_is_no_description_but_no_violation_either():
    named = dialogue(turn("I need a seat.", say=("Shall I book the seat for you?",)), turn("Yes.", book()))
    result = policy_check(grade(booking_task(), named))
    assert result.outcome == Outcome.INCONCLUSIVE and "named (not described" in result.reason and "whether that describes it is open" in result.reason


def test_a_message_naming_another_code_of_the_same_shape_describes_another_write():
    other_seat = dialogue(turn("Book BA117.", say=("Shall I book flight BA117, seat 22F?",)), turn("Yes.", book()))
    result = policy_check(grade(booking_task(), other_seat))  # the user confirmed 22F; the agent booked 12A
    assert result.outcome == Outcome.INCONCLUSIVE and "not described" in result.reason
    both = dialogue(turn("Book BA117.", say=("Seat 22F is taken; shall I book seat 12A on BA117 instead?",)), turn("Yes.", book()))
    assert policy_check(grade(booking_task(), both)).outcome == Outcome.MATCH  # every code of the write is named
    prose = dialogue(turn("Book BA117.", say=("Shall I book a window seat on BA117, leaving at 10:30?",)), turn("Yes.", book()))
    assert policy_check(grade(booking_task(), prose)).outcome == Outcome.MATCH  # no other code of a seat's shape


def test_a_write_without_argument_values_is_described_by_its_name():
    reset = {**call("reset_all", result="done"), "call_id": "r1"}
    t = booking_task(reference_calls=[{"name": "reset_all"}])
    assert policy_check(grade(t, dialogue(turn("Start over.", say=("Shall I reset all your settings?",)), turn("Yes.", reset)))).outcome == Outcome.MATCH
    assert policy_check(grade(t, dialogue(turn("Start over.", say=("One moment.",)), turn("Yes.", reset)))).outcome == Outcome.MISMATCH


def test_evidence_clips_long_messages():
    long_ask = ASK + " " + "The fare includes one bag and a meal. " * 10
    (evidence,) = policy_check(grade(booking_task(), dialogue(turn("Book BA117.", say=(long_ask,)), turn("Yes.", book())))).evidence
    text = evidence.actual["description"]["text"]
    assert len(text) == 160 and text.endswith("...") and text.startswith(ASK)


# ---- where the order comes from: per-message turns and merged episodes ---------------------------
TWO_TURNS = Task.model_validate(
    {
        "task_id": "t1",
        "tools": [SEARCH, BOOK],
        "policy": RULE,
        "turns": [
            {"turn_id": "1", "query": "Who runs for Kenya?", "reference_calls": [{"name": "search_athletes", "arguments": {"country": "Kenya"}}]},
            {"turn_id": "2", "query": "Book it.", "reference_calls": [BOOKING]},
        ],
    }
)


def _two_turn_dialogue(second_say: tuple[str, ...] = (), first_say: tuple[str, ...] = (ASK,)) -> Trajectory:
    return dialogue(
        turn("Who runs for Kenya?", call("search_athletes", country="Kenya"), say=first_say),
        turn("Yes, go ahead.", call("search_athletes", country="Kenya"), book(), say=second_say),
    )


def test_per_message_grading_places_the_write_in_its_own_turn():
    case = grade(TWO_TURNS, _two_turn_dialogue(), GradingConfig(turns="per-message"))
    assert len(case.turns) == 2 and policy_check(case, 0).evidence == []
    (evidence,) = policy_check(case, 1).evidence
    assert (evidence.kind, evidence.step, evidence.actual["turn_id"]) == (EvidenceKind.WRITE_CONFIRMED, 1, "2")  # step 1 of turn 2


def test_a_merged_episode_maps_its_concatenated_steps_back_to_the_dialogue():
    case = grade(TWO_TURNS, _two_turn_dialogue(), GradingConfig(turns="episode"))
    assert len(case.turns) == 1 and [v.step.name for v in case.turns[0].ctx.steps] == ["search_athletes", "search_athletes", "book_seat"]
    (evidence,) = policy_check(case).evidence
    assert (evidence.kind, evidence.step, evidence.actual["turn_id"]) == (EvidenceKind.WRITE_CONFIRMED, 2, "2")  # step 2 of the episode
    assert evidence.actual["description"]["turn_id"] == "1" and evidence.actual["confirmation"]["turn_id"] == "2"
    # the merged turn holds every message: the rule still never reads one of the write's own turn as before it
    late = grade(TWO_TURNS, _two_turn_dialogue(second_say=(ASK,), first_say=("Eliud Kipchoge.",)), GradingConfig(turns="episode"))
    assert policy_check(late).outcome == Outcome.MISMATCH


# ---- wiring: the task's policy, the grading option ----------------------------------------------
def test_confirm_writes_is_a_machine_rule_of_the_policy():
    assert Policy(confirm_writes=True).has_rules and not Policy(text="Ask first.").has_rules
    assert Policy.model_validate({"confirm_writes": True}).model_extra == {}  # a declared field, not an unknown one


def test_the_grading_option_applies_the_rule_to_a_task_without_policy():
    t = booking_task(policy=None)
    confirmed = dialogue(turn("Book me a seat on BA117.", say=(ASK,)), turn("Yes.", book()))
    assert policy_check(grade(t, confirmed)).outcome == Outcome.SKIPPED
    case = grade(t, confirmed, GradingConfig(confirm_writes=True))
    assert policy_check(case).outcome == Outcome.MATCH and kinds(policy_check(case)) == [EvidenceKind.WRITE_CONFIRMED]
    assert case.result().scores.policy_compliance == 1.0
    unconfirmed = grade(t, dialogue(turn("Book me seat 12A on BA117.", book())), GradingConfig(confirm_writes=True)).result()
    assert (unconfirmed.verdict, unconfirmed.failure_stage, unconfirmed.scores.policy_compliance) == (VerdictLabel.FAIL, FailureStage.POLICY, 0.0)


def test_the_grading_option_adds_a_rule_but_formalises_no_text():
    """A task's own rules formalise its text; the rule the config adds to every task does not: a
    per-task text policy still needs the policy rubric when the rule passes (a violation decides)."""
    confirmed = dialogue(turn("Book me a seat on BA117.", say=(ASK,)), turn("Yes.", book()))
    unconfirmed = dialogue(turn("Book me seat 12A on BA117.", book()))
    text = booking_task({"text": "Be polite and confirm before booking."})
    result = policy_check(grade(text, confirmed, GradingConfig(confirm_writes=True)))
    assert result.outcome == Outcome.INCONCLUSIVE and result.reason == "plain-text policy without machine-checkable rules"
    assert kinds(result) == [EvidenceKind.WRITE_CONFIRMED]
    assert policy_check(grade(text, unconfirmed, GradingConfig(confirm_writes=True))).outcome == Outcome.MISMATCH
    own = booking_task({"text": "Be polite and confirm before booking.", **RULE})  # the task's own rule: its text is formalised
    assert policy_check(grade(own, confirmed)).outcome == Outcome.MATCH


def test_the_grading_option_over_a_domain_policy_document():
    """A benchmark's domain-wide document (tau2's) is judge context: the rule decides, the document
    stays not audited (the summary counts it)."""
    domain = booking_task({"text": "Airline policy: ... obtain explicit user confirmation (yes) ...", "scope": "domain"})
    confirmed = dialogue(turn("Book me a seat on BA117.", say=(ASK,)), turn("Yes.", book()))
    assert policy_check(grade(domain, confirmed)).outcome == Outcome.SKIPPED
    case = grade(domain, confirmed, GradingConfig(confirm_writes=True))
    assert policy_check(case).outcome == Outcome.MATCH and kinds(policy_check(case)) == [EvidenceKind.WRITE_CONFIRMED, EvidenceKind.POLICY_NOT_AUDITED]
    assert case.result().verdict == VerdictLabel.PASS


def test_a_vacuous_rule_is_nothing_to_check():
    reads_only = Task.model_validate(
        {"task_id": "t1", "question": "Any seats on BA117?", "tools": [SEARCH, BOOK], "policy": {"text": "...", "scope": "domain"}}
    )
    talk = dialogue(turn("Any seats on BA117?", call("search_athletes", country="Kenya"), say=("Yes, 12A.",)))
    case = grade(reads_only, talk, GradingConfig(confirm_writes=True))
    assert policy_check(case).outcome == Outcome.MATCH and policy_check(case).evidence[0].kind == EvidenceKind.POLICY_NOT_AUDITED
    assert case.result().verdict == VerdictLabel.UNRESOLVED and "nothing to check" in case.result().turns[0].reason


def test_the_grading_option_is_read_from_the_config_file(tmp_path):
    path = tmp_path / "judge.toml"
    path.write_text("[grading]\nconfirm_writes = true\n")
    assert GradingConfig.load(path).confirm_writes and not GradingConfig().confirm_writes


def test_the_run_time_gate_does_not_enforce_it():
    """The gate sees a proposed call, not the dialogue around it: it cannot tell a confirmed write."""
    from pipelines.runner._gate import PolicyGate

    t = booking_task()
    assert PolicyGate(t).check(t.turns[0], [], 0, Step(name="book_seat", arguments={"flight": "BA117", "seat": "12A"})) is None


# ---- reading the user's reply --------------------------------------------------------------------
@pytest.mark.parametrize(
    "text",
    ["Yes", "yes please", "Sure.", "OK, go ahead", "Please proceed.", "That's correct.", "I confirm.", "No problem, go ahead.", "Do it.", "Yeah sure"],
)
def test_clear_affirmations(text):
    assert read_reply(text) == Reply.AFFIRMS


@pytest.mark.parametrize(
    "text",
    [
        "Can you confirm that for me?",  # a question: asks the agent to confirm
        "I want to make sure that I will get a refund.",  # "sure" inside a sentence
        "Yes, but don't cancel the return flight.",  # an affirmation followed by a negation
        "Yes. I don't need anything else.",  # negation anywhere: unsure, so unclear
        "No, just cancel it.",  # a change of plan, not a refusal
        "No, go ahead",
        "Correct me if I'm wrong",
        "I can't wait for the refund",
        "How much is it?",
        "",
        None,
    ],
)
def test_unclear_replies(text):
    assert read_reply(text) == Reply.UNCLEAR


@pytest.mark.parametrize(
    "text",
    ["No.", "No, thanks.", "Nope", "Not yet", "Wait, is it refundable?", "Hold on.", "Please don't proceed.", "No, that's not correct.", "I changed my mind."],
)
def test_clear_declines(text):
    assert read_reply(text) == Reply.DECLINES


# ---- the real tau2 runs ----------------------------------------------------------------------------
def _tau2(name: str):
    from pipelines.ingest import read_trajectories

    path = SHARED_TAU2 / name
    if not path.exists():
        pytest.skip(f"shared sample {path} not present")
    bundle = read_trajectories(path)
    return bundle.tasks.tasks, {i.trajectory.task_id: i.trajectory for i in bundle.items if i.trajectory is not None}


def test_tau2_retail_exchange_was_described_and_confirmed():
    """The transcript: the agent's message 14 lists the exchange (keyboard item 1151293680 -> 7706410293,
    thermostat 4983901480 -> 7747408585, same credit card) and asks "Do you confirm? (yes/no)"; the user
    answers (message 15) "Yes, I confirm that all the details are correct, ... Please go ahead with the
    exchange request."; then (message 16) exchange_delivered_order_items. tau2's reward is 1.0."""
    tasks, trajectories = _tau2("retail_gpt-4.1-mini_results.json")
    task, trajectory = tasks["0"], trajectories["0"]
    # the order the rule reads: one turn per user message with text (after the agent's greeting, an implicit first turn)
    raw = json.loads((SHARED_TAU2 / "retail_gpt-4.1-mini_results.json").read_text())["simulations"][0]["messages"]
    user_texts = [m["content"] for m in raw if m["role"] == "user" and (m.get("content") or "").strip()]
    assert trajectory.turns[0].query is None and [t.query for t in trajectory.turns[1:]] == user_texts
    before = grade(task, trajectory)
    assert policy_check(before).outcome == Outcome.SKIPPED  # tau2's policy is a domain document: context, not audited
    case = grade(task, trajectory, GradingConfig(confirm_writes=True))
    evidence, not_audited = policy_check(case).evidence
    assert policy_check(case).outcome == Outcome.MATCH and not_audited.kind == EvidenceKind.POLICY_NOT_AUDITED
    assert (evidence.kind, evidence.tool) == (EvidenceKind.WRITE_CONFIRMED, "exchange_delivered_order_items")
    assert evidence.actual["description"]["text"].startswith("For the mechanical keyboard, the full-size clicky switch version")
    assert evidence.actual["confirmation"]["text"].startswith("Yes, I confirm that all the details are correct")
    assert evidence.actual["call_id"] == trajectory.steps[evidence.step].call_id
    assert before.result().verdict == case.result().verdict == VerdictLabel.PASS  # agrees with tau2


def test_tau2_airline_cancellation_was_confirmed_but_should_not_have_been_made():
    """Task 1: the agent found reservation Q69X3R (message 14), said it was eligible for a refund and
    asked 'Would you like me to proceed with canceling this reservation for you? Please confirm with a
    "yes"' (16); the user: "Yes, please go ahead and cancel the reservation." (17); the agent restated
    it and asked again (18); "Yes, please proceed with the cancellation and refund." (19); then
    cancel_reservation (20). So the agent did get confirmation: the rule passes. tau2 fails the run
    (reward 0.0, the DB differs: the cancellation was not allowed), which our calls check finds as a
    surplus write, with the option or without."""
    tasks, trajectories = _tau2("airline_gpt-4.1-mini_results.json")
    before = grade(tasks["1"], trajectories["1"]).result()
    assert (before.verdict, before.failure_stage) == (VerdictLabel.FAIL, FailureStage.TOOL_SELECTION)
    case = grade(tasks["1"], trajectories["1"], GradingConfig(confirm_writes=True))
    evidence, _ = policy_check(case).evidence
    assert (evidence.kind, evidence.tool, evidence.actual["status"]) == (EvidenceKind.WRITE_CONFIRMED, "cancel_reservation", "ok")
    assert evidence.actual["confirmation"]["text"].startswith("Yes, please proceed with the cancellation")
    assert "Q69X3R" in evidence.actual["description"]["text"]
    # the earlier reply ("... Can you confirm that for me?") asked the agent a question: read as unclear
    assert evidence.actual["replies"][0]["reads"] == "unclear" and "I want to make sure that I will get a refund" in evidence.actual["replies"][0]["text"]
    assert policy_check(case).outcome == Outcome.MATCH
    after = case.result()
    assert (after.verdict, after.failure_stage, after.unresolved_stages) == (VerdictLabel.FAIL, FailureStage.TOOL_SELECTION, [])


def test_tau2_airline_transfer_is_no_write():
    """Task 0: the agent refused the cancellation and called transfer_to_human_agents (tau2 types it
    generic: a read). No write, so the rule has nothing to confirm; the pass rests on the task's
    "no write" reference, as without the option (tau2: reward 1.0)."""
    tasks, trajectories = _tau2("airline_gpt-4.1-mini_results.json")
    case = grade(tasks["0"], trajectories["0"], GradingConfig(confirm_writes=True))
    assert policy_check(case).outcome == Outcome.MATCH and kinds(policy_check(case)) == [EvidenceKind.POLICY_NOT_AUDITED]
    assert case.result().verdict == grade(tasks["0"], trajectories["0"]).result().verdict == VerdictLabel.PASS


def test_judge_grade_confirm_writes_reaches_the_grading_and_the_manifest(tmp_path):
    from pipelines.cli import app

    path = SHARED_TAU2 / "retail_gpt-4.1-mini_results.json"
    if not path.exists():
        pytest.skip(f"shared sample {path} not present")
    res = CliRunner().invoke(app, ["grade", "--trajectories", str(path), "--out", str(tmp_path / "run"), "--workers", "1", "--confirm-writes"])
    assert res.exit_code == 0, res.output
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["config"]["confirm_writes"] is True
    (row,) = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    policy = next(c for c in row["turns"][0]["checks"] if c["check"] == "policy")
    assert row["verdict"] == "pass" and [e["kind"] for e in policy["evidence"]] == ["write_confirmed", "policy_not_audited"]
    assert policy["outcome"] == "match" and "exchange_delivered_order_items" in policy["evidence"][0]["message"]
