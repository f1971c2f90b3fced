"""Cache (zero calls on rerun, resume after a partial run), offline mode, and the cost budget."""

from __future__ import annotations

import sqlite3

from judge import Outcome
from judge.llm import JudgeSettings, build_panel, cache_key, create_client
from judge.llm._settings import ProviderConfig
from tests.judge.helpers import FAKE_ANTHROPIC_KEY, FAKE_OPENAI_KEY, answer_request, decide, make_panel
from tests.servers import Delay, Refusal, Reply, Status

JUDGES = ["openai:judge-a", "anthropic:judge-b"]


def _strip_cached(decisions):
    return [d.model_dump(exclude={"votes": {"__all__": {"cached", "cost_usd"}}}) for d in decisions]


async def test_second_run_makes_zero_http_calls(server, tmp_path):
    server.set_default("judge-a", Reply("correct")).set_default("judge-b", Reply("correct"))
    requests = [answer_request(i) for i in range(5)]
    panel = make_panel(tmp_path, JUDGES)
    first = await decide(panel, requests)
    assert server.calls() == 10, panel.stats
    server.reset_log()
    panel = make_panel(tmp_path, JUDGES)  # a fresh panel: a rerun in a new process
    second = await decide(panel, requests)
    assert server.calls() == 0
    assert panel.stats.cache_hits == 10 and panel.stats.calls == 0 and panel.stats.cost_usd == 0
    assert all(v.cached for d in second for v in d.votes) and not any(v.cached for d in first for v in d.votes)
    assert _strip_cached(first) == _strip_cached(second)


async def test_cache_never_stores_keys_and_key_ignores_them(server, tmp_path, monkeypatch):
    server.set_default("judge-a", Reply("correct")).set_default("judge-b", Reply("correct"))
    await decide(make_panel(tmp_path, JUDGES), [answer_request()])
    raw = (tmp_path / "cache.sqlite3").read_bytes()
    db = sqlite3.connect(tmp_path / "cache.sqlite3")
    rows = " ".join(r[0] for r in db.execute("SELECT payload FROM answers"))
    db.close()
    for secret in (FAKE_OPENAI_KEY, FAKE_ANTHROPIC_KEY):
        assert secret.encode() not in raw and secret not in rows
    client = create_client("openai:judge-a", {})
    msgs, schema = [{"role": "user", "content": "x"}], {"type": "object"}
    before = cache_key(client.identity(msgs, schema))
    monkeypatch.setenv("OPENAI_API_KEY", "another-key")
    assert cache_key(client.identity(msgs, schema)) == before
    other = create_client("openai:judge-a", {"openai": ProviderConfig(base_url="http://elsewhere/v1")})
    assert cache_key(other.identity(msgs, schema)) != before


async def test_no_cache_calls_again(server, tmp_path):
    server.set_default("judge-a", Reply("correct"))
    await decide(make_panel(tmp_path, ["openai:judge-a"], no_cache=True), [answer_request()])
    await decide(make_panel(tmp_path, ["openai:judge-a"], no_cache=True), [answer_request()])
    assert server.calls() == 2 and not (tmp_path / "cache.sqlite3").exists()


async def test_answers_are_cached_as_they_arrive_so_a_rerun_resumes(server, tmp_path):
    # judge-a answers; judge-b keeps failing (an interrupted or broken run). The rerun pays only for judge-b.
    server.set_default("judge-a", Reply("correct")).set_default("judge-b", Status(500))
    requests = [answer_request(i) for i in range(3)]
    first = await decide(make_panel(tmp_path, JUDGES, max_attempts=2), requests)
    assert all(v.abstain_reason == "error" for d in first for v in d.votes if v.judge == "anthropic:judge-b")
    server.reset_log()
    server.set_default("judge-b", Reply("correct"))
    second = await decide(make_panel(tmp_path, JUDGES), requests)
    assert server.calls("judge-a") == 0 and server.calls("judge-b") == 3
    assert all(d.label == "correct" and d.agreement == 1.0 for d in second)


