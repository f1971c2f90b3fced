"""A scripted loopback server speaking the OpenAI Chat Completions and Anthropic Messages wire formats.

Why: the real ``openai``/``anthropic`` SDKs and ``instructor`` must run end to end in tests without
touching the internet. Each request is answered by the next scripted action for its model (then by
the model's default action), and every request is recorded so tests can count calls.

Routes: ``POST /v1/chat/completions`` (OpenAI wire, ``tool_calls``) and ``POST /v1/messages``
(Anthropic wire, ``tool_use`` blocks). The tool name in a reply is the one the request declared, as
a real model does under a forced ``tool_choice``. The batch endpoints of both wire formats (files,
batches, message batches) are ``tests/servers/batches.py`` (``srv.batches``); a request inside a
batch is answered by the same scripted actions.
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Reply:
    """A well-formed verdict tool call with these arguments (label plus the usual verdict fields)."""

    label: str
    rationale: str = "scripted"
    evidence: tuple[str, ...] = ()
    confidence: Any = 0.9  # as the model wrote it: 0.9, or 78, 4.56, "high" (the reader repairs those)
    input_tokens: int = 100
    output_tokens: int = 20
    model_version: str | None = None  # defaults to "<model>-2026-01-01"
    decisive_step: int | None = None  # a verdict on calls may name the step where it went wrong
    # (block, text) the verdict rests on. None: copied from the request as a grader would (the gold
    # answers, then the blocks' texts), where the request's verdict schema has the field; () none
    quotes: tuple[tuple[str, str], ...] | None = None
    candidate_answer: str | None = None  # the value copied from the answer; None: the answer's first sentence's value, where asked

    def arguments(self, body: dict[str, Any] | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"label": self.label, "rationale": self.rationale, "evidence": list(self.evidence), "confidence": self.confidence}
        if self.decisive_step is not None:
            out["decisive_step"] = self.decisive_step
        fields = _schema_fields(body or {})
        if self.quotes is not None:
            out["quotes"] = [{"source": source, "text": text} for source, text in self.quotes]
        elif "quotes" in fields:
            out["quotes"] = _copied_quotes(body or {})
        if self.candidate_answer is not None:
            out["candidate_answer"] = self.candidate_answer
        elif "candidate_answer" in fields:
            from tests.servers.graders import extract_answer, material_of

            out["candidate_answer"] = extract_answer(material_of(_messages(body or {})).get("answer"))
        return out

    @classmethod
    def of(cls, arguments: dict[str, Any]) -> Reply:
        """The reply carrying a grader's verdict arguments (``tests/servers/graders.py``)."""
        quotes = arguments.get("quotes")
        return cls(
            label=arguments["label"],
            rationale=arguments.get("rationale", "scripted"),
            evidence=tuple(arguments.get("evidence") or ()),
            confidence=arguments.get("confidence", 0.9),
            quotes=None if quotes is None else tuple((q["source"], q["text"]) for q in quotes),
            candidate_answer=arguments.get("candidate_answer"),
        )


@dataclass(frozen=True)
class Sparse:
    """``reply``, from a server that leaves out fields OpenAI always sends (``object``,
    ``created``, ``usage``) and adds its own: as some OpenAI-compatible servers answer."""

    reply: Reply


@dataclass(frozen=True)
class Status:
    """An HTTP error status, optionally with a Retry-After header (seconds, as text), the
    provider's error code in the body (``insufficient_quota``) and an ``x-should-retry`` header."""

    code: int
    retry_after: str | None = None
    message: str = "scripted error"
    error_code: str | None = None
    should_retry: str | None = None


@dataclass(frozen=True)
class Delay:
    """Sleep before answering with ``then`` (a delay beyond the client's timeout)."""

    seconds: float
    then: Any = None


@dataclass(frozen=True)
class MalformedBody:
    """A 200 response whose body is not JSON at all."""


@dataclass(frozen=True)
class MalformedArguments:
    """A well-formed response whose tool arguments are not valid JSON for the schema."""

    arguments: str = '{"label": "correct", "rationale": '


@dataclass(frozen=True)
class RawArguments:
    """A verdict tool call whose arguments are ``text`` exactly as a model wrote it, raw control
    characters inside its strings and all (a llama.cpp grammar lets them through). OpenAI wire:
    the ``arguments`` string itself; Anthropic wire (whose tool input is a JSON object): the text
    read as Python's lenient JSON reader reads it."""

    text: str
    input_tokens: int = 100
    output_tokens: int = 20


@dataclass(frozen=True)
class Refusal:
    """The provider-native refusal: OpenAI ``message.refusal``; Anthropic ``stop_reason: refusal``."""

    text: str = "I can't help with grading this."


@dataclass(frozen=True)
class NoToolCall:
    """Plain assistant text and no tool call (a model that declined to use the verdict tool)."""

    text: str = "I will not answer in that format."


