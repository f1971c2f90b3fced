"""An MCP client from the official SDK lists and calls our tools over stdio and streamable HTTP."""

from __future__ import annotations

import json
import sys

import anyio
from mcp import Client, StdioServerParameters

from pipelines.env import load_environment
from pipelines.env._mcp import SHORTLIST_TOOL, build_server
from tests.env.conftest import REPO
from tests.servers.mcp_http import serve_http


async def _exercise(client: Client) -> None:
    listed = await client.list_tools()
    names = [t.name for t in listed.tools]
    env = load_environment("olympics")
    assert names == [t.name for t in env.tools]
    spec = next(t for t in listed.tools if t.name == "get_games_by_year")
    assert spec.input_schema == env.tool("get_games_by_year").parameters
    result = await client.call_tool("get_games_by_year", {"year": 2008})
    assert not result.is_error and json.loads(result.content[0].text)["host_city"] == "Beijing"
    chained = await client.call_tool("get_data", {"table": "games"})
    handle = json.loads(chained.content[0].text)["data"]
    count = await client.call_tool("aggregate_data", {"data_source": handle, "key_name": "host_city", "aggregation_type": "count"})
    assert json.loads(count.content[0].text) == {"data": 7}
    bad = await client.call_tool("get_games_by_year", {"year": "x'; DROP TABLE games; --"})
    assert bad.is_error and "invalid arguments" in bad.content[0].text
    unknown = await client.call_tool("launch_rockets", {})
    assert unknown.is_error and "unknown tool" in unknown.content[0].text


def test_stdio_transport():
    params = StdioServerParameters(command=sys.executable, args=["-m", "pipelines.env", "serve", "olympics"], cwd=str(REPO))

    async def main() -> None:
        async with Client(params) as client:
            await _exercise(client)

    anyio.run(main)


def test_http_transport():
    with serve_http("olympics") as url:

        async def main() -> None:
            async with Client(url) as client:
                await _exercise(client)

        anyio.run(main)


def test_shortlist_mode_for_large_domains():
    env = load_environment("retail")
    assert len(env.tools) < 128  # shortlist forced here; automatic above 128 tools
    server = build_server(env, shortlist=4)

    async def main() -> None:
        async with Client(server) as client:
            assert [t.name for t in (await client.list_tools()).tools] == [SHORTLIST_TOOL]
            found = await client.call_tool(SHORTLIST_TOOL, {"query": "average order value for a store", "k": 4})
            names = [t["name"] for t in json.loads(found.content[0].text)]
            assert "average_order_value_by_store_id" in names and len(names) == 4
            listed = [t.name for t in (await client.list_tools()).tools]
            assert listed == [SHORTLIST_TOOL] + names
            ok = await client.call_tool("count_orders_by_status", {"status": "shipped"})  # callable even if not listed
            assert not ok.is_error and "count" in json.loads(ok.content[0].text)

    anyio.run(main)


def test_writes_persist_within_one_server_session():
    server = build_server(load_environment("flights"))

    async def main() -> None:
        async with Client(server) as client:
            before = json.loads((await client.call_tool("get_booking", {"booking_id": "B0002"})).content[0].text)["checked_bags"]
            await client.call_tool("add_checked_bag", {"booking_id": "B0002"})
            after = json.loads((await client.call_tool("get_booking", {"booking_id": "B0002"})).content[0].text)["checked_bags"]
            assert after == before + 1

    anyio.run(main)
    fresh = load_environment("flights").session().execute("get_booking", {"booking_id": "B0002"})
    assert fresh.ok  # the domain itself is untouched by the served session
