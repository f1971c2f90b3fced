"""Agent frameworks' own files -> trajectories: the OpenAI Responses API items (Agents SDK
``to_input_list()``), the Agents SDK's trace export, LangChain / LangGraph message dumps and
pydantic-ai message histories. The fixtures were written by the libraries themselves (see
fixtures/frameworks/ORIGIN.md); the real Langfuse exports are read from
../shared/data/external/formats/openai-agents (see its SOURCE.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipelines.cli import app
from pipelines.ingest import UsageError, detect_trajectory_format, iter_trajectories, load_tasks, read_trajectories

FRAMEWORKS = Path(__file__).resolve().parents[1] / "fixtures" / "frameworks"
TASKS = FRAMEWORKS / "tasks.jsonl"
AGENTS = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "external" / "formats" / "openai-agents"
needs_shared = pytest.mark.skipif(not AGENTS.is_dir(), reason="the shared samples (../shared) are not checked out")
runner = CliRunner()

WRITTEN = [
    ("agents_input_list.jsonl", "responses"),
    ("agents_input_list_wrapped.jsonl", "responses"),
    ("agents_trace.jsonl", "agents-trace"),
    ("agents_trace_backend.json", "agents-trace"),
    ("langchain_messages_to_dict.jsonl", "langchain"),
    ("langchain_model_dump.jsonl", "langchain"),
    ("langchain_dumpd.jsonl", "langchain"),
    ("pydantic_ai_messages.jsonl", "pydantic-ai"),
    ("pydantic_ai_messages_wrapped.jsonl", "pydantic-ai"),
]
EXPECTED_STEPS = {
    "add": [("add", {"a": 17, "b": 25})],
    "weather": [("get_weather", {"city": "Paris"})],
    "mul": [("multiply", {"a": 6, "b": 7})],
}


def _lines(path: Path) -> list:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _write(path: Path, items: list) -> Path:
    path.write_text("".join(json.dumps(item, ensure_ascii=False) + "\n" for item in items), encoding="utf-8")
    return path


def _read(path: Path, fmt: str | None = None, tasks=None) -> list:
    return list(read_trajectories(path, fmt, tasks=tasks).items)


@pytest.fixture(scope="module")
def tasks():
    return load_tasks(TASKS)


# ---------------------------------------------------------------- graded as the library wrote them


@pytest.mark.parametrize(("name", "fmt"), WRITTEN)
def test_graded_as_the_library_wrote_it(name, fmt, tmp_path):
    """``judge grade`` on the file as the framework wrote it: detected, every run matched to its
    task (bare lists by their question), 2 pass and the wrong product failing at answer_correctness."""
    path = FRAMEWORKS / name
    assert detect_trajectory_format(path) == fmt
    out = tmp_path / "run"
    result = runner.invoke(app, ["grade", "--tasks", str(TASKS), "--trajectories", str(path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    verdicts = {row["task_id"]: (row["verdict"], row.get("failure_stage")) for row in rows}
    assert verdicts == {"add": ("pass", "none"), "weather": ("pass", "none"), "mul": ("fail", "answer_correctness")}
    assert [row["source"]["item"] for row in rows] == [0, 1, 2]


@pytest.mark.parametrize(("name", "fmt"), WRITTEN)
def test_calls_results_and_answers_read(name, fmt, tasks):
    items = _read(FRAMEWORKS / name, tasks=tasks)
    assert [x.error for x in items] == [None, None, None]
    for loaded in items:
        traj = loaded.trajectory
        assert [(s.name, s.arguments) for s in traj.steps] == EXPECTED_STEPS[traj.task_id]
        assert [(s.status, s.round) for s in traj.steps] == [("ok", 0)]
        assert len(traj.turns) == 1 and traj.turns[0].query == next(t.turns[0].query for tid, t in tasks.tasks.items() if tid == traj.task_id)
        assert traj.final_answer in ("The sum is 42.", "It is rainy in Paris today, 12 °C.", "The product is 41.")
        assert traj.turns[0].agent_messages == [traj.final_answer]
        assert loaded.warnings == []
    assert items[1].trajectory.steps[0].result == "rainy, 12 °C in Paris"


# ---------------------------------------------------------------- OpenAI Responses items


def test_responses_reasoning_is_not_said_and_calls_share_the_response(tasks):
    (_, _, mul) = _read(FRAMEWORKS / "agents_input_list.jsonl", tasks=tasks)
    items = _lines(FRAMEWORKS / "agents_input_list.jsonl")[2]
    assert [i.get("type") for i in items] == [None, "reasoning", "function_call", "function_call_output", "message"]
    assert mul.trajectory.turns[0].agent_messages == ["The product is 41."]  # the reasoning summary is not among them
    assert mul.trajectory.steps[0].call_id == "call_mul_1" and mul.trajectory.steps[0].result == "42"


def test_responses_call_beside_text_is_a_round_and_the_text_no_answer(tmp_path, tasks):
    question = "What is 17 + 25?"
    items = [
        {"role": "user", "content": question},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Let me add."}]},
        {"type": "function_call", "call_id": "c1", "name": "add", "arguments": '{"a": 17, "b": 25}'},
        {"type": "function_call", "call_id": "c2", "name": "add", "arguments": "{not json"},
        {"type": "function_call_output", "call_id": "c1", "output": "42"},
        {"type": "function_call_output", "call_id": "c2", "output": "An error occurred while running the tool. Please try again."},
    ]
    (loaded,) = _read(_write(tmp_path / "t.jsonl", [items]), tasks=tasks)
    traj = loaded.trajectory
    assert [(s.call_id, s.round, s.status) for s in traj.steps] == [("c1", 0, "ok"), ("c2", 0, "error")]
    assert traj.steps[1].error.startswith("unparseable arguments")
    assert traj.final_answer is None and traj.turns[0].agent_messages == ["Let me add."]
    items[-1]["call_id"] = "c1b"  # the SDK's failure text on a well-formed call fails that call
    items[3] = {"type": "function_call", "call_id": "c1b", "name": "add", "arguments": "{}"}
    (loaded,) = _read(_write(tmp_path / "u.jsonl", [items]), tasks=tasks)
    assert loaded.trajectory.steps[1].status == "error" and loaded.trajectory.steps[1].error.startswith("An error occurred")


def test_responses_api_input_and_output_wrapped(tmp_path, tasks):
    """A logged Responses API call: the request's ``input`` and the response's ``output`` items."""
    run = _lines(FRAMEWORKS / "agents_input_list.jsonl")[0]
    path = _write(tmp_path / "api.jsonl", [{"trajectory_id": "r1", "input": run[:3], "output": run[3:], "usage": {"input_tokens": 9, "output_tokens": 4}}])
    (loaded,) = _read(path, tasks=tasks)
    assert (loaded.trajectory.task_id, loaded.trajectory.trajectory_id, loaded.trajectory.final_answer) == ("add", "r1", "The sum is 42.")
    assert loaded.trajectory.token_usage.input_tokens == 9


def test_hosted_tool_items_are_unsupported_naming_the_item(tmp_path, tasks):
    items = [{"role": "user", "content": "What is 17 + 25?"}, {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search"}}]
    (loaded,) = _read(_write(tmp_path / "t.jsonl", [items]), tasks=tasks)
    assert (loaded.error.kind, loaded.error.line, loaded.error.field) == ("unsupported", 1, "[1].type")
    assert "web_search_call" in loaded.error.message


# ---------------------------------------------------------------- bare lists: layout, task matching, errors


def test_a_file_holding_one_pretty_printed_list_is_one_transcript(tmp_path, tasks):
    """``json.dump(result.to_input_list(), f, indent=2)``: the whole array is one run; an error in
    it names the line of its message."""
    run = _lines(FRAMEWORKS / "agents_input_list.jsonl")[1]
    path = tmp_path / "one.json"
    path.write_text(json.dumps(run, indent=2, ensure_ascii=False), encoding="utf-8")
    assert detect_trajectory_format(path) == "responses"
    (loaded,) = _read(path, tasks=tasks)
    assert (loaded.trajectory.task_id, loaded.source.line, loaded.source.item) == ("weather", 2, 0)
    run[2] = {"type": "function_call_output", "output": "rainy"}  # no call_id
    path.write_text(json.dumps(run, indent=2, ensure_ascii=False), encoding="utf-8")
    (loaded,) = _read(path, tasks=tasks)
    text = path.read_text().splitlines()
    bad_line = next(i for i, line in enumerate(text, 1) if "function_call_output" in line) - 1  # the line its object opens on
    assert (loaded.error.kind, loaded.error.field, loaded.error.line) == ("invalid_field", "[2].call_id", bad_line)


def test_a_top_level_array_of_bare_lists(tmp_path, tasks):
    runs = _lines(FRAMEWORKS / "langchain_messages_to_dict.jsonl")
    path = tmp_path / "runs.json"
    path.write_text(json.dumps(runs, indent=1), encoding="utf-8")
    items = _read(path, tasks=tasks)
    assert [x.trajectory.task_id for x in items] == ["add", "weather", "mul"]
    assert [x.source.item for x in items] == [0, 1, 2]


def test_an_unreadable_message_makes_its_list_an_error(tmp_path, tasks):
    run = json.dumps(_lines(FRAMEWORKS / "agents_input_list.jsonl")[0], indent=2).splitlines()
    run[3] = run[3] + "}"  # malformed JSON inside the second message
    path = tmp_path / "broken.json"
    path.write_text("\n".join(run), encoding="utf-8")
    items = _read(path, "responses", tasks=tasks)
    assert len(items) == 1 and items[0].error.kind == "malformed_json"
    assert "bare message list starting at line 2" in items[0].error.message


def test_a_bare_list_is_matched_to_the_one_task_with_its_question(tmp_path, write_jsonl, tasks):
    runs = _lines(FRAMEWORKS / "pydantic_ai_messages.jsonl")
    runs[0][0]["parts"][0]["content"] = "What is 17 +   25?\n"  # whitespace does not count
    runs[1][0]["parts"][0]["content"] = "What is the weather in Rome?"
    path = _write(tmp_path / "runs.jsonl", runs)
    items = _read(path, tasks=tasks)
    assert items[0].trajectory.task_id == "add" and items[2].trajectory.task_id == "mul"
    error = items[1].error
    assert (error.kind, error.line, error.field) == ("unknown_task", 2, "[0].parts[0].content")
    assert "'What is the weather in Rome?' is the question of none of the 3 tasks" in error.message and '"task_id"' in error.message
    twice = write_jsonl("tasks.jsonl", [{"task_id": "a", "question": "What is 6 times 7?"}, {"task_id": "b", "question": "What is 6 times 7?"}])
    assert "is the question of 2 tasks (a, b)" in _read(path, tasks=load_tasks(twice))[2].error.message
    assert "no tasks were given" in _read(path)[0].error.message


def test_detection_failure_names_the_bare_formats(tmp_path):
    path = _write(tmp_path / "odd.jsonl", [[{"speaker": "user", "text": "hi"}]])
    with pytest.raises(UsageError, match=r"bare message list.*keys \['speaker', 'text'\].*langchain, pydantic-ai, responses") as caught:
        detect_trajectory_format(path)
    assert caught.value.option == "--format" and "responses" in caught.value.accepted
    with pytest.raises(UsageError, match=r"bare message list.*\(line 1\)"):
        list(iter_trajectories(path))


@pytest.mark.parametrize("odd", [["message"], {"a": 1}])
def test_a_list_or_object_for_a_type_or_role_on_the_first_line_is_no_crash(odd, tmp_path, tasks):
    """Detection runs every reader's sniff on the first line: a list or object where a name
    belongs must be no format's mark there, never a TypeError (unhashable) that ends the run."""
    chat = {"task_id": "t1", "messages": [{"role": "user", "content": "hi"}, {"role": odd, "content": "x"}]}
    path = _write(tmp_path / "chat.jsonl", [chat])
    assert detect_trajectory_format(path) == "openai"
    (item,) = _read(path, tasks=tasks)
    assert (item.error.kind, item.error.line, item.error.field) == ("invalid_field", 1, "messages[1].role")
    bare = _write(tmp_path / "items.jsonl", [[{"type": odd, "role": "user", "content": "hi"}], *_lines(FRAMEWORKS / "agents_input_list.jsonl")])
    assert detect_trajectory_format(bare) == "responses"
    first, *rest = _read(bare, tasks=tasks)
    assert (first.error.kind, first.error.line, first.error.field) == ("invalid_field", 1, "[0].type")
    assert all(x.error is None for x in rest)


