"""tau2-bench results -> tasks and trajectories: the real runs in ../shared (see their SOURCE.md), and
small results files written here for what those runs do not show (each case says which tau2 rule it
exercises, from tau2's own evaluator and data model)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pipelines.ingest import check_task, detect_trajectory_format, read_trajectories
from pipelines.ingest._base import Limits
from pipelines.ingest._tau2 import BUNDLE

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "external" / "formats" / "tau2"


def shared(name: str) -> Path:
    path = SHARED / name
    if not path.exists():
        pytest.skip(f"shared sample {path} not present")
    return path


def read(path: Path, limits: Limits = Limits()):
    bundle = read_trajectories(path)
    items = list(bundle.items)
    return bundle.tasks, items


def ok(items):
    return {i.trajectory.trajectory_id: i.trajectory for i in items if i.trajectory is not None}


# ---- the real runs ------------------------------------------------------------------------------


def test_airline_sample_tasks_follow_the_reward_basis():
    tasks, _ = read(shared("airline_gpt-4.1-mini_results.json"))
    assert detect_trajectory_format(shared("airline_gpt-4.1-mini_results.json")) == "tau2"
    assert sorted(tasks.tasks) == ["0", "1"] and not tasks.errors
    one = tasks.tasks["1"]
    assert one.grading == "outcome"  # reward_basis [DB, COMMUNICATE]: reads are advisory, writes decide
    assert [(c.id, c.name, c.arguments, c.extra_arguments) for c in one.turns[0].reference_calls] == [
        ("1_0", "get_user_details", {"user_id": "raj_sanchez_7340"}, None),
        ("1_1", "get_reservation_details", {"reservation_id": "Q69X3R"}, None),
    ]
    # nl_assertions do not gate this task's reward in tau2 (NL_ASSERTION not in the basis): kept, not graded
    assert one.turns[0].criteria is None and one.metadata.tags["tau2"]["nl_assertions"] == ["Agent should not approve the cancellation."]
    assert one.turns[0].required_content is None  # communicate_info is empty
    assert one.policy is not None and one.policy.text.startswith("# Airline Agent Policy") and one.policy.scope == "domain"
    assert one.turns[0].states_calls  # the actions are the reference calls: with none a write, "no write" is checked
    assert one.metadata.domain == "airline"
    assert "Raj Sanchez" in one.turns[0].query and "Philadelphia to LaGuardia" in one.turns[0].query
    # tool types: the file types its reads; tau2's published airline tools type the rest
    assert one.is_write("cancel_reservation") and one.is_write("book_reservation")
    assert not one.is_write("get_user_details") and not one.is_write("transfer_to_human_agents")


def test_airline_sample_trajectories_and_labels():
    tasks, items = read(shared("airline_gpt-4.1-mini_results.json"))
    assert [i.error for i in items] == [None, None]
    by_id = ok(items)
    failed = by_id["f2dfe6ed-8489-494a-8973-8bc83949e199"]
    assert failed.task_id == "1" and failed.agent == "openai/gpt-4.1-mini"
    assert check_task(items[1], tasks) is None
    names = [(s.name, s.status, s.round) for s in failed.steps]
    # five parallel get_reservation_details calls in one assistant message share one round
    assert names[:2] == [("get_user_details", "ok", 0), ("get_reservation_details", "ok", 1)]
    assert [r for n, _, r in names if n == "get_reservation_details"] == [1] * 5
    assert names[-1] == ("cancel_reservation", "ok", 2)
    (label,) = failed.external_labels
    assert (label.source, label.value, label.passed) == ("tau2.reward", 0.0, False)
    assert "database end state differs" in label.reason and "DB 0.0" in label.reason
    assert failed.metadata["termination_reason"] == "user_stop" and failed.metadata["trial"] == 0
    assert failed.token_usage.input_tokens > 0 and failed.token_usage.cost_usd == pytest.approx(0.0070508)
    passed = by_id["804db61e-ffb0-4fa3-95e1-0cc6ba405348"]
    assert passed.external_labels[0].passed is True
    # the agent greets before the first user message: an implicit first turn; every user message starts one
    assert passed.turns[0].query is None and passed.turns[0].agent_messages == ["Hi! How can I help you today?"]
    assert all(t.query for t in passed.turns[1:])


def test_telecom_user_tool_calls_are_not_the_agents():
    tasks, items = read(shared("telecom_gpt-4.1-mini_results.json"))
    (task,) = tasks.tasks.values()
    assert task.turns[0].reference_calls == []  # both gold actions are the user's (requestor "user")
    assert [a["name"] for a in task.metadata.tags["tau2"]["user_actions"]] == ["toggle_airplane_mode", "toggle_roaming"]
    assert task.grading == "trajectory" and task.final_state == "unchecked"  # reward_basis [ENV_ASSERTION]
    assert [a["func_name"] for a in task.turns[0].environment_assertions] == ["assert_mobile_data_status", "assert_internet_speed"]
    assert [w.kind for w in tasks.warnings] == ["uncheckable_criterion"]  # env assertions need tau2's environment
    (traj,) = ok(items).values()
    agent_tools = {s.name for s in traj.steps}
    user_calls = traj.metadata["user_tool_calls"]
    assert {c["name"] for c in user_calls} >= {"toggle_airplane_mode", "toggle_roaming"}
    assert not agent_tools & {c["name"] for c in user_calls}
    assert all("result" in c for c in user_calls)  # user-side results pair with the user's calls


def test_retail_sample_write_reference():
    tasks, items = read(shared("retail_gpt-4.1-mini_results.json"))
    (task,) = tasks.tasks.values()
    calls = task.turns[0].reference_calls
    assert [c.name for c in calls][-1] == "exchange_delivered_order_items" and task.is_write("exchange_delivered_order_items")
    assert task.grading == "outcome" and all(c.required for c in calls)
    (traj,) = ok(items).values()
    assert traj.external_labels[0].value == 1.0


# ---- results files written here -------------------------------------------------------------------


def _task(task_id: str, **criteria: Any) -> dict[str, Any]:
    return {
        "id": task_id,
        "description": {"purpose": "test"},
        "user_scenario": {"persona": None, "instructions": {"domain": "shop", "reason_for_call": "I want a refund.", "task_instructions": "Insist."}},
        "evaluation_criteria": {"actions": [], "reward_basis": ["DB", "COMMUNICATE"], **criteria},
    }


def _call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": arguments, "requestor": "assistant"}


def _sim(sim_id: str, task_id: str, messages: list[dict[str, Any]], reward: float = 1.0, **extra: Any) -> dict[str, Any]:
    return {
        "id": sim_id,
        "task_id": task_id,
        "termination_reason": "user_stop",
        "agent_cost": 0.01,
        "reward_info": {"reward": reward, "db_check": {"db_match": reward == 1.0, "db_reward": reward}, "reward_breakdown": {"DB": reward}},
        "messages": messages,
        "trial": 0,
        **extra,
    }


def _dialogue() -> list[dict[str, Any]]:
    return [
        {"role": "assistant", "content": "Hi! How can I help you today?", "tool_calls": None},
        {"role": "user", "content": "Refund order 7 please.", "tool_calls": None},
        {"role": "assistant", "content": None, "tool_calls": [_call("c1", "get_order", order_id="7")], "usage": {"prompt_tokens": 10, "completion_tokens": 2}},
        {"role": "tool", "id": "c1", "content": '{"order_id": "7", "status": "delivered"}', "requestor": "assistant", "error": False},
        {"role": "assistant", "content": None, "tool_calls": [_call("c2", "refund", order_id="7", reason="late")]},
        {"role": "tool", "id": "c2", "content": "Error: order 7 is not refundable", "requestor": "assistant", "error": True},
        {"role": "assistant", "content": "Sorry, order 7 cannot be refunded.", "tool_calls": None, "usage": {"prompt_tokens": 20, "completion_tokens": 8}},
        {"role": "user", "content": "###STOP###", "tool_calls": None},
    ]


def write_results(tmp_path: Path, tasks: list[dict[str, Any]], simulations: list[dict[str, Any]], name: str = "results.json", **top: Any) -> Path:
    doc = {
        "timestamp": "2026-01-01T00:00:00",
        "info": {
            "git_commit": "x",
            "num_trials": 1,
            "max_steps": 30,
            "max_errors": 10,
            "user_info": {"implementation": "user_simulator", "llm": "sim"},
            "agent_info": {"implementation": "llm_agent", "llm": "agent-model"},
            "environment_info": {"domain_name": "shop", "policy": "Refund only undelivered orders."},
        },
        "tasks": tasks,
        "simulations": simulations,
        **top,
    }
    path = tmp_path / name
    path.write_text(json.dumps(doc, indent=2))
    return path


def test_compare_args_restrict_the_arguments_that_matter(tmp_path):
    actions = [
        {"action_id": "a", "name": "refund", "arguments": {"order_id": "7", "reason": "late"}, "compare_args": ["order_id"]},
        {"action_id": "b", "name": "log", "arguments": {"text": "x"}, "compare_args": []},
        {"action_id": "c", "name": "note", "arguments": {"text": "x"}, "compare_args": ["text", "author"]},
        {"action_id": "d", "name": "get_order", "arguments": {"order_id": "7"}, "compare_args": None},
    ]
    path = write_results(tmp_path, [_task("t", actions=actions)], [])
    tasks, _ = read(path)
    refund, log, note, get = tasks.tasks["t"].turns[0].reference_calls
    assert (refund.arguments, refund.extra_arguments) == ({"order_id": "7"}, "allow")
    assert (log.arguments, log.extra_arguments) == ({}, "allow")  # tau2: an empty compare_args matches any call of that name
    assert note.arguments == {"text": "x"}
    assert (get.arguments, get.extra_arguments) == ({"order_id": "7"}, None)  # null: every argument, none extra
    (warning,) = [w for w in tasks.warnings if w.kind == "uncheckable_criterion"]
    assert warning.field == "tasks[0].evaluation_criteria.actions[2].compare_args" and "author" in warning.message
    lines = path.read_text().splitlines()
    assert lines[warning.line - 2].strip() == '"tasks": [' and lines[warning.line - 1].strip() == "{"  # where tasks[0] starts


@pytest.mark.parametrize(
    ("basis", "grading", "required", "final_state"),
    [
        (["DB", "COMMUNICATE"], "outcome", True, "checked"),
        (["DB", "ACTION"], "trajectory", True, "checked"),  # ACTION makes every action a hard requirement
        (["ACTION"], "trajectory", True, "unchecked"),  # no DB: tau2 scores no end state, surplus writes are no failure
        (["COMMUNICATE"], "trajectory", False, "unchecked"),  # actions gate nothing: advisory
        (["NL_ASSERTION"], "trajectory", False, "unchecked"),
        (["ENV_ASSERTION"], "trajectory", False, "unchecked"),
    ],
)
def test_reward_basis_decides_grading_and_requirement(tmp_path, basis, grading, required, final_state):
    actions = [{"action_id": "a", "name": "refund", "arguments": {"order_id": "7"}}]
    assertion = {"env_type": "assistant", "func_name": "assert_refunded", "arguments": {"order_id": "7"}, "assert_value": True}
    criteria = {
        "actions": actions,
        "reward_basis": basis,
        "communicate_info": ["7"],
        "nl_assertions": ["Agent apologises."],
        "env_assertions": [assertion],
    }
    tasks, _ = read(write_results(tmp_path, [_task("t", **criteria)], []))
    task = tasks.tasks["t"]
    assert (task.grading, task.final_state) == (grading, final_state)
    assert [c.required for c in task.turns[0].reference_calls] == [required]
    turn, tags = task.turns[0], task.metadata.tags["tau2"]
    assert (turn.environment_assertions == [assertion]) == ("ENV_ASSERTION" in basis) and tags["env_assertions"] == [assertion]
    assert (turn.required_content == ["7"]) == ("COMMUNICATE" in basis) and (("communicate_info" in tags) != ("COMMUNICATE" in basis))
    assert (turn.criteria == ["Agent apologises."]) == ("NL_ASSERTION" in basis) and (("nl_assertions" in tags) != ("NL_ASSERTION" in basis))


def test_null_actions_state_no_calls_and_an_empty_list_expects_no_write(tmp_path):
    """tau2's environment reward is 1.0 when a task has neither actions nor env assertions (its
    evaluator: "No expected actions or env assertions"): null actions state nothing; [] (the gold
    state is the initial one) expects no write."""
    tasks, _ = read(write_results(tmp_path, [_task("null", actions=None), _task("empty", actions=[]), _task("no-criteria")], []))
    null, empty = tasks.tasks["null"], tasks.tasks["empty"]
    assert not null.turns[0].states_calls and null.final_state == "unchecked"
    assert empty.turns[0].states_calls and empty.final_state == "checked"
    with_env = _task("env", actions=None, env_assertions=[{"env_type": "assistant", "func_name": "assert_x", "arguments": {}}])
    tasks, _ = read(write_results(tmp_path, [with_env], [], name="env.json"))
    assert tasks.tasks["env"].turns[0].states_calls and tasks.tasks["env"].final_state == "checked"  # the gold DB is the initial one


def test_the_tasks_seeded_message_history_is_not_the_agents(tmp_path):
    """A task's ``initial_state.message_history`` opens every simulation of it (tau2 replays it into the
    gold environment too): those calls and words are part of the initial state, not the agent's."""
    seeded = [
        {"role": "user", "content": "Create a task.", "tool_calls": None},
        {"role": "assistant", "content": None, "tool_calls": [_call("call_1", "refund", order_id="1")]},
        {"id": "call_1", "role": "tool", "content": '{"ok": true}', "requestor": "assistant", "error": False},
        {"role": "assistant", "content": "Refunded order 1.", "tool_calls": None},
    ]
    task = _task("t", actions=[{"action_id": "a", "name": "get_order", "arguments": {"order_id": "7"}}])
    task["initial_state"] = {"initialization_data": None, "initialization_actions": None, "message_history": seeded}
    own = [
        {"role": "user", "content": "Now look at order 7.", "tool_calls": None},
        {"role": "assistant", "content": None, "tool_calls": [_call("c2", "get_order", order_id="7")]},
        {"role": "tool", "id": "c2", "content": '{"order_id": "7"}', "requestor": "assistant", "error": False},
        {"role": "assistant", "content": "Order 7 is delivered.", "tool_calls": None},
    ]
    edited = [{**seeded[0], "content": "Create two tasks."}, *seeded[1:]]  # not the history: the agent's own
    path = write_results(tmp_path, [task], [_sim("s1", "t", [*seeded, *own]), _sim("s2", "t", [*edited, *own])])
    _, items = read(path)
    trajectories = ok(items)
    first, second = trajectories["s1"], trajectories["s2"]
    assert [s.name for s in first.steps] == ["get_order"] and first.metadata["seeded_messages"] == 4
    assert "Refunded order 1." not in [m for t in first.turns for m in t.agent_messages]
    assert [s.name for s in second.steps] == ["refund", "get_order"] and "seeded_messages" not in second.metadata


