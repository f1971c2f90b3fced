"""Every model request of a run goes through here: cache, rate limit, retries, cost.

- Cache: content-addressed (``judge.llm.JudgeCache``, SQLite): the key is the provider kind, base
  URL, the exact wire payload and the trial seed, never a key or a header. Each answer is written
  the moment it arrives, so an interrupted run never pays twice, and a rerun with the same seed
  replays offline. Failures are never cached.
- Retries: ``judge.llm.RetryPolicy`` (exponential backoff with jitter; Retry-After honoured) on
  429, 5xx, timeouts and connection errors; anything else is final.
- Rate limit: ``judge.llm.RateLimiter`` (requests per minute) before every live attempt.
- Cost: token prices from the config file's ``[prices]`` or the judges' defaults; a cached answer
  costs nothing now (the trajectory still records what it cost when it was made).
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any

import msgspec
import orjson

from judge import MAX_DEPTH, ToolSpec, nesting_error
from judge.llm import Budget, JudgeCache, PriceConfig, RateLimiter, RetryPolicy, cost_usd
from pipelines.runner._conversation import Conversation, ModelReply
from pipelines.runner.agents import AgentCallError, AgentModel

KEY_VERSION = 1


def request_key(identity: dict[str, Any]) -> str:
    """sha256 of the request identity as sorted-key JSON (orjson: a few microseconds where the
    canonical form of a 20-tool conversation costs a third of a millisecond). What orjson cannot
    write (an integer past 64 bits a model put in its arguments) goes through the standard library."""
    keyed = {"v": KEY_VERSION, "request": identity}
    try:
        text = orjson.dumps(keyed, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:
        text = json.dumps(keyed, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
    return hashlib.sha256(text).hexdigest()


class CallRecord(msgspec.Struct):
    """One model message as the trajectory records it."""

    cached: bool
    latency_ms: float
    attempts: int
    cost_usd: float


class CallerStats(msgspec.Struct):
    """For the manifest: what the run's model calls cost and how often they had to be retried."""

    requests: int = 0
    live_calls: int = 0
    cache_hits: int = 0
    attempts: int = 0
    retries: int = 0
    retry_reasons: dict[str, int] = msgspec.field(default_factory=dict)
    input_tokens: int = 0  # live calls only
    output_tokens: int = 0
    cost_usd: float = 0.0  # spent by this run (live calls)
    model_versions: dict[str, int] = msgspec.field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "live_calls": self.live_calls,
            "cache_hits": self.cache_hits,
            "attempts": self.attempts,
            "retries": self.retries,
            "retry_reasons": dict(sorted(self.retry_reasons.items())),
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": round(self.cost_usd, 6),
            "model_versions": dict(sorted(self.model_versions.items())),
        }


class ModelCaller:
    def __init__(
        self,
        agent: AgentModel,
        *,
        cache: JudgeCache | None = None,
        offline: bool = False,
        retry: RetryPolicy | None = None,
        limiter: RateLimiter | None = None,
        price: PriceConfig | None = None,
        budget: Budget | None = None,
    ):
        self.agent = agent
        self.cache = cache
        self.offline = offline
        self.retry = retry or RetryPolicy()
        self.limiter = limiter
        self.price = price
        self.budget = budget or Budget()
        self.stats = CallerStats()

    async def reply(self, conversation: Conversation, tools: list[ToolSpec], seed: int) -> tuple[ModelReply, CallRecord]:
        """The model's next message; raises ``AgentCallError`` when none can be had."""
        payload = self.agent.request(conversation, tools, seed)
        key = request_key(self.agent.identity(payload, seed))
        self.stats.requests += 1
        started = time.perf_counter()
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None and "response" in hit:
                self.stats.cache_hits += 1
                reply = self.agent.parse(hit["response"])
                return reply, self._record(reply, started, cached=True, attempts=0)
        if self.offline:
            raise AgentCallError("offline", "no cached response for this request and --offline forbids a live call")
        response, reply, attempts = await self._live(payload)
        if self.cache is not None:  # written the moment it arrives: an interrupted run never pays twice
            self.cache.put(key, self.agent.name, {"response": response})
        record = self._record(reply, started, cached=False, attempts=attempts)
        self.stats.input_tokens += reply.input_tokens
        self.stats.output_tokens += reply.output_tokens
        self.stats.cost_usd += record.cost_usd
        self.budget.add(record.cost_usd)
        return reply, record

    async def _live(self, payload: dict[str, Any]) -> tuple[dict[str, Any], ModelReply, int]:
        max_attempts = self.retry.config.max_attempts
        self.stats.live_calls += 1
        for attempt in range(1, max_attempts + 1):
            if self.limiter is not None:
                await self.limiter.acquire()
            self.stats.attempts += 1
            try:
                response = await self.agent.send(payload)
                try:
                    deep = nesting_error(response)  # the cache and the trajectory must be able to write it
                    if deep is not None:
                        raise ValueError(f"nested deeper than {MAX_DEPTH} levels at {deep}")
                    return response, self.agent.parse(response), attempt
                except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:  # a 200 we cannot read: never cached
                    raise AgentCallError("server", f"unreadable response: {type(exc).__name__}: {exc}") from exc
            except AgentCallError as err:
                if not err.retryable or attempt == max_attempts:
                    if attempt > 1:
                        raise AgentCallError(err.reason, f"after {attempt} attempts: {err.message}") from err
                    raise
                self.stats.retries += 1
                self.stats.retry_reasons[err.reason] = self.stats.retry_reasons.get(err.reason, 0) + 1
                await self.retry.sleep(self.retry.delay(attempt, err.retry_after))
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _record(self, reply: ModelReply, started: float, *, cached: bool, attempts: int) -> CallRecord:
        if reply.model_version:
            self.stats.model_versions[reply.model_version] = self.stats.model_versions.get(reply.model_version, 0) + 1
        cost = cost_usd(self.price, reply.input_tokens, reply.output_tokens)
        return CallRecord(cached=cached, latency_ms=round((time.perf_counter() - started) * 1000, 3), attempts=attempts, cost_usd=cost)