# ---------------------------------------------------------------- bad items name file, line and field; unknown fields are kept


@pytest.mark.parametrize(
    ("source", "edit", "kind", "field"),
    [
        ("agents_input_list_wrapped.jsonl", lambda r: r["items"][1].pop("call_id"), "invalid_field", "items[1].call_id"),
        ("agents_input_list_wrapped.jsonl", lambda r: r["items"][3].update(role="robot"), "invalid_field", "items[3].role"),
        ("langchain_messages_to_dict.jsonl", lambda r: r[2].update(type="wizard"), "invalid_field", "[2].type"),
        ("langchain_model_dump.jsonl", lambda r: r["messages"][2].pop("tool_call_id"), "invalid_field", "messages[2].tool_call_id"),
        (
            "langchain_dumpd.jsonl",
            lambda r: r["messages"][1]["kwargs"]["tool_calls"][0].update(name=5),
            "invalid_field",
            "messages[1].kwargs.tool_calls[0].name",
        ),
        ("pydantic_ai_messages.jsonl", lambda r: r[1]["parts"][0].update(part_kind="telepathy"), "unsupported", "[1].parts[0].part_kind"),
        ("pydantic_ai_messages.jsonl", lambda r: r[2].update(kind="echo"), "invalid_field", "[2].kind"),
        # a list or an object where a name belongs: no set holds it (it used to be a reader_error)
        ("agents_input_list.jsonl", lambda r: r[3].update(role=[None]), "invalid_field", "[3].role"),
        ("agents_input_list.jsonl", lambda r: r[3].update(role={}), "invalid_field", "[3].role"),
        ("agents_input_list_wrapped.jsonl", lambda r: r["items"][3].update(role=[[["assistant"]]]), "invalid_field", "items[3].role"),
        ("pydantic_ai_messages.jsonl", lambda r: r[1]["parts"][0].update(part_kind=[["text"]]), "invalid_field", "[1].parts[0].part_kind"),
        ("pydantic_ai_messages_wrapped.jsonl", lambda r: r["messages"][1]["parts"][0].update(part_kind={}), "invalid_field", "messages[1].parts[0].part_kind"),
    ],
)
def test_a_bad_item_is_an_error_naming_file_line_field(source, edit, kind, field, tmp_path, tasks):
    runs = _lines(FRAMEWORKS / source)
    edit(runs[1])
    path = _write(tmp_path / source, runs)
    items = _read(path, tasks=tasks)
    assert [x.error is None for x in items] == [True, False, True]  # the others are still read
    error = items[1].error
    assert (error.kind, error.file, error.line, error.field) == (kind, str(path), 2, field)