def test_default_reward_basis_is_taus(tmp_path):
    task = _task("t", actions=[{"action_id": "a", "name": "refund", "arguments": {}}], communicate_info=["7"])
    del task["evaluation_criteria"]["reward_basis"]
    tasks, _ = read(write_results(tmp_path, [task], []))
    assert tasks.tasks["t"].grading == "outcome" and tasks.tasks["t"].turns[0].required_content == ["7"]


def test_unknown_tool_type_is_a_read_with_a_warning(tmp_path):
    actions = [{"action_id": "a", "name": "refund", "arguments": {"order_id": "7"}}]
    tasks, _ = read(write_results(tmp_path, [_task("t", actions=actions)], []))
    assert not tasks.tasks["t"].is_write("refund")
    (warning,) = [w for w in tasks.warnings if w.kind == "tool_type_unknown"]
    assert "refund" in warning.message and "--tool-specs" in warning.message


def test_tool_specs_give_the_types_the_file_does_not(tmp_path):
    from pipelines.ingest import load_tool_specs, with_tool_specs

    actions = [{"action_id": "a", "name": "refund", "arguments": {"order_id": "7"}}]
    tasks, _ = read(write_results(tmp_path, [_task("t", actions=actions)], []))
    specs = tmp_path / "specs.jsonl"
    specs.write_text(json.dumps({"name": "refund", "side_effect": "write", "description": "Refund an order."}) + "\n")
    task = with_tool_specs(tasks, load_tool_specs(specs)).tasks["t"]
    assert task.is_write("refund") and task.tool("refund").description == "Refund an order."