async def test_refusal_is_cached_but_timeout_is_not(server, tmp_path):
    server.set_default("judge-a", Refusal()).set_default("judge-b", Delay(1.0))
    await decide(make_panel(tmp_path, JUDGES, timeout_s=0.2, max_attempts=1), [answer_request()])
    server.reset_log()
    [d] = await decide(make_panel(tmp_path, JUDGES, timeout_s=0.2, max_attempts=1), [answer_request()])
    assert server.calls("judge-a") == 0 and server.calls("judge-b") == 1
    refusal = next(v for v in d.votes if v.judge == "openai:judge-a")
    assert refusal.cached and refusal.abstain_reason == "refusal"


async def test_offline_answers_hits_and_abstains_on_misses(server, tmp_path):
    server.set_default("judge-a", Reply("correct")).set_default("judge-b", Reply("correct"))
    await decide(make_panel(tmp_path, JUDGES), [answer_request(0)])
    server.reset_log()
    panel = make_panel(tmp_path, JUDGES, offline=True)
    hit, miss = await decide(panel, [answer_request(0), answer_request(1)])
    assert server.calls() == 0
    assert hit.label == "correct" and all(v.cached for v in hit.votes)
    assert miss.outcome == Outcome.INCONCLUSIVE and {v.abstain_reason for v in miss.votes} == {"offline_miss"}
    assert panel.stats.abstentions == {"offline_miss": 2}


async def test_offline_runs_without_any_key(server, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("OPENAI_BASE_URL")
    panel = build_panel(JudgeSettings(judges=["openai:gpt-4.1-mini"], offline=True, cache_path=tmp_path / "c.sqlite3"))
    [d] = await decide(panel, [answer_request()])
    assert d.votes[0].abstain_reason == "offline_miss"


PRICED = '[prices."openai:judge-a"]\ninput_per_1m = 10.0\noutput_per_1m = 0.0\n'


async def test_max_cost_stops_launching_calls_and_the_rest_abstain(server, tmp_path):
    server.set_default("judge-a", Reply("correct", input_tokens=100, output_tokens=20))  # $0.001 per call
    panel = make_panel(tmp_path, ["openai:judge-a"], config=PRICED, max_cost_usd=0.0025, concurrency=1)
    decisions = await decide(panel, [answer_request(i) for i in range(6)])
    assert server.calls() == 3  # 0.000, 0.001, 0.002 < 0.0025 launch; then 0.003 >= 0.0025
    reasons = [d.votes[0].abstain_reason for d in decisions]
    assert reasons.count(None) == 3 and reasons.count("budget") == 3
    assert all(d.outcome == Outcome.INCONCLUSIVE for d in decisions if d.votes[0].abstained)
    stats = panel.stats
    assert stats.budget_exhausted and "budget of $0.0025 reached" in stats.budget_message
    assert stats.per_judge["openai:judge-a"].cost_usd == 0.003 and stats.per_judge["openai:judge-a"].input_tokens == 300


async def test_costs_and_tokens_per_judge_with_unknown_price_noted(server, tmp_path):
    server.set_default("judge-a", Reply("correct", input_tokens=1000, output_tokens=100)).set_default("judge-b", Reply("correct"))
    panel = make_panel(tmp_path, JUDGES, config=PRICED)
    [d] = await decide(panel, [answer_request()])
    a = panel.stats.per_judge["openai:judge-a"]
    assert (a.input_tokens, a.output_tokens, a.cost_usd, a.price_known) == (1000, 100, 0.01, True)
    assert d.votes[0].cost_usd == 0.01
    assert panel.stats.per_judge["anthropic:judge-b"].price_known is False
    assert any("no price known for anthropic:judge-b" in n for n in panel.stats.notes)


def test_default_cache_path_is_per_user(tmp_path):
    settings = JudgeSettings(judges=["mock:pick"])
    path = settings.resolved_cache_path()
    assert str(path).startswith(str(tmp_path / "xdg-cache")) and path.name == "judge-cache.sqlite3"


async def test_identical_requests_in_one_run_share_one_call(server, tmp_path):
    server.set_default("judge-a", Reply("correct"))
    panel = make_panel(tmp_path, ["openai:judge-a"])
    decisions = await decide(panel, [answer_request(0), answer_request(0), answer_request(0), answer_request(1)])
    assert server.calls() == 2 and [d.label for d in decisions] == ["correct"] * 4
    assert panel.stats.calls == 2 and panel.stats.cache_hits == 2
    assert sorted(d.votes[0].cached for d in decisions) == [False, False, True, True]
