"""Reading a judge's answer leniently where only its form is off (judge.llm._reading), over the
loopback server with the real SDKs and instructor: confidences off the 0..1 scale, raw control
characters inside JSON strings, one re-ask for what the schema still rejects, the repair counts,
and the same reading from the cache.

The faults are the ones a real small model (SmolLM2-135M through llama.cpp) produced: confidences
100, 78 and 4.56, and raw newlines in its rationale."""

from __future__ import annotations

import json

import pytest

import rubrics
from judge.llm import CallStats
from judge.llm._reading import MAX_REPAIR_CHARS, escape_control_characters, read_confidence
from tests.judge.helpers import answer_request, decide, make_panel
from tests.servers import RawArguments, Reply

WIRES = [("openai:judge-a", "/v1/chat/completions"), ("anthropic:judge-b", "/v1/messages")]
RUBRIC = rubrics.get_rubric("answer_correctness")


def _reasked(body) -> bool:
    return "Validation Error" in json.dumps(body.get("messages"))


# --- the rules, on their own --------------------------------------------------------------------


@pytest.mark.parametrize(
    "given,read",
    [
        (0.0, 0.0),
        (0.35, 0.35),
        (1, 1.0),
        (100, 1.0),
        (78, 0.78),
        (4.56, 0.0456),
        (1.5, 0.015),
        (100.5, None),  # on no scale: no confidence, never a guess at one
        (2563897421.0, None),  # what SmolLM2 once sent
        (-1, None),
        (-0.2, None),
        ("0.8", 0.8),
        ("78", 0.78),
        (" 78% ", 0.78),
        ("0.5%", 0.005),
        ("250%", None),
        ("-3", None),
        ("high", None),
        ("", None),
        (float("nan"), None),
        (float("inf"), None),
        (True, None),
        (None, None),
        ([0.5], None),
    ],
)
def test_a_confidence_is_read_by_one_documented_rule(given, read):
    value, note = read_confidence(given)
    assert value == read
    on_the_scale = isinstance(given, int | float) and not isinstance(given, bool) and 0 <= given <= 1
    assert (note is None) == on_the_scale  # every repair is noted, and only a repair
    if note is not None:
        assert note.startswith("confidence: ")


@pytest.mark.parametrize(
    "valid",
    [
        json.dumps({"label": "correct", "rationale": 'line one\nline "two"\t\\ end', "confidence": 0.5}),
        json.dumps({"label": "correct", "rationale": "ünï \u2028 ok", "evidence": ["a\\", "b"]}, indent=2, ensure_ascii=False),
        '{\n\t"label": "correct",\r\n  "rationale": "tabs and newlines between tokens only"\n}\n',
        '{"rationale": "\\"quoted\\" \\\\", "label": "missing"}',
    ],
)
def test_escaping_never_changes_valid_json(valid):
    assert escape_control_characters(valid) == (valid, 0)


def test_raw_control_characters_inside_strings_are_escaped_and_only_those():
    raw = '{\n  "rationale": "one\ntwo\tthree\x01 \\"q\\" four\r",\n  "label": "correct"\n}'
    repaired, n = escape_control_characters(raw)
    assert n == 4
    assert json.loads(repaired) == json.loads(raw, strict=False)  # what the model meant, now valid JSON
    assert repaired.startswith('{\n  "rationale"') and repaired.endswith('"label": "correct"\n}')  # whitespace between tokens kept
    # a string left open (a truncated answer) is not touched, nor is text far longer than any verdict
    assert escape_control_characters('{"rationale": "cut\noff') == ('{"rationale": "cut\noff', 0)
    huge = '{"rationale": "' + "x\n" * MAX_REPAIR_CHARS + '"}'
    assert escape_control_characters(huge) == (huge, 0)


def test_the_schema_a_model_is_shown_still_asks_for_a_number_from_0_to_1():
    """The schema is part of every cache key and rubric version: the lenient reading must not move it."""
    schema = RUBRIC.verdict_schema.model_json_schema()
    assert schema["properties"]["confidence"] == {
        "description": "How sure you are of the label, from 0 to 1.",
        "maximum": 1.0,
        "minimum": 0.0,
        "title": "Confidence",
        "type": "number",
    }
    assert "confidence" in schema["required"]


# --- over the wire --------------------------------------------------------------------------------


