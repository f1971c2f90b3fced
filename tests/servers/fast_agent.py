"""A minimal asyncio server playing a tool-calling *agent* on the OpenAI Chat Completions wire, for benchmarks.

Why: ``bench/bench_runner.py`` must measure the runner, not a thread-per-request test server.
Behaviour: ``steps`` rounds of one ``get_games_by_year`` call (the year is read from the first user
message), then the host city from the last tool result as the answer; ``latency_s`` before each answer.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tests.servers.fast import FastOpenAIServer

_YEAR = re.compile(r"\b(19|20)\d\d\b")


def agent_reply(body: dict[str, Any], steps: int) -> dict[str, Any]:
    messages = body.get("messages") or []
    done = sum(1 for m in messages if m.get("role") == "assistant")
    if done < steps:
        question = next((m["content"] for m in messages if m.get("role") == "user"), "")
        match = _YEAR.search(question)
        year = int(match.group(0)) if match else 2008
        call = {"id": f"call_{done}", "type": "function", "function": {"name": "get_games_by_year", "arguments": json.dumps({"year": year})}}
        message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
        finish = "tool_calls"
    else:
        last = next((m["content"] for m in reversed(messages) if m.get("role") == "tool"), "{}")
        try:
            answer = json.loads(last).get("host_city", "unknown")
        except (ValueError, AttributeError):
            answer = "unknown"
        message, finish = {"role": "assistant", "content": answer}, "stop"
    return {
        "id": "chatcmpl-fast-agent",
        "object": "chat.completion",
        "created": 1767225600,
        "model": f"{body.get('model', 'model')}-2026-01-01",
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {"prompt_tokens": 200, "completion_tokens": 20, "total_tokens": 220},
    }


class FastAgentServer(FastOpenAIServer):
    path = "/v1"

    def __init__(self, latency_s: float = 0.0, steps: int = 1):
        super().__init__(latency_s)
        self.steps = steps

    def payload(self, body: dict[str, Any]) -> dict[str, Any]:
        return agent_reply(body, self.steps)
