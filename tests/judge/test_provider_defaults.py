"""Defaults that fit the provider (judge.llm._settings.ProviderDefaults): a server on this machine
and the in-process llama.cpp model start with fewer calls in flight, longer deadlines and fewer,
longer-spaced retries than a hosted API; anything set explicitly wins.

Why: with the hosted defaults (32 in flight, 60 s, 4 attempts 0.5 s apart) a single-slot local
llama.cpp server timed out (5 trajectories took 356 s with 9 retries) and the in-process provider
abstained on every call. The loopback server runs on 127.0.0.1: it is a local server, so the
tests over it see those defaults (tests that are not about them set their own timeout and retries)."""

from __future__ import annotations

import pytest

import rubrics
from judge.llm import JudgeSettings, RetryConfig, RetryPolicy, build_panel, create_client
from judge.llm._settings import HOSTED, IN_PROCESS, LOCAL_SERVER, ProviderConfig, is_local_url
from tests.judge.helpers import SleepRecorder, answer_request, decide, write_config
from tests.servers import Reply, Status


@pytest.mark.parametrize(
    "url,local",
    [
        ("http://localhost:8000/v1", True),
        ("http://LOCALHOST:11434/v1", True),
        ("http://judge.localhost/v1", True),
        ("http://127.0.0.1:8080/v1", True),
        ("http://127.0.1.1:8080", True),
        ("http://[::1]:8000/v1", True),
        ("http://0.0.0.0:8000/v1", True),
        ("https://api.openai.com/v1", False),
        ("https://api.anthropic.com", False),
        ("http://10.1.2.3:8000/v1", False),
        ("http://localhost.example.com/v1", False),
        ("not a url", False),
        (None, False),
    ],
)
def test_a_local_server_is_one_on_this_machine(url, local):
    assert is_local_url(url) is local


@pytest.mark.parametrize(
    "name,providers,defaults",
    [
        ("openai:gpt-4.1-mini", {"openai": ProviderConfig(base_url="https://api.openai.com/v1")}, HOSTED),
        ("anthropic:claude-haiku-4-5", {"anthropic": ProviderConfig(base_url="https://api.anthropic.com")}, HOSTED),
        ("vllm:qwen3-8b", {"vllm": ProviderConfig(kind="openai", base_url="http://localhost:8000/v1")}, LOCAL_SERVER),
        ("openai:smollm2", {}, LOCAL_SERVER),  # OPENAI_BASE_URL (the tests' 127.0.0.1:9) is a local server
        ("anthropic:local", {"anthropic": ProviderConfig(base_url="http://[::1]:8080")}, LOCAL_SERVER),
        ("llamacpp:/models/smollm2.gguf", {}, IN_PROCESS),
        ("mock:always-correct", {}, HOSTED),
    ],
)
def test_each_kind_of_provider_starts_with_its_own_defaults(name, providers, defaults):
    client = create_client(name, providers)
    assert client.defaults() == defaults
    assert client.timeout_s == defaults.timeout_s  # before any caller configures it


def test_the_defaults_themselves():
    assert (HOSTED.concurrency, HOSTED.timeout_s, HOSTED.retry) == (None, 60.0, None)  # today's: the run's 32, 60 s, 4 attempts
    assert (LOCAL_SERVER.concurrency, LOCAL_SERVER.timeout_s) == (2, 600.0)
    assert LOCAL_SERVER.retry is not None and LOCAL_SERVER.retry.max_attempts < RetryConfig().max_attempts
    assert LOCAL_SERVER.retry.base_delay_s > RetryConfig().base_delay_s and LOCAL_SERVER.retry.max_delay_s >= RetryConfig().max_delay_s
    assert (IN_PROCESS.concurrency, IN_PROCESS.timeout_s) == (1, 600.0)


def _built(tmp_path, judges, *, config: str = "", **settings):
    if config:
        settings["config_path"] = write_config(tmp_path, config)
    panel = build_panel(JudgeSettings(judges=judges, offline=True, no_cache=True, **settings), rubrics.RUBRICS)
    assert panel is not None
    return panel


