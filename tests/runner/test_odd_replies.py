"""Model replies in shapes the wire formats do not promise (OpenAI-compatible servers differ): read
liberally where the meaning is clear, an unreadable reply retried and never cached, a reply whose
parts cannot be used kept as the agent's error. Parsers first, then the caller, then ``judge run``."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from judge import MAX_DEPTH
from judge.llm import JudgeCache, ProviderConfig, RetryConfig, RetryPolicy
from pipelines.runner import Conversation, ModelCaller, Sampling, create_agent
from pipelines.runner._caller import request_key
from pipelines.runner._conversation import UserMessage
from tests.runner.conftest import MODEL, games_task, host_city, invoke, read_jsonl, run_args, script, write_tasks
from tests.servers.agent import Say


def _agent(wire: str):
    return create_agent(f"{wire}:{MODEL}", {wire: ProviderConfig(base_url="http://127.0.0.1:9")}, Sampling())


def _openai(message: Any, **extra: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "message": message, "finish_reason": extra.pop("finish", "stop")}], **extra}


def _deep(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


def test_openai_content_parts_a_lone_call_object_and_numeric_ids_are_read():
    reply = _agent("openai").parse(
        _openai(
            {
                "content": [{"type": "text", "text": "Let me "}, "look", {"type": "image_url"}],
                "tool_calls": {"id": 7, "function": {"name": "get_games_by_year", "arguments": '{"year": 2008}'}},
            },
            usage={"prompt_tokens": "12", "completion_tokens": -3},
            model=["m", 1],
            finish={"why": "tools"},
        )
    )
    assert reply.text == "Let me look"
    [call] = reply.tool_calls
    assert (call.id, call.name, call.arguments, call.parse_error) == ("7", "get_games_by_year", {"year": 2008}, None)
    assert (reply.input_tokens, reply.output_tokens) == (0, 0)  # not counts: nothing is made up
    assert reply.model_version == '["m", 1]' and reply.stop_reason == '{"why": "tools"}'


def test_openai_calls_without_ids_or_with_odd_parts_keep_their_place_and_their_error():
    calls = [
        {"function": {"name": "a", "arguments": "[1, 2]"}},
        {"id": "", "function": {"name": ["not", "text"], "arguments": None}},
        "not a call",
        {"id": True, "function": {"name": "b", "arguments": json.dumps(_deep(MAX_DEPTH + 5))}},
        {"id": "c9", "function": {"name": "c", "arguments": '{"n": 1e999}'}},
    ]
    reply = _agent("openai").parse(_openai({"content": None, "tool_calls": calls}))
    first, second, third, fourth, fifth = reply.tool_calls
    assert (first.id, first.arguments, first.parse_error) == ("call_0", None, "a JSON list, not an object")
    assert (second.id, second.name, second.arguments, second.parse_error) == ("call_1", '["not", "text"]', {}, None)
    assert (third.id, third.name, third.arguments) == ("call_2", "", {})  # an empty call: an unknown tool the model is told about
    assert fourth.id == "call_3" and fourth.arguments is None and "not usable JSON" in (fourth.parse_error or "")
    assert fifth.id == "c9" and fifth.arguments == {"n": float("inf")}  # what json.loads reads, as before


@pytest.mark.parametrize(("message", "words"), [("just text", "a message that is a JSON str"), ({"tool_calls": "x"}, "tool_calls that is a JSON str")])
def test_openai_replies_that_cannot_be_read_raise_for_the_caller_to_retry(message, words):
    with pytest.raises(ValueError, match=words):
        _agent("openai").parse(_openai(message))


def test_anthropic_blocks_that_are_not_blocks_are_skipped_and_deep_inputs_are_the_agents_error():
    response = {
        "content": ["stray", None, {"type": "text", "text": "Checking."}, {"type": "tool_use", "name": "lookup", "input": {"x": _deep(MAX_DEPTH + 1)}}],
        "stop_reason": "tool_use",
        "usage": [1, 2],
        "model": "m-1",
    }
    reply = _agent("anthropic").parse(response)
    assert reply.text == "Checking." and (reply.input_tokens, reply.output_tokens) == (0, 0)
    [call] = reply.tool_calls
    assert call.id == "toolu_0" and call.arguments is None and call.parse_error == f"nested deeper than {MAX_DEPTH} levels"


def test_request_keys_hold_integers_past_64_bits():
    """Anthropic requests carry the model's parsed arguments back; orjson cannot write 2**70."""
    one, other = request_key({"input": {"n": 2**70}}), request_key({"input": {"n": 2**70 + 1}})
    assert one != other and one == request_key({"input": {"n": 2**70}}) and len(one) == 64