def test_unknown_top_level_fields_are_kept_in_metadata(tmp_path, tasks):
    runs = _lines(FRAMEWORKS / "langchain_model_dump.jsonl")
    runs[0]["run_name"] = "nightly"
    (first, *_) = _read(_write(tmp_path / "t.jsonl", runs), tasks=tasks)
    assert first.trajectory.metadata["run_name"] == "nightly" and first.warnings == []


# ---------------------------------------------------------------- framework particulars


def test_langchain_forms_read_alike(tasks):
    def seen(name):
        return [(t.trajectory.task_id, t.trajectory.steps, t.trajectory.final_answer, t.trajectory.token_usage) for t in _read(FRAMEWORKS / name, tasks=tasks)]

    assert seen("langchain_messages_to_dict.jsonl") == seen("langchain_model_dump.jsonl") == seen("langchain_dumpd.jsonl")
    assert seen("langchain_dumpd.jsonl")[0][3].input_tokens == 160  # usage_metadata of the two model calls


def test_langchain_invalid_tool_calls_and_error_status(tmp_path, tasks):
    run = _lines(FRAMEWORKS / "langchain_model_dump.jsonl")[0]
    ai, tool = run["messages"][1], run["messages"][2]
    ai["invalid_tool_calls"] = [
        {"name": "add", "args": "{'a': 17", "id": "bad_1", "error": "Function add arguments are not valid JSON", "type": "invalid_tool_call"}
    ]
    tool["status"], tool["content"] = "error", "Error: adder offline"
    (loaded,) = _read(_write(tmp_path / "t.jsonl", [run]), tasks=tasks)
    steps = loaded.trajectory.steps
    assert [(s.name, s.call_id, s.status) for s in steps] == [("add", "call_add_1", "error"), ("add", "bad_1", "error")]
    assert steps[1].error.startswith("unparseable arguments: Function add arguments are not valid JSON")


