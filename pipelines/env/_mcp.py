"""Serve a domain over MCP (official SDK, low-level ``Server``), so any agent can run against the
very environment we grade in.

State and isolation: each MCP session gets its own environment state, a fresh copy when the
session opens (``Environment.session()``: writes go to that session's in-memory database), dropped
when the session ends (the client's DELETE, the idle timeout, or the session cap evicting the
least recently used). An agent's writes are visible to its own later calls, as in the replay, and
never to another client. Over streamable HTTP the session is the SDK's ``Mcp-Session-Id``; the
server advertises only session (handshake-era) protocol versions in ``server/discover`` so that
clients open one. A request without a session (the stateless 2026 protocol) gets a fresh state of
its own, used once. Over stdio the process serves one client: one state.

Authentication: bound to anything but loopback, the HTTP server refuses to start without a bearer
token (``--token`` or ``JUDGE_MCP_TOKEN``) and then requires ``Authorization: Bearer <token>`` on
every request (compared in constant time); on loopback a token is optional and, when given,
required too. Whatever the address bound (127.0.0.2 and 0:0:0:0:0:0:0:1 are loopback too, not only
the SDK's three names), every request's ``Host`` must name that address (on loopback: or
localhost, 127.0.0.1, [::1]; bound to every address: or this machine's names) and an ``Origin``,
when sent, too: a web page that rebinds a DNS name to the server gets 421 / 403, never an answer.

Sessions over HTTP are bounded without ever refusing a newcomer: at most ``max_sessions`` open, at
most ``max_sessions_per_client`` per client address; a new session past either bound ends the
least recently used one (of that client first), as the client's DELETE would. One client opening
hundreds of sessions evicts its own oldest, never locks the others out with 503s.

Domains with more than ``MAX_LISTED_TOOLS`` tools (OpenAI caps a request at 128) are served in
shortlist mode: ``tools/list`` shows a ``shortlist_tools(query, k)`` tool plus the tools the
session's last shortlist selected (BM25 over tool names and descriptions); every domain tool stays
callable by name.
"""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any, Literal

import anyio
import mcp_types as types
import msgspec
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from judge import ToolSpec
from pipelines.env._runtime import Environment, Session, load_environment

TOKEN_ENV = "JUDGE_MCP_TOKEN"
DEFAULT_IDLE_TIMEOUT_S = 30 * 60.0
DEFAULT_MAX_SESSIONS = 256
DEFAULT_MAX_SESSIONS_PER_CLIENT = 64
SESSION_HEADER = "mcp-session-id"
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


class SessionState(msgspec.Struct):
    """What one MCP session has done: its environment session and its last shortlist."""

    session: Session
    active: list[ToolSpec] = msgspec.field(default_factory=list)
    last_used: float = msgspec.field(default_factory=time.monotonic)


class SessionStates:
    """One ``SessionState`` per MCP session id, created on first use and dropped at session end.

    Bounded: states idle longer than ``idle_timeout_s`` (the SDK ends those sessions too) are
    dropped on the next access, and at most ``max_sessions`` are kept (least recently used first out).
    """

    def __init__(self, env: Environment, idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S, max_sessions: int = DEFAULT_MAX_SESSIONS):
        self.env = env
        self.idle_timeout_s = idle_timeout_s
        self.max_sessions = max_sessions
        self._states: OrderedDict[str, SessionState] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, session_id: str | None) -> SessionState:
        if session_id is None:  # no session: a fresh state for this one request
            return SessionState(self.env.session())
        now = time.monotonic()
        with self._lock:
            self._expire(now)
            state = self._states.get(session_id)
            if state is None:
                state = self._states[session_id] = SessionState(self.env.session())
                while len(self._states) > self.max_sessions:
                    self._states.popitem(last=False)
            self._states.move_to_end(session_id)
            state.last_used = now
            return state

    def drop(self, session_id: str) -> None:
        with self._lock:
            self._states.pop(session_id, None)

    def _expire(self, now: float) -> None:
        while self._states:
            oldest = next(iter(self._states.values()))
            if now - oldest.last_used <= self.idle_timeout_s:
                return
            self._states.popitem(last=False)

    def __len__(self) -> int:
        return len(self._states)

    def __contains__(self, session_id: object) -> bool:
        return session_id in self._states


def _session_id(ctx: Any) -> str | None:
    request = getattr(ctx, "request", None)
    headers = getattr(request, "headers", None)
    return headers.get(SESSION_HEADER) if headers is not None else None


