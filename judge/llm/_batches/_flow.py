"""The batch flow: the judge caller defers questions here, the run submits them as provider
batches, polls them on resume, collects the answers and hands them back to the caller.

How a question travels (``--judge-mode batch``):
1. a round's ``Panel.decide`` asks every judge as usual; a question the cache cannot answer, for a
   judge whose provider has a batch API, is *deferred* (the vote abstains ``pending`` and the
   panel decides nothing that depends on it); cached answers and judges without a batch API
   (mock, llama.cpp) answer at once;
2. the run submits the deferred questions (``submit``): one batch per group of judges
   (``BatchAPI.group``), split at the provider's request and size limits; each request line is
   the body the online call would send, its ``custom_id`` the question's cache key;
3. on resume the run polls the round's batches (``poll``); once every one has ended it collects
   their result files (``collect``: downloaded once, kept in the run folder) and decides the round
   again: each collected answer is handed to the caller (``answer``) *before* its cache, and the
   caller records it as a live answer of this run (stored in the cache under its key, counted and
   priced at batch prices). So the round's decisions are those an online run makes with the same
   answers, and a later run finds every answer in the cache;
4. a question the re-decided round still needs (a tie-breaker) is deferred again: a new batch.

Invariants: a question is sent at most once per round (deferrals are keyed); a collected answer
answers every asker of its question in the round, the first as the live call and the others as
sharers (as a second online asker shares the first's answer), so a question once answered is
never deferred again; a request the provider never answered (expired, cancelled, failed batch) is
a failure with that reason, an abstention, never a negative vote.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from judge.core import ExternalCallError
from judge.llm._batches._base import Answer, BatchAPI, BatchRecord, BatchStatus, batch_api
from judge.llm._caller import JudgeCall
from judge.llm._providers import Completion, JudgeCallError, JudgeClient

log = logging.getLogger("judge.batch")


class BatchSubmitError(ExternalCallError):
    """Submitting failed part way: ``records`` are the batches that did go out (journal them:
    they are paid for); the questions of the rest are deferred again on resume."""

    def __init__(self, message: str, records: list[BatchRecord]):
        super().__init__(message)
        self.records = records


@dataclass
class Collected:
    """What ``collect`` found: requests answered, and failures by reason."""

    answered: int = 0
    failed: dict[str, int] = field(default_factory=dict)


class BatchFlow:
    """Deferred questions out, provider answers in (see the module docstring). ``clients``: the
    panel's judges (a record's requests are polled and read with its judges' clients)."""

    def __init__(self, clients: Sequence[JudgeClient]):
        self.clients = {c.name: c for c in clients}
        self._deferred: dict[str, JudgeCall] = {}  # cache key -> the question, in the order deferred
        self._answers: dict[str, Answer] = {}  # cache key -> collected answer (this round's batches)
        self._handed: dict[str, Completion | JudgeCallError] = {}  # cache key -> what its first asker got

    # --- the caller's side ----------------------------------------------------------------------
    def takes(self, judge: JudgeClient) -> bool:
        """Is ``judge`` asked through a batch? Its provider kind has a batch API, its client can
        build the request body, and its provider config does not say ``batch = false`` (an
        OpenAI-compatible server without the batch endpoints)."""
        return batch_api(judge.kind) is not None and hasattr(judge, "batch_body") and judge.config.batch

    def defer(self, call: JudgeCall) -> None:
        self._deferred.setdefault(call.key, call)

    async def answer(self, call: JudgeCall) -> tuple[Completion | JudgeCallError, bool] | None:
        """The collected answer to ``call`` (read as the online call reads one) and whether an
        earlier asker of the same question got it first (then this asker shares it); None when
        no batch of this round holds the question."""
        if call.key in self._handed:
            return self._handed[call.key], True
        found = self._answers.pop(call.key, None)
        if found is None:
            return None
        answer: Completion | JudgeCallError = found
        if not isinstance(found, JudgeCallError):
            try:
                answer = await call.judge.answer_from_batch(call.messages, call.rubric.verdict_schema, found)  # type: ignore[attr-defined]
            except JudgeCallError as err:
                answer = err
        self._handed[call.key] = answer
        return answer, False

    # --- the run's side -------------------------------------------------------------------------
    @property
    def deferred(self) -> int:
        return len(self._deferred)

    def deferred_keys(self) -> list[str]:
        return list(self._deferred)

    def forget_answers(self) -> None:
        """Drop the round's collected answers (the round is decided: a later round asking the
        same question finds it in the cache, as an online run would)."""
        self._answers.clear()
        self._handed.clear()

    async def submit(self, label: str, submitted: Callable[[BatchRecord], None] | None = None) -> list[BatchRecord]:
        """Send every deferred question as provider batches (one per judge group, split at the
        provider's limits) and forget them; the records, in submission order. ``submitted`` is
        told each batch the moment it exists (to journal it: a batch is paid for once created).
        Raises ``BatchSubmitError`` (with the records that did go out) when a submission fails."""
        groups: dict[tuple[str, str], list[JudgeCall]] = {}
        for call in self._deferred.values():
            api = batch_api(call.judge.kind)
            assert api is not None
            groups.setdefault((api.kind, api.group(call.judge)), []).append(call)
        records: list[BatchRecord] = []
        try:
            for (kind, _), calls in sorted(groups.items()):
                api = batch_api(kind)
                assert api is not None
                client = _sdk(calls[0].judge)
                try:
                    for chunk, data in _chunks(api, calls):
                        batch_id, file_id = await api.create(client, data, label)
                        record = BatchRecord(
                            id=batch_id,
                            api=kind,
                            provider=chunk[0].judge.provider,
                            judges=sorted({c.judge.name for c in chunk}),
                            keys=[c.key for c in chunk],
                            submitted_at=datetime.now(UTC).isoformat(timespec="seconds"),
                            bytes=len(data),
                            input_file_id=file_id,
                        )
                        records.append(record)
                        if submitted is not None:
                            submitted(record)
                        log.info("submitted %s batch %s: %d requests", kind, batch_id, len(chunk))
                finally:
                    await _close(client)
        except Exception as exc:
            sent = {k for r in records for k in r.keys}
            self._deferred = {k: c for k, c in self._deferred.items() if k not in sent}
            raise BatchSubmitError(f"submitting a provider batch failed: {type(exc).__name__}: {exc}", records) from exc
        self._deferred.clear()
        return records

    async def poll(self, records: Sequence[BatchRecord]) -> list[BatchStatus]:
        """One look at each batch (concurrently)."""
        async with _Clients(self) as clients:
            return list(await asyncio.gather(*(self._api(r).status(clients.get(r), r) for r in records)))

    async def cancel(self, records: Sequence[BatchRecord]) -> None:
        async with _Clients(self) as clients:
            await asyncio.gather(*(self._api(r).cancel(clients.get(r), r) for r in records))

    async def collect(self, statuses: Sequence[BatchStatus], folder: Path) -> Collected:
        """Read the results of ended batches (downloaded once into ``folder``, read from there
        after) into the answers ``answer`` hands out."""
        folder.mkdir(parents=True, exist_ok=True)
        found = Collected()
        async with _Clients(self) as clients:
            for status in statuses:
                record = status.record
                api = self._api(record)
                answers: dict[str, Answer] = {}
                if status.failure is not None:
                    answers = {k: JudgeCallError("batch_failed", f"batch {record.id}: {status.failure}") for k in record.keys}
                else:
                    path = folder / f"{record.api}-{record.id}.jsonl"
                    if not path.exists():
                        _write_atomically(path, await api.results(clients.get(record), status))
                    with open(path, "rb") as fh:
                        for raw in fh:
                            if raw.strip():
                                key, answer = api.read(orjson.loads(raw))
                                answers[key] = answer
                for key in record.keys:
                    answer = answers.get(key)
                    if answer is None:
                        answer = JudgeCallError(_missing_reason(status), f"batch {record.id} ended ({status.state}) without a result for this request")
                    self._answers[key] = answer
                    if isinstance(answer, JudgeCallError):
                        found.failed[answer.reason] = found.failed.get(answer.reason, 0) + 1
                    else:
                        found.answered += 1
        return found

    def _api(self, record: BatchRecord) -> BatchAPI:
        api = batch_api(record.api)
        if api is None:
            raise JudgeCallError("error", f"batch {record.id}: no batch API for provider kind {record.api!r}")
        return api

    def client_for(self, record: BatchRecord) -> JudgeClient:
        for name in record.judges:
            if name in self.clients:
                return self.clients[name]
        raise LookupError(f"batch {record.id} was sent for judges {', '.join(record.judges)}, none of which is on this panel")