@dataclass
class RecordedRequest:
    path: str
    model: str | None
    body: dict[str, Any] | None
    headers: dict[str, str] = field(default_factory=dict)
    method: str = "POST"


class LoopbackServer:
    """``with LoopbackServer() as srv:`` starts on a free port; ``srv.openai_base_url`` etc."""

    def __init__(self, default: Any = None, latency_s: float = 0.0):
        self._lock = threading.Lock()
        self._scripts: dict[str, deque] = defaultdict(deque)
        self._defaults: dict[str, Any] = {}
        self._responders: dict[str, Any] = {}
        self._default = default if default is not None else Reply("correct")
        self.latency_s = latency_s
        self.requests: list[RecordedRequest] = []
        self.in_flight = 0
        self.max_in_flight = 0  # most requests being answered at once (checks concurrency limits)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        from tests.servers.batches import BatchBook

        self.batches = BatchBook(self)

    # --- scripting -------------------------------------------------------------------------
    def script(self, model: str, *actions: Any) -> LoopbackServer:
        with self._lock:
            self._scripts[model].extend(actions)
        return self

    def set_default(self, model: str, action: Any) -> LoopbackServer:
        with self._lock:
            self._defaults[model] = action
        return self

    def set_responder(self, model: str, responder: Any) -> LoopbackServer:
        """``responder(body) -> action``: answer by request content (after any scripted actions)."""
        with self._lock:
            self._responders[model] = responder
        return self

    def calls(self, model: str | None = None, path: str | None = None) -> int:
        with self._lock:
            return sum(1 for r in self.requests if (model is None or r.model == model) and (path is None or r.path == path))

    def reset_log(self) -> None:
        with self._lock:
            self.requests.clear()

    def _next_action(self, model: str | None, body: Any) -> Any:
        with self._lock:
            queue = self._scripts.get(model or "")
            if queue:
                return queue.popleft()
            responder = self._responders.get(model or "")
            if responder is None:
                return self._defaults.get(model or "", self._default)
        return responder(body)

    # --- lifecycle -------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "server not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def openai_base_url(self) -> str:
        return self.base_url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.base_url

    def start(self) -> LoopbackServer:
        server = self

        class Handler(_Handler):
            owner = server

        self._httpd = _Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # listen backlog: 32+ clients connect at once in the bench


