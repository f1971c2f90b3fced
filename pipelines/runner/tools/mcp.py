"""Tools from any MCP server, through the official ``mcp`` SDK client.

- stdio (``--mcp "command args"``): one server process per trajectory, so every trajectory starts
  from the server's initial state whatever the server does with sessions;
- streamable HTTP (``--mcp-url URL``): one MCP session per trajectory; isolation between
  sessions is the server's business (``judge env serve --transport http`` gives each session its
  own state once per-session isolation lands there).

A tool result's text is what the agent sees; the recorded result is that text parsed as JSON
when it is JSON. ``is_error`` results are tool errors the agent must handle; a broken transport
is an infrastructure failure that stops the trajectory (reported, never graded).
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TextIO

from judge import Task, ToolSpec, parse_json_text
from pipelines.runner.tools._base import ToolOutcome, ToolSession, ToolSource


class MCPToolSession(ToolSession):
    def __init__(self, client: Any, timeout_s: float):
        self.client = client
        self.timeout_s = timeout_s

    async def tools(self) -> list[ToolSpec]:
        specs, cursor = [], None
        while True:
            page = await self.client.list_tools(cursor=cursor)
            for tool in page.tools:
                hints = tool.annotations
                writes = hints is not None and hints.read_only_hint is False
                specs.append(
                    ToolSpec(
                        name=tool.name, description=tool.description or "", parameters=dict(tool.input_schema or {}), side_effect="write" if writes else "read"
                    )
                )
            cursor = page.next_cursor
            if cursor is None:
                return specs

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        from mcp import MCPError

        try:
            result = await self.client.call_tool(name, arguments, read_timeout_seconds=self.timeout_s)
        except MCPError as exc:  # the server refused the request (unknown tool, bad params): the agent's to handle
            return ToolOutcome(ok=False, error=f"MCP error: {exc}", text=f"Error: {exc}")
        parts = []
        for block in result.content:
            text = getattr(block, "text", None)
            parts.append(text if isinstance(text, str) else f"[{getattr(block, 'type', 'content')}]")
        text = "\n".join(parts)
        if result.is_error:
            error = text[len("Error:") :].strip() if text.startswith("Error:") else text
            return ToolOutcome(ok=False, error=error or "tool error", text=text if text.startswith("Error") else f"Error: {text}")
        return ToolOutcome(ok=True, result=parse_json_text(text), text=text)


class MCPToolSource(ToolSource):
    def __init__(
        self,
        command: str | None = None,
        url: str | None = None,
        headers: dict[str, str] | None = None,
        timeout_s: float = 60.0,
        stderr_log: Path | None = None,
    ):
        if (command is None) == (url is None):
            raise ValueError("give exactly one of an MCP command (stdio) or an MCP URL (streamable HTTP)")
        self.argv = shlex.split(command) if command is not None else None
        if self.argv is not None and not self.argv:
            raise ValueError("--mcp: empty command")
        self.url = url
        self.headers = dict(headers or {})
        self.timeout_s = timeout_s
        self.stderr_log = stderr_log  # where stdio servers' stderr goes (one file for the run), else ours
        self._errlog: TextIO | None = None

    def unavailable(self, task: Task) -> str | None:
        return None

    def _target(self) -> Any:
        from mcp import StdioServerParameters, stdio_client

        if self.argv is not None:
            params = StdioServerParameters(command=self.argv[0], args=self.argv[1:])
            if self._errlog is None:
                self._errlog = open(self.stderr_log, "a", encoding="utf-8") if self.stderr_log is not None else sys.stderr  # noqa: SIM115 (closed by close())
            return stdio_client(params, errlog=self._errlog)
        assert self.url is not None
        if not self.headers:
            return self.url
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        http = httpx2.AsyncClient(headers=self.headers, timeout=httpx2.Timeout(30.0, read=max(300.0, self.timeout_s)))
        return streamable_http_client(self.url, http_client=http)

    @asynccontextmanager
    async def session(self, task: Task) -> AsyncIterator[ToolSession]:
        from mcp import Client

        async with Client(self._target(), read_timeout_seconds=self.timeout_s) as client:
            yield MCPToolSession(client, self.timeout_s)

    def close(self) -> None:
        if self._errlog is not None and self._errlog is not sys.stderr:
            self._errlog.close()
        self._errlog = None

    def describe(self) -> dict[str, Any]:
        if self.argv is not None:
            return {"kind": "mcp", "transport": "stdio", "command": self.argv}
        return {"kind": "mcp", "transport": "http", "url": self.url, "headers": sorted(self.headers)}  # header names only

    def label(self, task: Task) -> str:
        return f"mcp:stdio:{shlex.join(self.argv)}" if self.argv is not None else f"mcp:http:{self.url}"
