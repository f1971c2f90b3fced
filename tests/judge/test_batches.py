"""Provider batch APIs over real HTTP: the openai and anthropic SDKs and instructor talk to the
loopback server's files / batches / message-batches endpoints (``tests/servers/batches.py``).

What is held: a batch request is the online request (same body, the cache key as custom_id); a
batch answers over several polls; an expired or cancelled batch answers what it did and the rest
abstain with the reason; a failed batch abstains every request; answers land in the cache under
the online keys (an online panel then asks nothing); batch prices; limits split batches; results
are downloaded once; a judge without a batch API answers online."""

from __future__ import annotations

import asyncio
import json

import pytest

from judge.llm import batch_price, price_for
from judge.llm._batches._flow import reask_id
from judge.llm._batches.openai import OpenAIBatches
from judge.llm._settings import PriceConfig
from tests.judge.helpers import answer_request, decide, make_panel
from tests.servers import BatchPlan, MalformedArguments, RawArguments, Reply, Status

JUDGES = ["openai:judge-a", "anthropic:judge-b", "openai:judge-c"]


def _panel(tmp_path, judges=JUDGES, **kw):
    return make_panel(tmp_path, judges, mode="batch", **kw)


async def _first_pass(panel, requests):
    decisions = await panel.decide(requests)
    records = await panel.batch.submit("test")
    return decisions, records


async def _poll_until_ended(panel, records, limit=10):
    for _ in range(limit):
        statuses = await panel.batch.poll(records)
        if all(s.ended for s in statuses):
            return statuses
    raise AssertionError("batches never ended")


async def _collect_and_decide(panel, records, requests, folder):
    try:
        statuses = await _poll_until_ended(panel, records)
        found = await panel.batch.collect(statuses, folder)
        return statuses, found, await panel.decide(requests)
    finally:
        await panel.aclose()


def _run_batch(tmp_path, requests, judges=JUDGES, **kw):
    first = _panel(tmp_path, judges, **kw)
    decisions, records = asyncio.run(_first_pass(first, requests))
    asyncio.run(first.aclose())
    second = _panel(tmp_path, judges, **kw)
    statuses, found, final = asyncio.run(_collect_and_decide(second, records, requests, tmp_path / "batches"))
    return decisions, records, statuses, found, final


def test_a_batch_request_is_the_online_request_keyed_by_the_cache_key(server, tmp_path):
    request = answer_request(0)
    online = make_panel(tmp_path, ["openai:judge-a", "anthropic:judge-b"], cache_path=tmp_path / "online.sqlite3")
    asyncio.run(online.decide([request]))
    asyncio.run(online.aclose())
    sent = {r.model: r.body for r in server.requests if r.path in ("/v1/chat/completions", "/v1/messages")}
    server.reset_log()
    _, records, *_ = _run_batch(tmp_path, [request], ["openai:judge-a", "anthropic:judge-b"])
    openai_lines = [json.loads(line) for line in server.batches.files["file-0001"].splitlines()]
    anthropic_body = next(r.body for r in server.requests if r.path == "/v1/messages/batches")
    assert [line["body"] for line in openai_lines] == [sent["judge-a"]]
    assert [item["params"] for item in anthropic_body["requests"]] == [sent["judge-b"]]
    keys = {r.api: r.keys for r in records}
    assert [line["custom_id"] for line in openai_lines] == keys["openai"]
    assert [item["custom_id"] for item in anthropic_body["requests"]] == keys["anthropic"]
    # the custom_id is the judge-cache key of the online call: the online cache holds exactly those keys
    online_cache = make_panel(tmp_path, ["openai:judge-a", "anthropic:judge-b"], cache_path=tmp_path / "online.sqlite3").cache
    assert all(online_cache.get(k) is not None for k in keys["openai"] + keys["anthropic"])
    online_cache.close()