def test_tool_types_from_the_files_action_checks(tmp_path):
    actions = [{"action_id": "a", "name": "refund", "arguments": {"order_id": "7"}}]
    sim = _sim("s1", "t", _dialogue())
    sim["reward_info"]["action_checks"] = [
        {"action": {**actions[0], "requestor": "assistant"}, "action_match": False, "action_reward": 0.0, "tool_type": "write"}
    ]
    tasks, items = read(write_results(tmp_path, [_task("t", actions=actions)], [sim]))
    assert tasks.tasks["t"].is_write("refund") and not [w for w in tasks.warnings if w.kind == "tool_type_unknown"]
    assert "action refund(" in items[0].trajectory.external_labels[0].reason


def test_dialogue_steps_results_and_answer(tmp_path):
    _, items = read(write_results(tmp_path, [_task("t")], [_sim("s1", "t", _dialogue())]))
    (item,) = items
    traj = item.trajectory
    assert (traj.task_id, traj.trajectory_id, traj.agent) == ("t", "s1", "agent-model")
    get, refund = traj.steps
    assert (get.status, get.result, get.round) == ("ok", {"order_id": "7", "status": "delivered"}, 0)
    assert (refund.status, refund.error, refund.round) == ("error", "Error: order 7 is not refundable", 1)
    turn = traj.turns[1]
    assert turn.query == "Refund order 7 please." and turn.final_answer == "Sorry, order 7 cannot be refunded."
    assert traj.turns[2].query == "###STOP###"
    assert (traj.token_usage.input_tokens, traj.token_usage.output_tokens, traj.token_usage.cost_usd) == (30, 10, 0.01)


