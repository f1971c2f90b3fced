"""Judge calls sharded over worker processes (``judge.llm.ShardedPanel``), against the loopback
server with the real SDKs and instructor in every worker: the same decisions and statistics as
the panel alone, the run's limits split (concurrency, rate) or shared (budget), 429s retried,
and a worker that dies or fails never hangs the round.

The sharded panel forks, so each test builds it outside any event loop (as a run does) and
drives it with ``asyncio.run``."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import pytest

import rubrics
from judge import JudgeRequest, Outcome
from judge.llm import (
    CallStats,
    JudgeConfigError,
    JudgeSettings,
    JudgeUsage,
    RetryConfig,
    ShardedPanel,
    build_panel,
    shard_panel,
)
from judge.llm._sharded import split_by_question
from tests.judge.helpers import write_config
from tests.servers import Delay, Refusal, Reply, Status

THREE = ["openai:judge-a", "anthropic:judge-b", "openai:judge-c"]
FAST_RETRY = RetryConfig(max_attempts=4, base_delay_s=0.01, max_delay_s=0.05)


def _settings(tmp_path: Path, judges: list[str], cache: str, **fields) -> JudgeSettings:
    fields.setdefault("timeout_s", 10.0)
    return JudgeSettings(judges=judges, cache_path=tmp_path / cache, retry=FAST_RETRY, **fields)


def _requests(n: int, repeat_every: int = 0) -> list[JudgeRequest]:
    """``n`` answer-correctness questions; with ``repeat_every``, every that many asks again an
    earlier question (other trajectories, the same material: single flight shares them)."""
    out = []
    for i in range(n):
        j = i % repeat_every if repeat_every and i >= repeat_every else i
        material = {"question": f"How many stores in region {j}?", "gold_answers": ["14"], "answer": f"14 stores, ANS-{j} counted"}
        out.append(JudgeRequest(key=f"traj-{i}/t1/answer", rubric="answer_correctness", material=material))
    return out


def _number(body: dict) -> int:
    text = str(body)
    return int(text.split("ANS-", 1)[1].split(" ", 1)[0])


def _alone(settings: JudgeSettings, requests: list[JudgeRequest]):
    panel = build_panel(settings, rubrics.RUBRICS)
    assert panel is not None

    async def run():
        try:
            return await panel.decide(requests)
        finally:
            await panel.aclose()

    return asyncio.run(run()), panel.stats


def _sharded(settings: JudgeSettings, requests: list[JudgeRequest], processes: int = 2, min_requests: int = 1):
    panel = build_panel(settings, rubrics.RUBRICS)
    assert panel is not None
    sharded = ShardedPanel(panel, settings, rubrics.RUBRICS, processes=processes, min_requests=min_requests)

    async def run():
        try:
            return await sharded.decide(requests)
        finally:
            await sharded.aclose()

    return asyncio.run(run()), panel.stats, sharded


def test_the_same_decisions_and_statistics_as_the_panel_alone(server, tmp_path):
    """Disagreements, ties broken by a tie-breaker, refusals, repeated questions (single flight):
    byte for byte what one process decides and counts."""
    labels = ("correct", "incorrect", "missing")
    server.set_responder("judge-a", lambda body: Reply(labels[_number(body) % 3]))
    server.set_responder("judge-b", lambda body: Reply(labels[(_number(body) // 3) % 3]))
    server.set_responder("judge-c", lambda body: Refusal() if _number(body) % 7 == 0 else Reply(labels[(_number(body) // 2) % 3]))
    server.set_default("judge-t", Reply("correct"))
    requests = _requests(40, repeat_every=13)
    fields = {"tie_breaker": "openai:judge-t", "concurrency": 6}
    alone, alone_stats = _alone(_settings(tmp_path, THREE, "alone.sqlite3", **fields), requests)
    server.reset_log()
    split, split_stats, sharded = _sharded(_settings(tmp_path, THREE, "split.sqlite3", **fields), requests)
    assert sharded.rounds_sharded == 1 and sharded.processes == 0  # closed
    assert [d.model_dump_json() for d in split] == [d.model_dump_json() for d in alone]
    assert split_stats.model_dump() == alone_stats.model_dump()
    assert alone_stats.cache_hits > 0 and alone_stats.abstentions.get("refusal")  # single flight and refusals were exercised
    assert any("tie broken by openai:judge-t" in d.reason for d in alone)
    assert server.calls() == alone_stats.calls  # every question paid once, as alone


def test_each_worker_holds_its_share_of_the_concurrency(server, tmp_path):
    server.set_default("judge-a", Delay(0.15, Reply("correct")))
    decisions, stats, _ = _sharded(_settings(tmp_path, ["openai:judge-a"], "c.sqlite3", concurrency=4), _requests(16))
    assert all(d.label == "correct" for d in decisions) and stats.calls == 16
    assert 3 <= server.max_in_flight <= 4  # both workers at once, never more than the run's limit


def test_a_share_of_the_limits_per_worker(tmp_path):
    config = write_config(tmp_path, "concurrency = 5\n[providers.openai]\nrpm = 600\nconcurrency = 3\n")
    settings = JudgeSettings(judges=["openai:judge-a"], config_path=config, cache_path=tmp_path / "c.sqlite3")
    shares = [build_panel(settings, share=(i, 2)) for i in range(2)]
    assert [p.caller.concurrency for p in shares] == [3, 2]  # type: ignore[union-attr]
    assert [p.caller.providers["openai"].concurrency for p in shares] == [2, 1]  # type: ignore[union-attr]
    assert [p.caller.providers["openai"].rpm for p in shares] == [300, 300]  # type: ignore[union-attr]
    for p in shares:
        p.caller.cache.close()  # type: ignore[union-attr]


def test_429s_are_retried_in_the_workers_and_counted_once(server, tmp_path):
    retry_after = Status(429, retry_after="0")
    server.script("judge-a", retry_after, retry_after, retry_after)
    requests = _requests(12)
    alone, alone_stats = _alone(_settings(tmp_path, ["openai:judge-a"], "alone.sqlite3"), requests)
    server.script("judge-a", retry_after, retry_after, retry_after)
    split, split_stats, _ = _sharded(_settings(tmp_path, ["openai:judge-a"], "split.sqlite3"), requests)
    assert all(d.label == "correct" for d in split)
    assert [d.model_dump_json() for d in split] == [d.model_dump_json() for d in alone]
    assert split_stats.retries == alone_stats.retries == 3 and split_stats.retry_reasons == {"rate_limit": 3}
    assert split_stats.attempts == alone_stats.attempts == 15


def test_the_budget_is_the_runs_across_workers(server, tmp_path):
    """Every call costs $1 and the run may spend $3: the workers spend from one ledger, so the run
    stops near $3 (over by at most the calls in flight: one per worker), not at $3 per worker."""
    server.set_default("judge-a", Delay(0.05, Reply("correct", input_tokens=100, output_tokens=0)))
    config = write_config(tmp_path, '[prices."openai:judge-a"]\ninput_per_1m = 10000\noutput_per_1m = 0\n')
    settings = _settings(tmp_path, ["openai:judge-a"], "c.sqlite3", config_path=config, max_cost_usd=3.0, concurrency=2)
    decisions, stats, sharded = _sharded(settings, _requests(12))
    assert 3.0 <= stats.cost_usd <= 3.0 + 2 * 1.0
    assert sharded.panel.caller.budget.total_usd == pytest.approx(stats.cost_usd)
    budget = [d for d in decisions if d.votes[0].abstain_reason == "budget"]
    assert len(budget) == 12 - stats.attempts and budget  # a call refused by the budget is counted, never attempted
    assert stats.budget_exhausted and "judge budget of $3.0000 reached" in stats.budget_message


def test_a_worker_that_dies_abstains_its_share_and_the_rest_is_decided(server, tmp_path):
    server.set_default("judge-a", Delay(1.0, Reply("correct")))
    settings = _settings(tmp_path, ["openai:judge-a"], "c.sqlite3", concurrency=8)
    panel = build_panel(settings, rubrics.RUBRICS)
    assert panel is not None
    sharded = ShardedPanel(panel, settings, rubrics.RUBRICS, processes=2, min_requests=1)
    victim = sharded.pids[0]
    assert victim is not None
    requests = _requests(8)

    async def run():
        try:
            task = asyncio.ensure_future(sharded.decide(requests))
            deadline = time.monotonic() + 30
            while server.in_flight < 8 and time.monotonic() < deadline:  # both workers are waiting for answers
                await asyncio.sleep(0.02)
            os.kill(victim, signal.SIGKILL)
            first = await task
            server.set_default("judge-a", Reply("correct"))
            after = await sharded.decide(_requests(10)[8:])  # later rounds: in this process
            return first, after
        finally:
            await sharded.aclose()

    first, after = asyncio.run(run())
    died = [d for d in first if d.outcome == Outcome.INCONCLUSIVE]
    assert len(died) == 4 and all(d.label == "correct" for d in first if d not in died)
    assert "judge worker process 0 was killed by signal 9 before answering" in died[0].reason
    assert all(v.abstained and v.abstain_reason == "error" for d in died for v in d.votes)
    assert sharded.processes == 0 and [d.label for d in after] == ["correct", "correct"]
    assert any("worker process 0 was killed" in note for note in panel.stats.notes)
    assert panel.stats.abstentions == {"error": 4} and panel.stats.inconclusive == 4


def test_an_exception_in_a_worker_is_raised_here_with_its_traceback(server, tmp_path):
    config = write_config(tmp_path, "concurrency = 4\n")
    settings = _settings(tmp_path, ["openai:judge-a"], "c.sqlite3", config_path=config)
    panel = build_panel(settings, rubrics.RUBRICS)
    assert panel is not None
    config.unlink()  # the workers build their panels from the settings: theirs cannot be built
    sharded = ShardedPanel(panel, settings, rubrics.RUBRICS, processes=2, min_requests=1)

    async def run():
        try:
            await sharded.decide(_requests(4))
        finally:
            await sharded.aclose()

    with pytest.raises(JudgeConfigError, match="config file not found") as caught:
        asyncio.run(run())
    assert "build_panel" in str(caught.value.__cause__)  # the worker's traceback
    assert server.calls() == 0


def test_small_rounds_stay_in_this_process(server, tmp_path):
    settings = _settings(tmp_path, ["openai:judge-a"], "c.sqlite3")
    decisions, stats, sharded = _sharded(settings, _requests(3), min_requests=4)
    assert sharded.rounds_sharded == 0 and [d.label for d in decisions] == ["correct"] * 3 and stats.calls == 3


def test_shard_panel_keeps_the_panel_where_sharding_cannot_pay_or_apply(tmp_path):
    base = _settings(tmp_path, ["openai:judge-a"], "c.sqlite3")
    panel = build_panel(base, rubrics.RUBRICS)
    assert panel is not None
    try:
        assert shard_panel(panel, base, None, 2, first_round=10, min_requests=100) is panel  # too small
        assert shard_panel(panel, base, None, 1, first_round=1000) is panel  # one process
        assert shard_panel(panel, None, None, 2, first_round=1000) is panel  # no settings to rebuild from
        assert shard_panel(panel, base.model_copy(update={"offline": True}), None, 2, first_round=1000) is panel
        assert shard_panel(panel, base.model_copy(update={"mode": "batch"}), None, 2, first_round=1000) is panel
        assert shard_panel(object(), base, None, 2, first_round=1000) is not panel  # type: ignore[arg-type]
        panel.caller.concurrency = 1
        assert shard_panel(panel, base, None, 2, first_round=1000) is panel  # one call in flight cannot be split
    finally:
        asyncio.run(panel.aclose())


def test_split_keeps_repeated_questions_together_and_balances_the_rest():
    table = rubrics.RUBRICS
    requests = _requests(10, repeat_every=3)  # questions 0 1 2 0 1 2 0 1 2 0: groups of 4, 3 and 3
    shares = split_by_question(requests, [table[r.rubric] for r in requests], 2)
    assert sorted(i for s in shares for i in s) == list(range(10))
    assert all(share == sorted(share) for share in shares)  # request order within a worker
    questions = [{requests[i].material["answer"] for i in share} for share in shares]
    assert questions == [{"14 stores, ANS-0 counted"}, {"14 stores, ANS-1 counted", "14 stores, ANS-2 counted"}]  # the 4 on one side, 3 + 3 on the other


def test_stats_since_and_merge_add_up_to_the_totals():
    stats = CallStats()
    stats.count_call("a")
    stats.count_abstention("a", "timeout")
    before = stats.model_copy(deep=True)
    stats.count_call("a")
    stats.count_call("b")
    stats.count_retry("rate_limit")
    stats.add_cost("b", 100, 20, 0.0001234567)
    part = stats.since(before)
    assert part.calls == 2 and part.abstentions == {} and part.retry_reasons == {"rate_limit": 1}
    assert part.per_judge["a"] == JudgeUsage(calls=1) and part.cost_usd == 0.0001234567
    before.merge(part)
    assert before.model_dump() == stats.model_dump()
