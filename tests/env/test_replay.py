"""Replay: VAKRA-style response containment, write-state comparison, caching."""

from __future__ import annotations

import pytest

from judge import Task, Trajectory, response_key
from pipelines.env import UnknownEnvironment
from pipelines.grade.replay import Replayer, dependency_order, responses_cover

CHAIN_TASK = {
    "task_id": "t-chain",
    "environment": "olympics",
    "question": "How many athletes from Kenya compete in Athletics?",
    "reference_calls": [
        {"id": "s1", "label": "s1", "name": "get_data", "arguments": {"table": "athletes"}},
        {
            "id": "s2",
            "label": "s2",
            "name": "filter_data",
            "depends_on": ["s1"],
            "arguments": {"data_source": "$s1.data$", "key_name": "country", "value": "Kenya", "condition": "equal"},
        },
        {
            "id": "s3",
            "label": "s3",
            "name": "select_data_equal_to",
            "depends_on": ["s2"],
            "arguments": {"data_source": "$s2.data$", "key_name": "sport", "value": "Athletics"},
        },
        {
            "id": "s4",
            "name": "aggregate_data",
            "depends_on": ["s3"],
            "arguments": {"data_source": "$s3.data$", "key_name": "athlete_id", "aggregation_type": "count"},
        },
    ],
    "gold_answer": 4,
}


def _traj(steps: list[dict], tid: str = "x") -> Trajectory:
    return Trajectory.model_validate({"task_id": "t-chain", "trajectory_id": tid, "steps": steps, "final_answer": "4"})


def covers(replays) -> bool:
    return all(responses_cover(t.reference, t.predicted) for t in replays)


def test_alternative_path_is_accepted():
    task = Task.model_validate(CHAIN_TASK)
    # swapped tools (select_data_equal_to <-> filter_data), literal handles, an extra exploratory call
    replayer = Replayer()
    env = replayer.environment("olympics")
    handle = env.session().execute("get_data", {"table": "athletes"}).result["data"]
    steps = [
        {"name": "get_data", "arguments": {"table": "games"}},
        {"name": "get_data", "arguments": {"table": "athletes"}, "call_id": "a"},
        {"name": "select_data_equal_to", "arguments": {"data_source": handle, "key_name": "country", "value": "Kenya"}, "call_id": "b"},
        {"name": "filter_data", "arguments": {"data_source": "$b.data$", "key_name": "sport", "value": "Athletics", "condition": "equal"}, "call_id": "c"},
        {"name": "aggregate_data", "arguments": {"data_source": "$c.data$", "key_name": "name", "aggregation_type": "count"}},
    ]
    replays = replayer.replay(task, _traj(steps))
    assert len(replays) == 1 and len(replays[0].reference) == 4 and len(replays[0].predicted) == 5
    assert all(r.ok for r in replays[0].reference + replays[0].predicted)
    assert covers(replays)
    assert replays[0].reference_state is None and replays[0].predicted_state is None  # no write tool involved


def test_near_miss_is_rejected():
    task = Task.model_validate(CHAIN_TASK)
    steps = [
        {"name": "get_data", "arguments": {"table": "athletes"}, "call_id": "s1"},
        {"name": "filter_data", "arguments": {"data_source": "$s1.data$", "key_name": "country", "value": "Kenya", "condition": "equal"}, "call_id": "s2"},
        {"name": "select_data_equal_to", "arguments": {"data_source": "$s2.data$", "key_name": "sport", "value": "Swimming"}, "call_id": "s3"},
        {"name": "aggregate_data", "arguments": {"data_source": "$s3.data$", "key_name": "athlete_id", "aggregation_type": "count"}},
    ]
    replays = Replayer().replay(task, _traj(steps))
    assert all(r.ok for r in replays[0].predicted)
    assert not covers(replays)
    ref_keys = {response_key(r.result) for r in replays[0].reference}
    pred_keys = {response_key(r.result) for r in replays[0].predicted}
    assert len(ref_keys - pred_keys) == 2  # the Athletics subset and its count


def test_failed_predicted_calls_never_cover():
    task = Task.model_validate(CHAIN_TASK)
    replays = Replayer().replay(task, _traj([{"name": "get_data", "arguments": {"tabel": "athletes"}}]))
    assert not replays[0].predicted[0].ok and not covers(replays)


WRITE_TASK = {
    "task_id": "t-write",
    "environment": "flights",
    "turns": [
        {"turn_id": "1", "query": "Add a bag to B0002.", "reference_calls": [{"id": "w", "name": "add_checked_bag", "arguments": {"booking_id": "B0002"}}]},
        {"turn_id": "2", "query": "And what class is it?", "reference_calls": [{"id": "r", "name": "get_booking", "arguments": {"booking_id": "B0002"}}]},
    ],
}


def _write_traj(turn1: list[dict]) -> Trajectory:
    return Trajectory.model_validate(
        {
            "task_id": "t-write",
            "trajectory_id": "w",
            "turns": [
                {"turn_id": "1", "steps": turn1, "final_answer": "done"},
                {"turn_id": "2", "steps": [{"name": "get_booking", "arguments": {"booking_id": "B0002"}}], "final_answer": "economy"},
            ],
        }
    )


def test_write_state_matches_when_the_side_effect_is_right():
    task = Task.model_validate(WRITE_TASK)
    replays = Replayer().replay(task, _write_traj([{"name": "add_checked_bag", "arguments": {"booking_id": "B0002"}}]))
    assert [r.reference_state is not None for r in replays] == [True, True]
    assert all(r.reference_state == r.predicted_state for r in replays)
    assert covers(replays)  # state carried across turns: turn 2 sees the added bag in both sessions