def build_server(env: Environment, shortlist: int | None = None, sessions: SessionStates | None = None) -> Server[Any]:
    """``shortlist``: k for shortlist mode; None = list every tool unless the domain has > 128.

    ``sessions``: per-session states keyed by the HTTP session id; None (stdio, in-process) = the
    server serves one client, with one state.
    """
    shortlisting = shortlist is not None or len(env.tools) > MAX_LISTED_TOOLS
    k_default = shortlist or DEFAULT_SHORTLIST_K
    single = SessionState(env.session()) if sessions is None else None

    def state_for(ctx: Any) -> SessionState:
        if single is not None:
            return single
        assert sessions is not None
        return sessions.get(_session_id(ctx))

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        if not shortlisting:
            return types.ListToolsResult(tools=[_mcp_tool(t) for t in env.tools])
        return types.ListToolsResult(tools=[_shortlist_spec(k_default)] + [_mcp_tool(t) for t in state_for(ctx).active])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = params.arguments or {}
        state = state_for(ctx)
        if shortlisting and params.name == SHORTLIST_TOOL:
            query, k = arguments.get("query"), arguments.get("k", k_default)
            if not isinstance(query, str) or not isinstance(k, int) or not 1 <= k < MAX_LISTED_TOOLS:
                return types.CallToolResult(content=[types.TextContent(text="Error: shortlist_tools needs a string query and 1 <= k < 128")], is_error=True)
            state.active[:] = env.shortlist(query, k)
            found = [{"name": t.name, "description": t.description, "parameters": t.parameters} for t in state.active]
            return types.CallToolResult(content=[types.TextContent(text=_text(found))], structured_content={"tools": found})
        result = state.session.execute(params.name, arguments)
        if not result.ok:
            return types.CallToolResult(content=[types.TextContent(text=f"Error: {result.error}")], is_error=True)
        structured = result.result if isinstance(result.result, dict) else {"result": result.result}
        return types.CallToolResult(content=[types.TextContent(text=_text(result.result))], structured_content=structured)

    server: Server[Any] = Server(
        f"trajectory-judge-{env.name}",
        version=env.version,
        instructions=f"Tools of the '{env.name}' domain (version {env.version}).",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    if sessions is not None:

        async def discover(ctx: Any, params: types.RequestParams) -> types.DiscoverResult:
            # sessions carry the state: advertise only the session (handshake-era) protocol
            return types.DiscoverResult(
                supported_versions=list(HANDSHAKE_PROTOCOL_VERSIONS),
                capabilities=server.get_capabilities(protocol_version=ctx.protocol_version),
                instructions=server.instructions,
            )

        server.add_request_handler("server/discover", types.RequestParams, discover)
    return server


Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]


class SessionGate:
    """ASGI wrapper around the SDK's app: the Host / Origin guard and the bearer token on every
    HTTP request, the session bounds (least recently used out, see the module docstring), and the
    end of a session (the client's DELETE, or an eviction) dropping that session's state."""

    def __init__(
        self,
        app: ASGIApp,
        sessions: SessionStates,
        token: str | None,
        hosts: frozenset[str] | None = None,
        max_per_client: int = DEFAULT_MAX_SESSIONS_PER_CLIENT,
    ):
        self.app = app
        self.sessions = sessions
        self.hosts = hosts  # the names a Host / Origin may give (None: no guard, for in-process use)
        self.max_per_client = max_per_client
        self._expected = f"Bearer {token}".encode() if token else None
        self._open: OrderedDict[str, tuple[str, float]] = OrderedDict()  # session id -> (client, last used), least recent first

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        if self.hosts is not None:
            refused = _foreign(headers, self.hosts)
            if refused is not None:
                await _plain(send, *refused)
                return
        if self._expected is not None and not hmac.compare_digest(headers.get(b"authorization", b""), self._expected):
            await _unauthorized(send)
            return
        raw_id = headers.get(SESSION_HEADER.encode())
        session_id = raw_id.decode("latin-1") if raw_id else None
        ending = session_id if session_id is not None and scope.get("method") == "DELETE" else None
        if ending is not None:
            self._open.pop(ending, None)
            self.sessions.drop(ending)  # before the answer reaches the client
        elif session_id is not None:
            if session_id in self._open:
                self._open[session_id] = (self._open[session_id][0], time.monotonic())
                self._open.move_to_end(session_id)
        elif scope.get("method") == "POST":  # may open a session: make room first
            client = str((scope.get("client") or ("?",))[0])
            await self._make_room(scope, client)
            send = self._recording(send, client)
        await self.app(scope, receive, send)
        if ending is not None:
            self.sessions.drop(ending)  # and whatever a request still in flight re-created

    def _recording(self, send: Any, client: str) -> Any:
        """``send``, noting the session the SDK opens in its answer."""

        async def recording(message: Any) -> None:
            if message.get("type") == "http.response.start" and message.get("status", 500) < 400:
                opened = dict(message.get("headers") or []).get(SESSION_HEADER.encode())
                if opened:
                    self._open[opened.decode("latin-1")] = (client, time.monotonic())
            await send(message)

        return recording

    async def _make_room(self, scope: Scope, client: str) -> None:
        now = time.monotonic()
        for sid, (_, used) in list(self._open.items()):  # the SDK ended those itself (idle timeout)
            if now - used > self.sessions.idle_timeout_s:
                self._open.pop(sid, None)
        mine = [sid for sid, (who, _) in self._open.items() if who == client]
        while len(mine) >= self.max_per_client:
            await self._evict(scope, mine.pop(0))
        while len(self._open) >= self.sessions.max_sessions:
            await self._evict(scope, next(iter(self._open)))

    async def _evict(self, scope: Scope, session_id: str) -> None:
        """End a session as its client's DELETE would (through the SDK's own handling of one)."""
        self._open.pop(session_id, None)
        self.sessions.drop(session_id)
        headers = [(k, v) for k, v in scope.get("headers") or [] if k in (b"host", b"authorization")]
        delete = dict(scope, method="DELETE", headers=[*headers, (SESSION_HEADER.encode(), session_id.encode("latin-1"))], query_string=b"")

        async def nothing() -> Any:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def discard(_message: Any) -> None:
            return None

        await self.app(delete, nothing, discard)