def test_first_pass_defers_and_decides_nothing(server, tmp_path):
    panel = _panel(tmp_path)
    decisions, records = asyncio.run(_first_pass(panel, [answer_request(i) for i in range(3)]))
    asyncio.run(panel.aclose())
    assert server.calls(path="/v1/chat/completions") == server.calls(path="/v1/messages") == 0
    assert all(d.outcome.value == "inconclusive" and d.label is None for d in decisions)
    assert {v.abstain_reason for d in decisions for v in d.votes} == {"pending"}
    assert "waiting for provider batch answers" in decisions[0].reason
    # one batch per OpenAI model, one per Anthropic provider; every request once
    assert sorted((r.api, tuple(r.judges), len(r.keys)) for r in records) == [
        ("anthropic", ("anthropic:judge-b",), 3),
        ("openai", ("openai:judge-a",), 3),
        ("openai", ("openai:judge-c",), 3),
    ]


def test_a_batch_that_completes_over_several_polls(server, tmp_path):
    server.set_default("judge-c", Reply("incorrect", input_tokens=300, output_tokens=40))
    server.batches.default_plan = BatchPlan(polls=3)
    requests = [answer_request(i) for i in range(2)]
    first = _panel(tmp_path)
    _, records = asyncio.run(_first_pass(first, requests))
    asyncio.run(first.aclose())
    second = _panel(tmp_path)
    seen = []

    async def poll_and_decide():
        try:
            while True:
                statuses = await second.batch.poll(records)
                seen.append([s.state for s in statuses])
                if all(s.ended for s in statuses):
                    break
            await second.batch.collect(statuses, tmp_path / "batches")
            return await second.decide(requests)
        finally:
            await second.aclose()

    final = asyncio.run(poll_and_decide())
    assert len(seen) == 4 and seen[0] == ["in_progress", "in_progress", "in_progress"]
    assert seen[-1] == ["ended", "completed", "completed"]
    for d in final:
        assert (d.label, d.outcome.value) == ("correct", "match")
        votes = {v.judge: v for v in d.votes}
        assert [votes[j].label for j in JUDGES] == ["correct", "correct", "incorrect"]
        assert not any(v.cached for v in d.votes) and all(v.model_version for v in d.votes)
        assert (votes["openai:judge-c"].input_tokens, votes["openai:judge-c"].output_tokens) == (300, 40)
    assert second.stats.calls == 6 and second.stats.cache_hits == 0
    # the answers are in the cache under the online keys: an online panel asks nothing
    server.reset_log()
    online = make_panel(tmp_path, JUDGES)
    again = asyncio.run(online.decide(requests))
    asyncio.run(online.aclose())
    assert len(server.requests) == 0
    assert [d.label for d in again] == ["correct", "correct"] and all(v.cached for d in again for v in d.votes)


def test_an_expired_batch_answers_what_it_did_and_the_rest_abstain_batch_expired(server, tmp_path):
    server.batches.plan(BatchPlan(end="expired", answer=1), BatchPlan(end="expired", answer=2), BatchPlan())
    requests = [answer_request(i) for i in range(3)]
    _, _, statuses, found, final = _run_batch(tmp_path, requests)
    assert [s.state for s in statuses] == ["ended", "expired", "completed"]  # anthropic, openai:a, openai:c
    assert found.answered == 1 + 2 + 3 and found.failed == {"batch_expired": 2 + 1}
    reasons = [[v.abstain_reason for v in d.votes] for d in final]
    # request 0: all three answered; request 1: judge-b expired; request 2: judge-a and judge-b expired
    assert reasons == [[None, None, None], [None, "batch_expired", None], ["batch_expired", "batch_expired", None]]
    assert [d.outcome.value for d in final] == ["match", "match", "inconclusive"]
    assert "1 counted vote(s), 2 needed" in final[2].reason  # an expiry never counts as a vote, for or against
    assert all(v.label is None and v.cost_usd == 0.0 for d in final for v in d.votes if v.abstained)


