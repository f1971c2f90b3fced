"""Panel voting over real HTTP: majority, ties and tie-breakers, abstentions, weights, order."""

from __future__ import annotations

import json

import pytest

from judge import Escalator, Outcome
from judge.llm import JudgeSettings, build_panel
from judge.llm._settings import JudgeConfigError
from tests.judge.helpers import answer_request, decide, make_panel
from tests.servers import Refusal, Reply, Status

MIXED = ["openai:judge-a", "anthropic:judge-b", "openai:judge-c"]


async def test_three_judge_mixed_wire_panel_reaches_majority(server, tmp_path):
    server.set_default("judge-a", Reply("correct")).set_default("judge-b", Reply("correct")).set_default("judge-c", Reply("incorrect"))
    panel = make_panel(tmp_path, MIXED, panel=None)
    assert isinstance(panel, Escalator) and panel.name == "panel"
    [d] = await decide(panel, [answer_request()])
    assert (d.label, d.outcome, d.rule, d.panel) == ("correct", Outcome.MATCH, "majority", "panel")
    assert [v.judge for v in d.votes] == MIXED
    assert d.agreement == pytest.approx(2 / 3, abs=1e-6)
    assert d.rubric == "answer_correctness" and d.rubric_version
    assert server.calls(path="/v1/messages") == 1 and server.calls(path="/v1/chat/completions") == 2


async def test_tie_without_tie_breaker_is_inconclusive(server, tmp_path):
    server.set_default("judge-a", Reply("correct")).set_default("judge-b", Reply("incorrect"))
    [d] = await decide(make_panel(tmp_path, ["openai:judge-a", "anthropic:judge-b"]), [answer_request()])
    assert d.outcome == Outcome.INCONCLUSIVE and d.label is None and d.agreement is None
    assert "tie" in d.reason and "no tie-breaker" in d.reason and "human review" in d.reason


async def test_tie_goes_to_tie_breaker_only_when_tied(server, tmp_path):
    server.set_default("judge-a", Reply("correct")).set_default("judge-b", Reply("incorrect")).set_default("judge-t", Reply("incorrect"))
    panel = make_panel(tmp_path, ["openai:judge-a", "anthropic:judge-b"], tie_breaker="anthropic:judge-t")
    [tied] = await panel.decide([answer_request(0)])
    assert (tied.label, tied.outcome) == ("incorrect", Outcome.MISMATCH)
    assert [v.judge for v in tied.votes] == ["openai:judge-a", "anthropic:judge-b", "anthropic:judge-t"]
    assert "tie broken by anthropic:judge-t" in tied.reason
    server.set_default("judge-b", Reply("correct"))
    [agreed] = await panel.decide([answer_request(1)])
    await panel.aclose()
    assert agreed.label == "correct" and server.calls("judge-t") == 1  # not asked without a tie


async def test_tie_breaker_outside_tied_labels_leaves_it_unresolved(server, tmp_path):
    server.set_default("judge-a", Reply("correct")).set_default("judge-b", Reply("incorrect")).set_default("judge-t", Reply("missing"))
    [d] = await decide(make_panel(tmp_path, ["openai:judge-a", "anthropic:judge-b"], tie_breaker="openai:judge-t"), [answer_request()])
    assert d.outcome == Outcome.INCONCLUSIVE and "not one of the tied labels" in d.reason


async def test_abstention_is_not_a_negative_vote(server, tmp_path):
    # judge-c errors (400, not retried): the two remaining votes decide, 'correct' with agreement 1.
    server.set_default("judge-a", Reply("correct")).set_default("judge-b", Reply("correct")).set_default("judge-c", Status(400))
    [d] = await decide(make_panel(tmp_path, MIXED), [answer_request()])
    assert (d.label, d.outcome, d.agreement) == ("correct", Outcome.MATCH, 1.0)
    abst = [v for v in d.votes if v.abstained]
    assert [(v.judge, v.abstain_reason) for v in abst] == [("openai:judge-c", "error")]
    assert "abstained: openai:judge-c: error" in d.reason


async def test_one_for_one_against_one_abstaining_is_a_tie_not_a_loss(server, tmp_path):
    server.set_default("judge-a", Reply("correct")).set_default("judge-b", Reply("incorrect")).set_default("judge-c", Refusal())
    [d] = await decide(make_panel(tmp_path, MIXED), [answer_request()])
    assert d.outcome == Outcome.INCONCLUSIVE and "tie" in d.reason


async def test_all_abstain_is_inconclusive_with_reasons(server, tmp_path):
    server.set_default("judge-a", Refusal()).set_default("judge-b", Status(404))
    [d] = await decide(make_panel(tmp_path, ["openai:judge-a", "anthropic:judge-b"]), [answer_request()])
    assert d.outcome == Outcome.INCONCLUSIVE
    assert "0 counted vote(s)" in d.reason and "openai:judge-a: refusal" in d.reason and "anthropic:judge-b: error" in d.reason