def test_calls_without_results_are_unknown_and_multi_tool_messages_pair(tmp_path):
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "Checking both.", "tool_calls": [_call("c1", "a"), _call("c2", "b"), _call("c3", "c")]},
        {
            "role": "tool",
            "tool_messages": [
                {"role": "tool", "id": "c2", "content": "2", "requestor": "assistant", "error": False},
                {"role": "tool", "id": "c1", "content": "1", "requestor": "assistant", "error": False},
            ],
        },
    ]
    _, items = read(write_results(tmp_path, [_task("t")], [_sim("s1", "t", messages)]))
    steps = items[0].trajectory.steps
    assert [(s.name, s.status, s.result) for s in steps] == [("a", "ok", "1"), ("b", "ok", "2"), ("c", "unknown", None)]
    assert items[0].trajectory.turns[0].final_answer is None  # text sent with calls is said, not the answer
    assert items[0].trajectory.turns[0].agent_messages == ["Checking both."]


def test_trials_keep_unique_ids_and_a_repeated_simulation_id_is_an_error(tmp_path):
    sims = [_sim("s1", "t", _dialogue()), _sim("s2", "t", _dialogue(), reward=0.0, trial=1), _sim("s1", "t", _dialogue())]
    path = write_results(tmp_path, [_task("t")], sims)
    _, items = read(path)
    assert [i.trajectory_id for i in items] == ["s1", "s2", "s1"]
    assert [i.error is None for i in items] == [True, True, False]
    assert items[2].error.kind == "duplicate_id" and f"{path}:" in items[2].error.message
    assert items[1].trajectory.metadata["trial"] == 1 and items[1].trajectory.external_labels[0].passed is False


def test_early_termination_is_recorded(tmp_path):
    sim = _sim("s1", "t", _dialogue(), reward=0.0, termination_reason="max_steps")
    sim["reward_info"] = {"reward": 0.0, "reward_basis": None, "info": {"note": "Simulation terminated prematurely. Termination reason: max_steps"}}
    _, items = read(write_results(tmp_path, [_task("t")], [sim]))
    traj = items[0].trajectory
    assert traj.metadata["termination_reason"] == "max_steps"
    assert "terminated early (max_steps)" in traj.external_labels[0].reason


