"""Real openai/anthropic SDKs + instructor against the loopback server: requests, verdicts, faults."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from judge import Outcome
from tests.judge.helpers import FAKE_ANTHROPIC_KEY, FAKE_OPENAI_KEY, SleepRecorder, answer_request, decide, make_panel
from tests.servers import Delay, MalformedArguments, MalformedBody, NoToolCall, Refusal, Reply, Sparse, Status

WIRES = [("openai:judge-a", "/v1/chat/completions"), ("anthropic:judge-b", "/v1/messages")]


async def test_openai_wire_request_and_verdict(server, tmp_path):
    server.set_default("judge-a", Reply("correct", rationale="matches gold", evidence=("gold_answers[0]",), confidence=0.8))
    [d] = await decide(make_panel(tmp_path, ["openai:judge-a"]), [answer_request()])
    assert d.label == "correct" and d.outcome == Outcome.MATCH
    [vote] = d.votes
    assert vote.model_version == "judge-a-2026-01-01"
    assert (vote.rationale, vote.evidence, vote.confidence) == ("matches gold", ["gold_answers[0]"], 0.8)
    assert (vote.input_tokens, vote.output_tokens) == (100, 20)
    [req] = server.requests
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == f"Bearer {FAKE_OPENAI_KEY}"
    body = req.body
    assert body["temperature"] == 0 and body["seed"] == 0 and body["model"] == "judge-a"
    tool = body["tools"][0]["function"]
    assert body["tool_choice"] == {"type": "function", "function": {"name": tool["name"]}}
    assert tool["parameters"]["properties"]["label"]["enum"] == ["correct", "incorrect", "missing"]
    assert [m["role"] for m in body["messages"]] == ["system", "user"]


async def test_anthropic_wire_request_and_verdict(server, tmp_path):
    server.set_default("judge-b", Reply("missing", confidence=0.6))
    [d] = await decide(make_panel(tmp_path, ["anthropic:judge-b"]), [answer_request()])
    assert d.label == "missing" and d.outcome == Outcome.MISMATCH
    assert d.votes[0].model_version == "judge-b-2026-01-01" and d.votes[0].score == 0.0
    [req] = server.requests
    assert req.path == "/v1/messages"
    # anthropic 2.x sends the key as a bearer token (1.x used x-api-key)
    assert FAKE_ANTHROPIC_KEY in (req.headers.get("x-api-key"), req.headers.get("authorization", "").removeprefix("Bearer "))
    body = req.body
    assert "temperature" not in body  # the anthropic 2.x SDK exposes no sampling parameters
    assert body["tool_choice"]["type"] == "tool" and body["tools"][0]["name"] == body["tool_choice"]["name"]
    assert "14 stores" not in body["system"][0]["text"] and [m["role"] for m in body["messages"]] == ["user"]


@pytest.mark.parametrize("judge,path", WIRES)
async def test_429_with_retry_after_then_success(server, tmp_path, judge, path):
    model = judge.split(":")[1]
    server.script(model, Status(429, retry_after="2"), Reply("correct"))
    sleeper = SleepRecorder()
    panel = make_panel(tmp_path, [judge], sleeper=sleeper)
    [d] = await panel.decide([answer_request()])
    await panel.aclose()
    assert d.label == "correct"
    assert server.calls(model, path) == 2
    assert sleeper.delays == [2.0]  # Retry-After honoured exactly (below the cap)
    assert panel.stats.retries == 1 and panel.stats.per_judge[judge].attempts == 2


async def test_retry_after_is_capped(server, tmp_path):
    server.script("judge-a", Status(429, retry_after="600"), Reply("correct"))
    sleeper = SleepRecorder()
    [d] = await decide(make_panel(tmp_path, ["openai:judge-a"], sleeper=sleeper), [answer_request()])
    assert d.label == "correct" and sleeper.delays == [5.0]


@pytest.mark.parametrize("judge,path", WIRES)
async def test_500_then_success_with_backoff(server, tmp_path, judge, path):
    model = judge.split(":")[1]
    server.script(model, Status(500), Status(503), Reply("incorrect"))
    sleeper = SleepRecorder()
    [d] = await decide(make_panel(tmp_path, [judge], sleeper=sleeper), [answer_request()])
    assert d.label == "incorrect" and server.calls(model, path) == 3
    first, second = sleeper.delays
    assert 0.01 <= first <= 0.0125 and 0.02 <= second <= 0.025  # base * 2^(n-1) * (1 + jitter*U)


@pytest.mark.parametrize("judge,path", WIRES)
async def test_timeout_retries_then_abstains(server, tmp_path, judge, path):
    model = judge.split(":")[1]
    server.set_default(model, Delay(1.5))
    panel = make_panel(tmp_path, [judge], timeout_s=0.2, max_attempts=2)
    [d] = await decide(panel, [answer_request()])
    assert d.outcome == Outcome.INCONCLUSIVE and d.label is None
    [vote] = d.votes
    assert vote.abstained and vote.abstain_reason == "timeout" and "after 2 attempts" in vote.rationale
    assert server.calls(model, path) == 2
    assert panel.stats.abstentions == {"timeout": 1}


@pytest.mark.parametrize("judge,path", WIRES)
async def test_malformed_arguments_abstain_unparseable_after_validation_retry(server, tmp_path, judge, path):
    model = judge.split(":")[1]
    server.set_default(model, MalformedArguments())
    [d] = await decide(make_panel(tmp_path, [judge]), [answer_request()])
    [vote] = d.votes
    assert vote.abstained and vote.abstain_reason == "unparseable"
    assert server.calls(model, path) == 2  # instructor's single re-ask, then give up; no transport retry
    assert d.outcome == Outcome.INCONCLUSIVE


async def test_malformed_body_abstains_unparseable(server, tmp_path):
    server.set_default("judge-a", MalformedBody())
    [d] = await decide(make_panel(tmp_path, ["openai:judge-a"]), [answer_request()])
    assert d.votes[0].abstain_reason == "unparseable"


@pytest.mark.parametrize("judge,path", WIRES)
@pytest.mark.parametrize("action", [Refusal(), NoToolCall()], ids=["native-refusal", "text-instead-of-tool"])
async def test_refusal_abstains_refusal(server, tmp_path, judge, path, action):
    model = judge.split(":")[1]
    server.set_default(model, action)
    [d] = await decide(make_panel(tmp_path, [judge]), [answer_request()])
    [vote] = d.votes
    assert vote.abstained and vote.abstain_reason == "refusal" and vote.label is None
    assert d.outcome == Outcome.INCONCLUSIVE


async def test_client_error_is_not_retried(server, tmp_path):
    server.set_default("judge-a", Status(400, message="bad request"))
    sleeper = SleepRecorder()
    [d] = await decide(make_panel(tmp_path, ["openai:judge-a"], sleeper=sleeper), [answer_request()])
    assert d.votes[0].abstain_reason == "error" and "HTTP 400" in d.votes[0].rationale
    assert server.calls("judge-a") == 1 and sleeper.delays == []


async def test_persistent_5xx_abstains_error_after_max_attempts(server, tmp_path):
    server.set_default("judge-a", Status(502))
    [d] = await decide(make_panel(tmp_path, ["openai:judge-a"], max_attempts=3), [answer_request()])
    assert d.votes[0].abstain_reason == "error" and server.calls("judge-a") == 3


async def test_configured_base_url_and_key_env_win(server, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # env is overridden by config
    monkeypatch.setenv("LOCAL_LLM_KEY", "local-key")
    config = f'[providers.vllm]\nkind = "openai"\nbase_url = "{server.openai_base_url}"\napi_key_env = "LOCAL_LLM_KEY"\n'
    server.set_default("qwen", Reply("correct"))
    [d] = await decide(make_panel(tmp_path, ["vllm:qwen"], config=config), [answer_request()])
    assert d.label == "correct" and d.votes[0].judge == "vllm:qwen"
    assert server.requests[0].headers["authorization"] == "Bearer local-key"


async def test_openai_compatible_server_leaving_out_fields_still_answers(server, tmp_path):
    server.set_default("judge-a", Sparse(Reply("missing", rationale="sparse server")))
    [d] = await decide(make_panel(tmp_path, ["openai:judge-a"]), [answer_request()])
    [vote] = d.votes
    assert (vote.label, vote.rationale, vote.model_version) == ("missing", "sparse server", "judge-a-2026-01-01")
    assert (vote.input_tokens, vote.output_tokens) == (0, 0)  # no usage sent: none counted


def test_failed_attempts_print_nothing_to_stderr(server, tmp_path):
    """instructor logs each failed attempt at ERROR with no handler of its own: without one of
    ours, logging's last resort printed them over the CLI's output, once per failed call."""
    server.set_default("judge-a", MalformedArguments())
    code = (
        "import asyncio\nfrom pathlib import Path\nfrom tests.judge.helpers import answer_request, decide, make_panel\n"
        f"[d] = asyncio.run(decide(make_panel(Path({str(tmp_path)!r}), ['openai:judge-a']), [answer_request()]))\n"
        "print(d.votes[0].abstain_reason)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=Path(__file__).resolve().parents[2], check=True)
    assert proc.stdout.split() == ["unparseable"] and proc.stderr == ""
    assert server.calls("judge-a") == 2  # the re-ask happened: there were failures to log
