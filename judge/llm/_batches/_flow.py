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
4. a question the re-decided round still needs (a tie-breaker) is deferred again: a new batch;
5. an answer the verdict schema rejects is re-asked as online: instructor reads the answers
   collected for the question (the first, then one per re-ask) as it reads live ones and builds
   the re-ask from the rejected one (``SDKJudge.answer_from_batch``); while re-asks are left and
   the latest has no answer yet, that re-ask goes out in a new batch of the round under its own
   ``custom_id`` (``reask_id``: derived from the question's key, so a resumed run finds it) and the
   vote stays ``pending``. The decision is then the one an online run makes when the provider
   answers the question and its re-asks the same way, and it costs the tokens of every attempt.

Invariants: a request is sent at most once per round (deferrals are keyed); a collected answer
answers every asker of its question in the round, the first as the live call and the others as
sharers (as a second online asker shares the first's answer), so a question once answered is
never deferred again; a request the provider never answered (expired, cancelled, failed batch) is
a failure with that reason, an abstention, never a negative vote.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import msgspec
import orjson

from judge.core import ExternalCallError
from judge.llm._batches._base import Answer, BatchAPI, BatchRecord, BatchStatus, batch_api
from judge.llm._caller import REASKED, JudgeCall, Reasked
from judge.llm._providers import Completion, JudgeCallError, JudgeClient, NextAttempt
from judge.llm._providers._errors import usage_tokens

log = logging.getLogger("judge.batch")


class BatchSubmitError(ExternalCallError):
    """Submitting failed part way: ``records`` are the batches that did go out (journal them:
    they are paid for); the questions of the rest are deferred again on resume."""

    def __init__(self, message: str, records: list[BatchRecord]):
        super().__init__(message)
        self.records = records


class Collected(msgspec.Struct):
    """What ``collect`` found: requests answered, and failures by reason."""

    answered: int = 0
    failed: dict[str, int] = msgspec.field(default_factory=dict)


class BatchFlow:
    """Deferred questions out, provider answers in (see the module docstring). ``clients``: the
    panel's judges (a record's requests are polled and read with its judges' clients)."""

    def __init__(self, clients: Sequence[JudgeClient]):
        self.clients = {c.name: c for c in clients}
        self._deferred: dict[str, JudgeCall] = {}  # custom_id -> the question it asks, in the order deferred
        self._bodies: dict[str, dict[str, Any]] = {}  # custom_id of a re-ask -> its request body
        self._answers: dict[str, Answer] = {}  # custom_id -> collected answer (this round's batches)
        self._handed: dict[str, Completion | JudgeCallError | Reasked] = {}  # cache key -> what its first asker got

    # --- the caller's side ----------------------------------------------------------------------
    def takes(self, judge: JudgeClient) -> bool:
        """Is ``judge`` asked through a batch? Its provider kind has a batch API, its client can
        build the request body, and its provider config does not say ``batch = false`` (an
        OpenAI-compatible server without the batch endpoints)."""
        return batch_api(judge.kind) is not None and hasattr(judge, "batch_body") and judge.config.batch

    def defer(self, call: JudgeCall) -> None:
        self._deferred.setdefault(call.key, call)

    async def answer(self, call: JudgeCall) -> tuple[Completion | JudgeCallError | Reasked, bool] | None:
        """The collected answer to ``call`` (read as the online call reads one, re-asks included:
        ``REASKED`` while a re-ask waits for its batch) and whether an earlier asker of the same
        question got it first (then this asker shares it); None when no batch of this round holds
        the question."""
        if call.key in self._handed:
            return self._handed[call.key], True
        found = self._answers.pop(call.key, None)
        if found is None:
            return None
        answer = found if isinstance(found, JudgeCallError) else await self._read(call, found)
        self._handed[call.key] = answer
        return answer, False

    async def _read(self, call: JudgeCall, first: Answer) -> Completion | JudgeCallError | Reasked:
        """The verdict in the answers to ``call`` and to its re-asks collected so far."""
        responses = [first]
        while (later := self._answers.pop(reask_id(call.key, len(responses)), None)) is not None:
            if isinstance(later, JudgeCallError):  # the re-ask went unanswered (expired...): its failure, every attempt paid
                spent = [usage_tokens(getattr(r, "usage", None)) for r in responses]
                later.input_tokens += sum(i for i, _ in spent)
                later.output_tokens += sum(o for _, o in spent)
                return later
            responses.append(later)
        try:
            read = await call.judge.answer_from_batch(call.messages, call.rubric.verdict_schema, responses)  # type: ignore[attr-defined]
        except JudgeCallError as err:
            return err
        if isinstance(read, NextAttempt):
            custom_id = reask_id(call.key, len(responses))
            self._deferred.setdefault(custom_id, call)
            self._bodies[custom_id] = read.body
            return REASKED
        return cast(Completion, read)

    # --- the run's side -------------------------------------------------------------------------
    @property
    def deferred(self) -> int:
        return len(self._deferred)

    def forget_answers(self) -> None:
        """Drop the round's collected answers (the round is decided: a later round asking the
        same question finds it in the cache, as an online run would)."""
        self._answers.clear()
        self._handed.clear()

    def body(self, custom_id: str, call: JudgeCall) -> dict[str, Any]:
        """The request body of a deferred request: a re-ask's as instructor built it, else the
        body the online call of the question sends."""
        body = self._bodies.get(custom_id)
        return body if body is not None else call.judge.batch_body(call.messages, call.rubric.verdict_schema)  # type: ignore[attr-defined]

    async def submit(self, label: str, submitted: Callable[[BatchRecord], None] | None = None) -> list[BatchRecord]:
        """Send every deferred question as provider batches (one per judge group, split at the
        provider's limits) and forget them; the records, in submission order. ``submitted`` is
        told each batch the moment it exists (to journal it: a batch is paid for once created).
        Raises ``BatchSubmitError`` (with the records that did go out) when a submission fails."""
        groups: dict[tuple[str, str], list[tuple[str, JudgeCall]]] = {}
        for custom_id, call in self._deferred.items():
            api = batch_api(call.judge.kind)
            assert api is not None
            groups.setdefault((api.kind, api.group(call.judge)), []).append((custom_id, call))
        records: list[BatchRecord] = []
        try:
            for (kind, _), requests in sorted(groups.items()):
                api = batch_api(kind)
                assert api is not None
                client = _sdk(requests[0][1].judge)
                try:
                    for chunk, data in _chunks(api, requests, self.body):
                        batch_id, file_id = await api.create(client, data, label)
                        record = BatchRecord(
                            id=batch_id,
                            api=kind,
                            provider=chunk[0][1].judge.provider,
                            judges=sorted({c.judge.name for _, c in chunk}),
                            keys=[custom_id for custom_id, _ in chunk],
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
            self._bodies = {k: b for k, b in self._bodies.items() if k not in sent}
            raise BatchSubmitError(f"submitting a provider batch failed: {type(exc).__name__}: {exc}", records) from exc
        self._deferred.clear()
        self._bodies.clear()
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


Request = tuple[str, JudgeCall]  # (custom_id, the question it asks)


def _chunks(api: BatchAPI, requests: list[Request], body: Callable[[str, JudgeCall], dict[str, Any]]) -> list[tuple[list[Request], bytes]]:
    """The requests cut into batches within the provider's request and size limits, in order."""
    out: list[tuple[list[Request], bytes]] = []
    chunk: list[Request] = []
    data = bytearray()
    for custom_id, call in requests:
        line = api.line(custom_id, body(custom_id, call))
        if chunk and (len(chunk) >= api.max_requests or len(data) + len(line) > api.max_bytes):
            out.append((chunk, bytes(data)))
            chunk, data = [], bytearray()
        chunk.append((custom_id, call))
        data += line
    if chunk:
        out.append((chunk, bytes(data)))
    return out


def reask_id(key: str, attempt: int) -> str:
    """The ``custom_id`` of the ``attempt``-th re-ask of the question keyed ``key``: 64 hex digits
    like the key itself (Anthropic takes ``[a-zA-Z0-9_-]{1,64}``), the same in every process."""
    return hashlib.sha256(f"{key}/reask/{attempt}".encode()).hexdigest()


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