def test_pydantic_ai_retried_tool_call_fails_the_call(tasks):
    (loaded,) = _read(FRAMEWORKS / "pydantic_ai_retry.jsonl", tasks=tasks)
    (step,) = loaded.trajectory.steps
    assert (step.name, step.status, step.error) == ("add", "error", "the adder is warming up, try again")
    assert loaded.trajectory.final_answer == "The sum is 42."


def test_pydantic_ai_older_retry_prompt_and_output_tool(tmp_path, tasks):
    """Histories from before ``outcome``: a ``retry-prompt`` with a tool name fails its call, one
    without is feedback on the output; the output tool's arguments are the structured answer."""
    run = _lines(FRAMEWORKS / "pydantic_ai_messages.jsonl")[0]
    run[2]["parts"] = [
        {"part_kind": "retry-prompt", "tool_name": "add", "tool_call_id": "call_add_1", "content": [{"type": "int_parsing", "loc": ["a"], "msg": "bad"}]}
    ]
    run.append({"kind": "request", "parts": [{"part_kind": "retry-prompt", "tool_name": None, "tool_call_id": "x", "content": "answer as a number"}]})
    run.append({"kind": "response", "parts": [{"part_kind": "tool-call", "tool_name": "final_result", "args": {"response": 42}, "tool_call_id": "out_1"}]})
    run.append(
        {"kind": "request", "parts": [{"part_kind": "tool-return", "tool_name": "final_result", "content": "Final result processed.", "tool_call_id": "out_1"}]}
    )
    (loaded,) = _read(_write(tmp_path / "t.jsonl", [run]), tasks=tasks)
    traj = loaded.trajectory
    assert [(s.name, s.status) for s in traj.steps] == [("add", "error")] and '"int_parsing"' in traj.steps[0].error
    assert traj.final_answer == {"response": 42}


