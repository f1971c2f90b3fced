"""OpenAI Chat Completions and Anthropic Messages transcripts -> Trajectory."""

from __future__ import annotations

from pipelines.ingest import iter_trajectories


def _only(path, fmt=None):
    (loaded,) = list(iter_trajectories(path, fmt=fmt))
    return loaded


# -- OpenAI --------------------------------------------------------------------------------------


def test_openai_multi_turn_transcript(fixtures):
    loaded = list(iter_trajectories(fixtures / "openai_trajectories.jsonl"))
    assert [x.error for x in loaded] == [None, None]
    traj = loaded[0].trajectory
    assert (traj.task_id, traj.trajectory_id, traj.agent) == ("bank-7", "oa-1", "gpt-agent")
    assert traj.token_usage.input_tokens == 812 and traj.token_usage.output_tokens == 96
    assert traj.metadata == {"model": "gpt-x-2026", "system": "You are a banking assistant."}  # unknown keys kept
    turn1, turn2 = traj.turns
    assert (turn1.turn_id, turn2.turn_id) == ("1", "2")
    assert turn1.query == "Move 50 EUR from checking to savings."
    assert turn2.query == "What is my savings balance now?"  # list-of-parts content
    # parallel calls keep call order; results are matched by tool_call_id, not by position
    assert [s.call_id for s in turn1.steps] == ["call_1", "call_2", "call_3", "call_4"]
    assert turn1.steps[0].result == {"balance": 420} and turn1.steps[1].result == {"balance": 1000}
    # the assistant text beside tool_calls is not the answer; the last text-only message is
    assert turn1.final_answer == "Done: 50 EUR moved to savings."
    assert turn2.final_answer == "Your savings balance is 1050 EUR."


def test_openai_unparseable_arguments_are_the_agents_error(fixtures):
    traj = _only_first(fixtures)
    step = traj.turns[0].steps[2]
    assert step.arguments == {} and step.status == "error"
    assert step.error.startswith("unparseable arguments: ")
    assert step.result == "invalid JSON in arguments"  # what the tool said is still kept


def test_openai_status_and_inferred_errors(fixtures):
    traj = _only_first(fixtures)
    assert traj.turns[0].steps[3].status == "ok"  # status "success" on the tool message
    assert traj.turns[1].steps[0].status == "error"  # "Error: ..." text inferred as failure
    missing = traj.turns[1].steps[1]
    assert (missing.status, missing.error, missing.result) == ("unknown", None, None)  # made, outcome not recorded (issue 9)
    second = list(iter_trajectories(fixtures / "openai_trajectories.jsonl"))[1].trajectory
    # an explicit status wins over a result that looks fine
    assert second.steps[0].status == "error" and second.steps[0].result == {"temp": 18}
    assert second.trajectory_id == "openai_trajectories:2"


def _only_first(fixtures):
    return next(iter(iter_trajectories(fixtures / "openai_trajectories.jsonl"))).trajectory


def test_openai_input_errors_name_the_message_field(write_jsonl):
    path = write_jsonl(
        "o.jsonl",
        [
            {"task_id": "t", "messages": [{"role": "user", "content": "q"}, {"role": "tool", "tool_call_id": "nope", "content": "x"}]},
            {
                "task_id": "t",
                "trajectory_id": "b",
                "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "function_call": {"name": "f", "arguments": "{}"}}],
            },
            {"task_id": "t", "trajectory_id": "c", "messages": [{"role": "user", "content": "q"}, {"role": "robot", "content": "x"}]},
            {
                "task_id": "t",
                "trajectory_id": "d",
                "messages": [
                    {"role": "user", "content": "q"},
                    {"role": "assistant", "tool_calls": [{"id": "1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                    {"role": "tool", "tool_call_id": "1", "content": "x", "status": "weird"},
                ],
            },
            {"task_id": "t", "trajectory_id": "e", "messages": []},
        ],
    )
    loaded = list(iter_trajectories(path, fmt="openai"))
    orphan, errors = loaded[0], [x.error for x in loaded[1:]]
    # a result answering no pending call is kept and warned about, never fatal (issue 9)
    assert orphan.error is None and orphan.trajectory.metadata["orphan_results"][0]["call_id"] == "nope"
    assert [(w.kind, w.field) for w in orphan.warnings] == [("orphan_result", "messages[1].tool_call_id")]
    assert [(e.kind, e.field) for e in errors] == [
        ("unsupported", "messages[1].function_call"),
        ("invalid_field", "messages[1].role"),
        ("invalid_field", "messages[2].status"),
        ("invalid_field", "messages"),
    ]
    assert "unknown status 'weird'" in errors[2].message


# -- Anthropic -----------------------------------------------------------------------------------


def test_anthropic_multi_turn_transcript(fixtures):
    loaded = list(iter_trajectories(fixtures / "anthropic_trajectories.jsonl"))
    assert [x.error for x in loaded] == [None, None]
    traj = loaded[0].trajectory
    assert traj.metadata == {"system": "You are a banking assistant."}
    assert traj.token_usage.input_tokens == 900
    turn1, turn2 = traj.turns
    assert [s.call_id for s in turn1.steps] == ["toolu_1", "toolu_2", "toolu_3", "toolu_4"]
    assert turn1.steps[1].result == {"balance": 1000}  # list of text blocks, JSON parsed
    assert turn1.steps[2].status == "error" and turn1.steps[2].result == "insufficient funds"  # is_error
    assert turn1.steps[3].status == "ok"
    assert turn1.final_answer == "Done: 50 EUR moved to savings."  # not "Let me check the balances."
    assert turn2.steps[0].status == "error"  # {"error": ...} inferred
    assert turn2.final_answer == "Your savings balance is 1050 EUR."  # plain string content
    weather = loaded[1].trajectory
    assert weather.steps[0].status == "unknown" and weather.final_answer == "I could not get the weather."


def test_anthropic_text_beside_tool_results_starts_a_new_turn(write_jsonl):
    path = write_jsonl(
        "a.jsonl",
        [
            {
                "task_id": "t",
                "system": [{"type": "text", "text": "sys"}],
                "messages": [
                    {"role": "user", "content": "first"},
                    {"role": "assistant", "content": [{"type": "tool_use", "id": "u1", "name": "f", "input": {"x": 1}}]},
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "u1", "content": "42"}, {"type": "text", "text": "second"}]},
                    {"role": "assistant", "content": [{"type": "text", "text": "answer two"}]},
                ],
            }
        ],
    )
    traj = _only(path).trajectory
    assert [t.query for t in traj.turns] == ["first", "second"]
    assert traj.turns[0].steps[0].result == "42" and traj.turns[0].final_answer is None
    assert traj.turns[1].steps == [] and traj.turns[1].final_answer == "answer two"
    assert traj.metadata["system"] == "sys"