def test_an_expired_answer_is_not_cached(server, tmp_path):
    server.batches.plan(BatchPlan(end="expired", answer=0))
    _run_batch(tmp_path, [answer_request(0)], ["openai:judge-a"])
    cache = make_panel(tmp_path, ["openai:judge-a"]).cache
    assert len(cache) == 0  # a later run asks again
    cache.close()


def test_a_failed_batch_abstains_every_request(server, tmp_path):
    server.batches.plan(BatchPlan(end="failed", failure="scripted: bad input"), BatchPlan(end="failed", failure="scripted: bad input"), BatchPlan())
    _, _, statuses, found, final = _run_batch(tmp_path, [answer_request(i) for i in range(2)])
    assert [s.state for s in statuses] == ["ended", "failed", "completed"]
    # anthropic has no failed batch: each request errored (api_error, a server failure; its vote abstains "error" as online)
    assert found.failed == {"server": 2, "batch_failed": 2}
    for d in final:
        votes = {v.judge: v for v in d.votes}
        assert votes["openai:judge-a"].abstain_reason == "batch_failed" and "scripted: bad input" in votes["openai:judge-a"].rationale
        assert votes["anthropic:judge-b"].abstain_reason == "error"
        assert d.outcome.value == "inconclusive"


def test_a_request_the_provider_answered_with_an_error_abstains_with_its_reason(server, tmp_path):
    server.set_default("judge-a", Status(400, message="bad request"))
    _, _, _, found, final = _run_batch(tmp_path, [answer_request(0)], ["openai:judge-a", "anthropic:judge-b"], min_votes=1)
    assert found.failed == {"error": 1}
    votes = {v.judge: v for v in final[0].votes}
    assert votes["openai:judge-a"].abstain_reason == "error" and "HTTP 400" in votes["openai:judge-a"].rationale
    assert final[0].label == "correct"


def test_a_cancelled_batch(server, tmp_path):
    server.batches.default_plan = BatchPlan(polls=5, answer=1)
    requests = [answer_request(i) for i in range(2)]
    first = _panel(tmp_path, ["openai:judge-a", "anthropic:judge-b"])
    _, records = asyncio.run(_first_pass(first, requests))
    asyncio.run(first.aclose())
    second = _panel(tmp_path, ["openai:judge-a", "anthropic:judge-b"])
    asyncio.run(second.batch.cancel(records))
    statuses, found, final = asyncio.run(_collect_and_decide(second, records, requests, tmp_path / "b"))
    assert sorted(s.state for s in statuses) == ["cancelled", "ended"]
    assert found.answered == 2 and found.failed == {"batch_cancelled": 2}
    assert [[v.abstain_reason for v in d.votes] for d in final] == [[None, None], ["batch_cancelled", "batch_cancelled"]]


def test_results_are_downloaded_once(server, tmp_path):
    _, records, *_ = _run_batch(tmp_path, [answer_request(0)])
    downloads = sum(1 for r in server.requests if r.path.endswith("/content") or r.path.endswith("/results"))
    assert downloads == 3
    again = _panel(tmp_path)
    asyncio.run(_collect_and_decide(again, records, [answer_request(0)], tmp_path / "batches"))
    assert sum(1 for r in server.requests if r.path.endswith("/content") or r.path.endswith("/results")) == downloads


def test_batches_are_split_at_the_providers_limits(server, tmp_path, monkeypatch):
    monkeypatch.setattr(OpenAIBatches, "max_requests", 2)
    _, records, _, found, final = _run_batch(tmp_path, [answer_request(i) for i in range(5)], ["openai:judge-a"])
    assert [len(r.keys) for r in records] == [2, 2, 1]
    assert found.answered == 5 and all(d.label == "correct" for d in final)