def allowed_hosts(host: str) -> frozenset[str]:
    """The names a request's Host (or Origin) may give for a server bound to ``host``."""
    names = {_host_name(host)}
    wildcard = host in ("", "0.0.0.0", "::", "[::]")
    if is_loopback(host) or wildcard:
        names |= {"localhost", "127.0.0.1", "[::1]"}
    if wildcard:
        import socket

        hostname = socket.gethostname()
        names |= {hostname.lower(), socket.getfqdn().lower()}
        with contextlib.suppress(OSError):  # a host name that does not resolve: its names above only
            names |= {_host_name(str(info[4][0])) for info in socket.getaddrinfo(hostname, None)}
    return frozenset(names)


def _host_name(text: str) -> str:
    """A host as compared: lower case, an IP address in its canonical form, IPv6 in brackets."""
    bare = text.strip().lower().removeprefix("[").removesuffix("]")
    try:
        ip = ipaddress.ip_address(bare.split("%", 1)[0])
    except ValueError:
        return bare
    return f"[{ip.compressed}]" if ip.version == 6 else ip.compressed


def _authority_host(authority: str) -> str:
    """The host of ``host[:port]`` / ``[v6]:port``."""
    if authority.startswith("["):
        return _host_name(authority.split("]", 1)[0] + "]")
    return _host_name(authority.rsplit(":", 1)[0] if authority.count(":") == 1 else authority)


def _foreign(headers: dict[bytes, bytes], hosts: frozenset[str]) -> tuple[int, str] | None:
    """(status, message) when the Host or Origin names another server (DNS rebinding), else None."""
    host = headers.get(b"host", b"").decode("latin-1")
    if not host or _authority_host(host) not in hosts:
        return 421, "Invalid Host header"
    origin = headers.get(b"origin", b"").decode("latin-1")
    if origin:
        scheme, _, rest = origin.partition("://")
        if scheme not in ("http", "https") or _authority_host(rest.split("/", 1)[0]) not in hosts:
            return 403, "Invalid Origin header"
    return None


async def _plain(send: Any, status: int, text: str) -> None:
    body = text.encode()
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


async def _unauthorized(send: Any) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": "Unauthorized: a bearer token is required"}}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"www-authenticate", b'Bearer realm="trajectory-judge"'),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def http_app(env: Environment, host: str = "127.0.0.1", token: str | None = None, shortlist: int | None = None, **limits: Any) -> SessionGate:
    """The streamable-HTTP ASGI app (path ``/mcp``) with per-session states and the token gate.

    Raises ``ValueError`` when ``host`` is not loopback and no token is given.
    """
    if not token and not is_loopback(host):
        raise ValueError(f"binding {host} (not loopback) needs a bearer token: pass --token or set {TOKEN_ENV}")
    per_client = limits.pop("max_sessions_per_client", DEFAULT_MAX_SESSIONS_PER_CLIENT)
    sessions = SessionStates(env, **limits)
    server = build_server(env, shortlist, sessions)
    app = server.streamable_http_app(
        host=host,
        session_idle_timeout=sessions.idle_timeout_s,
        max_sessions=None,  # the gate bounds sessions, evicting instead of answering 503
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),  # the gate guards Host / Origin, for every address
    )
    return SessionGate(app, sessions, token, hosts=allowed_hosts(host), max_per_client=min(per_client, sessions.max_sessions))


def serve(
    domain: str,
    transport: Literal["stdio", "http"] = "stdio",
    host: str = "127.0.0.1",
    port: int = 8000,
    shortlist: int | None = None,
    root: Path | None = None,
    token: str | None = None,
) -> None:
    """Run until the client disconnects (stdio) or the process is stopped (http, path ``/mcp``)."""
    env = load_environment(domain, root)
    if transport == "stdio":
        server = build_server(env, shortlist)

        async def run() -> None:
            async with stdio_server() as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())

        anyio.run(run)
    elif transport == "http":
        import uvicorn

        app = http_app(env, host=host, token=token, shortlist=shortlist)
        uvicorn.run(app, host=host, port=port, log_level="warning")
    else:
        raise ValueError(f"unknown transport {transport!r}: use 'stdio' or 'http'")