# tau2's TerminationReason (src/tau2/data_model/simulation.py): every value but agent_stop / user_stop
# gets reward 0 from tau2's evaluator; a budget that ran out is a limit, a crash an error
@pytest.mark.parametrize(
    ("termination", "kind"),
    [
        ("agent_stop", None),
        ("user_stop", None),
        ("max_steps", "limit"),
        ("timeout", "limit"),
        ("too_many_errors", "limit"),
        ("context_window_exceeded", "limit"),
        ("agent_error", "error"),
        ("user_error", "error"),
        ("infrastructure_error", "error"),
        ("unexpected_error", "error"),
        ("a_reason_tau2_adds_later", "error"),
    ],
)
def test_a_termination_other_than_a_stop_ended_the_run_early(tmp_path, termination, kind):
    sim = _sim("s1", "t", _dialogue(), reward=0.0 if kind else 1.0, termination_reason=termination)
    _, items = read(write_results(tmp_path, [_task("t")], [sim]))
    traj = items[0].trajectory
    assert traj.metadata["termination_reason"] == termination  # kept where it was
    if kind is None:
        assert traj.ended_early is None
    else:
        assert traj.ended_early.kind == kind and traj.ended_early.turn_id is None
        assert traj.ended_early.reason.startswith(f"tau2 termination_reason {termination}: ") and "tau2 gives reward 0" in traj.ended_early.reason


def test_the_derived_max_steps_run_ended_early(fixtures):
    """fixtures/formats/tau2_airline_max_steps.json: the real airline task-0 simulation with tau2's
    max_steps ending (TAU2_ORIGIN.md)."""
    _, items = read(fixtures / "tau2_airline_max_steps.json")
    (item,) = items
    traj = item.trajectory
    assert traj.trajectory_id == "804db61e-ffb0-4fa3-95e1-0cc6ba405348" and traj.metadata["termination_reason"] == "max_steps"
    assert traj.ended_early.kind == "limit" and "step limit" in traj.ended_early.reason
    (label,) = traj.external_labels
    assert (label.value, label.passed) == (0.0, False) and "terminated early (max_steps)" in label.reason
    assert [s.name for s in traj.steps] == ["get_reservation_details", "transfer_to_human_agents"]  # the messages are the real run's


def test_a_run_that_ended_early_fails_as_tau2_says(tmp_path, fixtures):
    from typer.testing import CliRunner

    from pipelines.cli import app

    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["grade", "--trajectories", str(fixtures / "tau2_airline_max_steps.json"), "--out", str(out), "--offline"])
    assert result.exit_code == 0, result.output
    (row,) = map(json.loads, (out / "results.jsonl").read_text().splitlines())
    assert (row["verdict"], row["failure_stage"]) == ("fail", "answer_correctness")
    answer = next(c for c in row["turns"][0]["checks"] if c["check"] == "answer")
    assert "label" not in answer  # task 0 asks for no answer (its communicate_info is empty): no CRAG label
    assert [e["kind"] for e in answer["evidence"]] == ["ended_early"]
    assert "tau2 termination_reason max_steps" in answer["reason"]
    agreement = json.loads((out / "summary.json").read_text())["external_agreement"]["tau2.reward"]
    assert agreement["confusion"]["fail"]["fail"] == 1 and agreement["disagreements"] == []  # tau2 gave it reward 0


def test_no_reward_info_no_label(tmp_path):
    sim = _sim("s1", "t", _dialogue())
    sim["reward_info"] = None
    _, items = read(write_results(tmp_path, [_task("t")], [sim]))
    assert items[0].trajectory.external_labels == [] and "reward_info" not in items[0].trajectory.metadata


def test_a_broken_simulation_names_its_line_and_field(tmp_path):
    bad = _sim("s2", "t", [{"role": "user", "content": "x"}, {"role": "assistant", "tool_calls": [{"id": "c", "arguments": {}}]}])
    path = write_results(tmp_path, [_task("t")], [_sim("s1", "t", _dialogue()), bad])
    _, items = read(path)
    assert items[0].error is None
    error = items[1].error
    assert error.field == "simulations[1].messages[1].tool_calls[0].name" and error.kind == "invalid_field"
    lines = path.read_text().splitlines()
    assert lines[error.line - 1].strip() == "{" and '"id": "s2"' in lines[error.line]
    assert items[1].trajectory_id == "s2" and items[1].task_id == "t"


def test_unknown_fields_are_kept_not_rejected(tmp_path):
    messages = [{"role": "user", "content": "go", "sentiment": "calm"}, {"role": "assistant", "content": "ok", "tool_calls": None}]
    sim = _sim("s1", "t", messages, novel_field={"a": 1})
    _, items = read(write_results(tmp_path, [_task("t", brand_new=True)], [sim]))
    traj = items[0].trajectory
    assert traj.metadata["novel_field"] == {"a": 1}
    assert traj.metadata["message_extras"] == {"simulations[0].messages[0]": {"sentiment": "calm"}}


