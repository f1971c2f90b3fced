"""The caller on its own and the provider contract: abstract clients, provider-owned retry
decisions (over real HTTP), the transport seam, connection pools, instructor's validator scan."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel

import rubrics
from judge.llm import Completion, JudgeCache, JudgeCall, JudgeCaller, JudgeClient, RetryConfig, RetryPolicy, cache_key, create_client
from judge.llm._cache import KeyTemplate
from judge.llm._settings import ProviderConfig
from tests.judge.helpers import SleepRecorder, answer_request, decide, make_panel
from tests.servers import Reply, Status

RUBRIC = rubrics.get_rubric("answer_correctness")


def test_a_client_must_implement_complete():
    class Half(JudgeClient):
        kind = "half"

    with pytest.raises(TypeError, match="complete"):
        Half("half", "m", ProviderConfig())  # type: ignore[abstract]


async def test_openai_quota_429_is_final_not_a_rate_limit(server, tmp_path):
    server.set_default("judge-a", Status(429, error_code="insufficient_quota", message="You exceeded your current quota"))
    sleeper = SleepRecorder()
    panel = make_panel(tmp_path, ["openai:judge-a"], sleeper=sleeper)
    [d] = await decide(panel, [answer_request()])
    assert server.calls("judge-a") == 1 and sleeper.delays == []
    assert d.votes[0].abstain_reason == "error" and panel.stats.retries == 0


async def test_plain_429_is_still_retried(server, tmp_path):
    server.script("judge-a", Status(429, error_code="rate_limit_exceeded"), Reply("correct"))
    [d] = await decide(make_panel(tmp_path, ["openai:judge-a"]), [answer_request()])
    assert d.label == "correct" and server.calls("judge-a") == 2


@pytest.mark.parametrize("judge", ["openai:judge-a", "anthropic:judge-b"])
async def test_server_header_says_do_not_retry_a_5xx(server, tmp_path, judge):
    model = judge.split(":")[1]
    server.set_default(model, Status(503, should_retry="false"))
    [d] = await decide(make_panel(tmp_path, [judge]), [answer_request()])
    assert server.calls(model) == 1 and d.votes[0].abstain_reason == "error"


@pytest.mark.parametrize("judge", ["openai:judge-a", "anthropic:judge-b"])
async def test_server_header_says_retry_a_4xx(server, tmp_path, judge):
    model = judge.split(":")[1]
    server.script(model, Status(409, should_retry="true"), Reply("incorrect"))
    [d] = await decide(make_panel(tmp_path, [judge]), [answer_request()])
    assert d.label == "incorrect" and server.calls(model) == 2


async def test_mock_failures_are_never_retried(tmp_path):
    sleeper = SleepRecorder()
    panel = make_panel(tmp_path, ["mock:fail"], sleeper=sleeper, no_cache=True)
    [d] = await decide(panel, [answer_request()])
    assert d.votes[0].abstain_reason == "error" and panel.stats.attempts == 1 and sleeper.delays == []


class CannedTransport:
    """A transport that answers from a table (the seam a batch API would use), counting calls."""

    def __init__(self, label: str):
        self.label = label
        self.keys: list[str] = []

    async def __call__(self, call: JudgeCall) -> Completion:
        self.keys.append(call.key)
        verdict = call.rubric.verdict_schema.model_validate({"label": self.label, "rationale": "canned", "confidence": 0.5})
        return Completion(verdict=verdict, model_version="canned-1", input_tokens=7, output_tokens=3)


async def test_caller_alone_with_another_transport_caches_by_key(tmp_path):
    judge = create_client("openai:judge-a", {})
    transport = CannedTransport("missing")
    cache = JudgeCache(tmp_path / "cache.sqlite3")
    caller = JudgeCaller([judge], cache=cache, transport=transport)
    messages = RUBRIC.render(answer_request().material)
    call = caller.call(judge, RUBRIC, messages)
    first = await caller.vote(call)
    again = await caller.vote(caller.call(judge, RUBRIC, messages))
    await caller.aclose()
    assert transport.keys == [call.key]
    assert (first.label, first.cached, first.model_version, first.input_tokens) == ("missing", False, "canned-1", 7)
    assert (again.label, again.cached) == ("missing", True)
    assert caller.stats.calls == 1 and caller.stats.cache_hits == 1 and caller.stats.per_judge["openai:judge-a"].output_tokens == 3


@pytest.mark.parametrize("judge,sdk", [("openai:judge-a", "openai"), ("anthropic:judge-b", "anthropic")])
async def test_many_in_flight_go_over_aiohttp_within_the_concurrency_limit(server, tmp_path, judge, sdk):
    import importlib

    server.latency_s = 0.05
    model = judge.split(":")[1]
    panel = make_panel(tmp_path, [judge], concurrency=40)
    [client] = panel.judges
    decisions = await panel.decide([answer_request(i) for i in range(60)])
    loop_client = client._loop_client
    assert loop_client is not None
    http = loop_client.client._client
    await panel.aclose()
    assert isinstance(http, importlib.import_module(sdk).DefaultAioHttpClient)
    assert all(d.label == "correct" for d in decisions) and server.calls(model) == 60
    assert server.max_in_flight <= 40


def test_async_validator_scan_is_remembered_only_for_clean_classes():
    from instructor.v2.validation import async_validators

    from judge.llm._providers._instructor import _remember_clean_async_validator_scans

    _remember_clean_async_validator_scans()
    scan = async_validators.reject_async_validators
    assert getattr(scan, "_judge_remembers_clean", False)

    class Clean(BaseModel):
        label: str

    class WithAsync(BaseModel):
        label: str

        @async_validators.async_field_validator("label")
        async def check(self, value: str) -> str:
            return value

    scan(Clean)
    scan(Clean)
    for _ in range(2):  # a class with async validators is rejected every time, never remembered
        with pytest.raises(ValueError, match="async validators"):
            scan(WithAsync)


async def test_a_caller_in_a_new_event_loop_gets_new_primitives(tmp_path):
    judge = create_client("mock:always-correct", {})
    caller = JudgeCaller([judge], retry=RetryPolicy(RetryConfig(max_attempts=1)))
    messages = RUBRIC.render(answer_request().material)

    def run_once() -> str | None:
        async def ask() -> str | None:
            return (await caller.vote(caller.call(judge, RUBRIC, messages))).label

        return asyncio.run(ask())

    first = await asyncio.to_thread(run_once)
    second = await asyncio.to_thread(run_once)
    assert first == second == "correct" and caller.stats.calls == 2


@pytest.mark.parametrize("name", ["openai:judge-a", "anthropic:judge-b", "mock:pick", "llamacpp:/models/x.gguf"])
def test_key_template_gives_exactly_the_cache_keys_of_the_full_identity(name):
    client = create_client(name, {})
    schema = RUBRIC.verdict_schema.model_json_schema()
    template = KeyTemplate(client.identity, schema)
    odd = [{"role": "user", "content": 'ünïcode \u2028 "quotes" </data> 3.0'}, {"role": "assistant", "content": ""}]
    for messages in [*(RUBRIC.render(answer_request(i).material) for i in range(3)), odd, []]:
        assert template.key(messages) == cache_key(client.identity(messages, schema))


def test_cache_keys_never_change_silently():
    """Every cached answer a user has paid for is found by this key: a change to the identity or
    to canonical JSON must be deliberate (and bump SCHEMA_VERSION)."""
    identity = {
        "kind": "openai",
        "model": "gpt-4.1-mini",
        "base_url": "http://127.0.0.1:9/v1",
        "messages": [{"role": "user", "content": 'ünï "q" 3'}],
        "schema": {"type": "object", "properties": {"x": {"type": "number", "minimum": 1.0}}},
        "sampling": {"temperature": 0, "max_tokens": 1024, "seed": 0},
    }
    assert cache_key(identity) == "bed1869b1cbd6367f3b7bbc89f736f9445c81a596e157a95306547ec62454328"
