"""Serve a domain over MCP (official SDK, low-level ``Server``), so any agent can run against the
very environment we grade in.

One server process holds one ``Session``: an agent's writes are visible to its later calls, as in
the replay. Domains with more than ``MAX_LISTED_TOOLS`` tools (OpenAI caps a request at 128)
are served in shortlist mode: ``tools/list`` shows a ``shortlist_tools(query, k)`` tool plus the
tools its last answer selected (BM25 over tool names and descriptions); every domain tool stays
callable by name.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from judge import ToolSpec
from pipelines.env._runtime import Environment, load_environment

MAX_LISTED_TOOLS = 128
SHORTLIST_TOOL = "shortlist_tools"
DEFAULT_SHORTLIST_K = 20


def _mcp_tool(spec: ToolSpec) -> types.Tool:
    annotations = types.ToolAnnotations(read_only_hint=spec.side_effect == "read")
    return types.Tool(name=spec.name, description=spec.description, input_schema=spec.parameters, annotations=annotations)


def _shortlist_spec(k: int) -> types.Tool:
    return types.Tool(
        name=SHORTLIST_TOOL,
        description="Find the tools relevant to a request among this domain's many tools; returns their names, descriptions and "
        "parameter schemas, and lists them in tools/list.",
        input_schema={
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What you want to do."},
                "k": {"type": "integer", "minimum": 1, "maximum": MAX_LISTED_TOOLS - 1, "default": k},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
    )


def _text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def build_server(env: Environment, shortlist: int | None = None) -> Server[Any]:
    """``shortlist``: k for shortlist mode; None = list every tool unless the domain has > 128."""
    shortlisting = shortlist is not None or len(env.tools) > MAX_LISTED_TOOLS
    k_default = shortlist or DEFAULT_SHORTLIST_K
    session = env.session()
    active: list[ToolSpec] = []

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        if not shortlisting:
            return types.ListToolsResult(tools=[_mcp_tool(t) for t in env.tools])
        return types.ListToolsResult(tools=[_shortlist_spec(k_default)] + [_mcp_tool(t) for t in active])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = params.arguments or {}
        if shortlisting and params.name == SHORTLIST_TOOL:
            query, k = arguments.get("query"), arguments.get("k", k_default)
            if not isinstance(query, str) or not isinstance(k, int) or not 1 <= k < MAX_LISTED_TOOLS:
                return types.CallToolResult(content=[types.TextContent(text="Error: shortlist_tools needs a string query and 1 <= k < 128")], is_error=True)
            active[:] = env.shortlist(query, k)
            found = [{"name": t.name, "description": t.description, "parameters": t.parameters} for t in active]
            return types.CallToolResult(content=[types.TextContent(text=_text(found))], structured_content={"tools": found})
        result = session.execute(params.name, arguments)
        if not result.ok:
            return types.CallToolResult(content=[types.TextContent(text=f"Error: {result.error}")], is_error=True)
        structured = result.result if isinstance(result.result, dict) else {"result": result.result}
        return types.CallToolResult(content=[types.TextContent(text=_text(result.result))], structured_content=structured)

    return Server(
        f"trajectory-judge-{env.name}",
        version=env.version,
        instructions=f"Tools of the '{env.name}' domain (version {env.version}).",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def serve(
    domain: str,
    transport: Literal["stdio", "http"] = "stdio",
    host: str = "127.0.0.1",
    port: int = 8000,
    shortlist: int | None = None,
    root: Path | None = None,
) -> None:
    """Run until the client disconnects (stdio) or the process is stopped (http, path ``/mcp``)."""
    env = load_environment(domain, root)
    server = build_server(env, shortlist)
    if transport == "stdio":

        async def run() -> None:
            async with stdio_server() as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())

        anyio.run(run)
    elif transport == "http":
        import uvicorn

        app = server.streamable_http_app(host=host)
        uvicorn.run(app, host=host, port=port, log_level="warning")
    else:
        raise ValueError(f"unknown transport {transport!r}: use 'stdio' or 'http'")