class _Raw:
    """A reply the loopback server sends exactly as given (either wire)."""

    def __init__(self, openai: Any, anthropic: Any):
        self.bodies = {True: openai, False: anthropic}

    def payload(self, body: dict[str, Any], openai: bool) -> Any:
        return self.bodies[openai]


def test_a_reply_nested_past_the_bound_is_retried_and_never_cached(tmp_path, server, wire):
    deep = _deep(MAX_DEPTH + 3)
    server.script(MODEL, _Raw(_openai({"content": "x"}, extra=deep), {"content": [], "extra": deep}))
    server.set_default(MODEL, Say("fine"))
    agent = create_agent(
        f"{wire}:{MODEL}", {wire: ProviderConfig(base_url=server.openai_base_url if wire == "openai" else server.anthropic_base_url)}, Sampling()
    )
    cache = JudgeCache(tmp_path / "c.sqlite")
    caller = ModelCaller(
        agent, cache=cache, retry=RetryPolicy(config=RetryConfig(max_attempts=3, base_delay_s=0.0, max_delay_s=0.0), sleep=lambda s: asyncio.sleep(0))
    )

    async def ask():
        try:
            return await caller.reply(Conversation("system", [UserMessage("q")]), [], 1)
        finally:
            await agent.aclose()

    reply, record = asyncio.run(ask())
    assert reply.text == "fine" and record.attempts == 2 and caller.stats.retry_reasons == {"server": 1}
    again, cached = asyncio.run(ask())
    assert cached.cached and again.text == "fine" and server.calls(MODEL) == 2  # what the cache holds is the good answer


def test_judge_run_grades_a_trajectory_told_in_odd_shapes(tmp_path, server, wire):
    """Content parts, a lone call object with a numeric id (OpenAI), stray blocks (Anthropic): the
    calls run, the answer is read, and the trajectory passes as it would in the usual shapes."""
    city = host_city(2008)
    openai_call = _openai(
        {
            "content": [{"type": "text", "text": "Looking it up."}],
            "tool_calls": {"id": 1, "type": "function", "function": {"name": "get_games_by_year", "arguments": '{"year": 2008}'}},
        },
        finish="tool_calls",
    )
    anthropic_call = {
        "content": [None, {"type": "text", "text": "Looking it up."}, {"type": "tool_use", "id": 1, "name": "get_games_by_year", "input": {"year": 2008}}],
        "stop_reason": "tool_use",
    }
    openai_answer = _openai({"content": [{"type": "text", "text": city}]})
    anthropic_answer = {"content": [{"type": "text", "text": city}, "stray"], "stop_reason": "end_turn"}
    tasks = write_tasks(tmp_path / "tasks.jsonl", [games_task("odd", 2008)])
    script(server, {"2008": [[_Raw(openai_call, anthropic_call), _Raw(openai_answer, anthropic_answer)]]})
    res = invoke(*run_args(tmp_path, wire, tasks))
    assert res.exit_code == 0, res.output
    [trajectory] = read_jsonl(tmp_path / "out" / "trajectories.jsonl")
    [step] = trajectory["turns"][0]["steps"]
    assert (step["call_id"], step["name"], step["arguments"], step["status"]) == ("1", "get_games_by_year", {"year": 2008}, "ok")
    assert trajectory["turns"][0]["final_answer"] == city
    [row] = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert row["verdict"] == "pass", row