def test_anthropic_input_errors(write_jsonl):
    path = write_jsonl(
        "a.jsonl",
        [
            {"task_id": "t", "system": "s", "messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "zz", "content": "x"}]}]},
            {
                "task_id": "t",
                "trajectory_id": "2",
                "system": "s",
                "messages": [{"role": "assistant", "content": [{"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {}}]}],
            },
            {
                "task_id": "t",
                "trajectory_id": "3",
                "system": "s",
                "messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": "u", "name": "f", "input": "[1]"}]}],
            },
        ],
    )
    loaded = list(iter_trajectories(path))
    assert loaded[0].error.kind == "invalid_field"  # nothing but an orphan result: no turn to grade
    assert "at least 1 item" in loaded[0].error.message
    assert (loaded[1].error.kind, loaded[1].error.field) == ("unsupported", "messages[0].content[0].type")
    step = loaded[2].trajectory.steps[0]  # a non-object input is the agent's error, not the file's
    assert step.status == "error" and step.arguments == {} and step.error.startswith("unparseable arguments")


# -- real-log semantics (issue 9) ----------------------------------------------------------------


def _call(cid, name="f", args="{}"):
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


def test_call_ids_reused_after_their_result_pair_with_the_latest_unanswered_call(write_jsonl):
    messages = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "tool_calls": [_call("c1", args='{"x": 1}')]},
        {"role": "tool", "tool_call_id": "c1", "content": "one"},
        {"role": "assistant", "tool_calls": [_call("c1", args='{"x": 2}')]},  # the same id again
        {"role": "tool", "tool_call_id": "c1", "content": "two"},
        {"role": "assistant", "content": "done"},
    ]
    (loaded,) = iter_trajectories(write_jsonl("r.jsonl", [{"task_id": "t", "messages": messages}]), fmt="openai")
    steps = loaded.trajectory.steps
    assert [(s.arguments["x"], s.result, s.round) for s in steps] == [(1, "one", 0), (2, "two", 1)]
    assert loaded.warnings == []


def test_a_result_for_an_id_that_two_unanswered_calls_share_is_ambiguous(write_jsonl):
    messages = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "tool_calls": [_call("c1"), _call("c1")]},
        {"role": "tool", "tool_call_id": "c1", "content": "which?"},
    ]
    (loaded,) = iter_trajectories(write_jsonl("a.jsonl", [{"task_id": "t", "messages": messages}]), fmt="openai")
    assert loaded.error is not None and loaded.error.field == "messages[2].tool_call_id"
    assert "2 calls with that id are unanswered" in loaded.error.message


def test_calls_never_answered_are_made_with_unknown_outcome_and_agent_messages_are_kept(write_jsonl):
    messages = [
        {"role": "user", "content": "book it"},
        {"role": "assistant", "content": "Booking now.", "tool_calls": [_call("c1", "book"), _call("c2", "notify")]},
        {"role": "user", "content": "thanks"},
        {"role": "assistant", "content": "Your booking id is B7."},
    ]
    (loaded,) = iter_trajectories(write_jsonl("u.jsonl", [{"task_id": "t", "messages": messages}]), fmt="openai")
    traj = loaded.trajectory
    assert [(s.name, s.status, s.round) for s in traj.steps] == [("book", "unknown", 0), ("notify", "unknown", 0)]
    assert [t.agent_messages for t in traj.turns] == [["Booking now."], ["Your booking id is B7."]]
    assert traj.turns[0].final_answer is None  # text beside tool calls is said, not a final answer