async def test_unanimous_rule(server, tmp_path):
    server.set_default("judge-a", Reply("correct")).set_default("judge-b", Reply("correct")).set_default("judge-c", Reply("missing"))
    panel = make_panel(tmp_path, MIXED, rule="unanimous", tie_breaker="openai:judge-a")
    [split] = await panel.decide([answer_request(0)])
    assert split.outcome == Outcome.INCONCLUSIVE and "not unanimous" in split.reason
    server.set_default("judge-c", Reply("correct"))
    [agreed] = await panel.decide([answer_request(1)])
    await panel.aclose()
    assert (agreed.label, agreed.rule, agreed.agreement) == ("correct", "unanimous", 1.0)


def _weights(tmp_path, rubric="answer_correctness", judges=None):
    payload = {
        "version": 1,
        "method": "log_odds",
        "rubric": rubric,
        "positive_label": "correct",
        "prior_log_odds": 0.0,
        "judges": judges
        or {
            "openai:judge-a": {"weight": 0.3, "tpr": 0.6, "tnr": 0.55, "n": 100},
            "anthropic:judge-b": {"weight": 0.3, "tpr": 0.6, "tnr": 0.55, "n": 100},
            "openai:judge-c": {"weight": 2.5, "tpr": 0.95, "tnr": 0.97, "n": 800},
        },
    }
    path = tmp_path / "weights.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    return path


async def test_weighted_log_odds_lets_a_reliable_judge_outvote_two_weak_ones(server, tmp_path):
    # weak positives add 2*log(0.6/0.45)=+0.575; the strong negative adds log(0.05/0.97)=-2.965.
    server.set_default("judge-a", Reply("correct")).set_default("judge-b", Reply("correct")).set_default("judge-c", Reply("incorrect"))
    panel = make_panel(tmp_path, MIXED, rule="weighted", weights_path=_weights(tmp_path))
    [d] = await decide(panel, [answer_request()])
    assert (d.label, d.outcome, d.rule) == ("incorrect", Outcome.MISMATCH, "weighted")
    assert "log-odds -2.3" in d.reason
    assert d.agreement == pytest.approx(1 / 3, abs=1e-6)


async def test_weighted_missing_judge_adds_no_term_and_is_noted(server, tmp_path):
    server.set_default("judge-a", Reply("correct")).set_default("judge-b", Reply("incorrect")).set_default("judge-c", Reply("incorrect"))
    weights = _weights(tmp_path, judges={"openai:judge-a": {"weight": 1.0, "tpr": 0.9, "tnr": 0.9, "n": 50}})
    panel = make_panel(tmp_path, MIXED, rule="weighted", weights_path=weights)
    [d] = await decide(panel, [answer_request()])
    assert d.label == "correct"  # only judge-a has a log-odds term
    assert any("missing from the weights file" in n and "anthropic:judge-b" in n for n in panel.stats.notes)


async def test_weighted_plurality_for_a_rubric_the_file_does_not_cover(server, tmp_path):
    server.set_default("judge-a", Reply("supported")).set_default("judge-b", Reply("supported")).set_default("judge-c", Reply("unsupported"))
    panel = make_panel(tmp_path, MIXED, rule="weighted", weights_path=_weights(tmp_path))
    from judge import JudgeRequest

    req = JudgeRequest(key="t/1/grounding", rubric="groundedness", material=GROUNDED)
    [d] = await decide(panel, [req])
    assert d.label == "unsupported" and "weighted plurality" in d.reason  # 2.5 beats 0.3 + 0.3


# an answer its tool output states: a supported label checks out (judge.core._evidence)
GROUNDED = {"question": "Total sales?", "answer": "1200", "tool_outputs": [{"step": 0, "name": "get_sales", "arguments": {}, "result": "total 1200"}]}


def _per_rubric_weights(tmp_path, extra=None):
    """A weights file of a gold set calibrated per rubric (calibration.per_rubric_weights): judge-c is
    reliable on answer_correctness only; groundedness has no entry."""
    weak = {"weight": 0.3, "tpr": 0.6, "tnr": 0.55, "n": 100}
    payload = {
        "version": 1,
        "method": "log_odds",
        "rubric": None,
        "positive_label": None,
        "prior_log_odds": 0.0,
        "judges": {},
        "rubrics": {
            "answer_correctness": {
                "positive_label": "correct",
                "prior_log_odds": 0.0,
                "judges": {"openai:judge-a": weak, "anthropic:judge-b": weak, "openai:judge-c": {"weight": 2.5, "tpr": 0.95, "tnr": 0.97, "n": 800}},
            },
        },
        **(extra or {}),
    }
    path = tmp_path / "weights.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    return path