def _limits(panel, name):
    """(provider's concurrency or None, the run's concurrency, the judge's timeout, its retry settings)."""
    caller = panel.caller
    client = next(c for c in caller.clients if c.name == name)
    provider = caller.providers.get(client.provider)
    return provider.concurrency if provider else None, caller.concurrency, client.timeout_s, caller._retries.get(name, caller.retry.config)


HOSTED_CFG = '[providers.openai]\nbase_url = "https://api.openai.com/v1"\n'
LOCAL_CFG = '[providers.vllm]\nkind = "openai"\nbase_url = "http://localhost:8000/v1"\n'


def test_nothing_set_each_judge_gets_its_providers_defaults(tmp_path):
    panel = _built(tmp_path, ["openai:gpt-4.1-mini", "vllm:qwen3-8b", "llamacpp:/models/m.gguf"], config=HOSTED_CFG + LOCAL_CFG)
    assert _limits(panel, "openai:gpt-4.1-mini") == (None, 32, 60.0, RetryConfig())
    assert _limits(panel, "vllm:qwen3-8b") == (2, 32, 600.0, LOCAL_SERVER.retry)
    assert _limits(panel, "llamacpp:/models/m.gguf") == (1, 32, 600.0, IN_PROCESS.retry)
    notes = " ".join(panel.stats.notes)
    assert "vllm:qwen3-8b is a local server judge (http://localhost:8000/v1)" in notes and "[providers.vllm] concurrency, timeout_s" in notes
    assert "llamacpp:/models/m.gguf is an in-process judge" in notes
    assert "gpt-4.1-mini is" not in notes


def test_a_providers_own_settings_win(tmp_path):
    config = LOCAL_CFG + "concurrency = 6\ntimeout_s = 30\n[providers.vllm.retry]\nmax_attempts = 5\nbase_delay_s = 1\n"
    panel = _built(tmp_path, ["vllm:qwen3-8b"], config=config)
    # its retry section sets two values; the rest stay the local server's (10 s doubling to 60 s, Retry-After up to 120 s)
    assert _limits(panel, "vllm:qwen3-8b") == (6, 32, 30.0, RetryConfig(max_attempts=5, base_delay_s=1.0, max_delay_s=60.0, retry_after_cap_s=120.0))
    # a hosted provider may set its own retries too
    panel = _built(tmp_path, ["openai:gpt-4.1-mini"], config=HOSTED_CFG + "[providers.openai.retry]\nmax_attempts = 2\n")
    assert _limits(panel, "openai:gpt-4.1-mini")[3] == RetryConfig(max_attempts=2)


def test_the_runs_explicit_settings_win_over_a_providers_defaults(tmp_path):
    config = "concurrency = 8\ntimeout_s = 45\n" + LOCAL_CFG + "[retry]\nmax_attempts = 2\n"
    panel = _built(tmp_path, ["vllm:qwen3-8b", "llamacpp:/models/m.gguf", "openai:gpt-4.1-mini"], config=config + HOSTED_CFG)
    spaced = {"base_delay_s": 10.0, "max_delay_s": 60.0, "retry_after_cap_s": 120.0}  # what [retry] leaves unset stays the local server's
    assert _limits(panel, "vllm:qwen3-8b") == (None, 8, 45.0, RetryConfig(max_attempts=2, **spaced))
    assert _limits(panel, "llamacpp:/models/m.gguf") == (None, 8, 45.0, RetryConfig(max_attempts=2))
    assert _limits(panel, "openai:gpt-4.1-mini") == (None, 8, 45.0, RetryConfig(max_attempts=2))
    panel = _built(tmp_path, ["vllm:qwen3-8b"], config=LOCAL_CFG, concurrency=3, timeout_s=7, retry=RetryConfig(max_attempts=1))
    assert _limits(panel, "vllm:qwen3-8b") == (None, 3, 7.0, RetryConfig(max_attempts=1, **spaced))
    # a retry policy handed to build_panel (as the tests' recording one) is the run's, for every judge
    policy = RetryPolicy(RetryConfig(max_attempts=9))
    panel = build_panel(JudgeSettings(judges=["vllm:qwen3-8b"], config_path=write_config(tmp_path, LOCAL_CFG), offline=True, no_cache=True), retry=policy)
    assert panel is not None and _limits(panel, "vllm:qwen3-8b")[3] == RetryConfig(max_attempts=9, base_delay_s=10.0, max_delay_s=60.0, retry_after_cap_s=120.0)