def test_audio_content_is_not_text(tmp_path):
    messages = [{"role": "user", "content": "UklGRg==", "is_audio": True}, {"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]
    _, items = read(write_results(tmp_path, [_task("t")], [_sim("s1", "t", messages)]))
    traj = items[0].trajectory
    assert [t.query for t in traj.turns] == ["hello"] and traj.metadata["audio_messages"] == ["simulations[0].messages[0]"]


def test_full_duplex_ticks_are_unsupported(tmp_path):
    sim = _sim("s1", "t", None, ticks=[{"tick_id": 0, "timestamp": "t"}], mode="full_duplex")
    _, items = read(write_results(tmp_path, [_task("t")], [sim]))
    assert items[0].error.kind == "unsupported" and items[0].error.field == "simulations[0].ticks"


def test_task_errors_name_their_line(tmp_path):
    broken = _task("b")
    broken["evaluation_criteria"]["actions"] = [{"action_id": "x", "arguments": {}}]
    tasks, items = read(write_results(tmp_path, [_task("t"), broken], [_sim("s1", "b", _dialogue())]))
    assert list(tasks.tasks) == ["t"]
    (error,) = tasks.errors
    assert error.field == "tasks[1].evaluation_criteria.actions[0].name" and error.line is not None
    problem = check_task(items[0], tasks)
    assert problem is not None and problem.kind == "unknown_task" and "could not be read" in problem.message


def test_syntax_error_inside_simulations_keeps_what_came_before(tmp_path):
    path = write_results(tmp_path, [_task("t")], [_sim("s1", "t", _dialogue()), _sim("s2", "t", _dialogue())])
    text = path.read_text()
    cut = text.index('"id": "s2"')
    path.write_text(text[:cut] + '"id": "s2",, ' + text[cut + len('"id": "s2"') :])
    tasks, items = read(path)
    assert list(tasks.tasks) == ["t"]
    assert [i.trajectory_id for i in items if i.error is None] == ["s1"]
    (stop,) = [i.error for i in items if i.error is not None]
    assert stop.kind == "malformed_json" and stop.field == "simulations[1]" and "cannot be located" in stop.message


@pytest.mark.parametrize(("content", "kind"), [("", "malformed_json"), ("[1, 2]", "invalid_field"), ('{"info": {}, "tasks": [] ', "malformed_json")])
def test_unreadable_file_is_one_error_row(tmp_path, content, kind):
    path = tmp_path / "results.json"
    path.write_text(content)
    bundle = BUNDLE.read(str(path), Limits())
    (item,) = list(bundle.items)
    assert item.error.kind == kind and item.error.file == str(path)
    assert bundle.tasks is not None and not bundle.tasks.tasks


def test_oversize_simulation_is_too_large(tmp_path):
    big = _sim("s2", "t", [{"role": "user", "content": "x" * 5000}])
    path = write_results(tmp_path, [_task("t")], [_sim("s1", "t", _dialogue()), big])
    bundle = BUNDLE.read(str(path), Limits(max_line_bytes=4000, max_string_bytes=100_000))
    items = list(bundle.items)
    assert items[0].error is None and items[1].error.kind == "too_large" and items[1].error.field == "simulations[1]"


def test_dir_layout_reads_the_simulation_files(tmp_path):
    index = [{"id": "s1", "task_id": "t", "trial": 0}, {"id": "s9", "task_id": "t", "trial": 1}]
    path = write_results(tmp_path, [_task("t")], [], simulation_index=index)
    folder = tmp_path / "simulations"
    folder.mkdir()
    (folder / "s1.json").write_text(json.dumps(_sim("s1", "t", _dialogue()), indent=2))
    (folder / "stray.json").write_text(json.dumps(_sim("stray", "t", _dialogue())))
    _, items = read(path)
    assert [(i.trajectory_id, i.error.kind if i.error else None) for i in items] == [("s1", None), ("s9", "missing_file"), ("stray", "unlisted_file")]
    assert items[0].source.file == str(folder / "s1.json")


@pytest.mark.parametrize(("simulations", "message"), [([], "no simulations"), (None, "must be an array"), ("absent", "needs its simulations")])
def test_no_simulations_is_said(tmp_path, simulations, message):
    path = write_results(tmp_path, [_task("t")], [] if simulations == "absent" else simulations)
    if simulations == "absent":
        doc = json.loads(path.read_text())
        del doc["simulations"]
        path.write_text(json.dumps(doc, indent=2))
    _, items = read(path)
    (item,) = items
    assert item.error.field == "simulations" and message in item.error.message


def test_dir_layout_without_the_key(tmp_path):
    """tau2 writes the dir layout's results.json without a simulations key at all."""
    path = write_results(tmp_path, [_task("t")], [], simulation_index=[{"id": "s1", "task_id": "t", "trial": 0}])
    doc = json.loads(path.read_text())
    del doc["simulations"]
    path.write_text(json.dumps(doc, indent=2))
    (tmp_path / "simulations").mkdir()
    (tmp_path / "simulations" / "s1.json").write_text(json.dumps(_sim("s1", "t", _dialogue())))
    _, items = read(path)
    assert [(i.trajectory_id, i.error) for i in items] == [("s1", None)]


def test_sniff_from_the_head_of_a_file_too_large_to_parse_for_detection():
    head = shared("airline_gpt-4.1-mini_results.json").read_bytes()[:4096]
    assert BUNDLE.sniff(head, None)
    assert not BUNDLE.sniff(b'{"version": 2, "eval": {"task": "x"}}', None)


# ---- end to end -----------------------------------------------------------------------------------


def test_judge_grade_takes_the_tasks_from_the_results_file(tmp_path):
    from typer.testing import CliRunner

    from pipelines.cli import app

    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["grade", "--trajectories", str(shared("airline_gpt-4.1-mini_results.json")), "--out", str(out), "--offline"])
    assert result.exit_code == 0, result.output
    rows = {r["trajectory_id"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    assert set(rows) == {"804db61e-ffb0-4fa3-95e1-0cc6ba405348", "f2dfe6ed-8489-494a-8973-8bc83949e199"}
    assert all(r["verdict"] != "error" for r in rows.values())
    # the agent cancelled a reservation tau2's reference leaves alone: a surplus write, as tau2's DB check says
    cancelled = rows["f2dfe6ed-8489-494a-8973-8bc83949e199"]
    assert (cancelled["verdict"], cancelled["failure_stage"]) == ("fail", "tool_selection")


def test_the_real_runs_agree_with_taus_reward_and_name_what_stays_open(tmp_path):
    """Each reward component maps to its check (DB -> writes, ENV_ASSERTION -> needs tau2's
    environment); the domain policy document is judge context, counted as not audited."""
    from typer.testing import CliRunner

    from pipelines.cli import app

    rows, summaries = {}, {}
    for name in ("airline", "retail", "telecom"):
        out = tmp_path / name
        result = CliRunner().invoke(app, ["grade", "--trajectories", str(shared(f"{name}_gpt-4.1-mini_results.json")), "--out", str(out), "--offline"])
        assert result.exit_code == 0, result.output
        rows[name] = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
        summaries[name] = json.loads((out / "summary.json").read_text())
    decided = [(r["verdict"], r["external_labels"][0]["passed"]) for n in ("airline", "retail") for r in rows[n]]
    # airline 0: no action, DB in the basis -> "no write" passes (tau2 1.0); airline 1: a surplus cancellation (0.0);
    # retail 0: the reference exchange made (1.0)
    assert decided == [("pass", True), ("fail", False), ("pass", True)]
    (telecom,) = rows["telecom"]  # reward_basis [ENV_ASSERTION]: only tau2's environment can tell
    assert telecom["verdict"] == "unresolved" and telecom["turns"][0]["reason"].startswith("needs the environment: 2 assertion(s)")
    assert [summaries[n]["counts"]["policy_not_audited"] for n in ("airline", "retail", "telecom")] == [2, 1, 1]
    assert all(r["turns"][0]["checks"][0]["outcome"] == "skipped" for n in rows for r in rows[n])  # policy: context, not a gate
    gated = tmp_path / "gated"
    result = CliRunner().invoke(
        app, ["grade", "--trajectories", str(shared("retail_gpt-4.1-mini_results.json")), "--out", str(gated), "--offline", "--policy-text", "gate"]
    )
    assert result.exit_code == 0, result.output
    (row,) = [json.loads(line) for line in (gated / "results.jsonl").read_text().splitlines()]
    assert row["verdict"] == "unresolved" and row["unresolved_stages"] == ["policy"]  # audited: the policy rubric must rule


def test_an_oversize_string_field_is_too_large_naming_its_path(tmp_path):
    big = _sim("s2", "t", [{"role": "user", "content": "x" * 3000}])
    path = write_results(tmp_path, [_task("t")], [_sim("s1", "t", _dialogue()), big])
    items = list(BUNDLE.read(str(path), Limits(max_line_bytes=1_000_000, max_string_bytes=2000)).items)
    assert items[0].error is None
    assert items[1].error.kind == "too_large" and items[1].error.field.startswith("simulations[1].messages[0]")


# ---- nesting past the bound: the real airline run, altered here ---------------------------------

REQUESTOR = ("simulations", 1, "reward_info", "action_checks", 1, "action", "requestor")


def _deep_text(depth: int, kind: str) -> str:
    """A value nested ``depth`` levels, written as text (json.dumps recurses); the objects hold
    strings with brackets and an escaped quote, which the item's end must not be taken from."""
    if kind == "list":
        return "[" * depth + "1" + "]" * depth
    return '{"s": "]}\\"[", "a": ' * depth + "1" + "}" * depth


def _airline_with(tmp_path: Path, where: tuple[Any, ...], depth: int, kind: str = "list") -> Path:
    doc = json.loads(shared("airline_gpt-4.1-mini_results.json").read_text())
    value = doc
    for key in where[:-1]:
        value = value[key]
    value[where[-1]] = "DEEP"
    path = tmp_path / "results.json"
    path.write_text(json.dumps(doc, indent=2).replace('"DEEP"', _deep_text(depth, kind)))
    return path


@pytest.mark.parametrize(("depth", "kind"), [(300, "list"), (1500, "list"), (1500, "object")])
def test_a_simulation_nested_too_deep_is_its_own_row(tmp_path, depth, kind):
    """300 levels: read, then an internal error writing the drill-down; 1,500: a RecursionError
    reading. Either is that simulation's too_deep row; the other simulation is graded."""
    path = _airline_with(tmp_path, REQUESTOR, depth, kind)
    tasks, items = read(path)
    assert items[0].error is None and len(tasks.tasks) == 2
    error = items[1].error
    field = "simulations[1].reward_info.action_checks[1].action.requestor" + ("[0]..." if kind == "list" else ".a.a...")
    assert error.kind == "too_deep" and error.field == (field if depth < 1000 else "simulations[1]")
    assert path.read_text().splitlines()[error.line - 1].strip() == "{" and "nested deeper than 100 levels" in error.message


@pytest.mark.parametrize("depth", [300, 1500])
def test_a_top_level_member_nested_too_deep_is_one_error_row(tmp_path, depth):
    path = _airline_with(tmp_path, ("info", "environment_info", "policy"), depth)
    (item,) = list(BUNDLE.read(str(path), Limits()).items)
    assert item.error.kind == "too_deep" and item.error.field == ("info.environment_info.policy[0][0][0][0]..." if depth < 1000 else "info")


def test_a_task_nested_too_deep_is_a_task_error(tmp_path):
    path = _airline_with(tmp_path, ("tasks", 0, "description", "purpose"), 3000)
    tasks, items = read(path)
    (error,) = tasks.errors
    assert error.kind == "too_deep" and error.field == "tasks[0]" and len(tasks.tasks) == 1
    assert len(items) == 2 and sum(check_task(i, tasks) is not None for i in items) == 1


# ---- values of the wrong type, ids of rows that share a line ----------------------------------------


@pytest.mark.parametrize("key", ["action_checks", "communicate_checks", "nl_assertions", "env_assertions"])
@pytest.mark.parametrize("value", [7, True, {"x": []}])
def test_a_list_of_checks_in_reward_info_that_is_no_list_is_an_invalid_field(tmp_path, key, value):
    """Found by replacing values of the tau2 fixture by values of other types: tau2's verdict's
    lists of checks were iterated as they came (`for check in reward_info.get(...) or ()`), and a
    number or a boolean there was a reader_error row ("'int' object is not iterable")."""
    bad = _sim("s2", "t", _dialogue())
    bad["reward_info"][key] = value
    _, items = read(write_results(tmp_path, [_task("t")], [_sim("s1", "t", _dialogue()), bad]))
    assert items[0].error is None and items[0].trajectory.external_labels[0].value == 1.0
    error = items[1].error
    assert (error.kind, error.field) == ("invalid_field", f"simulations[1].reward_info.{key}")
    assert f"reward_info.{key} must be an array" in error.message and items[1].trajectory_id == "s2"


@pytest.mark.parametrize("value", [["u1"], {"id": "u1"}, 7])
@pytest.mark.parametrize("where", ["call", "result"])
def test_a_user_tool_call_id_of_the_wrong_type_is_an_invalid_field(tmp_path, value, where):
    """The simulated user's own tool calls (telecom) pair with their results by id, through a dict:
    a list or an object as the result's id raised "unhashable type" (a reader_error row)."""
    messages = [
        {"role": "user", "content": "My phone has no signal.", "tool_calls": [{"id": "u1", "name": "check_status_bar", "arguments": {}, "requestor": "user"}]},
        {"role": "tool", "id": "u1", "content": "Airplane Mode", "requestor": "user", "error": False},
        *_dialogue()[1:],
    ]
    if where == "call":
        messages[0]["tool_calls"][0]["id"] = value
        field = "simulations[0].messages[0].tool_calls[0].id"
    else:
        messages[1]["id"] = value
        field = "simulations[0].messages[1].id"
    _, items = read(write_results(tmp_path, [_task("t")], [_sim("s1", "t", messages)]))
    (item,) = items
    assert (item.error.kind, item.error.field) == ("invalid_field", field) and "must be a string" in item.error.message
    messages[0]["tool_calls"][0]["id"] = messages[1]["id"] = "u1"
    _, (fine,) = read(write_results(tmp_path, [_task("t")], [_sim("s1", "t", messages)]))
    assert [c["result"] for c in fine.trajectory.metadata["user_tool_calls"]] == ["Airplane Mode"]


def test_error_rows_of_one_line_have_ids_of_their_own(tmp_path):
    """A results file written compactly (json.dump without indent) has all its simulations on line
    1: the rows of those that name no id all had the default id "results:1". Each has its own now
    ("results:1", "results:1:2", ...), as the streaming reader names the items of one line; so do
    the rows of simulation_index entries without an id (no line: "results:None", ...)."""
    sims = [_sim("s1", "t", _dialogue()), _sim(None, "t", _dialogue()), _sim(None, "t", _dialogue()), _sim([], "t", _dialogue())]
    path = write_results(tmp_path, [_task("t")], sims)
    path.write_text(json.dumps(json.loads(path.read_text())))
    _, items = read(path)
    assert [(i.trajectory_id, i.error.field if i.error else None) for i in items] == [
        ("s1", None),
        ("results:1", "simulations[1].id"),
        ("results:1:2", "simulations[2].id"),
        ("results:1:3", "simulations[3].id"),
    ]
    index_path = write_results(tmp_path, [_task("t")], [], name="index.json", simulation_index=[{"trial": 0}, {"trial": 1}])
    (tmp_path / "simulations").mkdir()
    _, items = read(index_path)
    assert [(i.trajectory_id, i.error.field) for i in items] == [("index:None", "simulation_index[0].id"), ("index:None:2", "simulation_index[1].id")]