async def test_per_rubric_weights_decide_each_rubric_by_its_own_entry(server, tmp_path):
    from judge import JudgeRequest

    server.set_default("judge-a", Reply("correct")).set_default("judge-b", Reply("correct")).set_default("judge-c", Reply("incorrect"))
    panel = make_panel(tmp_path, MIXED, rule="weighted", weights_path=_per_rubric_weights(tmp_path))
    [d] = await decide(panel, [answer_request()])
    assert d.label == "incorrect" and "log-odds -2.3" in d.reason  # the answer_correctness entry, as in a one-rubric file
    server.set_default("judge-a", Reply("supported")).set_default("judge-b", Reply("supported")).set_default("judge-c", Reply("unsupported"))
    panel = make_panel(tmp_path, MIXED, rule="weighted", weights_path=_per_rubric_weights(tmp_path))
    req = JudgeRequest(key="t/1/grounding", rubric="groundedness", material=GROUNDED)
    [g] = await decide(panel, [req])
    # no groundedness entry: judge-c's answer_correctness record does not carry over; a plain count decides
    assert g.label == "supported" and "supported=2" in g.reason
    assert not any("missing from the weights file" in n for n in panel.stats.notes)


def test_a_per_rubric_weights_file_keeps_no_judges_at_the_top(tmp_path):
    path = _per_rubric_weights(tmp_path, {"judges": {"mock:pick": {"weight": 1.0}}})
    with pytest.raises(JudgeConfigError, match=r"field rubrics: .*rubrics\.<name>\.judges"):
        build_panel(JudgeSettings(judges=["mock:pick"], rule="weighted", weights_path=path, no_cache=True))


async def test_decisions_keep_request_order_under_concurrency(server, tmp_path):
    def by_parity(body):  # the label depends on the request, so a reordering would show
        text = json.dumps(body["messages"])
        return Reply("correct" if "answer-even" in text else "incorrect")

    server.set_responder("judge-a", by_parity)
    requests = [answer_request(i, answer=f"14 stores (answer-{'even' if i % 2 == 0 else 'odd'})") for i in range(24)]
    panel = make_panel(tmp_path, ["openai:judge-a"], concurrency=5)
    decisions = await decide(panel, requests)
    assert [d.label for d in decisions] == ["correct" if i % 2 == 0 else "incorrect" for i in range(24)]
    assert panel.stats.calls == 24 and server.calls("judge-a") == 24


def test_build_panel_none_without_judges(tmp_path):
    assert build_panel(JudgeSettings(cache_path=tmp_path / "c.sqlite3")) is None


def test_build_panel_from_config_panel(tmp_path):
    cfg = tmp_path / "j.toml"
    cfg.write_text('default_panel = "main"\n[panels.main]\njudges = ["mock:always-correct", "mock:pick"]\nrule = "unanimous"\n', encoding="utf-8")
    panel = build_panel(JudgeSettings(config_path=cfg, no_cache=True))
    assert panel.name == "main" and panel.rule == "unanimous" and [j.name for j in panel.judges] == ["mock:always-correct", "mock:pick"]


@pytest.mark.parametrize(
    "toml,needle",
    [
        ('[panels.main]\njudges = "openai:x"\n', "panels.main.judges"),
        ("[providers.openai]\nrpm = -3\n", "providers.openai.rpm"),
        ("[retry]\nmax_attemps = 3\n", "retry.max_attemps"),
        ("this is = = not toml", "not valid TOML"),
    ],
)
def test_config_errors_name_file_and_field(tmp_path, toml, needle):
    cfg = tmp_path / "bad.toml"
    cfg.write_text(toml, encoding="utf-8")
    with pytest.raises(JudgeConfigError) as err:
        build_panel(JudgeSettings(judges=["mock:always-correct"], config_path=cfg, no_cache=True))
    assert str(cfg) in str(err.value) and needle in str(err.value)


@pytest.mark.parametrize(
    "settings,needle",
    [
        ({"judges": ["gpt-4"]}, "expected 'provider:model'"),
        ({"judges": ["nosuch:model"]}, "unknown provider 'nosuch'"),
        ({"judges": ["mock:pick", "mock:pick"]}, "listed twice"),
        ({"judges": ["mock:pick"], "rule": "weighted"}, "needs a weights file"),
        ({"judges": ["mock:pick"], "panel": "ghost"}, "no such panel"),
    ],
)
def test_settings_errors(tmp_path, settings, needle):
    with pytest.raises(JudgeConfigError, match=needle):
        build_panel(JudgeSettings(no_cache=True, **settings))