class _Handler(BaseHTTPRequestHandler):
    owner: LoopbackServer
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out as separate writes: no 40 ms delayed-ACK stall

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        path = self.path.split("?")[0]
        with self.owner._lock:
            self.owner.requests.append(RecordedRequest(path=path, model=None, body=None, headers={k.lower(): v for k, v in self.headers.items()}, method="GET"))
        self._batch_route("GET", path, b"") or self._send(404, {"error": {"message": f"no route {path}"}})

    def _batch_route(self, method: str, path: str, raw: bytes) -> bool:
        answer = self.owner.batches.handle(method, path, self.headers, raw)
        if answer is None:
            return False
        code, payload, ctype = answer
        if isinstance(payload, bytes):
            self._send_raw(code, payload, ctype)
        else:
            self._send(code, payload)
        return True

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            body = None
        model = body.get("model") if isinstance(body, dict) else None
        path = self.path.split("?")[0]
        with self.owner._lock:
            self.owner.requests.append(RecordedRequest(path=path, model=model, body=body, headers={k.lower(): v for k, v in self.headers.items()}))
        if path not in ("/v1/chat/completions", "/v1/messages"):
            if self._batch_route("POST", path, raw):
                return
            self._send(404, {"error": {"message": f"no route {path}"}})
            return
        action = self.owner._next_action(model, body)
        with self.owner._lock:
            self.owner.in_flight += 1
            self.owner.max_in_flight = max(self.owner.max_in_flight, self.owner.in_flight)
        try:
            if self.owner.latency_s:
                time.sleep(self.owner.latency_s)
            self._answer(path, body or {}, action)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout); nothing to answer
        finally:
            with self.owner._lock:
                self.owner.in_flight -= 1

    def _answer(self, path: str, body: dict[str, Any], action: Any) -> None:
        while isinstance(action, Delay):
            time.sleep(action.seconds)
            action = action.then if action.then is not None else Reply("correct")
        if isinstance(action, Status):
            headers = {"Retry-After": action.retry_after} if action.retry_after is not None else {}
            if action.should_retry is not None:
                headers["x-should-retry"] = action.should_retry
            error: dict[str, Any] = {"type": "scripted", "message": action.message}
            if action.error_code is not None:
                error["code"] = action.error_code
            self._send(action.code, {"type": "error", "error": error}, headers)
            return
        if isinstance(action, MalformedBody):
            self._send_raw(200, b'{"id": "broken", "choices": [', "application/json")
            return
        openai = path == "/v1/chat/completions"
        if isinstance(action, Sparse):
            payload = _openai_payload(body, action.reply) if openai else _anthropic_payload(body, action.reply)
            for name in ("object", "created", "usage"):
                payload.pop(name, None)
            payload["server_quirk"] = {"engine": "loopback"}
            self._send(200, payload)
            return
        if hasattr(action, "payload"):  # actions that build their own reply (the scripted agents of tests/servers/agent.py)
            self._send(200, action.payload(body, openai))
            return
        payload = _openai_payload(body, action) if openai else _anthropic_payload(body, action)
        self._send(200, payload)

    def _send(self, code: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        self._send_raw(code, json.dumps(payload).encode(), "application/json", headers)

    def _send_raw(self, code: int, data: bytes, ctype: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()


def _schema_fields(body: dict[str, Any]) -> list[str]:
    """The verdict schema's fields, as the request declares its tool (either wire)."""
    tools = body.get("tools") or [{}]
    schema = (tools[0].get("function") or {}).get("parameters") or tools[0].get("input_schema") or {}
    return list(schema.get("properties") or {})


def _messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The request's messages with the user message first among them (either wire)."""
    return [m for m in body.get("messages") or [] if m.get("role") == "user"] or [{"role": "user", "content": ""}]


def _copied_quotes(body: dict[str, Any]) -> list[dict[str, str]]:
    from tests.servers.graders import material_of, strings

    material = material_of(_messages(body))
    gold = [{"source": "gold_answers", "text": leaf[:200]} for leaf in strings(material.get("gold_answers"))]
    texts = [{"source": name, "text": leaf[:200]} for name, value in material.items() if name != "gold_answers" for leaf in _texts(value)]
    return (gold + texts)[:8]


def _texts(value: Any) -> list[str]:
    """The string leaves of a JSON value (numbers and keys left out)."""
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, dict):
        return [t for v in value.values() for t in _texts(v)]
    if isinstance(value, list):
        return [t for v in value for t in _texts(v)]
    return []


def _tool_name(body: dict[str, Any], openai: bool) -> str:
    tools = body.get("tools") or []
    if not tools:
        return "Verdict"
    first = tools[0]
    return (first.get("function") or {}).get("name", "Verdict") if openai else first.get("name", "Verdict")


def _version(body: dict[str, Any], action: Any) -> str:
    return getattr(action, "model_version", None) or f"{body.get('model', 'model')}-2026-01-01"


def _openai_payload(body: dict[str, Any], action: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": None}
    finish = "tool_calls"
    usage_in, usage_out = getattr(action, "input_tokens", 50), getattr(action, "output_tokens", 10)
    if isinstance(action, Reply):
        args = json.dumps(action.arguments(body))
    elif isinstance(action, MalformedArguments | RawArguments):
        args = action.arguments if isinstance(action, MalformedArguments) else action.text
    else:
        args = None
    if args is not None:
        message["tool_calls"] = [{"id": "call_1", "type": "function", "function": {"name": _tool_name(body, True), "arguments": args}}]
    elif isinstance(action, Refusal):
        message["refusal"] = action.text
        finish = "stop"
    elif isinstance(action, NoToolCall):
        message["content"] = action.text
        finish = "stop"
    else:
        raise TypeError(f"unknown action {action!r}")
    return {
        "id": "chatcmpl-loopback",
        "object": "chat.completion",
        "created": 1767225600,
        "model": _version(body, action),
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {"prompt_tokens": usage_in, "completion_tokens": usage_out, "total_tokens": usage_in + usage_out},
    }


def _anthropic_payload(body: dict[str, Any], action: Any) -> dict[str, Any]:
    usage_in, usage_out = getattr(action, "input_tokens", 50), getattr(action, "output_tokens", 10)
    stop = "tool_use"
    if isinstance(action, Reply):
        content = [{"type": "tool_use", "id": "toolu_1", "name": _tool_name(body, False), "input": action.arguments(body)}]
    elif isinstance(action, MalformedArguments):
        # Anthropic sends parsed input objects; the closest malformation is an input that fails the schema.
        content = [{"type": "tool_use", "id": "toolu_1", "name": _tool_name(body, False), "input": {"label": 17, "rationale": None}}]
    elif isinstance(action, RawArguments):
        content = [{"type": "tool_use", "id": "toolu_1", "name": _tool_name(body, False), "input": json.loads(action.text, strict=False)}]
    elif isinstance(action, Refusal):
        content = [{"type": "text", "text": action.text}]
        stop = "refusal"
    elif isinstance(action, NoToolCall):
        content = [{"type": "text", "text": action.text}]
        stop = "end_turn"
    else:
        raise TypeError(f"unknown action {action!r}")
    return {
        "id": "msg_loopback",
        "type": "message",
        "role": "assistant",
        "model": _version(body, action),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": usage_in, "output_tokens": usage_out},
    }