def test_agents_trace_function_span_error_fails_its_call(tmp_path):
    items = _lines(FRAMEWORKS / "agents_trace.jsonl")
    function = next(i for i in items if i.get("span_data", {}).get("type") == "function")
    function["error"] = {"message": "Error running tool", "data": {"tool_name": "add"}}
    items = _read(_write(tmp_path / "trace.jsonl", items))
    step = next(x for x in items if x.trajectory.task_id == "add").trajectory.steps[0]
    assert (step.name, step.status) == ("add", "error")


def test_agents_trace_with_a_responses_model_is_graded_on_what_it_records(tasks, tmp_path):
    """The default Responses model's spans keep only response ids: no question, no answer. Its
    function spans are the calls; what rests on the missing content is unresolved with the
    reason, never a failure of the agent's; a wrong call would still fail."""
    items = _read(FRAMEWORKS / "agents_trace_responses_model.json")
    assert all(x.error is None for x in items) and len(items) == 3
    add = next(x.trajectory for x in items if x.trajectory.task_id == "session-add")  # its group id: the trace names no task
    assert [(s.name, s.arguments, s.result) for s in add.steps] == [("add", {"a": 17, "b": 25}, "42")]
    assert not add.turns[0].answer_recorded and "keeps only the response id" in add.not_recorded and "--format responses" in add.not_recorded
    out = tmp_path / "run"
    from typer.testing import CliRunner

    from pipelines.cli import app

    renamed = tmp_path / "tasks.jsonl"  # the fixture's tasks under the trace's group ids
    renamed.write_text(
        "".join(json.dumps({**t, "task_id": f"session-{t['task_id']}"}) + "\n" for t in map(json.loads, (FRAMEWORKS / "tasks.jsonl").read_text().splitlines()))
    )
    res = CliRunner().invoke(
        app, ["grade", "--tasks", str(renamed), "--trajectories", str(FRAMEWORKS / "agents_trace_responses_model.json"), "--out", str(out)]
    )
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert all(r["verdict"] == "unresolved" and "content not recorded" in r["turns"][0]["reason"] for r in rows), [r["verdict"] for r in rows]


# ---------------------------------------------------------------- the real Langfuse exports (../shared)


