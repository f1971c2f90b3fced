"""The MCP HTTP server under the second hostile sweep (issue 26, item 10).

``judge env serve --host 127.0.0.2`` (or ``0:0:0:0:0:0:0:1``) is loopback, so no token was
required, and the SDK's Host / Origin guard covered only 127.0.0.1, localhost and ::1: a foreign
Host or Origin got 200. One client opening 256 sessions made every later client get 503 for 30
minutes. Now the guard covers every address bound, and sessions are evicted least recently used
first, with a cap per client, never refused.
"""

from __future__ import annotations

import httpx2
import pytest

from pipelines.env import load_environment
from pipelines.env._mcp import SessionGate, SessionStates, allowed_hosts

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "hostile", "version": "1"}},
}
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def test_a_server_on_127_0_0_2_refuses_a_foreign_host_or_origin(mcp_server):
    _app, url, port = mcp_server("127.0.0.2")
    with httpx2.Client(timeout=10) as http:
        assert http.post(url, json=INITIALIZE, headers=HEADERS).status_code == 200  # its own address
        assert http.post(url, json=INITIALIZE, headers={**HEADERS, "host": f"localhost:{port}"}).status_code == 200
        rebound = http.post(url, json=INITIALIZE, headers={**HEADERS, "host": f"evil.example:{port}"})
        assert (rebound.status_code, rebound.text) == (421, "Invalid Host header")
        foreign = http.post(url, json=INITIALIZE, headers={**HEADERS, "origin": "http://evil.example"})
        assert (foreign.status_code, foreign.text) == (403, "Invalid Origin header")
        assert http.post(url, json=INITIALIZE, headers={**HEADERS, "origin": f"http://127.0.0.2:{port}"}).status_code == 200


@pytest.mark.parametrize("host", ["0:0:0:0:0:0:0:1", "::1", "127.0.0.1", "localhost", "10.1.2.3", "0.0.0.0"])
def test_the_host_guard_covers_every_address_a_server_may_bind(host):
    """The gate itself, in front of an app that would answer 200 (no socket needed: an IPv6
    loopback or another machine's address need not be bindable here)."""
    answered: list[int] = []

    async def app(scope, receive, send):
        answered.append(1)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    gate = SessionGate(app, SessionStates(load_environment("flights")), token="t" if host in ("10.1.2.3", "0.0.0.0") else None, hosts=allowed_hosts(host))

    def status(headers: dict[str, str]) -> int:
        import anyio

        sent: list[dict] = []

        async def send(message):
            sent.append(message)

        async def receive():
            return {"type": "http.request", "body": b"", "more_body": False}

        raw = [(k.encode(), v.encode()) for k, v in headers.items()] + [(b"authorization", b"Bearer t")]
        anyio.run(gate, {"type": "http", "method": "GET", "path": "/mcp", "headers": raw}, receive, send)
        return int(sent[0]["status"])

    own = "[0:0:0:0:0:0:0:1]:8000" if host == "0:0:0:0:0:0:0:1" else f"[{host}]:8000" if ":" in host else f"{host}:8000"
    if host != "0.0.0.0":
        assert status({"host": own}) == 200
    assert status({"host": "evil.example:8000"}) == 421 and status({"host": "evil.example"}) == 421 and status({}) == 421
    assert status({"host": "127.0.0.1:8000" if host != "10.1.2.3" else own, "origin": "http://evil.example:8000"}) == 403
    if host in ("0:0:0:0:0:0:0:1", "::1"):
        assert status({"host": "[::1]:8000"}) == 200 and status({"host": "localhost:8000", "origin": "http://[0:0:0:0:0:0:0:1]:8000"}) == 200
    if host == "10.1.2.3":  # another machine's address: loopback names are foreign to it
        assert status({"host": "127.0.0.1:8000"}) == 421


def _open(http: httpx2.Client, url: str) -> httpx2.Response:
    return http.post(url, json=INITIALIZE, headers=HEADERS)


def _alive(http: httpx2.Client, url: str, session: str) -> int:
    return http.post(
        url, json={"jsonrpc": "2.0", "id": 2, "method": "ping"}, headers={**HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-06-18"}
    ).status_code


def test_one_client_opening_many_sessions_evicts_its_own_oldest_and_never_locks_others_out(mcp_server):
    app, url, _port = mcp_server("127.0.0.1", max_sessions=4, max_sessions_per_client=2)
    clients = {ip: httpx2.Client(timeout=10, transport=httpx2.HTTPTransport(local_address=ip)) for ip in ("127.0.0.1", "127.0.0.2", "127.0.0.3")}
    try:
        flood = []
        for _ in range(10):  # one client, far past the caps: every session opens, none is refused
            response = _open(clients["127.0.0.1"], url)
            assert response.status_code == 200, response.text
            flood.append(response.headers["mcp-session-id"])
        assert [_alive(clients["127.0.0.1"], url, s) for s in flood] == [404] * 8 + [200, 200]  # its own oldest went
        others = []
        for ip in ("127.0.0.2", "127.0.0.2"):
            response = _open(clients[ip], url)
            assert response.status_code == 200, response.text
            others.append(response.headers["mcp-session-id"])
        assert [_alive(clients["127.0.0.1"], url, s) for s in flood[-2:]] + [_alive(clients["127.0.0.2"], url, s) for s in others] == [200] * 4
        late = _open(clients["127.0.0.3"], url)  # the server is full: the least recently used session of all goes
        assert late.status_code == 200, late.text
        assert _alive(clients["127.0.0.3"], url, late.headers["mcp-session-id"]) == 200
        alive = [_alive(clients["127.0.0.1"], url, s) for s in flood[-2:]] + [_alive(clients["127.0.0.2"], url, s) for s in others]
        assert alive == [404, 200, 200, 200]  # flood[-2] was used least recently (the pings above ran in this order)
        assert len(app.sessions) <= 4
    finally:
        for c in clients.values():
            c.close()
