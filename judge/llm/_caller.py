"""One caller for every judge call: cache, single flight, limits, retries and cost.

The panel decides *what* to ask (which judges, which rubric, when a tie-breaker); the caller
decides *how* one judge is asked one question. The steps, each of which may answer without the
next:

0. batch mode: an answer collected from a provider batch of this round (see below);
1. the cache, by content key: a cached answer is free;
2. offline: a miss abstains ``offline_miss``; a spent budget abstains ``budget``; batch mode: a
   miss is deferred to a provider batch and abstains ``pending``;
3. single flight: the same question already being asked in this process shares that answer;
   one being asked by another run sharing the cache file is waited for (a claim, see ``_cache``);
4. limits: the global and the provider's concurrency slots, the provider's request rate;
5. attempts through the transport (by default the client's ``complete``); a failure the client's
   ``should_retry`` accepts is retried with backoff, honouring Retry-After; the budget is checked
   before every attempt. Each judge's deadline and retries are its provider's setting, else the
   run's, else what fits its provider (``JudgeClient.defaults``: a local server waits longer and
   retries less often than a hosted API);
6. record: the answer (or a provider answer that is itself a failure, such as a refusal) goes to
   the cache the moment it arrives; tokens and cost to the stats and the budget.

Invariants: a vote always comes back (every failure becomes an abstention with its reason, never
a negative vote and never an exception); a question is paid for at most once per process, and
once across processes asking it at the same time while claims hold; tokens and cost of every
attempt, failed ones included, are counted exactly once.

The transport is the seam for other ways of completing one live request. A provider batch is
not a live request: with a ``batch`` port (``judge.llm._batches.BatchFlow``) a miss for a judge
whose provider has a batch API is deferred before limits (nothing is sent yet), and an answer
collected from a batch is taken before the cache (this run paid for it) and recorded as a live
answer at batch prices (the first asker; later askers of the same question share it), so a run
decided from batch answers records the votes an online run records from the same answers. A batch
answer the verdict schema rejects is re-asked in a later batch, as instructor re-asks online: the
vote stays ``pending`` until the re-ask is answered.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import weakref
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol

import msgspec
from pydantic import ValidationError

from judge.core import AbstainReason
from judge.core._verdict import Vote
from judge.llm._cache import JudgeCache, KeyTemplate
from judge.llm._limits import Budget, RateLimiter, RetryPolicy, cost_usd, price_for
from judge.llm._providers import Completion, JudgeCallError, JudgeClient
from judge.llm._reading import READER_VERSION, repairs_of
from judge.llm._rubric import Rubric
from judge.llm._settings import DEFAULT_CONCURRENCY, HOSTED, PriceConfig, ProviderConfig, RetryConfig, layered_retry
from judge.llm._usage import CallStats

log = logging.getLogger("judge.caller")

# Final abstention reason for each failure kind after retries.
ABSTAIN_REASON = {"timeout": "timeout", "rate_limit": "error", "server": "error", "connection": "error"}


class JudgeCall(msgspec.Struct, frozen=True):
    """One question for one judge. ``key``: the content hash of everything that determines the
    answer (``JudgeClient.identity``); the cache, single flight and claims all go by it."""

    judge: JudgeClient
    rubric: Rubric
    messages: list[dict[str, str]]
    key: str


Transport = Callable[[JudgeCall], Awaitable[Completion]]


class Reasked:
    """A batch answer the verdict schema rejected, whose re-ask waits for the next batch."""

    def __repr__(self) -> str:
        return "REASKED"


REASKED = Reasked()


class BatchPort(Protocol):
    """What the caller needs of a provider batch flow (``judge.llm._batches.BatchFlow``)."""

    def takes(self, judge: JudgeClient) -> bool: ...

    def defer(self, call: JudgeCall) -> None: ...

    async def answer(self, call: JudgeCall) -> tuple[Completion | JudgeCallError | Reasked, bool] | None: ...


async def complete_online(call: JudgeCall) -> Completion:
    """The default transport: one live request through the judge's client."""
    return await call.judge.complete(call.messages, call.rubric.verdict_schema)


