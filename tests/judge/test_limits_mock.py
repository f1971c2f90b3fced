"""Retry delays, rate pacing (fake clock, no timing), the mock provider, the llama.cpp extra."""

from __future__ import annotations

import importlib.util
import random
import subprocess
import sys

import pytest

from judge import JudgeRequest, Outcome
from judge.llm import JudgeSettings, RateLimiter, RetryConfig, RetryPolicy, build_panel, create_client, retry_after_seconds
from judge.llm._settings import JudgeConfigError
from tests.judge.helpers import answer_request, decide


def test_backoff_is_exponential_with_bounded_jitter_and_capped():
    policy = RetryPolicy(RetryConfig(base_delay_s=1.0, max_delay_s=10.0, jitter=0.5), rng=random.Random(7))
    delays = [policy.delay(n, None) for n in range(1, 7)]
    for n, d in enumerate(delays, start=1):
        base = min(10.0, 2 ** (n - 1))
        assert base <= d <= min(10.0, base * 1.5)
    assert delays[-1] == 10.0
    assert policy.delay(1, 3.5) == 3.5 and policy.delay(1, 1e6) == 60.0


def test_retry_after_header_forms():
    assert retry_after_seconds({"retry-after": "7"}) == 7.0
    assert retry_after_seconds({"retry-after-ms": "250"}) == 0.25
    assert retry_after_seconds({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0  # a date in the past
    assert retry_after_seconds({"retry-after": "soon"}) is None and retry_after_seconds({}) is None


async def test_rate_limiter_paces_to_rpm_with_a_fake_clock():
    now = [0.0]
    waits: list[float] = []

    async def sleep(seconds):
        waits.append(seconds)
        now[0] += seconds

    limiter = RateLimiter(rpm=120, clock=lambda: now[0], sleep=sleep)  # 2 per second, burst 2
    for _ in range(6):
        await limiter.acquire()
    assert waits == pytest.approx([0.5, 0.5, 0.5, 0.5])


async def test_rpm_limit_from_config_is_applied(tmp_path):
    cfg = tmp_path / "j.toml"
    cfg.write_text("[providers.mock]\nrpm = 600\nconcurrency = 2\n", encoding="utf-8")
    panel = build_panel(JudgeSettings(judges=["mock:always-correct"], config_path=cfg, no_cache=True))
    decisions = await decide(panel, [answer_request(i) for i in range(3)])
    assert [d.label for d in decisions] == ["correct"] * 3


async def test_mock_provider_models():
    judges = ["mock:always-correct", "mock:refuse", "mock:fail", "mock:always-supported"]
    panel = build_panel(JudgeSettings(judges=judges, no_cache=True, min_votes=1))  # one counted vote may decide here
    [d] = await decide(panel, [answer_request()])
    reasons = {v.judge: (v.label, v.abstain_reason) for v in d.votes}
    assert reasons == {
        "mock:always-correct": ("correct", None),
        "mock:refuse": (None, "refusal"),
        "mock:fail": (None, "error"),
        "mock:always-supported": (None, "unparseable"),  # not a label of answer_correctness
    }
    assert d.label == "correct" and d.votes[0].model_version == "mock-1"


async def test_mock_pick_is_deterministic_across_panels():
    reqs = [answer_request(i) for i in range(8)]
    first = await decide(build_panel(JudgeSettings(judges=["mock:pick"], no_cache=True)), reqs)
    second = await decide(build_panel(JudgeSettings(judges=["mock:pick"], no_cache=True)), reqs)
    assert [d.label for d in first] == [d.label for d in second]
    assert len({d.label for d in first}) > 1


async def test_mock_is_answered_offline_without_cache():
    panel = build_panel(JudgeSettings(judges=["mock:always-incorrect"], offline=True, no_cache=True))
    [d] = await decide(panel, [answer_request()])
    assert d.label == "incorrect" and d.outcome == Outcome.MISMATCH


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is not None, reason="llama-cpp-python is installed")
def test_llamacpp_without_the_extra_says_how_to_install(tmp_path):
    client = create_client("llamacpp:/models/judge.gguf", {})
    assert client.name == "llamacpp:/models/judge.gguf" and client.model == "/models/judge.gguf"
    with pytest.raises(JudgeConfigError, match=r"trajectory-judge\[local\]"):
        client.check_ready()
    with pytest.raises(JudgeConfigError, match=r"trajectory-judge\[local\]"):
        build_panel(JudgeSettings(judges=["llamacpp:/models/judge.gguf"], no_cache=True))


def test_judge_never_imports_rubrics_or_llama_cpp():
    code = "import sys, judge.llm; judge.llm.provider_kinds(); print('rubrics' in sys.modules, 'llama_cpp' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]


def test_panel_resolves_rubrics_registered_by_the_rubrics_package():
    import rubrics  # noqa: F401  (registers)

    panel = build_panel(JudgeSettings(judges=["mock:always-correct"], no_cache=True))
    assert panel.rubric("groundedness").name == "groundedness"
    assert isinstance(JudgeRequest(key="k", rubric="groundedness", material={}), JudgeRequest)
