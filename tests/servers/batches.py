"""The batch endpoints of both wire formats, for the loopback server (``LoopbackServer.batches``).

OpenAI: ``POST /v1/files`` (multipart upload, purpose ``batch``), ``POST /v1/batches``,
``GET /v1/batches/{id}``, ``POST /v1/batches/{id}/cancel``, ``GET /v1/files/{id}/content``
(output and error files). Anthropic: ``POST /v1/messages/batches``,
``GET /v1/messages/batches/{id}``, ``POST /v1/messages/batches/{id}/cancel``,
``GET /v1/messages/batches/{id}/results`` (JSONL at the batch's ``results_url``).

Each batch follows a ``BatchPlan``: it stays running for ``polls`` retrieves, then ends
``completed`` (every request answered), ``expired`` or ``cancelled`` (the first ``answer``
requests answered, the rest not), or ``failed`` (OpenAI: the batch is rejected, no request runs;
Anthropic, which has no failed batch: every request errors). A request is answered by the same
scripted action, and with the same response body, as the online route would answer it; the
input is validated as the providers do (one model and one endpoint per OpenAI batch, unique
``custom_id`` of 1-64 ``[A-Za-z0-9_-]``), so a malformed batch fails here as it would there.
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import re
import threading
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.servers.loopback import LoopbackServer

CREATED = 1767225600  # fixed clock: 2026-01-01
CUSTOM_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass(frozen=True)
class BatchPlan:
    polls: int = 1  # retrieves answered "still running" before the batch ends
    end: str = "completed"  # completed | expired | cancelled | failed
    answer: int = 0  # expired / cancelled: how many requests (in file order) were answered first
    failure: str = "scripted batch failure"


@dataclass
class _Batch:
    id: str
    api: str  # openai | anthropic
    requests: list[tuple[str, dict[str, Any]]]  # (custom_id, body)
    plan: BatchPlan
    input_file_id: str | None = None
    metadata: dict[str, Any] | None = None
    state: str = "validating"
    polls: int = 0
    cancel_requested: bool = False
    output_file_id: str | None = None
    error_file_id: str | None = None
    results: bytes = b""
    counts: dict[str, int] = field(default_factory=dict)
    errors: list[dict[str, Any]] = field(default_factory=list)


class BatchBook:
    """Files and batches held by one loopback server."""

    def __init__(self, owner: LoopbackServer):
        self.owner = owner
        self._lock = threading.Lock()
        self._finishing = threading.Lock()  # one retrieve at a time may end a batch
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, _Batch] = {}
        self.plans: deque[BatchPlan] = deque()
        self.default_plan = BatchPlan()
        self.answered: Counter[str] = Counter()  # model -> requests answered inside batches
        self.created: list[str] = []  # batch ids, in creation order
        self.refuse: deque[int | None] = deque()  # HTTP statuses the next batch creations answer with (None: accept)

    # --- scripting ----------------------------------------------------------------------------
    def plan(self, *plans: BatchPlan) -> BatchBook:
        """The plans of the next batches created, in order (then ``default_plan``)."""
        with self._lock:
            self.plans.extend(plans)
        return self

    def refuse_next(self, *statuses: int) -> BatchBook:
        """The next batch creations (either wire format) fail with these HTTP statuses."""
        with self._lock:
            self.refuse.extend(statuses)
        return self

    def request_count(self, batch_id: str) -> int:
        return len(self.batches[batch_id].requests)

    # --- routing ------------------------------------------------------------------------------
    def handle(self, method: str, path: str, headers: Any, raw: bytes) -> tuple[int, Any, str] | None:
        """(status, payload, content type) for a batch route; None: not a batch route."""
        parts = path.strip("/").split("/")
        if parts[:2] != ["v1", "files"] and parts[:2] != ["v1", "batches"] and parts[:3] != ["v1", "messages", "batches"]:
            return None
        if method == "POST" and parts == ["v1", "files"]:
            return self._upload(headers, raw)
        if method == "GET" and len(parts) == 4 and parts[:2] == ["v1", "files"] and parts[3] == "content":
            data = self.files.get(parts[2])
            return (200, data, "application/octet-stream") if data is not None else _not_found(path)
        creating = method == "POST" and parts in (["v1", "batches"], ["v1", "messages", "batches"])
        with self._lock:
            refused = self.refuse.popleft() if creating and self.refuse else None  # None: this one is accepted
        if refused is not None:
            return refused, {"type": "error", "error": {"type": "invalid_request_error", "message": f"scripted refusal ({refused})"}}, "application/json"
        if method == "POST" and parts == ["v1", "batches"]:
            return self._create_openai(_json(raw))
        if parts[:2] == ["v1", "batches"] and len(parts) >= 3:
            return self._batch_route(method, parts[2], parts[3:], "openai")
        if method == "POST" and parts == ["v1", "messages", "batches"]:
            return self._create_anthropic(_json(raw))
        if parts[:3] == ["v1", "messages", "batches"] and len(parts) >= 4:
            return self._batch_route(method, parts[3], parts[4:], "anthropic")
        return _not_found(path)

    def _batch_route(self, method: str, batch_id: str, rest: list[str], api: str) -> tuple[int, Any, str]:
        with self._lock:
            batch = self.batches.get(batch_id)
        if batch is None or batch.api != api:
            return _not_found(batch_id)
        if method == "GET" and not rest:
            self._advance(batch)
            return 200, self._describe(batch), "application/json"
        if method == "POST" and rest == ["cancel"]:
            with self._lock:
                batch.cancel_requested = True
                if batch.state in ("validating", "in_progress"):
                    batch.state = "cancelling" if api == "openai" else "canceling"
            return 200, self._describe(batch), "application/json"
        if method == "GET" and rest == ["results"] and api == "anthropic":
            if batch.state != "ended":
                return 400, {"type": "error", "error": {"type": "invalid_request_error", "message": "batch has not ended"}}, "application/json"
            return 200, batch.results, "application/x-jsonl"
        return _not_found("/".join(rest))

    # --- OpenAI -------------------------------------------------------------------------------
    def _upload(self, headers: Any, raw: bytes) -> tuple[int, Any, str]:
        ctype = headers.get("Content-Type", "")
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(b"Content-Type: " + ctype.encode() + b"\r\n\r\n" + raw)
        fields: dict[str, bytes] = {}
        for part in message.iter_parts() if message.is_multipart() else []:
            name = part.get_param("name", header="content-disposition")
            fields[str(name)] = part.get_payload(decode=True) or b""
        if "file" not in fields or fields.get("purpose") != b"batch":
            return 400, {"error": {"message": "expected a multipart upload with a file and purpose=batch", "type": "invalid_request_error"}}, "application/json"
        file_id = self._store(fields["file"])
        return 200, _file(file_id, fields["file"], "input.jsonl", "batch"), "application/json"

    def _store(self, data: bytes) -> str:
        with self._lock:
            file_id = f"file-{len(self.files) + 1:04d}"
            self.files[file_id] = data
        return file_id

    def _create_openai(self, body: Any) -> tuple[int, Any, str]:
        if not isinstance(body, dict) or body.get("completion_window") != "24h" or body.get("endpoint") != "/v1/chat/completions":
            return (
                400,
                {"error": {"message": "endpoint /v1/chat/completions and completion_window 24h are required", "type": "invalid_request_error"}},
                "application/json",
            )
        data = self.files.get(str(body.get("input_file_id")))
        if data is None:
            return 404, {"error": {"message": "no such input file", "type": "invalid_request_error"}}, "application/json"
        requests, errors = [], []
        models, ids = set(), set()
        for n, line in enumerate(data.splitlines(), 1):
            if not line.strip():
                continue
            item = json.loads(line)
            cid = item.get("custom_id")
            if item.get("method") != "POST" or item.get("url") != "/v1/chat/completions" or not isinstance(cid, str) or cid in ids:
                errors.append({"code": "invalid_request", "line": n, "message": "each line needs a unique custom_id, method POST and url /v1/chat/completions"})
                continue
            ids.add(cid)
            models.add((item.get("body") or {}).get("model"))
            requests.append((cid, item.get("body") or {}))
        if len(models) > 1:
            errors.append({"code": "mixed_models", "line": None, "message": f"a batch may use one model only, got {sorted(map(str, models))}"})
        batch = self._new("openai", requests, body.get("input_file_id"), body.get("metadata"))
        if errors:
            batch.plan = BatchPlan(polls=0, end="failed", failure=errors[0]["message"])
            batch.errors = errors
        return 200, self._describe(batch), "application/json"

    # --- Anthropic ----------------------------------------------------------------------------
    def _create_anthropic(self, body: Any) -> tuple[int, Any, str]:
        items = body.get("requests") if isinstance(body, dict) else None
        if not isinstance(items, list) or not items:
            return 400, {"type": "error", "error": {"type": "invalid_request_error", "message": "requests: a non-empty list is required"}}, "application/json"
        ids = [i.get("custom_id") for i in items]
        bad = [c for c in ids if not isinstance(c, str) or not CUSTOM_ID.match(c)]
        if bad or len(set(ids)) != len(ids):
            message = f"custom_id must be unique and match {CUSTOM_ID.pattern}" + (f": {bad[0]!r}" if bad else "")
            return 400, {"type": "error", "error": {"type": "invalid_request_error", "message": message}}, "application/json"
        batch = self._new("anthropic", [(i["custom_id"], i.get("params") or {}) for i in items], None, None)
        return 200, self._describe(batch), "application/json"

    # --- lifecycle ----------------------------------------------------------------------------
    def _new(self, api: str, requests: list[tuple[str, dict[str, Any]]], input_file_id: str | None, metadata: Any) -> _Batch:
        with self._lock:
            plan = self.plans.popleft() if self.plans else self.default_plan
            prefix = "batch" if api == "openai" else "msgbatch"
            batch = _Batch(id=f"{prefix}_{len(self.batches) + 1:04d}", api=api, requests=requests, plan=plan, input_file_id=input_file_id, metadata=metadata)
            batch.state = "validating" if api == "openai" else "in_progress"
            self.batches[batch.id] = batch
            self.created.append(batch.id)
        return batch

    def _advance(self, batch: _Batch) -> None:
        """One retrieve: still running until the plan's polls are spent, then the batch ends."""
        with self._finishing:
            self._advance_locked(batch)

    def _advance_locked(self, batch: _Batch) -> None:
        with self._lock:
            if batch.state in ("completed", "expired", "cancelled", "failed", "ended"):
                return
            batch.polls += 1
            ends = batch.polls > batch.plan.polls or batch.cancel_requested or (batch.plan.end == "failed" and batch.api == "openai")
            if not ends:
                batch.state = "in_progress"
                return
        end = "cancelled" if batch.cancel_requested else batch.plan.end
        self._finish(batch, end)

    def _finish(self, batch: _Batch, end: str) -> None:
        answered = len(batch.requests) if end == "completed" else (0 if end == "failed" else min(batch.plan.answer, len(batch.requests)))
        if batch.api == "openai":
            self._finish_openai(batch, end, answered)
        else:
            self._finish_anthropic(batch, end, answered)

    def _finish_openai(self, batch: _Batch, end: str, answered: int) -> None:
        if end == "failed":
            with self._lock:
                batch.state = "failed"
                batch.errors = batch.errors or [{"code": "invalid_request", "line": None, "message": batch.plan.failure}]
                batch.counts = {"total": len(batch.requests), "completed": 0, "failed": 0}
            return
        out, err = [], []
        for n, (cid, body) in enumerate(batch.requests):
            if n >= answered:
                code = "batch_expired" if end == "expired" else "batch_cancelled"
                err.append({"id": f"batch_req_{n}", "custom_id": cid, "response": None, "error": {"code": code, "message": f"request not run: {code}"}})
                continue
            status, payload = self._answer(body, openai=True)
            line = {"id": f"batch_req_{n}", "custom_id": cid, "response": {"status_code": status, "request_id": f"req_{n}", "body": payload}, "error": None}
            (out if status == 200 else err).append(line)
        with self._lock:
            batch.output_file_id = self._store_unlocked(_jsonl(out)) if out else None
            batch.error_file_id = self._store_unlocked(_jsonl(err)) if err else None
            batch.counts = {"total": len(batch.requests), "completed": len(out), "failed": len(err)}
            batch.state = end

    def _finish_anthropic(self, batch: _Batch, end: str, answered: int) -> None:
        lines, counts = [], Counter({"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0})
        for n, (cid, body) in enumerate(batch.requests):
            if end == "failed":
                result: dict[str, Any] = {"type": "errored", "error": {"type": "error", "error": {"type": "api_error", "message": batch.plan.failure}}}
            elif n >= answered:
                result = {"type": "expired" if end == "expired" else "canceled"}
            else:
                status, payload = self._answer(body, openai=False)
                if status == 200:
                    result = {"type": "succeeded", "message": payload}
                else:
                    etype = "rate_limit_error" if status == 429 else "api_error" if status >= 500 else "invalid_request_error"
                    result = {"type": "errored", "error": {"type": "error", "error": {"type": etype, "message": str(payload)}}}
            counts[result["type"] if result["type"] != "canceled" else "canceled"] += 1
            lines.append({"custom_id": cid, "result": result})
        with self._lock:
            batch.results = _jsonl(lines)
            batch.counts = dict(counts)
            batch.state = "ended"

    def _store_unlocked(self, data: bytes) -> str:
        file_id = f"file-{len(self.files) + 1:04d}"
        self.files[file_id] = data
        return file_id

    def _answer(self, body: dict[str, Any], *, openai: bool) -> tuple[int, Any]:
        """The status and body the online route gives this request (scripted action included)."""
        from tests.servers.loopback import Delay, Status, _anthropic_payload, _openai_payload

        action = self.owner._next_action(body.get("model"), body)
        while isinstance(action, Delay):
            action = action.then
        if isinstance(action, Status):
            return action.code, {"type": "error", "error": {"type": "scripted", "message": action.message}}
        with self._lock:
            self.answered[str(body.get("model"))] += 1
        from tests.servers.loopback import Reply

        action = action if action is not None else Reply("correct")
        return 200, (_openai_payload(body, action) if openai else _anthropic_payload(body, action))

    def _describe(self, batch: _Batch) -> dict[str, Any]:
        if batch.api == "openai":
            return {
                "id": batch.id,
                "object": "batch",
                "endpoint": "/v1/chat/completions",
                "errors": {"object": "list", "data": batch.errors} if batch.errors else None,
                "input_file_id": batch.input_file_id,
                "completion_window": "24h",
                "status": batch.state,
                "output_file_id": batch.output_file_id,
                "error_file_id": batch.error_file_id,
                "created_at": CREATED,
                "expires_at": CREATED + 86400,
                "request_counts": {"total": len(batch.requests), "completed": 0, "failed": 0, **batch.counts},
                "metadata": batch.metadata,
            }
        base = self.owner.anthropic_base_url
        counts = batch.counts or {"processing": len(batch.requests), "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        return {
            "id": batch.id,
            "type": "message_batch",
            "processing_status": batch.state,
            "request_counts": counts,
            "created_at": "2026-01-01T00:00:00Z",
            "expires_at": "2026-01-02T00:00:00Z",
            "ended_at": "2026-01-01T01:00:00Z" if batch.state == "ended" else None,
            "cancel_initiated_at": "2026-01-01T00:30:00Z" if batch.cancel_requested else None,
            "archived_at": None,
            "results_url": f"{base}/v1/messages/batches/{batch.id}/results" if batch.state == "ended" else None,
        }


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw or b"null")
    except ValueError:
        return None


def _jsonl(items: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(i).encode() + b"\n" for i in items)


def _file(file_id: str, data: bytes, name: str, purpose: str) -> dict[str, Any]:
    return {"id": file_id, "object": "file", "bytes": len(data), "created_at": CREATED, "filename": name, "purpose": purpose, "status": "processed"}


def _not_found(what: str) -> tuple[int, Any, str]:
    return 404, {"error": {"message": f"not found: {what}", "type": "invalid_request_error"}}, "application/json"