class _LoopState:
    """asyncio primitives belong to one event loop; a caller reused in another loop gets new ones."""

    def __init__(self, concurrency: int, providers: Mapping[str, ProviderConfig]):
        self.global_sem = asyncio.Semaphore(concurrency)
        self.provider_sems: dict[str, asyncio.Semaphore] = {}
        self.limiters: dict[str, RateLimiter] = {}
        self.in_flight: dict[str, asyncio.Future[Vote]] = {}  # cache key -> the vote being fetched
        self.claimed: set[str] = set()  # keys this process holds a claim on in the shared cache
        self.heartbeat: asyncio.Task[None] | None = None
        for name, cfg in providers.items():
            if cfg.concurrency:
                self.provider_sems[name] = asyncio.Semaphore(cfg.concurrency)
            if cfg.rpm:
                self.limiters[name] = RateLimiter(cfg.rpm)


class JudgeCaller:
    """Asks judges single questions for a panel (or anything else that needs verdicts).

    ``claim_lease_s``: how long a claim on a question stays valid without renewal (renewed every
    third of it while the call runs); ``claim_poll_s``: first and longest pause between looks at
    a question another run is asking.
    """

    def __init__(
        self,
        clients: Sequence[JudgeClient],
        *,
        stats: CallStats | None = None,
        cache: JudgeCache | None = None,
        offline: bool = False,
        max_cost_usd: float | None = None,
        retry: RetryPolicy | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        providers: Mapping[str, ProviderConfig] | None = None,
        prices: Mapping[str, PriceConfig] | None = None,
        timeout_s: float | None = None,
        transport: Transport = complete_online,
        batch: BatchPort | None = None,
        claim_lease_s: float = 30.0,
        claim_poll_s: tuple[float, float] = (0.05, 1.0),
    ):
        self.clients = list(clients)
        self.stats = stats if stats is not None else CallStats()
        self.cache = cache
        self.offline = offline
        self.budget = Budget(max_cost_usd)
        self.retry = retry or RetryPolicy()  # the run's: every judge's unless its provider sets its own
        self.concurrency = concurrency
        self.providers = dict(providers or {})
        self.prices = dict(prices or {})
        self.timeout_s = timeout_s
        self.transport = transport
        self.batch = batch
        self.claim_lease_s = claim_lease_s
        self.claim_poll_s = claim_poll_s
        self._states: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopState] = weakref.WeakKeyDictionary()
        self._keys: dict[tuple[str, str, str], KeyTemplate] = {}  # (judge, rubric, version) -> its cache keys
        self._retries: dict[str, RetryConfig] = {}  # judge -> its retry settings, where not the run's
        for client in self.clients:
            provider = self.providers.get(client.provider)
            in_flight = min(concurrency, provider.concurrency) if provider is not None and provider.concurrency else concurrency
            client.configure(timeout_s=client.config.timeout_s or timeout_s or client.defaults().timeout_s, max_connections=in_flight)
            own = layered_retry(client.config.retry, None if retry is None else retry.config, client.defaults().retry)
            if own != self.retry.config:  # paced by the run's policy all the same (its sleep and random source)
                self._retries[client.name] = own
            self._note_local(client)
            usage = self.stats.judge(client.name)
            usage.price_known = price_for(client.name, client.kind, self.prices) is not None
            if not usage.price_known:
                self.stats.note(f'no price known for {client.name}: its cost is counted as 0 (add [prices."{client.name}"] to the config)')
        if offline and cache is None:
            self.stats.note("offline without a cache: every live judge call abstains with offline_miss")

    def _note_local(self, client: JudgeClient) -> None:
        """Say in the run's notes which judges start with a local model's defaults, and how to
        raise them (the same in every process judging for the run: no share of a limit in it)."""
        defaults = client.defaults()
        if defaults.where == HOSTED.where:
            return
        self.stats.note(
            f"{client.name} is {'an' if defaults.where[0] in 'aeiou' else 'a'} {defaults.where} judge{f' ({client.base_url})' if client.base_url else ''}: where nothing is set it runs "
            f"with {defaults.describe()}; [providers.{client.provider}] concurrency, timeout_s and [providers.{client.provider}.retry] change them"
        )

    # --- public ---------------------------------------------------------------------------------
    def call(self, judge: JudgeClient, rubric: Rubric, messages: list[dict[str, str]]) -> JudgeCall:
        """The question ``messages`` (rendered by ``rubric``) for ``judge``, keyed by its content."""
        slot = (judge.name, rubric.name, rubric.version)
        keys = self._keys.get(slot)
        if keys is None:
            keys = self._keys[slot] = KeyTemplate(judge.identity, rubric.verdict_schema.model_json_schema())
        return JudgeCall(judge, rubric, messages, keys.key(messages))

    async def vote(self, call: JudgeCall) -> Vote:
        """The judge's vote on the question: from a collected batch, the cache, a shared call, a
        live call, or deferred to a provider batch."""
        judge = call.judge
        if self.batch is not None:
            collected = await self.batch.answer(call)
            if collected is not None:
                answer, shared = collected
                if isinstance(answer, Reasked):
                    return self._abstain(
                        judge, "pending", "its batch answer failed the verdict schema: re-asked in a provider batch, answered when the run resumes"
                    )
                return self._shared_collected(call, answer) if shared else self._record_collected(call, answer)
        use_cache = self.cache is not None and judge.cacheable
        if use_cache:
            assert self.cache is not None
            payload = self.cache.get(call.key)
            cached = self._cached_vote(call, payload) if payload is not None else None
            if cached is not None:
                return cached
        if self.offline and judge.kind != "mock":
            return self._abstain(judge, "offline_miss", "offline: no cached answer for this request")
        if not self.budget.can_launch():
            return self._abstain(judge, "budget", self.budget.message)
        if self.batch is not None and self.batch.takes(judge):
            self.batch.defer(call)
            return self._abstain(judge, "pending", "asked in a provider batch: answered when the run resumes (judge resume)")
        if not use_cache:
            return await self._launch(call, self._state())
        return await self._single_flight(call, self._state())

    async def aclose(self) -> None:
        """Close the clients and the cache (releasing any claims still held)."""
        for state in list(self._states.values()):
            if state.heartbeat is not None:
                state.heartbeat.cancel()
                state.heartbeat = None
        for client in self.clients:
            await client.aclose()
        if self.cache is not None:
            self.cache.close()

    # --- single flight --------------------------------------------------------------------------
    async def _single_flight(self, call: JudgeCall, state: _LoopState) -> Vote:
        """Identical requests in one process share one paid call (the first asks, the rest wait)."""
        pending = state.in_flight.get(call.key)
        if pending is not None:
            shared = await asyncio.shield(pending)
            return self._shared_copy(call.judge, shared)
        future = state.in_flight[call.key] = asyncio.get_running_loop().create_future()
        try:
            vote = await self._across_runs(call, state)
        except BaseException as exc:
            state.in_flight.pop(call.key, None)
            if not future.done():
                future.set_exception(exc)
                future.exception()  # retrieved: no "never retrieved" warning if nobody waits
            raise
        state.in_flight.pop(call.key, None)
        future.set_result(vote)
        return vote

    def _shared_copy(self, judge: JudgeClient, shared: Vote) -> Vote:
        """Another request's answer to the same content: like a cache hit, it costs nothing."""
        if shared.abstained:
            self.stats.count_abstention(judge.name, shared.abstain_reason)
        else:
            self.stats.count_cache_hit(judge.name)
            self.stats.count_repairs(judge.name, shared.repairs)
        return shared.model_copy(update={"cached": not shared.abstained or shared.cached, "cost_usd": 0.0})

    async def _across_runs(self, call: JudgeCall, state: _LoopState) -> Vote:
        """Claim the question in the shared cache, or wait for the run that holds it and take
        its answer. A claimant that gives up without an answer releases the claim, and a waiter
        then claims the question itself."""
        cache = self.cache
        assert cache is not None
        delay, longest = self.claim_poll_s
        waited = False
        while True:
            claim = cache.claim(call.key, self.claim_lease_s)
            if claim.claimed:
                break
            if claim.payload is not None:
                vote = self._cached_vote(call, claim.payload, shared=waited)
                if vote is not None:
                    return vote
                return await self._launch(call, state)  # an answer this schema cannot read: ask anew
            waited = True
            while cache.holder(call.key) is not None:
                await asyncio.sleep(delay)
                delay = min(longest, delay * 1.5)
        state.claimed.add(call.key)
        if state.heartbeat is None:
            state.heartbeat = asyncio.get_running_loop().create_task(self._renew_claims(state))
        try:
            return await self._launch(call, state)
        finally:
            if call.key in state.claimed:  # given up without an answer (storing one releases it)
                state.claimed.discard(call.key)
                cache.release(call.key)
            if not state.claimed and state.heartbeat is not None:
                state.heartbeat.cancel()
                state.heartbeat = None

    async def _renew_claims(self, state: _LoopState) -> None:
        """Keep our claims alive while their calls run (a renewal that fails is retried at the
        next beat; claims lapse only if renewals keep failing for a whole lease)."""
        assert self.cache is not None
        while state.claimed:
            await asyncio.sleep(self.claim_lease_s / 3)
            try:
                self.cache.renew(self.claim_lease_s)
            except sqlite3.ProgrammingError:  # the cache was closed under us: nothing left to renew
                return
            except sqlite3.Error as exc:
                log.warning("could not renew judge-cache claims (%s); retrying", exc)

    def _store(self, call: JudgeCall, payload: dict[str, Any]) -> None:
        """Write an answer to the cache; that also releases our claim on it."""
        assert self.cache is not None
        if not self.cache.put(call.key, call.judge.name, payload):  # kept in memory: the vote still goes into the results
            self.stats.cache_unsaved += 1
            self.stats.cache_error = self.stats.cache_error or self.cache.write_error or f"judge cache {self.cache.path} could not be written"
        state = self._states.get(asyncio.get_running_loop())
        if state is not None:
            state.claimed.discard(call.key)

    # --- limits and attempts --------------------------------------------------------------------
    async def _launch(self, call: JudgeCall, state: _LoopState) -> Vote:
        provider_sem = state.provider_sems.get(call.judge.provider)
        async with state.global_sem:
            if provider_sem is None:
                return await self._attempts(call, state)
            async with provider_sem:
                return await self._attempts(call, state)

    async def _attempts(self, call: JudgeCall, state: _LoopState) -> Vote:
        judge = call.judge
        limiter = state.limiters.get(judge.provider)
        retry = self._retries.get(judge.name, self.retry.config)
        max_attempts = retry.max_attempts
        self.stats.count_call(judge.name)
        last: JudgeCallError | None = None
        attempt = 0
        for attempt in range(1, max_attempts + 1):
            if not self.budget.can_launch():  # spending may have crossed the limit while we waited
                return self._abstain(judge, "budget", self.budget.message)
            if limiter is not None:
                await limiter.acquire()
            self.stats.count_attempt(judge.name)
            if self.budget.log is not None:  # before it is sent: a call in flight when the run is stopped is paid, most likely
                self.budget.log.launched(judge.name, call.key)
            try:
                if judge.enforces_timeout:  # the SDK times out each request itself
                    completion = await self.transport(call)
                else:  # a guard costs an extra task hop per call, so only where needed
                    deadline = judge.timeout_s * (judge.config.validation_retries + 1) + 1.0
                    completion = await asyncio.wait_for(self.transport(call), timeout=deadline)
            except TimeoutError:
                last = JudgeCallError("timeout", f"no answer within the call deadline ({judge.timeout_s} s per request)")
            except JudgeCallError as err:
                last = err
            else:
                return self._record_success(call, completion)
            self._account(judge, last.input_tokens, last.output_tokens, key=call.key)
            if attempt < max_attempts and judge.should_retry(last):
                self.stats.count_retry(last.reason)
                log.info("retrying %s after %s: %s", judge.name, last.reason, last.message)
                await self.retry.sleep(self.retry.delay(attempt, last.retry_after, retry))
                continue
            break
        assert last is not None
        reason = ABSTAIN_REASON.get(last.reason, last.reason)
        message = last.message if attempt == 1 else f"after {attempt} attempts: {last.message}"
        if self.cache is not None and judge.cacheable and last.cacheable:
            self._store(call, _abstention_payload(reason, message, last))
        return self._abstain(judge, reason, message, input_tokens=last.input_tokens, output_tokens=last.output_tokens)

    # --- recording ------------------------------------------------------------------------------
    def _record_collected(self, call: JudgeCall, collected: Completion | JudgeCallError) -> Vote:
        """A provider batch's answer to the question: a live call of this run, priced as a batch."""
        judge = call.judge
        self.stats.count_call(judge.name)
        self.stats.count_attempt(judge.name)
        if isinstance(collected, Completion):
            return self._record_success(call, collected, batch=True)
        self._account(judge, collected.input_tokens, collected.output_tokens, batch=True)
        reason = ABSTAIN_REASON.get(collected.reason, collected.reason)
        if self.cache is not None and judge.cacheable and collected.cacheable:
            self._store(call, _abstention_payload(reason, collected.message, collected))
        return self._abstain(judge, reason, collected.message, input_tokens=collected.input_tokens, output_tokens=collected.output_tokens, batch=True)

    def _shared_collected(self, call: JudgeCall, collected: Completion | JudgeCallError) -> Vote:
        """A batch answer another asker in this round got first: free, as a shared online call."""
        judge = call.judge
        if isinstance(collected, JudgeCallError):
            reason = ABSTAIN_REASON.get(collected.reason, collected.reason)
            vote = self._abstain(judge, reason, collected.message, input_tokens=collected.input_tokens, output_tokens=collected.output_tokens)
            return vote.model_copy(update={"cost_usd": 0.0})
        self.stats.count_cache_hit(judge.name)
        verdict = collected.verdict.model_dump(mode="json")
        repairs = repairs_of(collected.verdict)
        self.stats.count_repairs(judge.name, repairs)
        return _vote_from_verdict(
            judge, call.rubric, verdict, collected.model_version, collected.input_tokens, collected.output_tokens, cost=0.0, cached=True, repairs=repairs
        )

    def _record_success(self, call: JudgeCall, completion: Completion, *, batch: bool = False) -> Vote:
        judge = call.judge
        cost = self._account(judge, completion.input_tokens, completion.output_tokens, batch=batch, key=call.key)  # before the cache has it
        verdict = completion.verdict.model_dump(mode="json")
        repairs = repairs_of(completion.verdict)
        if self.cache is not None and judge.cacheable:  # written the moment it arrives: an interrupted run never pays twice
            payload: dict[str, Any] = {
                "verdict": verdict,
                "model_version": completion.model_version,
                "input_tokens": completion.input_tokens,
                "output_tokens": completion.output_tokens,
            }
            if repairs:  # the verdict is stored as read; what reading it took stays with it
                payload["repairs"] = repairs
            self._store(call, payload)
        self.stats.count_repairs(judge.name, repairs)
        return _vote_from_verdict(
            judge, call.rubric, verdict, completion.model_version, completion.input_tokens, completion.output_tokens, cost, cached=False, repairs=repairs
        )

    def _account(self, judge: JudgeClient, input_tokens: int, output_tokens: int, *, batch: bool = False, key: str | None = None) -> float:
        """Count one attempt's tokens and cost; a live one (``key``) in the run's spend log too."""
        cost = cost_usd(price_for(judge.name, judge.kind, self.prices, batch=batch), input_tokens, output_tokens)
        self.stats.add_cost(judge.name, input_tokens, output_tokens, cost)
        self.budget.add(cost)
        if key is not None and not batch and self.budget.log is not None:
            self.budget.log.paid(judge.name, key, cost)
        return cost

    def _cached_vote(self, call: JudgeCall, payload: dict[str, Any], *, shared: bool = False) -> Vote | None:
        """A vote from a cache entry (None: an entry this schema cannot read, a miss; so is an
        ``unparseable`` abstention an older, stricter verdict reader recorded: this reader may
        accept the answer, so it is asked again, see ``_reading.READER_VERSION``; offline, where
        nothing can be asked, it is served as recorded)."""
        judge = call.judge
        inp, out = int(payload.get("input_tokens", 0)), int(payload.get("output_tokens", 0))
        if not self.offline and payload.get("abstain") == AbstainReason.UNPARSEABLE and int(payload.get("reader") or 1) < READER_VERSION:
            return None
        if "abstain" in payload:
            vote = Vote(
                judge=judge.name,
                abstained=True,
                abstain_reason=payload["abstain"],
                rationale=payload.get("message", ""),
                cached=True,
                input_tokens=inp,
                output_tokens=out,
            )
        else:
            try:
                verdict = call.rubric.verdict_schema.model_validate(payload["verdict"]).model_dump(mode="json")
            except (ValidationError, KeyError, TypeError):
                return None
            repairs = [str(n) for n in payload.get("repairs") or []]
            vote = _vote_from_verdict(judge, call.rubric, verdict, payload.get("model_version"), inp, out, cost=0.0, cached=True, repairs=repairs)
            self.stats.count_repairs(judge.name, repairs)
        self.stats.count_cache_hit(judge.name)
        if shared:
            self.stats.shared_with_other_runs += 1
        if vote.abstained:
            self.stats.count_abstention(judge.name, vote.abstain_reason)
        paid = self.budget.log.take(judge.name, call.key) if self.budget.log is not None else None
        if paid is not None:  # this run paid for it in a round it was stopped in: the paid vote it was (its cost already counted)
            vote = vote.model_copy(update={"cached": False, "cost_usd": paid})
        return vote

    def _abstain(self, judge: JudgeClient, reason: str, message: str, input_tokens: int = 0, output_tokens: int = 0, *, batch: bool = False) -> Vote:
        self.stats.count_abstention(judge.name, reason)
        if reason == "budget":
            self.stats.budget_exhausted = True
            self.stats.budget_message = message
        cost = cost_usd(price_for(judge.name, judge.kind, self.prices, batch=batch), input_tokens, output_tokens)
        return Vote(
            judge=judge.name,
            abstained=True,
            abstain_reason=AbstainReason(reason),
            rationale=message,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cost_usd=cost,
        )

    # --- plumbing -------------------------------------------------------------------------------
    def _state(self) -> _LoopState:
        loop = asyncio.get_running_loop()
        state = self._states.get(loop)
        if state is None:
            state = self._states[loop] = _LoopState(self.concurrency, self.providers)
        return state


