"""The model caller on its own: rate limiting of live attempts only, retries, unreadable answers
retried and never cached, final errors not retried."""

from __future__ import annotations

import asyncio

import pytest

from judge.llm import JudgeCache, ProviderConfig, RateLimiter, RetryConfig, RetryPolicy
from pipelines.runner import AgentCallError, Conversation, ModelCaller, Sampling, create_agent
from pipelines.runner._conversation import UserMessage
from tests.runner.conftest import MODEL
from tests.servers.agent import Say
from tests.servers.loopback import MalformedBody, Status


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.waits: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds


def _caller(server, tmp_path, **kwargs) -> ModelCaller:
    agent = create_agent(f"openai:{MODEL}", {"openai": ProviderConfig(base_url=server.openai_base_url)}, Sampling())
    retry = RetryPolicy(config=RetryConfig(max_attempts=3, base_delay_s=0.0, max_delay_s=0.0), sleep=lambda s: asyncio.sleep(0))
    return ModelCaller(agent, cache=JudgeCache(tmp_path / "c.sqlite"), retry=retry, **kwargs)


def _ask(caller: ModelCaller, text: str, seed: int = 1):
    async def go():
        try:
            return await caller.reply(Conversation("system", [UserMessage(text)]), [], seed)
        finally:
            await caller.agent.aclose()

    return asyncio.run(go())


def test_live_attempts_are_rate_limited_and_cache_hits_are_not(tmp_path, server):
    server.set_default(MODEL, Say("ok"))
    fake = FakeTime()
    caller = _caller(server, tmp_path, limiter=RateLimiter(60, burst=1, clock=fake.clock, sleep=fake.sleep))
    for text in ("a", "b", "c"):
        _ask(caller, text)
    assert fake.waits == [1.0, 1.0]  # 60 rpm, burst 1: the 2nd and 3rd live calls wait a second each
    for text in ("a", "b", "c"):
        reply, record = _ask(caller, text)
        assert record.cached and reply.text == "ok"
    assert fake.waits == [1.0, 1.0] and caller.stats.cache_hits == 3 and server.calls(MODEL) == 3


def test_an_unreadable_answer_is_retried_and_never_cached(tmp_path, server):
    server.script(MODEL, MalformedBody())
    server.set_default(MODEL, Say("fine"))
    caller = _caller(server, tmp_path)
    reply, record = _ask(caller, "q")
    assert reply.text == "fine" and record.attempts == 2 and caller.stats.retry_reasons == {"server": 1}


def test_a_final_error_is_not_retried(tmp_path, server):
    server.script(MODEL, Status(400, message="bad request"))
    caller = _caller(server, tmp_path)
    with pytest.raises(AgentCallError) as info:
        _ask(caller, "q")
    assert info.value.reason == "error" and "HTTP 400" in info.value.message and server.calls(MODEL) == 1


def test_the_seed_is_part_of_the_key(tmp_path, server):
    server.set_default(MODEL, Say("ok"))
    caller = _caller(server, tmp_path)
    _ask(caller, "q", seed=1)
    _, again = _ask(caller, "q", seed=2)
    assert not again.cached and server.calls(MODEL) == 2