@needs_shared
def test_real_responses_items_of_the_langfuse_agents_export(tmp_path, write_jsonl):
    """The Agents SDK run exported by Langfuse: its last generation's input is a real Responses
    item list and its output a real Responses ``response``; together they are the transcript."""
    export = json.loads((AGENTS / "openai-agents-2025-09-30.trace.json").read_text())
    generations = [o for o in export["observations"] if o["type"] == "GENERATION"]
    last = max(generations, key=lambda o: o["startTime"])
    path = _write(tmp_path / "api.jsonl", [{"task_id": "tokyo", "input": json.loads(last["input"]), "output": json.loads(last["output"])["output"]}])
    assert detect_trajectory_format(path) == "responses"
    (loaded,) = _read(path)
    traj = loaded.trajectory
    (step,) = traj.steps
    assert (step.name, step.arguments, step.call_id, step.result) == (
        "get_weather",
        {"city": "Tokyo"},
        "call_Kud0j0DxWSmLzv9W5m6qVqXn",
        "The weather in Tokyo is sunny.",
    )
    assert traj.turns[0].query == "What's the weather in Tokyo?" and traj.final_answer.startswith("The weather in Tokyo is currently sunny.")
    tasks = load_tasks(write_jsonl("tasks.jsonl", [{"task_id": "tokyo", "question": "What's the weather in Tokyo?"}]))
    bare = _write(tmp_path / "bare.jsonl", [json.loads(last["input"]) + json.loads(last["output"])["output"]])
    assert _read(bare, tasks=tasks)[0].trajectory.task_id == "tokyo"  # bare: matched by its question


@needs_shared
def test_real_langgraph_state_of_the_langfuse_export(tmp_path, write_jsonl):
    """The LangGraph run's root observation output is the graph's final state: LangChain
    ``model_dump`` messages of langchain-core 0.3 (with ``example`` fields), read as they are."""
    export = json.loads((AGENTS / "langgraph-python-2025-08-22.trace.json").read_text())
    root = next(o for o in export["observations"] if o["name"] == "LangGraph")
    state = json.loads(root["output"])
    tasks = load_tasks(write_jsonl("tasks.jsonl", [{"task_id": "search", "question": "Search the web for 'example' and summarize."}]))
    (loaded,) = _read(_write(tmp_path / "state.jsonl", [state]), tasks=tasks)
    traj = loaded.trajectory
    assert traj.task_id == "search"
    (step,) = traj.steps
    assert (step.name, step.arguments, step.call_id) == ("Web-Search", {"query": "example"}, "call_1oGK863sxQHlPreFhDdEs3yl")
    assert step.result == [{"url": "https://example.com", "title": "Example Result", "q": "example"}]
    assert traj.final_answer.startswith('The search for "example" primarily leads to the website')
    assert traj.token_usage.input_tokens > 0


def test_an_array_of_transcripts_stays_one_row_each_when_one_is_broken(tmp_path, tasks):
    """The array's first readable item says what it holds: here transcripts, so a later item
    that looks like a message is that item's error, not the start of a message list."""
    runs = _lines(FRAMEWORKS / "agents_input_list_wrapped.jsonl")
    runs.insert(1, {"role": "user", "content": "What is 17 + 25?"})
    path = tmp_path / "runs.json"
    path.write_text(json.dumps(runs, indent=1), encoding="utf-8")
    items = _read(path, "responses", tasks=tasks)
    assert [x.error.field if x.error else x.trajectory.task_id for x in items] == ["add", "items", "weather", "mul"]


def test_agents_trace_items_in_one_json_array(tmp_path):
    items = _lines(FRAMEWORKS / "agents_trace.jsonl")
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(items, indent=1), encoding="utf-8")
    assert detect_trajectory_format(path) == "agents-trace"
    assert sorted(x.trajectory.task_id for x in _read(path)) == ["add", "mul", "weather"]


def _agents_trace_with(tmp_path: Path, line: int, path: tuple, value) -> list:
    """agents_trace.jsonl with the value at ``path`` of line ``line`` replaced, read."""
    items = _lines(FRAMEWORKS / "agents_trace.jsonl")
    target = items[line - 1]
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return _read(_write(tmp_path / "trace.jsonl", items), "agents-trace")


