"""Anthropic Message Batches: the requests go in the body of ``POST /v1/messages/batches``
(``[{custom_id, params}]``, ``params`` being a Messages request), the batch is polled with
``GET /v1/messages/batches/{id}`` (``processing_status``: ``in_progress``, ``canceling``,
``ended``) and its results are streamed as JSONL from the batch's ``results_url``. Each result is
``succeeded`` (a Message), ``errored`` (an API error), ``canceled`` or ``expired``.

Models may be mixed in one batch: requests are grouped by provider (one base URL and key).
"""

from __future__ import annotations

from typing import Any

import orjson

from judge.llm._batches._base import Answer, BatchAPI, BatchRecord, BatchStatus, register_batch_api
from judge.llm._providers import JudgeCallError, JudgeClient

# an errored result's error type, as the abstention reason it becomes
ERROR_TYPES = {"rate_limit_error": "rate_limit", "overloaded_error": "server", "api_error": "server", "timeout_error": "timeout"}


class AnthropicBatches(BatchAPI):
    kind = "anthropic"
    max_requests = 100_000
    max_bytes = 240 * 1024 * 1024  # the limit is 256 MB

    def group(self, judge: JudgeClient) -> str:
        return judge.provider

    def line(self, key: str, body: dict[str, Any]) -> bytes:
        return orjson.dumps({"custom_id": key, "params": body}) + b"\n"

    async def create(self, client: Any, data: bytes, label: str) -> tuple[str, str | None]:
        requests = [orjson.loads(line) for line in data.splitlines() if line]
        batch = await client.messages.batches.create(requests=requests)
        return str(batch.id), None

    async def status(self, client: Any, record: BatchRecord) -> BatchStatus:
        batch = await client.messages.batches.retrieve(record.id)
        counts = batch.request_counts
        return BatchStatus(
            record=record,
            state=str(batch.processing_status),
            ended=batch.processing_status == "ended",
            counts={
                "processing": counts.processing,
                "succeeded": counts.succeeded,
                "errored": counts.errored,
                "canceled": counts.canceled,
                "expired": counts.expired,
            },
            raw=batch,
        )

    async def results(self, client: Any, status: BatchStatus) -> bytes:
        stream = await client.messages.batches.results(status.record.id)
        return b"".join([orjson.dumps(item.model_dump(mode="json", exclude_unset=True)) + b"\n" async for item in stream])

    def read(self, line: dict[str, Any]) -> tuple[str, Answer]:
        from anthropic.types import Message
        from pydantic import ValidationError

        key = str(line.get("custom_id"))
        result = line.get("result") or {}
        kind = result.get("type")
        if kind == "succeeded":
            try:
                return key, Message.model_validate(result.get("message"))
            except ValidationError as exc:
                return key, JudgeCallError("unparseable", f"the batch answer is not a Message: {exc.error_count()} error(s)")
        if kind == "errored":
            inner = (result.get("error") or {}).get("error") or {}
            etype = str(inner.get("type") or "error")
            return key, JudgeCallError(ERROR_TYPES.get(etype, "error"), f"{etype}: {inner.get('message') or ''}".strip(": "), code=etype)
        if kind == "canceled":
            return key, JudgeCallError("batch_cancelled", "the batch was cancelled before this request ran")
        if kind == "expired":
            return key, JudgeCallError("batch_expired", "the batch expired (24 h) before this request ran")
        return key, JudgeCallError("error", f"unknown batch result type {kind!r}")

    async def cancel(self, client: Any, record: BatchRecord) -> None:
        await client.messages.batches.cancel(record.id)


register_batch_api(AnthropicBatches())