@pytest.mark.parametrize(
    "turn1",
    [
        [{"name": "add_checked_bag", "arguments": {"booking_id": "B0003"}}],  # wrong record
        [{"name": "add_checked_bag", "arguments": {"booking_id": "B0002"}}] * 2,  # duplicate write
        [{"name": "change_seat_class", "arguments": {"booking_id": "B0002", "seat_class": "business"}}],  # wrong write
        [],  # missing write
    ],
)
def test_write_state_comparison_catches_wrong_side_effects(turn1):
    task = Task.model_validate(WRITE_TASK)
    replays = Replayer().replay(task, _write_traj(turn1))
    assert replays[0].reference_state != replays[0].predicted_state


def test_no_environment_gives_none_and_unknown_environment_is_clear():
    task = Task.model_validate({**CHAIN_TASK, "environment": None})
    assert Replayer().replay(task, _traj([])) is None
    with pytest.raises(UnknownEnvironment, match="atlantis"):
        Replayer().replay(Task.model_validate({**CHAIN_TASK, "environment": "atlantis"}), _traj([]))


def test_reference_replay_is_cached_and_identical():
    task = Task.model_validate(CHAIN_TASK)
    replayer = Replayer()
    first = replayer.replay(task, _traj([]))
    second = replayer.replay(task, _traj([]))
    assert replayer.reference_cache_hits == 1 and first[0].reference == second[0].reference
    uncached = Replayer(cache=False).replay(task, _traj([]))
    assert uncached[0].reference == first[0].reference


def test_dependency_order_respects_depends_on():
    task = Task.model_validate({**CHAIN_TASK, "reference_calls": list(reversed(CHAIN_TASK["reference_calls"]))})
    calls = task.turns[0].reference_calls
    order = [calls[i].id for i in dependency_order(calls)]
    assert order == ["s1", "s2", "s3", "s4"]
    replays = Replayer().replay(task, _traj([]))
    assert all(r.ok for r in replays[0].reference)
    assert replays[0].reference[0].result == {"data": 4}  # results stay indexed like the written calls


def test_sample_trajectories_replay_as_their_profiles_say(sample_tasks, sample_trajectories):
    """Pass profiles cover the reference responses and leave the same state; call-level failures do not."""
    replayer = Replayer()
    call_failures = {"wrong_tool", "misnamed_args", "wrong_values", "stubborn"}
    for traj in sample_trajectories:
        task = sample_tasks[traj.task_id]
        replays = replayer.replay(task, traj)
        profile = traj.metadata["profile"]
        cover = covers(replays)
        same_state = all(r.reference_state == r.predicted_state for r in replays)
        if traj.metadata["expected_verdict"] == "pass":
            assert cover and same_state, traj.trajectory_id
        if profile in call_failures:
            assert not cover, traj.trajectory_id
        if profile == "duplicate_writer":
            assert not same_state, traj.trajectory_id
        if profile in {"wrong_answer", "ungrounded"}:
            assert cover and same_state, traj.trajectory_id
        # the recorded results are what the live tools return (a step with an injected fault never
        # reached the tool when it was recorded: replay, which injects nothing, runs it normally)
        for turn, rep in zip(traj.turns, replays):
            pairs = [(s, p) for s, p in zip(turn.steps, rep.predicted, strict=True) if s.fault is None]
            assert [s.ok for s, _ in pairs] == [p.ok for _, p in pairs], traj.trajectory_id
            assert [s.result for s, p in pairs if s.ok] == [p.result for _, p in pairs if p.ok], traj.trajectory_id


def test_a_call_by_a_sanitised_name_replays_the_tool_it_means(tmp_path):
    """``items_rename`` (the name a function-calling API allows for ``items.rename``) runs
    ``items.rename``: the write lands and the final state equals the reference's."""
    from data.build._toolkit import Domain, Table, endpoint, write, write_domain
    from pipelines.config import GradingConfig
    from pipelines.grade import grade_case

    items = Table("items", "CREATE TABLE items (item_id INTEGER PRIMARY KEY, name TEXT NOT NULL)", [(1, "a"), (2, "b")])
    tools = [
        endpoint("items.get", "One item.", {"item_id": (int, "Id.")}, "SELECT * FROM items WHERE item_id = :item_id", "row"),
        write(
            "items.rename", "Rename an item.", {"item_id": (int, "Id."), "name": (str, "New name.")}, ["UPDATE items SET name = :name WHERE item_id = :item_id"]
        ),
    ]
    write_domain(Domain("dotted", [items], tools, []), tmp_path)
    task = Task.model_validate(
        {
            "task_id": "t-dots",
            "environment": "dotted",
            "question": "Rename item 1 to z.",
            "reference_calls": [{"name": "items.rename", "arguments": {"item_id": 1, "name": "z"}}],
        }
    )
    trajectory = Trajectory.model_validate(
        {
            "task_id": "t-dots",
            "trajectory_id": "d",
            "steps": [{"name": "items_rename", "arguments": {"item_id": 1, "name": "z"}, "result": "ok"}],
            "final_answer": "done",
        }
    )
    (replay,) = Replayer(tmp_path).replay(task, trajectory)
    assert replay.predicted[0].ok and replay.reference_state is not None and replay.predicted_state == replay.reference_state
    result = grade_case(task, trajectory, GradingConfig(), replay=[replay]).result()
    assert result.verdict == "pass", result.turns[0].checks
    assert trajectory.steps[0].name == "items_rename"
