"""A minimal asyncio HTTP/1.1 server speaking the OpenAI Chat Completions wire, for benchmarks.

Why a second server: the scripted ``LoopbackServer`` spends a thread and the stdlib's header
parsing on every request, which shows up as server-side queueing at 32+ concurrent calls; this one
sleeps with ``asyncio.sleep`` and parses only what it needs, so a bench measures the client.
Every request gets a well-formed verdict tool call (``Reply``) after ``latency_s``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from tests.servers.loopback import Reply, _openai_payload


class FastOpenAIServer:
    path = ""  # appended to the base URL ``start`` returns

    def __init__(self, latency_s: float = 0.0, reply: Reply | None = None):
        self.latency_s = latency_s
        self.reply = reply or Reply("correct")
        self.calls = 0
        self._server: asyncio.AbstractServer | None = None

    def payload(self, body: dict[str, Any]) -> dict[str, Any]:
        """The response body to a request body (subclasses play other parts)."""
        return _openai_payload(body, self.reply)

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0, backlog=512)
        host, port = self._server.sockets[0].getsockname()[:2]
        return f"http://{host}:{port}{self.path}"

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
                data = json.dumps(self.payload(body)).encode()
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(data), data))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionResetError, BrokenPipeError, asyncio.CancelledError):
            pass  # client closed the connection, or the server is shutting down
        finally:
            writer.close()
