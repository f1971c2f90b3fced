"""Retries, request-rate pacing, and the cost budget: the guards around every live judge call.

- Retries: exponential backoff with jitter on 429/5xx/timeouts/connection errors; a server's
  Retry-After is honoured exactly (capped at ``retry_after_cap_s``). ``sleep`` and ``rng`` are
  injectable so tests can check the delays without waiting for them.
- ``RateLimiter``: a token bucket per provider (``rpm``), burst of one second's worth.
- ``Budget``: once spending reaches ``max_cost_usd`` no new call is launched; calls already in
  flight finish (so the overshoot is bounded by concurrency x one call's cost). Processes judging
  for one run share a ledger, so the limit and the bound are the run's (``_sharded``); a run's
  spend log (``_spend``) carries what it paid across its resumes.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from judge.llm._settings import PriceConfig, RetryConfig

Sleep = Callable[[float], Awaitable[None]]

# USD per 1M tokens (input, output); list prices as of 2026. Unknown models cost 0, with a note.
DEFAULT_PRICES: dict[str, PriceConfig] = {
    "openai:gpt-4.1": PriceConfig(input_per_1m=2.00, output_per_1m=8.00),
    "openai:gpt-4.1-mini": PriceConfig(input_per_1m=0.40, output_per_1m=1.60),
    "openai:gpt-4.1-nano": PriceConfig(input_per_1m=0.10, output_per_1m=0.40),
    "openai:gpt-4o": PriceConfig(input_per_1m=2.50, output_per_1m=10.00),
    "openai:gpt-4o-mini": PriceConfig(input_per_1m=0.15, output_per_1m=0.60),
    "anthropic:claude-haiku-4-5": PriceConfig(input_per_1m=1.00, output_per_1m=5.00),
    "anthropic:claude-sonnet-4-5": PriceConfig(input_per_1m=3.00, output_per_1m=15.00),
    "anthropic:claude-opus-4-1": PriceConfig(input_per_1m=15.00, output_per_1m=75.00),
}
FREE_KINDS = frozenset({"mock", "llamacpp"})
# What OpenAI's Batch API and Anthropic's Message Batches take off the online price (both
# document 50%); a configured ``batch_input_per_1m`` / ``batch_output_per_1m`` wins.
BATCH_DISCOUNT = 0.5


def price_for(judge: str, kind: str, prices: dict[str, PriceConfig], *, batch: bool = False) -> PriceConfig | None:
    """The configured price, else the default for ``kind:model``; None when unknown.
    ``batch``: the price of an answer collected from a provider batch."""
    if judge in prices:
        price: PriceConfig | None = prices[judge]
    elif kind in FREE_KINDS:
        price = PriceConfig(input_per_1m=0.0, output_per_1m=0.0)
    else:
        price = DEFAULT_PRICES.get(f"{kind}:{judge.partition(':')[2]}")
    return batch_price(price) if batch and price is not None else price


def batch_price(price: PriceConfig) -> PriceConfig:
    """The batch price of ``price``: its own batch fields, else the online price less ``BATCH_DISCOUNT``."""
    inp = price.batch_input_per_1m if price.batch_input_per_1m is not None else price.input_per_1m * (1 - BATCH_DISCOUNT)
    out = price.batch_output_per_1m if price.batch_output_per_1m is not None else price.output_per_1m * (1 - BATCH_DISCOUNT)
    return PriceConfig(input_per_1m=inp, output_per_1m=out)


def cost_usd(price: PriceConfig | None, input_tokens: int, output_tokens: int) -> float:
    if price is None:
        return 0.0
    return round((input_tokens * price.input_per_1m + output_tokens * price.output_per_1m) / 1_000_000, 10)


class RetryPolicy(msgspec.Struct):
    config: RetryConfig = msgspec.field(default_factory=RetryConfig)
    sleep: Sleep = asyncio.sleep
    rng: random.Random = msgspec.field(default_factory=random.Random)

    def delay(self, attempt: int, retry_after: float | None, config: RetryConfig | None = None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based), by ``config`` (a
        judge's own retry settings, ``JudgeCaller``) or else this policy's."""
        c = config or self.config
        if retry_after is not None:
            return min(retry_after, c.retry_after_cap_s)
        base = min(c.max_delay_s, c.base_delay_s * (2 ** (attempt - 1)))
        return min(c.max_delay_s, base * (1.0 + c.jitter * self.rng.random()))


class RateLimiter:
    """Token bucket: ``rpm`` requests per minute, up to ``burst`` at once."""

    def __init__(self, rpm: float, burst: float | None = None, clock: Callable[[], float] = time.monotonic, sleep: Sleep = asyncio.sleep):
        self.rate = rpm / 60.0
        self.capacity = burst if burst is not None else max(1.0, self.rate)
        self.tokens = self.capacity
        self.clock = clock
        self.sleep = sleep
        self.updated = clock()
        self._lock = asyncio.Lock()

    async def acquire(self) -> None:
        async with self._lock:
            now = self.clock()
            self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.rate)
            self.updated = now
            if self.tokens < 1.0:
                wait = (1.0 - self.tokens) / self.rate
                await self.sleep(wait)
                now = self.clock()
                self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.rate)
                self.updated = now
                self.tokens = max(self.tokens, 1.0)  # a fake clock may not advance; we did wait
            self.tokens -= 1.0


class Budget(msgspec.Struct):
    """``max_cost_usd`` over a run's judge calls. ``ledger``: spending shared by the processes that
    judge for one run (a ``multiprocessing.Value("d")``, see ``_sharded``), so the limit stays the
    run's: every process checks the run's total before each call and adds its costs to it, and the
    overshoot stays bounded by the calls in flight, across all of them. ``log``: the run's spend
    log (``judge.llm._spend.SpendLog``), where every live attempt is written as it is launched
    and as it is counted, so a resumed run counts what its stopped sessions paid."""

    max_cost_usd: float | None = None
    spent_usd: float = 0.0  # by this process
    exhausted: bool = False
    ledger: Any = None
    log: Any = None

    @property
    def total_usd(self) -> float:
        """What the run spent: every process's spending with a ledger, else this process's."""
        return float(self.ledger.value) if self.ledger is not None else self.spent_usd

    def can_launch(self) -> bool:
        if self.max_cost_usd is not None and self.total_usd >= self.max_cost_usd:
            self.exhausted = True
        return not self.exhausted

    def add(self, cost: float) -> None:
        self.spent_usd += cost
        if self.ledger is not None and cost:
            with self.ledger.get_lock():
                self.ledger.value += cost

    @property
    def message(self) -> str:
        if not self.exhausted:
            return ""
        return f"judge budget of ${self.max_cost_usd:.4f} reached (spent ${self.total_usd:.4f}); no further judge calls were launched"