@pytest.mark.parametrize("judge,path", WIRES)
@pytest.mark.parametrize(
    "given,read,how",
    [
        (100, 1.0, "read as a percentage"),
        (78, 0.78, "read as a percentage"),
        (4.56, 0.0456, "read as a percentage"),
        (-1, None, "no confidence"),
        ("high", None, "no confidence"),
    ],
)
async def test_a_confidence_off_the_scale_is_read_not_rejected(server, tmp_path, judge, path, given, read, how):
    model = judge.split(":")[1]
    server.set_default(model, Reply("incorrect", rationale="wrong store count", confidence=given))
    panel = make_panel(tmp_path, [judge])
    [d] = await decide(panel, [answer_request()])
    [vote] = d.votes
    assert not vote.abstained and vote.label == "incorrect" and vote.rationale == "wrong store count"
    assert vote.confidence == read
    [note] = vote.repairs
    assert note.startswith(f"confidence: {json.dumps(given)}") and how in note
    assert server.calls(model, path) == 1  # read as it came: no re-ask
    usage = panel.stats.per_judge[judge]
    assert (usage.repaired, usage.repairs) == (1, {"confidence": 1})


@pytest.mark.parametrize("judge,path", WIRES)
async def test_a_verdict_on_the_scale_needs_no_repair(server, tmp_path, judge, path):
    model = judge.split(":")[1]
    server.set_default(model, Reply("correct", confidence=0.7))
    panel = make_panel(tmp_path, [judge])
    [d] = await decide(panel, [answer_request()])
    assert d.votes[0].confidence == 0.7 and d.votes[0].repairs is None
    assert "repairs" not in d.model_dump(exclude_none=True)["votes"][0]  # outputs (written without None) are unchanged
    assert (panel.stats.per_judge[judge].repaired, panel.stats.per_judge[judge].repairs) == (0, {})


RAW_NEWLINES = '{"rationale": "The answer says 14.\nGold says 14.\tSame count.", "evidence": ["gold_answers[0]"], "confidence": 0.9, "label": "correct", "quotes": [{"source": "gold_answers", "text": "14"}], "candidate_answer": "14 stores"}'


async def test_raw_newlines_inside_a_json_string_are_escaped_before_parsing(server, tmp_path):
    """llama.cpp's grammar lets raw newlines and tabs into JSON strings; JSON forbids them, so
    the tool-call arguments failed to parse and the answer was re-asked (then abstained)."""
    server.script("judge-a", RawArguments(RAW_NEWLINES))  # then the default reply, should anything be re-asked
    panel = make_panel(tmp_path, ["openai:judge-a"])
    [d] = await decide(panel, [answer_request()])
    [vote] = d.votes
    assert (vote.label, vote.rationale, vote.evidence) == ("correct", "The answer says 14.\nGold says 14.\tSame count.", ["gold_answers[0]"])
    assert vote.repairs == ["control_characters: 2 raw control character(s) inside JSON strings escaped"]
    assert server.calls("judge-a") == 1 and not any(_reasked(r.body) for r in server.requests)
    assert panel.stats.per_judge["openai:judge-a"].repairs == {"control_characters": 1}


async def test_both_repairs_on_one_verdict_count_it_once(server, tmp_path):
    server.set_default("judge-a", RawArguments(RAW_NEWLINES.replace('"confidence": 0.9', '"confidence": 78')))
    panel = make_panel(tmp_path, ["openai:judge-a"])
    [d] = await decide(panel, [answer_request()])
    assert d.votes[0].confidence == 0.78 and [n.partition(":")[0] for n in d.votes[0].repairs] == ["control_characters", "confidence"]
    usage = panel.stats.per_judge["openai:judge-a"]
    assert (usage.repaired, usage.repairs) == (1, {"confidence": 1, "control_characters": 1})


@pytest.mark.parametrize("judge,path", WIRES)
async def test_a_verdict_the_schema_still_rejects_is_reasked_once_then_abstains(server, tmp_path, judge, path):
    """Repairs touch only the form: a label the rubric does not allow is not guessed at. One
    re-ask (validation_retries = 1), and a second rejection abstains unparseable."""
    model = judge.split(":")[1]
    server.set_default(model, Reply("probably", confidence=78))
    panel = make_panel(tmp_path, [judge])
    [d] = await decide(panel, [answer_request()])
    [vote] = d.votes
    assert vote.abstained and vote.abstain_reason == "unparseable" and vote.repairs is None
    bodies = [r.body for r in server.requests if r.path == path]
    assert len(bodies) == 2 and [_reasked(b) for b in bodies] == [False, True]
    assert panel.stats.per_judge[judge].repaired == 0 and panel.stats.abstentions == {"unparseable": 1}