def test_a_judge_without_a_batch_api_answers_online(server, tmp_path):
    panel = _panel(tmp_path, ["mock:always-correct", "openai:judge-a"], min_votes=1)
    decisions, records = asyncio.run(_first_pass(panel, [answer_request(0)]))
    asyncio.run(panel.aclose())
    votes = {v.judge: v for v in decisions[0].votes}
    assert votes["mock:always-correct"].label == "correct" and votes["openai:judge-a"].abstain_reason == "pending"
    assert [r.judges for r in records] == [["openai:judge-a"]]


def test_a_question_asked_twice_in_a_round_is_sent_once_and_shared(server, tmp_path):
    same = [answer_request(0), answer_request(0)]
    _, records, _, found, final = _run_batch(tmp_path, same, ["openai:judge-a"])
    assert [len(r.keys) for r in records] == [1] and found.answered == 1
    first, second = (d.votes[0] for d in final)
    assert (first.cached, second.cached, second.cost_usd) == (False, True, 0.0)
    assert first.label == second.label == "correct"


def test_collected_answers_cost_batch_prices(server, tmp_path):
    config = """
[prices."openai:judge-a"]
input_per_1m = 2.0
output_per_1m = 8.0

[prices."anthropic:judge-b"]
input_per_1m = 1.0
output_per_1m = 5.0
batch_input_per_1m = 0.4
batch_output_per_1m = 2.0
"""
    _, _, _, _, final = _run_batch(tmp_path, [answer_request(0)], ["openai:judge-a", "anthropic:judge-b"], config=config)
    votes = {v.judge: v for v in final[0].votes}
    assert votes["openai:judge-a"].cost_usd == pytest.approx((100 * 1.0 + 20 * 4.0) / 1e6)  # half the online price by default
    assert votes["anthropic:judge-b"].cost_usd == pytest.approx((100 * 0.4 + 20 * 2.0) / 1e6)  # the configured batch price


def test_batch_price_rules():
    online = PriceConfig(input_per_1m=3.0, output_per_1m=15.0)
    assert batch_price(online).model_dump() == {"input_per_1m": 1.5, "output_per_1m": 7.5, "batch_input_per_1m": None, "batch_output_per_1m": None}
    assert price_for("anthropic:claude-sonnet-4-5", "anthropic", {}, batch=True).input_per_1m == 1.5
    assert price_for("mock:x", "mock", {}, batch=True).input_per_1m == 0.0
    assert price_for("openai:unknown-model", "openai", {}, batch=True) is None


def test_a_refused_submission_keeps_the_questions_deferred(server, tmp_path):
    from judge.llm import BatchSubmitError

    server.batches.refuse_next(400)
    panel = _panel(tmp_path, ["anthropic:judge-b", "openai:judge-a"])

    async def go():
        await panel.decide([answer_request(0)])
        with pytest.raises(BatchSubmitError) as info:
            await panel.batch.submit("test")
        return info.value

    error = asyncio.run(go())
    assert error.records == [] and "scripted refusal" in str(error)
    assert panel.batch.deferred == 2  # nothing lost: the next submit sends both
    records = asyncio.run(panel.batch.submit("test"))
    asyncio.run(panel.aclose())
    assert sorted(r.api for r in records) == ["anthropic", "openai"]


def test_batch_mode_cannot_run_offline(tmp_path):
    from judge.llm import JudgeConfigError

    with pytest.raises(JudgeConfigError, match="offline"):
        _panel(tmp_path, offline=True)


def test_a_provider_marked_without_batches_is_asked_live(server, tmp_path):
    config = f"""
[providers.local]
kind = "openai"
base_url = "{server.openai_base_url}"
batch = false
"""
    panel = _panel(tmp_path, ["local:judge-l", "openai:judge-a"], config=config, min_votes=1)
    decisions, records = asyncio.run(_first_pass(panel, [answer_request(0)]))
    asyncio.run(panel.aclose())
    votes = {v.judge: v for v in decisions[0].votes}
    assert votes["local:judge-l"].label == "correct" and votes["openai:judge-a"].abstain_reason == "pending"
    assert server.calls("judge-l") == 1 and [r.judges for r in records] == [["openai:judge-a"]]


