"""OpenTelemetry GenAI traces -> trajectories (fixtures: see fixtures/formats/OTEL_ORIGIN.md; real Langfuse
exports are read from ../shared/data/external/formats/{otel-genai,openai-agents}, see their SOURCE.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipelines.ingest import detect_trajectory_format, read_trajectories

FORMATS = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "external" / "formats"
LANGFUSE = FORMATS / "otel-genai" / "langfuse-framework-traces"
AGENTS = FORMATS / "openai-agents"
needs_shared = pytest.mark.skipif(not FORMATS.is_dir(), reason="the shared samples (../shared) are not checked out")

T0 = 1_760_000_000_000_000_000
S = 1_000_000_000


def _read(path):
    bundle = read_trajectories(path)
    assert bundle.tasks is None  # traces carry no tasks
    return list(bundle.items)


def _by_id(items):
    return {item.trajectory_id: item for item in items}


# ---------------------------------------------------------------- OTLP building blocks


def _value(v):
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, list):
        return {"arrayValue": {"values": [_value(x) for x in v]}}
    if isinstance(v, dict):
        return {"kvlistValue": {"values": [{"key": k, "value": _value(x)} for k, x in v.items()]}}
    return {"stringValue": v}


def span(trace, sid, name, start, attributes, parent=None, status=None, events=None):
    out = {
        "traceId": trace,
        "spanId": sid,
        "name": name,
        "startTimeUnixNano": str(T0 + start * S),
        "endTimeUnixNano": str(T0 + start * S + S // 2),
        "attributes": [{"key": k, "value": _value(v)} for k, v in attributes.items()],
    }
    if parent:
        out["parentSpanId"] = parent
    if status:
        out["status"] = status
    if events:
        out["events"] = events
    return out


def export(*spans):
    return {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"scope": {"name": "test"}, "spans": list(spans)}]}]}


def chat(trace, sid, start, inputs, outputs, **extra):
    attributes = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"}
    if inputs is not None:
        attributes["gen_ai.input.messages"] = json.dumps(inputs)
    if outputs is not None:
        attributes["gen_ai.output.messages"] = json.dumps(outputs)
    return span(trace, sid, "chat m", start, {**attributes, **extra})


def user(text):
    return {"role": "user", "parts": [{"type": "text", "content": text}]}


def says(text):
    return {"role": "assistant", "parts": [{"type": "text", "content": text}]}


def calls(*items):
    return {"role": "assistant", "parts": [{"type": "tool_call", "id": i, "name": n, "arguments": a} for i, n, a in items]}


def answers(*items):
    return {"role": "tool", "parts": [{"type": "tool_call_response", "id": i, "response": r} for i, r in items]}


def tool(trace, sid, start, name, call_id=None, **attributes):
    base = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}
    if call_id:
        base["gen_ai.tool.call.id"] = call_id
    return span(trace, sid, f"execute_tool {name}", start, {**base, **attributes})


# ---------------------------------------------------------------- the semantic conventions' own example


def test_semconv_tool_call_example(fixtures):
    (item,) = _read(fixtures / "otel_tool_calls.otlp.json")
    traj = item.trajectory
    assert (traj.task_id, traj.trajectory_id, traj.agent) == ("weather-paris", "conv-paris-1", "weather-agent")
    (turn,) = traj.turns
    assert turn.query == "Weather in Paris?"
    (step,) = turn.steps
    assert (step.name, step.arguments, step.call_id, step.round) == ("get_weather", {"location": "Paris"}, "call_VSPygqKTWdrhaFErNvMV18Yl", 0)
    assert (step.status, step.result) == ("ok", "rainy, 57°F")  # the execute_tool span ran it; the next chat input says what it returned
    assert turn.final_answer == "The weather in Paris is currently rainy with a temperature of 57°F."
    assert (traj.token_usage.input_tokens, traj.token_usage.output_tokens) == (47 + 97, 17 + 52)
    assert traj.metadata["tools"][0]["name"] == "get_current_weather"
    assert traj.metadata["otel"] == {
        "trace_ids": ["4bf92f3577b34da6a3ce929d0e0e4736"],
        "spans": 4,
        "chat_spans": 2,
        "tool_spans": 1,
        "conversation_id": "conv-paris-1",
        "task_id_from": "trajectory_judge.task_id",
        "models": ["gpt-4-0613"],
        "service": "weather-agent",
    }
    assert item.warnings == []


def test_detection(fixtures):
    assert detect_trajectory_format(fixtures / "otel_tool_calls.otlp.json") == "otel"
    assert detect_trajectory_format(fixtures / "otel_file_exporter.jsonl") == "otel"


def test_file_exporter_jsonl_with_a_trace_split_across_lines(fixtures):
    items = _by_id(_read(fixtures / "otel_file_exporter.jsonl"))
    assert list(items) == ["5b8efff798038103d269b633813fc60c", "6e0c63257de34c92bf9efcd03927272e", "0af7651916cd43dd8448eb211c80319c"]
    # content capture off: the execute_tool span is the call; its arguments were not recorded
    dark = items["5b8efff798038103d269b633813fc60c"]
    (step,) = dark.trajectory.steps
    assert (step.name, step.arguments, step.status, step.call_id, step.round) == ("get_weather", None, "ok", "call_VSPygqKTWdrhaFErNvMV18Yl", 0)
    assert [w.kind for w in dark.warnings] == ["otel_arguments_not_recorded"]
    assert dark.trajectory.turns[0].query is None and dark.trajectory.metadata["otel"]["spans"] == 3
    assert not dark.trajectory.turns[0].answer_recorded and dark.trajectory.not_recorded.startswith("content not recorded: set OTEL_")


def test_deprecated_attributes_failed_tool_and_evaluation_event(fixtures):
    traj = _by_id(_read(fixtures / "otel_file_exporter.jsonl"))["6e0c63257de34c92bf9efcd03927272e"].trajectory
    paris, new_york = traj.steps
    assert (paris.name, paris.arguments, paris.result, paris.status) == ("get_weather", {"location": "Paris"}, "rainy, 57°F", "ok")
    assert (new_york.arguments, new_york.status, new_york.error) == ({"city": "New York"}, "error", "weather service timed out")
    assert traj.final_answer == "The weather in Paris is currently rainy with a temperature of 57°F."
    assert traj.turns[0].agent_messages[0] == "Absolutely! Let me check the weather for you."
    (label,) = traj.external_labels
    assert (label.source, label.value, label.passed, label.reason) == ("otel:answer_relevancy", "pass", True, "The answer states the weather asked for.")


def test_indexed_attributes_and_event_content(fixtures):
    traj = _by_id(_read(fixtures / "otel_file_exporter.jsonl"))["0af7651916cd43dd8448eb211c80319c"].trajectory
    (step,) = traj.steps
    assert (step.name, step.arguments, step.call_id, step.result) == ("HelloTool", {"name": "Bob"}, "call_hello", "Hello my darling Bob!")
    assert traj.turns[0].query == "Greet Bob." and traj.final_answer == "Hello my darling Bob!"
    assert traj.metadata["system"] == "You are a nice and polite assistant."
    assert (traj.token_usage.input_tokens, traj.token_usage.output_tokens) == (50, 20)


# ---------------------------------------------------------------- merging what spans repeat


def test_full_history_and_delta_inputs_give_the_same_transcript(write_jsonl):
    """Frameworks resend the whole history on each model call, or only what is new: same result."""
    first = [user("Weather in Paris and Rome?")]
    out1 = [calls(("c1", "get_weather", {"city": "Paris"}), ("c2", "get_weather", {"city": "Rome"}))]
    results = [answers(("c1", "rain"), ("c2", "sun"))]
    out2 = [says("Paris: rain. Rome: sun.")]
    full = export(chat("a" * 32, "01", 0, first, out1), chat("a" * 32, "02", 2, first + out1 + results, out2))
    delta = export(chat("b" * 32, "01", 0, first, out1), chat("b" * 32, "02", 2, results, out2))
    a, b = _read(write_jsonl("t.jsonl", [full, delta]))
    for item in (a, b):
        traj = item.trajectory
        assert [(s.arguments["city"], s.result, s.round) for s in traj.steps] == [("Paris", "rain", 0), ("Rome", "sun", 0)]
        assert [t.query for t in traj.turns] == ["Weather in Paris and Rome?"] and traj.final_answer == "Paris: rain. Rome: sun."
        assert item.warnings == []


def test_rounds_are_model_calls_that_issued_calls_and_repeated_texts_are_kept(write_jsonl):
    trace = "c" * 32
    h1, o1 = [user("Book it")], [says("Let me check."), calls(("c1", "search", {}))]
    h2, o2 = h1 + o1 + [answers(("c1", "found"))], [says("Let me check."), calls(("c2", "book", {"id": 1}))]
    h3, o3 = h2 + o2 + [answers(("c2", "booked"))], [says("Done.")]
    traj = _read(write_jsonl("t.jsonl", [export(chat(trace, "01", 0, h1, o1), chat(trace, "02", 2, h2, o2), chat(trace, "03", 4, h3, o3))]))[0].trajectory
    assert [(s.name, s.round) for s in traj.steps] == [("search", 0), ("book", 1)]
    assert traj.turns[0].agent_messages == ["Let me check.", "Let me check.", "Done."] and traj.final_answer == "Done."


def test_a_conversation_across_traces_is_one_trajectory_with_its_turns(write_jsonl):
    conv = {"gen_ai.conversation.id": "conv-7"}
    one = export(chat("d" * 32, "01", 0, [user("Hi")], [says("Hello!")], **conv))
    two = export(chat("e" * 32, "01", 5, [user("Hi"), says("Hello!"), user("Weather?")], [calls(("w", "get_weather", {}))], **conv))
    (item,) = _read(write_jsonl("t.jsonl", [two, one]))  # file order does not matter: time does
    traj = item.trajectory
    assert traj.trajectory_id == traj.task_id == "conv-7"
    assert [t.query for t in traj.turns] == ["Hi", "Weather?"] and traj.turns[1].steps[0].status == "unknown"
    assert traj.metadata["otel"]["trace_ids"] == ["d" * 32, "e" * 32]


def test_tool_span_without_call_id_answers_the_oldest_call_of_its_tool(write_jsonl):
    trace = "f" * 32
    out = [calls(("c1", "lookup", {"q": "a"}), ("c2", "lookup", {"q": "b"}))]
    spans = [
        chat(trace, "01", 0, [user("q")], out),
        tool(trace, "02", 1, "lookup", **{"output.value": "A"}),
        tool(trace, "03", 2, "lookup", **{"output.value": "B"}),
    ]
    traj = _read(write_jsonl("t.jsonl", [export(*spans)]))[0].trajectory
    assert [(s.arguments["q"], s.result) for s in traj.steps] == [("a", "A"), ("b", "B")]


def test_pairing_errors_and_orphans(write_jsonl):
    trace = "1" * 32
    reused = [calls(("same", "f", {}), ("same", "f", {"x": 1}))]
    ambiguous = export(chat(trace, "01", 0, [user("go")], reused), chat(trace, "02", 1, [user("go"), *reused, answers(("same", "r"))], [says("ok")]))
    orphan = export(chat("2" * 32, "01", 0, [user("go"), answers(("ghost", "boo"))], [says("ok")]))
    bad, good = _read(write_jsonl("t.jsonl", [ambiguous, orphan]))
    assert bad.error.kind == "invalid_field" and "2 calls with that id are unanswered" in bad.error.message
    assert bad.error.field.startswith("resourceSpans[0].scopeSpans[0].spans[1].input")
    assert good.trajectory.metadata["orphan_results"] == [{"call_id": "ghost", "result": "boo", "at": "resourceSpans[0].scopeSpans[0].spans[0].input[1]"}]
    assert [w.kind for w in good.warnings] == ["orphan_result"]


def test_unparseable_arguments_are_the_agents_failed_call(write_jsonl):
    out = [{"role": "assistant", "parts": [{"type": "tool_call", "id": "c", "name": "f", "arguments": "{oops"}]}]
    (step,) = _read(write_jsonl("t.jsonl", [export(chat("3" * 32, "01", 0, [user("go")], out))]))[0].trajectory.steps
    assert step.status == "error" and "unparseable arguments" in step.error


def test_task_and_trajectory_ids_from_attributes(write_jsonl):
    root = span("4" * 32, "01", "invoke_agent a", 0, {"gen_ai.operation.name": "invoke_agent", "task.id": "T-9", "trajectory_judge.trajectory_id": "run-1"})
    child = chat("4" * 32, "02", 1, [user("q")], [says("a")])
    child["parentSpanId"] = "01"
    resource_task = export(chat("5" * 32, "01", 2, [user("q")], [says("a")]))
    resource_task["resourceSpans"][0]["resource"]["attributes"] = [{"key": "trajectory_judge.task_id", "value": {"stringValue": "T-10"}}]
    first, second = _read(write_jsonl("t.jsonl", [export(root, child), resource_task]))
    assert (first.task_id, first.trajectory_id) == ("T-9", "run-1")
    assert (second.task_id, second.trajectory_id) == ("T-10", "5" * 32)


def test_bad_items_are_reported_with_file_line_and_field(write_jsonl):
    no_trace = export(chat("6" * 32, "01", 0, [user("q")], [says("a")]))
    del no_trace["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]
    path = write_jsonl("t.jsonl", [export(chat("7" * 32, "01", 0, [user("q")], [says("a")])), "{not json", {"spans": []}, no_trace])
    items = _read(path)
    errors = [(i.error.kind, i.error.line, i.error.field) for i in items if i.error]
    assert errors == [
        ("malformed_json", 2, None),
        ("invalid_field", 3, "<root>"),
        ("invalid_field", 4, "resourceSpans[0].scopeSpans[0].spans[0].traceId"),
    ]
    assert [i.trajectory_id for i in items if i.trajectory] == ["7" * 32]


def test_duplicate_trajectory_ids_are_errors(write_jsonl):
    same = {"trajectory_judge.trajectory_id": "r", "trajectory_judge.task_id": "t"}
    first, second = _read(
        write_jsonl("t.jsonl", [export(chat("8" * 32, "01", 0, [user("q")], [says("a")], **same), chat("9" * 32, "01", 3, [user("q")], [says("a")], **same))])
    )
    assert first.trajectory is not None and second.error.kind == "duplicate_id"


def test_no_content_at_all_is_a_warning_not_an_error(write_jsonl):
    (item,) = _read(write_jsonl("t.jsonl", [export(chat("a1" * 16, "01", 0, None, None))]))
    assert item.trajectory.steps == [] and [w.kind for w in item.warnings] == ["otel_no_content"]


def test_console_exporter_spans(write_jsonl):
    console = {
        "name": "chat m",
        "context": {"trace_id": "0x" + "ab" * 16, "span_id": "0x01", "trace_state": "[]"},
        "kind": "SpanKind.CLIENT",
        "parent_id": None,
        "start_time": "2025-01-01T00:00:00.000000Z",
        "end_time": "2025-01-01T00:00:01.000000Z",
        "status": {"status_code": "UNSET"},
        "attributes": {"gen_ai.operation.name": "chat", "gen_ai.input.messages": json.dumps([user("q")]), "gen_ai.output.messages": json.dumps([says("a")])},
        "events": [],
        "resource": {"attributes": {"service.name": "svc"}, "schema_url": ""},
    }
    path = write_jsonl("t.jsonl", [json.dumps(console, indent=2)])  # the console exporter pretty-prints
    (item,) = _read(path)
    assert item.trajectory.trajectory_id == "ab" * 16 and item.trajectory.final_answer == "a"


# ---------------------------------------------------------------- real Langfuse exports


@needs_shared
def test_microsoft_agent_framework_trace():
    (item,) = _read(LANGFUSE / "microsoft-agent-2025-12-17.trace.json")
    traj = item.trajectory
    (step,) = traj.steps
    assert (step.name, step.arguments, step.call_id) == ("get_weather", {"location": "Tokyo, Japan"}, "call_CwaJHuXTm9dmHFQPlVbqyzJ0")
    assert step.result == "The weather in Tokyo, Japan is stormy with a high of 23°C."
    assert traj.turns[0].query == "What's the weather in Tokyo?" and traj.final_answer.startswith("Current conditions in Tokyo")
    assert traj.metadata["system"] == "You are a helpful assistant." and traj.metadata["tools"][0]["name"] == "get_weather"
    scores = {label.source: (label.value, label.passed) for label in traj.external_labels}
    # numeric Langfuse scores: the polarity is unknown (hallucination 0.9 is bad, correctness 1 good): no pass/fail guessed
    assert scores == {"langfuse:correctness": (1, None), "langfuse:hallucination": (0.9, None), "langfuse:toxicity": (0, None)}
    assert item.warnings == []


@needs_shared
def test_koog_trace_with_indexed_attributes_and_calls_inside_content():
    (item,) = _read(LANGFUSE / "koog-2025-08-26.trace.json")
    traj = item.trajectory
    assert [(s.name, s.arguments, s.result, s.round) for s in traj.steps] == [
        ("HelloTool", {"name": "Bob"}, "Hello my darling Bob!", 0),
        ("ByeTool", {"name": "Bob"}, "Bye my dear Bob!", 0),
    ]
    assert traj.final_answer == "Hello my darling Bob! And, bye my dear Bob!"
    assert traj.trajectory_id == "6f8d2449-33ed-4c7c-82e7-5410e34ee4e6"  # gen_ai.conversation.id
    assert item.warnings == []


@needs_shared
def test_openai_agents_sdk_trace_openinference_and_responses_items():
    (item,) = _read(AGENTS / "openai-agents-2025-09-30.trace.json")
    traj = item.trajectory
    (step,) = traj.steps
    assert (step.name, step.arguments, step.call_id, step.result) == (
        "get_weather",
        {"city": "Tokyo"},
        "call_Kud0j0DxWSmLzv9W5m6qVqXn",
        "The weather in Tokyo is sunny.",
    )
    assert traj.final_answer.startswith("The weather in Tokyo is currently sunny.")
    assert traj.metadata["system"] == "You are a helpful agent." and traj.metadata["tools"][0]["name"] == "get_weather"


@needs_shared
def test_langgraph_trace_langchain_messages():
    (item,) = _read(AGENTS / "langgraph-python-2025-08-22.trace.json")
    traj = item.trajectory
    (step,) = traj.steps
    assert (step.name, step.arguments, step.call_id) == ("Web-Search", {"query": "example"}, "call_1oGK863sxQHlPreFhDdEs3yl")
    assert step.result == [{"url": "https://example.com", "title": "Example Result", "q": "example"}]
    assert [t.query for t in traj.turns] == ["Be helpful!", "Search the web for 'example' and summarize."]
    assert traj.metadata["tools"][0]["name"] == "Web-Search"  # a definition Langfuse's callback logged as a tool message


# ---------------------------------------------------------------- graded end to end


def test_graded_with_tasks(fixtures, tmp_path, write_jsonl):
    from pipelines.run import GradeOptions, run_grading

    tasks = write_jsonl(
        "tasks.jsonl",
        [
            {
                "task_id": "weather-paris",
                "question": "Weather in Paris?",
                "reference_calls": [{"name": "get_weather", "arguments": {"location": "Paris"}}],
                "gold_answer_pattern": "(?i)rain",
            }
        ],
    )
    out = tmp_path / "run"
    run_grading(GradeOptions(tasks=tasks, trajectories=fixtures / "otel_tool_calls.otlp.json", out=out))
    (row,) = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert (row["task_id"], row["trajectory_id"], row["verdict"]) == ("weather-paris", "conv-paris-1", "pass")


def test_openinference_indexed_attributes_and_structured_values(write_jsonl):
    """OpenInference spans (not via Langfuse): llm.input_messages.<i>.message.*, tool spans with
    tool.name / input.value / output.value; and messages as structured AnyValues, not JSON text."""
    trace = "b2" * 16
    llm = span(
        trace,
        "01",
        "ChatCompletion",
        0,
        {
            "openinference.span.kind": "LLM",
            "llm.model_name": "gpt-4o",
            "llm.input_messages.0.message.role": "system",
            "llm.input_messages.0.message.content": "Be brief.",
            "llm.input_messages.1.message.role": "user",
            "llm.input_messages.1.message.contents.0.message_content.type": "text",
            "llm.input_messages.1.message.contents.0.message_content.text": "Weather in Oslo?",
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call_oslo",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "get_weather",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"city": "Oslo"}',
            "llm.tools.0.tool.json_schema": json.dumps({"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}),
            "llm.token_count.prompt": 30,
            "llm.token_count.completion": 9,
        },
    )
    run = span(
        trace,
        "02",
        "get_weather",
        1,
        {"openinference.span.kind": "TOOL", "tool.name": "get_weather", "input.value": '{"city": "Oslo"}', "output.value": "snow"},
    )
    structured = chat("c3" * 16, "01", 5, None, None)
    structured["attributes"] += [
        {"key": "gen_ai.input.messages", "value": _value([user("Hi")])},
        {"key": "gen_ai.output.messages", "value": _value([says("Hello")])},
    ]
    first, second = _read(write_jsonl("t.jsonl", [export(llm, run), export(structured)]))
    traj = first.trajectory
    (step,) = traj.steps
    assert (step.name, step.arguments, step.call_id, step.result, step.round) == ("get_weather", {"city": "Oslo"}, "call_oslo", "snow", 0)
    assert traj.turns[0].query == "Weather in Oslo?" and traj.metadata["system"] == "Be brief."
    assert traj.metadata["tools"] == [{"name": "get_weather", "description": "", "parameters": {"type": "object"}}]
    assert (traj.token_usage.input_tokens, traj.token_usage.output_tokens) == (30, 9)
    assert (second.trajectory.turns[0].query, second.trajectory.final_answer) == ("Hi", "Hello")


def test_hostile_attributes_do_not_crash(write_jsonl):
    deep = "[" * 100_000 + "]" * 100_000
    attributes = {"gen_ai.input.messages": deep, "gen_ai.prompt.0" + ".0" * 5000: "x", "gen_ai.output.messages": json.dumps([says("ok")])}
    (item,) = _read(write_jsonl("t.jsonl", [export(span("d4" * 16, "01", "chat m", 0, {"gen_ai.operation.name": "chat", **attributes}))]))
    assert item.trajectory.final_answer == "ok"


def test_anthropic_messages_with_tool_results_in_user_messages(write_jsonl):
    prompt = [
        {"role": "user", "content": "Weather in Lima?"},
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "Checking."}, {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Lima"}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "fog"}], "is_error": False}]},
    ]
    attributes = {
        "gen_ai.system": "anthropic",
        "gen_ai.prompt": json.dumps(prompt),
        "gen_ai.completion": json.dumps([{"role": "assistant", "content": "Foggy."}]),
    }
    (item,) = _read(write_jsonl("t.jsonl", [export(span("e5" * 16, "01", "chat claude", 0, attributes))]))
    traj = item.trajectory
    (step,) = traj.steps
    assert (step.name, step.arguments, step.call_id, step.result) == ("get_weather", {"city": "Lima"}, "toolu_1", "fog")
    assert [t.query for t in traj.turns] == ["Weather in Lima?"] and traj.final_answer == "Foggy."


def _spans_of(export):
    return export["resourceSpans"][0]["scopeSpans"][0]["spans"]


@pytest.mark.parametrize(
    ("edit", "field", "said"),
    [
        (lambda e: e["resourceSpans"][0].update(scopeSpans=5), "resourceSpans[0].scopeSpans", "scopeSpans must be an array, got 5"),
        (lambda e: e["resourceSpans"][0]["scopeSpans"][0].update(spans=True), "resourceSpans[0].scopeSpans[0].spans", "spans must be an array, got True"),
        (lambda e: e["resourceSpans"][0]["scopeSpans"].__setitem__(0, 7), "resourceSpans[0].scopeSpans[0]", "a scopeSpans entry must be an object"),
        (lambda e: e["resourceSpans"][0].update(resource=3), "resourceSpans[0].resource", "resource must be an object"),
        (lambda e: e["resourceSpans"][0]["resource"].update(attributes=-1), "resourceSpans[0].resource.attributes", "attributes must be an array"),
        (lambda e: _spans_of(e)[0].update(attributes=-1), "resourceSpans[0].scopeSpans[0].spans[0].attributes", "attributes must be an array, got -1"),
        (lambda e: _spans_of(e)[0].update(events=7), "resourceSpans[0].scopeSpans[0].spans[0].events", "events must be an array"),
        (
            lambda e: _spans_of(e)[0]["attributes"][0].update(value={"arrayValue": {"values": 1}}),
            "resourceSpans[0].scopeSpans[0].spans[0].attributes[0].value.arrayValue.values",
            "values must be an array",
        ),
    ],
)
def test_a_wrongly_typed_otlp_container_is_that_exports_error(fixtures, tmp_path, edit, field, said):
    """A container of the wrong JSON type (a number for scopeSpans, ...) is the export's
    invalid_field error naming it; the next export of the file is still read."""
    export = json.loads((fixtures / "otel_tool_calls.otlp.json").read_text())
    bad = json.loads(json.dumps(export))
    edit(bad)
    path = tmp_path / "traces.jsonl"
    path.write_text(json.dumps(bad) + "\n" + json.dumps(export) + "\n")
    error_row, graded = _read(path)
    error = error_row.error
    assert (error.kind, error.file, error.line, error.field) == ("invalid_field", str(path), 1, field)
    assert said in error.message
    assert graded.trajectory is not None and graded.trajectory.trajectory_id == "conv-paris-1"


def test_a_status_code_of_the_wrong_type_is_no_status(fixtures, tmp_path):
    export = json.loads((fixtures / "otel_tool_calls.otlp.json").read_text())
    _spans_of(export)[0]["status"] = {"code": ["STATUS_CODE_ERROR"]}
    path = tmp_path / "traces.json"
    path.write_text(json.dumps(export))
    (item,) = _read(path)
    assert item.trajectory is not None


def test_an_unforeseen_failure_reading_an_export_costs_that_export_only(fixtures, tmp_path, monkeypatch):
    """The net under the span reader: an exception it did not foresee is that line's reader_error row."""
    from pipelines.ingest import _otel

    real = _otel.spans_of_item

    def brittle(item, line, first_order):
        if line == 1:
            raise TypeError("unhashable type: 'list'")
        return real(item, line, first_order)

    monkeypatch.setattr(_otel, "spans_of_item", brittle)
    export = (fixtures / "otel_tool_calls.otlp.json").read_text()
    path = tmp_path / "traces.jsonl"
    path.write_text(json.dumps(json.loads(export)) + "\n" + json.dumps(json.loads(export)) + "\n")
    error_row, graded = _read(path)
    assert (error_row.error.kind, error_row.error.line) == ("reader_error", 1)
    assert "the otel reader failed on this item (TypeError" in error_row.error.message
    assert graded.trajectory is not None