@pytest.mark.parametrize("judge,path", WIRES)
async def test_a_reask_that_answers_well_is_taken(server, tmp_path, judge, path):
    model = judge.split(":")[1]
    server.script(model, Reply("probably"), Reply("missing", confidence=100))
    [d] = await decide(make_panel(tmp_path, [judge]), [answer_request()])
    assert d.label == "missing" and d.votes[0].confidence == 1.0 and server.calls(model, path) == 2


# --- counts and the cache -------------------------------------------------------------------------


async def test_repairs_are_counted_per_judge_and_a_cached_vote_keeps_them(server, tmp_path):
    replies = {0: Reply("correct", confidence=78), 1: Reply("correct", confidence=0.6), 2: RawArguments(RAW_NEWLINES), 3: Reply("missing", confidence="high")}

    def by_region(body):
        text = json.dumps(body["messages"])
        return next(reply for i, reply in replies.items() if f"region {i} " in text)

    server.set_responder("judge-a", by_region).set_default("judge-b", Reply("correct", confidence=0.9))
    requests = [answer_request(i) for i in replies]
    panel = make_panel(tmp_path, ["openai:judge-a", "anthropic:judge-b"])
    first = await decide(panel, requests)
    usage = panel.stats.per_judge
    assert (usage["openai:judge-a"].repaired, usage["openai:judge-a"].repairs) == (3, {"confidence": 2, "control_characters": 1})
    assert (usage["anthropic:judge-b"].repaired, usage["anthropic:judge-b"].repairs) == (0, {})
    manifest = panel.stats.model_dump(mode="json")  # what the run manifest records under judges.stats
    assert manifest["per_judge"]["openai:judge-a"]["repairs"] == {"confidence": 2, "control_characters": 1}

    server.reset_log()
    again = make_panel(tmp_path, ["openai:judge-a", "anthropic:judge-b"])  # a rerun: every answer from the cache
    second = await decide(again, requests)
    assert server.calls() == 0
    strip = {"votes": {"__all__": {"cached", "cost_usd"}}}
    assert [d.model_dump(exclude=strip) for d in second] == [d.model_dump(exclude=strip) for d in first]
    assert again.stats.per_judge["openai:judge-a"].repairs == {"confidence": 2, "control_characters": 1}


def test_repair_counts_add_up_over_worker_processes():
    one, two = CallStats(), CallStats()
    one.count_repairs("j", ["confidence: 78 is outside 0..1, read as a percentage (0.78)"])
    before = two.model_copy(deep=True)
    two.count_repairs("j", ["control_characters: 1 raw control character(s) inside JSON strings escaped", "confidence: 100 ..."])
    two.count_repairs("j", None)
    total = CallStats()
    total.merge(one)
    total.merge(two.since(before))
    assert (total.per_judge["j"].repaired, total.per_judge["j"].repairs) == (2, {"confidence": 2, "control_characters": 1})


def _key(panel, request):
    [judge] = panel.judges
    return panel.caller.call(judge, RUBRIC, RUBRIC.render(request.material)).key


async def test_an_unparseable_abstention_cached_by_the_strict_reader_is_asked_again(server, tmp_path):
    """Before the lenient reader, a confidence of 78 was cached as an ``unparseable`` abstention
    (with no reader version): this reader accepts the answer, so it is asked again, once."""
    request = answer_request()
    panel = make_panel(tmp_path, ["openai:judge-a"])
    key = _key(panel, request)
    panel.cache.put(key, "openai:judge-a", {"abstain": "unparseable", "message": "1 validation error: confidence", "input_tokens": 200, "output_tokens": 40})
    server.set_default("judge-a", Reply("correct", confidence=78))
    [d] = await decide(panel, [request])
    assert d.label == "correct" and d.votes[0].confidence == 0.78 and server.calls("judge-a") == 1
    # offline nothing can be asked: the old abstention is served as recorded
    server.reset_log()
    offline = make_panel(tmp_path, ["openai:judge-a"], offline=True)
    offline.cache.put(key, "openai:judge-a", {"abstain": "unparseable", "message": "old", "input_tokens": 1, "output_tokens": 1})
    [d] = await decide(offline, [request])
    assert d.votes[0].abstain_reason == "unparseable" and d.votes[0].cached and server.calls() == 0


async def test_an_unparseable_abstention_of_this_reader_is_served_from_the_cache(server, tmp_path):
    server.set_default("judge-a", Reply("probably"))
    await decide(make_panel(tmp_path, ["openai:judge-a"]), [answer_request()])
    assert server.calls("judge-a") == 2
    server.reset_log()
    [d] = await decide(make_panel(tmp_path, ["openai:judge-a"]), [answer_request()])
    assert d.votes[0].abstain_reason == "unparseable" and d.votes[0].cached and server.calls() == 0