# --- validation re-asks: a batch answer the schema rejects is re-asked as online ----------------

CHAT = ("/v1/chat/completions", "/v1/messages")
PAIR = ["openai:judge-a", "anthropic:judge-b"]


def _reasked(body) -> bool:
    return "Validation Error" in json.dumps(body.get("messages"))


def _rejected_then(reply):
    """A judge whose first answer fails the verdict schema and whose answer to the re-ask is ``reply``."""
    return lambda body: reply if _reasked(body) else MalformedArguments()


def _request_lines(server, records):
    """(custom_id, body) of every request ``records`` carried."""
    bodies = {x["custom_id"]: x["params"] for r in server.requests if r.path == "/v1/messages/batches" for x in r.body["requests"]}
    for record in records:
        if record.api == "openai":
            bodies.update((x["custom_id"], x["body"]) for x in map(json.loads, server.batches.files[record.input_file_id].splitlines()))
    return [(key, bodies[key]) for record in records for key in record.keys]


def _online(server, tmp_path, requests, judges=PAIR):
    decisions = asyncio.run(decide(make_panel(tmp_path, judges, cache_path=tmp_path / "online.sqlite3"), requests))
    bodies = [r.body for r in server.requests if r.path in CHAT]
    server.reset_log()
    return decisions, bodies


def _batch_passes(tmp_path, requests, passes, judges=PAIR):
    """Grade ``requests`` in batch mode over ``passes`` resumes, each with a fresh panel (as each
    ``judge resume`` is a new process): collect every batch of the round so far, decide, and
    submit what is still deferred. The decisions of each pass and the records of each submission."""
    panel = _panel(tmp_path, judges)
    decisions, first = asyncio.run(_first_pass(panel, requests))
    asyncio.run(panel.aclose())
    rounds, sent = [decisions], [first]

    async def one_pass(panel):
        try:
            statuses = await _poll_until_ended(panel, [r for records in sent for r in records])
            await panel.batch.collect(statuses, tmp_path / "batches")
            decided = await panel.decide(requests)
            return decided, (await panel.batch.submit("test") if panel.batch.deferred else [])
        finally:
            await panel.aclose()

    for _ in range(passes):
        decided, records = asyncio.run(one_pass(_panel(tmp_path, judges)))
        rounds.append(decided)
        if records:
            sent.append(records)
    return rounds, sent


def _vote_facts(decision):
    return [(v.judge, v.label, v.abstain_reason, v.cached, v.input_tokens, v.output_tokens, v.model_version) for v in decision.votes]


def test_a_rejected_batch_answer_is_reasked_in_the_next_batch_with_the_online_reask(server, tmp_path):
    for model in ("judge-a", "judge-b"):
        server.set_responder(model, _rejected_then(Reply("correct", input_tokens=300, output_tokens=40)))
    request = answer_request(0)
    [online], online_bodies = _online(server, tmp_path, [request])
    assert len(online_bodies) == 4 and sum(map(_reasked, online_bodies)) == 2  # each judge: the question, then instructor's re-ask
    assert online.label == "correct"

    rounds, sent = _batch_passes(tmp_path, [request], passes=2)
    assert _chat_calls_none(server)
    [pending] = rounds[1]  # the first answers collected: rejected, their re-asks deferred
    assert {v.abstain_reason for v in pending.votes} == {"pending"} and "re-asked" in pending.votes[0].rationale
    keys = [k for r in sent[0] for k in r.keys]
    reasks = [k for r in sent[1] for k in r.keys]
    assert sorted(reasks) == sorted(reask_id(k, 1) for k in keys) and not set(reasks) & set(keys)
    assert all(len(k) == 64 and k.isalnum() for k in reasks)  # Anthropic's custom_id: [a-zA-Z0-9_-]{1,64}
    # each re-ask line is the request the online run sent as its re-ask, byte for byte as JSON
    assert sorted(json.dumps(b, sort_keys=True) for _, b in _request_lines(server, sent[1])) == sorted(
        json.dumps(b, sort_keys=True) for b in online_bodies if _reasked(b)
    )
    [final] = rounds[2]
    assert final.label == online.label == "correct"
    assert _vote_facts(final) == _vote_facts(online)  # tokens of both attempts, as online; not cached
    assert [(v.input_tokens, v.output_tokens) for v in final.votes] == [(50 + 300, 10 + 40)] * 2
    # the final answers are cached under the online keys: an online panel now asks nothing
    again = asyncio.run(decide(make_panel(tmp_path, PAIR), [request]))
    assert not any(r.path in CHAT for r in server.requests) and [d.label for d in again] == ["correct"]


