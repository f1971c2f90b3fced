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
    assert (missing.status, missing.error, missing.result) == ("error", "no tool result", None)
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
    errors = [x.error for x in iter_trajectories(path, fmt="openai")]
    assert [(e.kind, e.field) for e in errors] == [
        ("invalid_field", "messages[1].tool_call_id"),
        ("unsupported", "messages[1].function_call"),
        ("invalid_field", "messages[1].role"),
        ("invalid_field", "messages[2].status"),
        ("invalid_field", "messages"),
    ]
    assert "no earlier tool call with id 'nope'" in errors[0].message
    assert "unknown status 'weird'" in errors[3].message


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
    assert weather.steps[0].error == "no tool result" and weather.final_answer == "I could not get the weather."


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
    assert (loaded[0].error.kind, loaded[0].error.field) == ("invalid_field", "messages[0].content[0].tool_use_id")
    assert (loaded[1].error.kind, loaded[1].error.field) == ("unsupported", "messages[0].content[0].type")
    step = loaded[2].trajectory.steps[0]  # a non-object input is the agent's error, not the file's
    assert step.status == "error" and step.arguments == {} and step.error.startswith("unparseable arguments")