@pytest.mark.parametrize(
    ("line", "path", "value", "field"),
    [
        (1, ("span_data", "output", 0, "tool_calls", 0, "function"), "add", "span_data.output[0].tool_calls[0].function"),
        (1, ("span_data", "output", 0, "tool_calls", 0, "function"), ["add"], "span_data.output[0].tool_calls[0].function"),
        (1, ("span_data", "output", 0, "tool_calls"), 7, "span_data.output[0].tool_calls"),
        (1, ("span_data", "output", 0, "tool_calls"), True, "span_data.output[0].tool_calls"),
        (1, ("span_data", "output", 0, "tool_calls", 0, "function", "name"), ["add"], "span_data.output[0].tool_calls[0].function.name"),
        (4, ("span_data", "input", 2, "tool_calls", 0, "function"), 7, "span_data.input[2].tool_calls[0].function"),
        (4, ("span_data", "input", 3, "tool_call_id"), {"x": "call_add_1"}, "span_data.input[3].tool_call_id"),
        (4, ("span_data", "input", 3, "tool_call_id"), ["call_add_1"], "span_data.input[3].tool_call_id"),
        (2, ("span_data", "name"), ["add"], "span_data.name"),
        (2, ("span_data", "name"), {"x": "add"}, "span_data.name"),
    ],
)
def test_agents_trace_fields_of_the_wrong_type_are_invalid_fields_of_their_span(tmp_path, line, path, value, field):
    """Found by replacing values of the trace fixture by values of other types: the reader's own
    message identity and function-span pairing read `function`, `tool_calls`, call ids and span
    names before the Chat Completions reader checks them, and failed (AttributeError, 'unhashable
    type') as reader_error rows. Each is now that conversation's invalid_field naming the span's
    own line (not the conversation's first) and field; the other conversations are graded."""
    items = _agents_trace_with(tmp_path, line, path, value)
    (bad,) = [x for x in items if x.error is not None]
    assert (bad.error.kind, bad.error.line, bad.error.field) == ("invalid_field", line, field)
    assert "must be" in bad.error.message
    assert sorted(x.trajectory.task_id for x in items if x.error is None) == ["mul", "weather"]


def test_agents_trace_calls_only_a_function_span_name_of_the_wrong_type(tmp_path):
    """A trace without messages reads its function spans as the calls: a list as a span's name
    (unhashable in the pairing before) is an invalid_field too, not a silently dropped call."""
    payloads = _lines(FRAMEWORKS / "agents_trace_responses_model.json")  # BackendSpanExporter payloads, one a line
    (line, at), *_ = [(n, i) for n, p in enumerate(payloads, 1) for i, item in enumerate(p["data"]) if item.get("span_data", {}).get("type") == "function"]
    span = payloads[line - 1]["data"][at]["span_data"]
    span["name"] = [span["name"]]
    loaded = _read(_write(tmp_path / "trace.json", payloads), "agents-trace")
    errors = [x.error for x in loaded if x.error is not None]
    assert [(e.kind, e.line, e.field) for e in errors] == [("invalid_field", line, f"data[{at}].span_data.name")]
    assert "a function span's name must be a string, got an array" in errors[0].message
    assert len(loaded) == 3


def test_agents_trace_bad_entries_of_one_backend_line_have_ids_of_their_own(tmp_path):
    """The BackendSpanExporter's payload puts many items on one line ({"data": [...]}): several bad
    entries there were error rows sharing the line's default id ("trace:1" each). They are
    "trace:1", "trace:1:2", ... as the streaming reader names the items of one line; a trace
    without bad entries keeps its ids."""
    items = _lines(FRAMEWORKS / "agents_trace.jsonl")
    payload = {"data": [*items, {"object": "nonsense"}, {"object": "trace.span", "trace_id": 7}, "text"]}
    loaded = _read(_write(tmp_path / "trace.jsonl", [payload]), "agents-trace")
    errors = [x for x in loaded if x.error is not None]
    assert [x.error.field for x in errors] == ["data[24].object", "data[25].trace_id", "data[26].object"]
    assert [x.trajectory_id for x in errors] == ["trace:1", "trace:1:2", "trace:1:3"]
    assert len({x.trajectory_id for x in loaded}) == len(loaded) == 6
    assert sorted(x.trajectory.task_id for x in loaded if x.error is None) == ["add", "mul", "weather"]