def _chat_calls_none(server) -> bool:
    return not any(r.path in CHAT for r in server.requests)


def test_a_reask_the_schema_rejects_too_abstains_unparseable_as_online(server, tmp_path):
    server.set_default("judge-a", MalformedArguments())
    request = answer_request(0)
    [online], bodies = _online(server, tmp_path, [request], ["openai:judge-a"])
    assert len(bodies) == 2 and online.votes[0].abstain_reason == "unparseable"
    rounds, sent = _batch_passes(tmp_path, [request], passes=2, judges=["openai:judge-a"])
    assert [len(records) for records in sent] == [1, 1]  # the question, one re-ask (validation_retries = 1), no more
    [final] = rounds[2]
    assert _vote_facts(final) == _vote_facts(online) and final.votes[0].abstain_reason == "unparseable"


def test_a_batch_answer_is_read_as_leniently_as_a_live_one(server, tmp_path):
    """The faults a small local model makes (a confidence of 78 or "high", raw newlines inside a
    JSON string) are repaired in a batch answer exactly as in a live one: the same votes, repairs
    noted, and nothing re-asked in either mode."""
    raw = '{"rationale": "Says 14.\nGold: 14.", "evidence": [], "confidence": 78, "label": "correct", "quotes": [{"source": "gold_answers", "text": "14"}], "candidate_answer": "14 stores"}'
    server.set_default("judge-a", RawArguments(raw)).set_default("judge-b", Reply("missing", confidence="high"))
    request = answer_request(0)
    [online], bodies = _online(server, tmp_path, [request])
    assert len(bodies) == 2 and not any(map(_reasked, bodies))
    rounds, sent = _batch_passes(tmp_path, [request], passes=1)
    assert len(sent) == 1 and _chat_calls_none(server)  # one submission, no re-ask batch

    def read(decision):
        return [(v.judge, v.label, v.confidence, v.rationale, v.repairs, v.abstained) for v in decision.votes]

    [final] = rounds[1]
    assert read(final) == read(online) and _vote_facts(final) == _vote_facts(online)
    a, b = final.votes
    assert (a.confidence, a.rationale) == (0.78, "Says 14.\nGold: 14.") and [n.partition(":")[0] for n in a.repairs] == ["control_characters", "confidence"]
    assert b.confidence is None and b.repairs == ['confidence: "high" is not a number: no confidence']


def test_a_reask_whose_batch_expires_abstains_with_the_reason_and_the_first_answer_paid(server, tmp_path):
    server.set_responder("judge-a", _rejected_then(Reply("correct")))
    server.batches.plan(BatchPlan(), BatchPlan(end="expired", answer=0))
    rounds, _ = _batch_passes(tmp_path, [answer_request(0)], passes=2, judges=["openai:judge-a"])
    [vote] = rounds[2][0].votes
    assert vote.abstain_reason == "batch_expired" and (vote.input_tokens, vote.output_tokens) == (50, 10)
    cache = make_panel(tmp_path, ["openai:judge-a"]).cache
    assert len(cache) == 0  # nothing final to keep: a later run asks again
    cache.close()