def _vote_from_verdict(
    judge: JudgeClient,
    rubric: Rubric,
    verdict: dict[str, Any],
    model_version: str | None,
    input_tokens: int = 0,
    output_tokens: int = 0,
    cost: float = 0.0,
    *,
    cached: bool,
    repairs: list[str] | None = None,
) -> Vote:
    label = verdict["label"]
    return Vote(
        judge=judge.name,
        label=label,
        score=rubric.label_scores.get(label),
        rationale=verdict.get("rationale", ""),
        evidence=list(verdict.get("evidence") or []),
        confidence=verdict.get("confidence"),
        model_version=model_version,
        decisive_step=verdict.get("decisive_step"),
        repairs=list(repairs) if repairs else None,
        quotes=[dict(q) for q in verdict["quotes"]] if "quotes" in verdict else None,
        candidate_answer=verdict.get("candidate_answer"),
        cached=cached,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cost_usd=cost,
    )


def _abstention_payload(reason: str, message: str, failure: JudgeCallError) -> dict[str, Any]:
    """The cache entry of a provider answer that is itself the failure (a refusal, a verdict the
    schema rejects even read leniently: ``reader`` says by which reader, ``_cached_vote``)."""
    payload: dict[str, Any] = {"abstain": reason, "message": message, "input_tokens": failure.input_tokens, "output_tokens": failure.output_tokens}
    if reason == AbstainReason.UNPARSEABLE:
        payload["reader"] = READER_VERSION
    return payload