class _Clients:
    """SDK clients for the batch endpoints, one per provider, closed on exit."""

    def __init__(self, flow: BatchFlow):
        self.flow = flow
        self.made: dict[tuple[str, str], Any] = {}

    async def __aenter__(self) -> _Clients:
        return self

    def get(self, record: BatchRecord) -> Any:
        slot = (record.api, record.provider)
        if slot not in self.made:
            self.made[slot] = _sdk(self.flow.client_for(record))
        return self.made[slot]

    async def __aexit__(self, *exc: object) -> None:
        for client in self.made.values():
            await _close(client)


def _sdk(judge: JudgeClient) -> Any:
    return judge.batch_client()  # type: ignore[attr-defined]


async def _close(client: Any) -> None:
    with contextlib.suppress(Exception):
        await client.close()


def _chunks(api: BatchAPI, calls: list[JudgeCall]) -> list[tuple[list[JudgeCall], bytes]]:
    """The calls cut into batches within the provider's request and size limits, in order."""
    out: list[tuple[list[JudgeCall], bytes]] = []
    chunk: list[JudgeCall] = []
    data = bytearray()
    for call in calls:
        line = api.line(call.key, call.judge.batch_body(call.messages, call.rubric.verdict_schema))  # type: ignore[attr-defined]
        if chunk and (len(chunk) >= api.max_requests or len(data) + len(line) > api.max_bytes):
            out.append((chunk, bytes(data)))
            chunk, data = [], bytearray()
        chunk.append(call)
        data += line
    if chunk:
        out.append((chunk, bytes(data)))
    return out


def _missing_reason(status: BatchStatus) -> str:
    if status.state in ("expired",):
        return "batch_expired"
    if status.state in ("cancelled", "canceled"):
        return "batch_cancelled"
    return "error"


def _write_atomically(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