def test_missing_api_key_is_reported_unless_offline(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("OPENAI_BASE_URL")  # the real endpoint: a key is required
    with pytest.raises(JudgeConfigError, match="OPENAI_API_KEY is not set"):
        build_panel(JudgeSettings(judges=["openai:gpt-4.1-mini"], no_cache=True))
    assert build_panel(JudgeSettings(judges=["openai:gpt-4.1-mini"], offline=True, cache_path=tmp_path / "c.sqlite3")) is not None


def test_weights_file_errors_name_field(tmp_path):
    path = tmp_path / "w.json"
    path.write_text(json.dumps({"version": 1, "judges": {"mock:pick": {"tpr": 1.7}}}), encoding="utf-8")
    with pytest.raises(JudgeConfigError, match=r"judges\.mock:pick\.tpr"):
        build_panel(JudgeSettings(judges=["mock:pick"], rule="weighted", weights_path=path, no_cache=True))


async def test_unknown_rubric_fails_before_any_call(server, tmp_path):
    from judge import JudgeRequest

    panel = make_panel(tmp_path, ["openai:judge-a"])
    with pytest.raises(JudgeConfigError, match="unknown rubric 'nope'"):
        await panel.decide([answer_request(), JudgeRequest(key="k", rubric="nope", material={})])
    await panel.aclose()
    assert server.calls() == 0


async def test_bad_material_leaves_only_that_case_unresolved(server, tmp_path):
    from judge import JudgeRequest

    bad = JudgeRequest(key="t/1/answer", rubric="answer_correctness", material={"question": "q"})
    good, broken = await decide(make_panel(tmp_path, ["openai:judge-a"]), [answer_request(), bad])
    assert good.label == "correct"
    assert broken.outcome == Outcome.INCONCLUSIVE and "lacks gold_answers, answer" in broken.reason


async def test_provider_concurrency_limit_caps_requests_in_flight(server, tmp_path):
    server.latency_s = 0.05
    server.set_default("judge-a", Reply("correct")).set_default("judge-b", Reply("correct"))
    config = "[providers.openai]\nconcurrency = 2\n"
    panel = make_panel(tmp_path, ["openai:judge-a"], config=config, concurrency=16)
    await decide(panel, [answer_request(i) for i in range(10)])
    assert server.max_in_flight <= 2 and server.calls() == 10
    server.max_in_flight = 0
    panel = make_panel(tmp_path / "wide", ["anthropic:judge-b"], concurrency=3)
    await decide(panel, [answer_request(i) for i in range(10)])
    assert server.max_in_flight <= 3


BAD_BASE_URLS = {
    # value: what the message says; once every call abstained ("Connection error.") or, for a
    # trailing newline, the run died at its end with "internal error: InvalidURL"
    "127.0.0.1:44393/v1": "must start with http:// or https://",
    "ftp://127.0.0.1:44393/v1": "(not ftp://)",
    "http://127.0.0.1:99999/v1": "out of range",
    "http://127.0.0.1:44393/v1\n": "whitespace or a control character",
    " http://127.0.0.1:44393/v1": "whitespace or a control character",
    "http:///v1": "names no host",
}


@pytest.mark.parametrize("url", sorted(BAD_BASE_URLS))
@pytest.mark.parametrize("variable,judge", [("OPENAI_BASE_URL", "openai:m"), ("ANTHROPIC_BASE_URL", "anthropic:m")])
def test_a_bad_base_url_in_the_environment_is_refused_when_the_panel_is_built(monkeypatch, tmp_path, url, variable, judge):
    monkeypatch.setenv(variable, url)
    with pytest.raises(JudgeConfigError) as raised:
        build_panel(JudgeSettings(judges=[judge], cache_path=tmp_path / "c.sqlite3", offline=True))
    message = str(raised.value)
    assert message.startswith(f"{variable}: {url!r} is not a usable base URL") and BAD_BASE_URLS[url] in message


@pytest.mark.parametrize("url", sorted(BAD_BASE_URLS))
def test_a_bad_base_url_in_the_config_file_names_the_file_and_field(tmp_path, url):
    config = tmp_path / "judges.toml"
    config.write_text(f"[providers.vllm]\nkind = 'openai'\nbase_url = {json.dumps(url)}\n")
    with pytest.raises(JudgeConfigError) as raised:
        build_panel(JudgeSettings(judges=["vllm:m"], config_path=config, cache_path=tmp_path / "c.sqlite3"))
    message = str(raised.value)
    assert f"{config}: field providers.vllm.base_url" in message and repr(url) in message and BAD_BASE_URLS[url] in message


@pytest.mark.parametrize("url", ["http://127.0.0.1:8000/v1", "https://api.example.com/v1/", "http://[::1]:8080", "http://localhost"])
def test_usable_base_urls_pass(monkeypatch, tmp_path, url):
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    assert build_panel(JudgeSettings(judges=["openai:m"], cache_path=tmp_path / "c.sqlite3", offline=True)) is not None