def test_a_local_provider_split_over_judge_workers_keeps_one_call_each(tmp_path):
    from judge.llm._sharded import _splittable

    panel = _built(tmp_path, ["vllm:qwen3-8b"], config=LOCAL_CFG)
    assert _splittable(panel) == 2  # its 2 slots: at most 2 worker processes, one call in flight each
    shares = [
        build_panel(JudgeSettings(judges=["vllm:qwen3-8b"], config_path=tmp_path / "judges.toml", offline=True, no_cache=True), share=(i, 2)) for i in range(2)
    ]
    assert [p.caller.providers["vllm"].concurrency for p in shares] == [1, 1]  # type: ignore[union-attr]
    assert _splittable(_built(tmp_path, ["llamacpp:/models/m.gguf"])) == 1  # never sharded: one model, one call


# --- over the loopback server: a local server ---------------------------------------------------


def _local_panel(tmp_path, judges, **settings):
    """A panel as a user without settings gets it: no timeout, concurrency or retries of the tests'."""
    panel = build_panel(JudgeSettings(judges=judges, cache_path=tmp_path / "cache.sqlite3", **settings), rubrics.RUBRICS)
    assert panel is not None
    sleeper = SleepRecorder()
    panel.caller.retry.sleep = sleeper  # records the delays instead of waiting them
    return panel, sleeper


async def test_a_local_server_gets_two_calls_in_flight(server, tmp_path):
    server.latency_s = 0.1
    panel, _ = _local_panel(tmp_path, ["openai:judge-a"])
    decisions = await decide(panel, [answer_request(i) for i in range(6)])
    assert all(d.label == "correct" for d in decisions) and server.calls("judge-a") == 6
    assert server.max_in_flight == 2
    assert panel.judges[0].timeout_s == 600.0


async def test_a_busy_local_server_is_retried_less_often_and_further_apart(server, tmp_path):
    server.script("judge-a", Status(503, message="server busy"), Status(503, message="server busy"), Reply("correct"))
    panel, sleeper = _local_panel(tmp_path, ["openai:judge-a"])
    [d] = await decide(panel, [answer_request()])
    assert d.label == "correct" and server.calls("judge-a") == 3
    first, second = sleeper.delays
    assert 10.0 <= first <= 12.5 and 20.0 <= second <= 25.0  # 10 s doubling, jitter 25%
    server.reset_log()
    server.set_default("judge-a", Status(503, message="server busy"))
    panel, sleeper = _local_panel(tmp_path / "again", ["openai:judge-a"])
    [d] = await decide(panel, [answer_request(1)])
    assert d.votes[0].abstain_reason == "error" and "after 3 attempts" in d.votes[0].rationale and server.calls("judge-a") == 3


async def test_a_local_servers_retry_after_is_honoured_up_to_its_longer_cap(server, tmp_path):
    server.script("judge-a", Status(503, retry_after="90"), Reply("correct"))
    panel, sleeper = _local_panel(tmp_path, ["openai:judge-a"])
    [d] = await decide(panel, [answer_request()])
    assert d.label == "correct" and sleeper.delays == [90.0]


async def test_explicit_settings_win_over_the_loopback(server, tmp_path):
    server.latency_s = 0.2
    server.set_default("judge-b", Status(503))
    config = write_config(tmp_path, "[providers.openai]\nconcurrency = 5\n[retry]\nmax_attempts = 2\nbase_delay_s = 0.5\n")
    panel, sleeper = _local_panel(tmp_path, ["openai:judge-a"], config_path=config, timeout_s=20.0)
    decisions = await decide(panel, [answer_request(i) for i in range(10)])
    assert all(d.label == "correct" for d in decisions) and 2 < server.max_in_flight <= 5
    assert panel.judges[0].timeout_s == 20.0
    panel, sleeper = _local_panel(tmp_path / "b", ["anthropic:judge-b"], config_path=config)
    [d] = await decide(panel, [answer_request()])
    assert d.votes[0].abstain_reason == "error" and server.calls("judge-b") == 2 and 0.5 <= sleeper.delays[0] <= 0.625
