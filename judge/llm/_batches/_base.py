"""The contract of a provider batch API, one module per provider behind a registry keyed by the
judges' provider kind (``openai``, ``anthropic``).

A batch API takes many requests at once, answers them within a completion window (24 h) at a
discount, and hands the answers back as a file. What differs per provider is only the wire:
how a request line looks, how a batch is created, polled and cancelled, and how a result line
reads; everything else (what to ask, grouping, journaling, delivery to the votes) is the flow's
(``_flow``).

Invariants: a request's ``custom_id`` is its judge-cache key, so an answer lands under the key an
online call of the same question uses; a request line's body is the body the online call sends
(``SDKJudge.batch_body``); every request of an ended batch gets an answer or a failure, never a
guess (a request with no result line fails with the reason the batch gives).
"""

from __future__ import annotations

import abc
from typing import Any, ClassVar

import msgspec

from judge.llm._providers import JudgeCallError, JudgeClient

# An SDK response object as the online call would have received it (``ChatCompletion``,
# ``Message``), or the failure that stands for that request's answer.
Answer = Any


class BatchRecord(msgspec.Struct):
    """One submitted provider batch, as the run journals it (JSON)."""

    id: str
    api: str  # the batch API: the judges' provider kind (openai, anthropic)
    provider: str  # the judges' provider prefix (a kind or a configured alias): whose base URL and key
    judges: list[str]  # provider:model of its requests
    keys: list[str]  # custom_id (= judge cache key) of each request, in file order
    submitted_at: str
    bytes: int = 0
    input_file_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        return msgspec.structs.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BatchRecord:
        return cls(**data)


class BatchStatus(msgspec.Struct):
    """What a poll found. ``ended``: the provider will answer nothing more (completed, expired,
    cancelled, failed); ``failure``: why the whole batch failed, when it did."""

    record: BatchRecord
    state: str
    ended: bool
    counts: dict[str, int] = msgspec.field(default_factory=dict)
    failure: str | None = None
    raw: Any = None  # the provider's batch object (file ids, results URL)

    def describe(self) -> str:
        counts = ", ".join(f"{k} {v}" for k, v in self.counts.items() if v)
        return f"{self.record.api} batch {self.record.id}: {self.state}" + (f" ({counts})" if counts else "")


class BatchAPI(abc.ABC):
    """One provider's batch endpoints, driven through its official SDK's async client."""

    kind: ClassVar[str] = ""
    max_requests: ClassVar[int] = 0  # per batch, the provider's limit
    max_bytes: ClassVar[int] = 0  # per batch (input file or request body), a little under the provider's limit

    @abc.abstractmethod
    def group(self, judge: JudgeClient) -> str:
        """Requests of judges with the same group may share one batch."""

    @abc.abstractmethod
    def line(self, key: str, body: dict[str, Any]) -> bytes:
        """One request as a JSONL line (``\\n``-terminated)."""

    @abc.abstractmethod
    async def create(self, client: Any, data: bytes, label: str) -> tuple[str, str | None]:
        """Submit the lines in ``data``; (batch id, input file id or None)."""

    @abc.abstractmethod
    async def status(self, client: Any, record: BatchRecord) -> BatchStatus:
        """Poll the batch (one request)."""

    @abc.abstractmethod
    async def results(self, client: Any, status: BatchStatus) -> bytes:
        """The result lines of an ended batch, as the provider serves them (JSONL)."""

    @abc.abstractmethod
    def read(self, line: dict[str, Any]) -> tuple[str, Answer]:
        """(custom_id, the SDK response object or a ``JudgeCallError``) of one result line."""

    @abc.abstractmethod
    async def cancel(self, client: Any, record: BatchRecord) -> None:
        """Ask the provider to stop the batch (what it answered already is still collected)."""


_APIS: dict[str, BatchAPI] = {}


def register_batch_api(api: BatchAPI) -> None:
    _APIS[api.kind] = api


def batch_api(kind: str) -> BatchAPI | None:
    """The batch API of judges of ``kind``; None when the provider has none (those judges are
    asked online even in batch mode: mock, llama.cpp). The built-in ones register when the
    package is imported."""
    return _APIS.get(kind)


def http_failure(status: int, message: str) -> JudgeCallError:
    """A request the provider answered with an HTTP error inside the batch, classified as the
    online caller classifies one (``_providers._errors``). Never cached: it is not an answer."""
    if status == 429:
        return JudgeCallError("rate_limit", message, status=status)
    if status >= 500 or status == 408:
        return JudgeCallError("server", message, status=status)
    return JudgeCallError("error", f"HTTP {status}: {message}", status=status)
