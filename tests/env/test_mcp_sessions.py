"""The MCP HTTP server isolates sessions and requires a bearer token off loopback (issue 10.6).

Two real MCP clients (the official SDK) talk to one server over streamable HTTP at the same time:
each sees only its own writes, and a session's state is dropped when the session ends.
"""

from __future__ import annotations

import json
import time

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from typer.testing import CliRunner

from pipelines.cli import app as cli
from pipelines.env import load_environment
from pipelines.env._mcp import SessionStates, http_app, is_loopback

BOOKING = "B0002"  # confirmed, economy, in the bundled flights domain
TOKEN = "s3cret-token"


def client(url: str, token: str | None = None) -> Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return Client(streamable_http_client(url, http_client=httpx2.AsyncClient(headers=headers, timeout=30)))


async def booking(c: Client) -> dict:
    result = await c.call_tool("get_booking", {"booking_id": BOOKING})
    assert not result.is_error, result.content
    return json.loads(result.content[0].text)


def test_two_concurrent_sessions_never_see_each_others_writes(mcp_server):
    app, url, _port = mcp_server()
    a_changed, b_checked, a_done = anyio.Event(), anyio.Event(), anyio.Event()
    seen: dict[str, object] = {}

    async def agent_a() -> None:
        async with client(url) as c:
            changed = await c.call_tool("change_seat_class", {"booking_id": BOOKING, "seat_class": "business"})
            assert not changed.is_error, changed.content
            a_changed.set()
            await b_checked.wait()
            seen["a_after_b"] = (await booking(c))["seat_class"]
            cancel = await c.call_tool("cancel_booking", {"booking_id": BOOKING})
            seen["a_cancel"] = cancel.is_error
            seen["sessions_while_open"] = len(app.sessions)
            a_done.set()

    async def agent_b() -> None:
        async with client(url) as c:
            await a_changed.wait()
            seen["b_class"] = (await booking(c))["seat_class"]  # A's write is not visible here
            cancel = await c.call_tool("cancel_booking", {"booking_id": BOOKING})
            seen["b_cancel"] = cancel.is_error
            seen["b_status"] = (await booking(c))["status"]
            b_checked.set()
            await a_done.wait()  # stay open while A works on

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(agent_a)
            tg.start_soon(agent_b)

    anyio.run(main)
    assert seen["b_class"] == "economy" and seen["b_cancel"] is False and seen["b_status"] == "cancelled"
    assert seen["a_after_b"] == "business"  # B's cancel did not reach A's copy
    assert seen["a_cancel"] is False  # so A can still cancel its own booking
    assert seen["sessions_while_open"] == 2
    assert len(app.sessions) == 0  # both clients ended their sessions (DELETE): states dropped

    async def fresh() -> None:
        async with client(url) as c:
            b = await booking(c)
            assert (b["seat_class"], b["status"]) == ("economy", "confirmed")

    anyio.run(fresh)  # a new session starts from the domain's own state


def test_token_is_required_on_every_request(mcp_server):
    _app, url, _port = mcp_server(token=TOKEN)

    async def with_token() -> None:
        async with client(url, TOKEN) as c:
            assert (await booking(c))["booking_id"] == BOOKING

    anyio.run(with_token)
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
        response = httpx2.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=headers, timeout=10)
        assert response.status_code == 401 and response.headers["www-authenticate"].startswith("Bearer")
    response = httpx2.delete(url, headers={"mcp-session-id": "whatever"}, timeout=10)
    assert response.status_code == 401


def test_refuses_to_bind_beyond_loopback_without_a_token(monkeypatch):
    monkeypatch.delenv("JUDGE_MCP_TOKEN", raising=False)
    with pytest.raises(ValueError, match="needs a bearer token"):
        http_app(load_environment("olympics"), host="0.0.0.0")
    res = CliRunner().invoke(cli, ["env", "serve", "olympics", "--transport", "http", "--host", "0.0.0.0"])
    assert res.exit_code == 2 and "--token" in res.output and "JUDGE_MCP_TOKEN" in res.output
    assert http_app(load_environment("olympics"), host="0.0.0.0", token=TOKEN) is not None
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost") and not is_loopback("0.0.0.0")


def test_session_states_are_bounded_and_expire():
    env = load_environment("flights")
    states = SessionStates(env, idle_timeout_s=0.05, max_sessions=2)
    a = states.get("a")
    assert states.get("a") is a and states.get(None) is not states.get(None)  # no session: fresh each time
    states.get("b")
    states.get("c")  # over the cap: the least recently used ("a") goes
    assert "a" not in states and len(states) == 2
    time.sleep(0.1)
    states.get("d")  # "b" and "c" idled out
    assert len(states) == 1 and "d" in states
    states.drop("d")
    assert len(states) == 0
