"""The OpenAI Batch API (and OpenAI-compatible servers that implement it): the request lines go
up as a file (``POST /v1/files``, purpose ``batch``), a batch is created on it
(``POST /v1/batches``, endpoint ``/v1/chat/completions``, window 24 h) and polled
(``GET /v1/batches/{id}``); an ended batch names an output file (answered requests) and an error
file (requests that failed, expired or were cancelled), downloaded with
``GET /v1/files/{id}/content``.

One model per batch (OpenAI's rule): requests are grouped by judge. Statuses: ``validating``,
``in_progress``, ``finalizing``, ``cancelling`` (still running); ``completed``, ``expired``,
``cancelled`` (ended, with files for what was done); ``failed`` (the input was rejected: no
request ran).
"""

from __future__ import annotations

from typing import Any

import orjson

from judge.llm._batches._base import Answer, BatchAPI, BatchRecord, BatchStatus, http_failure, register_batch_api
from judge.llm._providers import JudgeCallError, JudgeClient

ENDPOINT = "/v1/chat/completions"
RUNNING = frozenset({"validating", "in_progress", "finalizing", "cancelling"})
# error codes of a result line, as the abstention reason they become
LINE_ERRORS = {"batch_expired": "batch_expired", "batch_cancelled": "batch_cancelled", "request_timeout": "timeout"}


class OpenAIBatches(BatchAPI):
    kind = "openai"
    max_requests = 50_000
    max_bytes = 190 * 1024 * 1024  # the limit is 200 MB

    def group(self, judge: JudgeClient) -> str:
        return judge.name

    def line(self, key: str, body: dict[str, Any]) -> bytes:
        return orjson.dumps({"custom_id": key, "method": "POST", "url": ENDPOINT, "body": body}) + b"\n"

    async def create(self, client: Any, data: bytes, label: str) -> tuple[str, str | None]:
        uploaded = await client.files.create(file=("judge-batch.jsonl", data, "application/jsonl"), purpose="batch")
        batch = await client.batches.create(
            input_file_id=uploaded.id, endpoint=ENDPOINT, completion_window="24h", metadata={"tool": "trajectory-judge", "run": label[:500]}
        )
        return str(batch.id), str(uploaded.id)

    async def status(self, client: Any, record: BatchRecord) -> BatchStatus:
        batch = await client.batches.retrieve(record.id)
        counts = batch.request_counts
        failure = None
        if batch.status == "failed":
            errors = [e.message or e.code or "" for e in (batch.errors.data or [])] if batch.errors is not None else []
            failure = "; ".join(e for e in errors if e) or "the provider rejected the batch"
        return BatchStatus(
            record=record,
            state=str(batch.status),
            ended=batch.status not in RUNNING,
            counts={"total": counts.total, "completed": counts.completed, "failed": counts.failed} if counts is not None else {},
            failure=failure,
            raw=batch,
        )

    async def results(self, client: Any, status: BatchStatus) -> bytes:
        out = b""
        for file_id in (status.raw.output_file_id, status.raw.error_file_id):
            if file_id:
                content = await client.files.content(file_id)
                data = content.content
                out += data if not data or data.endswith(b"\n") else data + b"\n"
        return out

    def read(self, line: dict[str, Any]) -> tuple[str, Answer]:
        key = str(line.get("custom_id"))
        error = line.get("error")
        response = line.get("response")
        if error:
            code = str(error.get("code") or "")
            return key, JudgeCallError(LINE_ERRORS.get(code, "error"), f"{code}: {error.get('message') or ''}".strip(": "), code=code or None)
        if not isinstance(response, dict):
            return key, JudgeCallError("error", "the batch result line holds neither a response nor an error")
        status = int(response.get("status_code") or 0)
        body = response.get("body")
        if status != 200:
            message = ((body or {}).get("error") or {}).get("message") if isinstance(body, dict) else None
            return key, http_failure(status, str(message or body))
        return key, _chat_completion(body)

    async def cancel(self, client: Any, record: BatchRecord) -> None:
        await client.batches.cancel(record.id)


def _chat_completion(body: Any) -> Any:
    """The body as the online call reads it (``OpenAIJudge.send``): validated, else built leniently."""
    from openai.types.chat import ChatCompletion
    from pydantic import ValidationError

    if not isinstance(body, dict):
        return JudgeCallError("unparseable", "the batch answer's body is not a JSON object")
    try:
        return ChatCompletion.model_validate(body)
    except ValidationError:
        return ChatCompletion.model_construct(**body)


register_batch_api(OpenAIBatches())
