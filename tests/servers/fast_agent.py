"""A minimal asyncio server playing a tool-calling *agent* on the OpenAI Chat Completions wire, for benchmarks.

Why: ``bench/bench_runner.py`` must measure the runner, not a thread-per-request test server.
Behaviour: ``steps`` rounds of one ``get_games_by_year`` call (the year is read from the first user
message), then the host city from the last tool result as the answer; ``latency_s`` before each answer.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

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


class FastAgentServer:
    def __init__(self, latency_s: float = 0.0, steps: int = 1):
        self.latency_s = latency_s
        self.steps = steps
        self.calls = 0
        self._server: asyncio.AbstractServer | None = None

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0, backlog=512)
        host, port = self._server.sockets[0].getsockname()[:2]
        return f"http://{host}:{port}/v1"

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value.strip())
                body = json.loads(await reader.readexactly(length)) if length else {}
                self.calls += 1
                if self.latency_s:
                    await asyncio.sleep(self.latency_s)
                data = json.dumps(agent_reply(body, self.steps)).encode()
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(data), data))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionResetError, BrokenPipeError, asyncio.CancelledError):
            pass
        finally:
            writer.close()
