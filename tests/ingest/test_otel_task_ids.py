"""Task ids from what tracing conventions carry (issue 24, part 4): ``gen_ai.conversation.id``,
OpenInference ``session.id`` / ``metadata`` / ``tag.tags``, ``--task-key``, and an unmatched id
that says where it was read and what the spans carry. The real files were written by
openinference-instrumentation-openai and opentelemetry-instrumentation-openai-v2
(fixtures/frameworks/*/ORIGIN.md); the synthetic spans show what those files do not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipelines.cli import app
from pipelines.ingest import read_trajectories
from tests.ingest.test_otel import chat, export, says, span, user

FRAMEWORKS = Path(__file__).resolve().parents[1] / "fixtures" / "frameworks"
TASKS = FRAMEWORKS / "add_tasks.jsonl"
OPENINFERENCE = FRAMEWORKS / "openinference_openai"
OPENAI_V2 = FRAMEWORKS / "otel_openai_v2"


def _items(path: Path, task_key: str | None = None):
    return list(read_trajectories(path, task_key=task_key).items)


def _grade(tmp_path: Path, trajectories: Path, *extra: str, tasks: Path = TASKS, code: int = 0):
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["grade", "--tasks", str(tasks), "--trajectories", str(trajectories), "--out", str(out), "--offline", *extra])
    assert result.exit_code == code, result.output
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()] if code == 0 else []
    return result, rows


def _verdicts(rows):
    return {r["task_id"]: (r["verdict"], r["failure_stage"]) for r in rows}


RIGHT = {"add-1": ("pass", "none"), "add-2": ("pass", "none"), "add-3": ("fail", "answer_correctness")}


# ---- the files the libraries wrote ------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "source"),
    [
        ("session", "session.id"),  # using_session: each model call its own trace, the session joins them
        ("metadata", "metadata.example_id"),  # using_metadata({"example_id": ...})
        ("tags", "tag task_id:"),  # using_tags(["task_id:..."])
    ],
)
def test_openinference_marks_name_the_task(tmp_path, name, source):
    path = OPENINFERENCE / f"{name}.otlp.jsonl"
    items = _items(path)
    assert sorted(i.task_id for i in items) == ["add-1", "add-2", "add-3"] and all(i.error is None for i in items)
    assert {i.trajectory.metadata["otel"]["task_id_from"] for i in items} == {source}
    first = next(i.trajectory for i in items if i.task_id == "add-1")
    assert [(s.name, s.arguments) for s in first.steps] == [("add", {"a": 2, "b": 3})] and first.final_answer == "The sum is 5."
    if name == "session":
        assert len(first.metadata["otel"]["trace_ids"]) == 2 and first.trajectory_id == "add-1"
    _, rows = _grade(tmp_path, path)
    assert _verdicts(rows) == RIGHT


def test_the_conversation_id_of_opentelemetry_genai_names_the_task(tmp_path):
    items = _items(OPENAI_V2 / "content_on.otlp.jsonl")
    assert {i.trajectory.metadata["otel"]["task_id_from"] for i in items} == {"gen_ai.conversation.id"}
    _, rows = _grade(tmp_path, OPENAI_V2 / "content_on.otlp.jsonl")
    assert _verdicts(rows) == RIGHT


def test_an_unmatched_id_says_where_it_was_read_and_what_the_spans_carry(tmp_path):
    other = tmp_path / "other_tasks.jsonl"
    other.write_text(TASKS.read_text().replace('"add-', '"sum-'))
    result, _ = _grade(tmp_path, OPENINFERENCE / "metadata.otlp.jsonl", tasks=other, code=3)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    (message, *_) = [e["message"] for e in summary["errors"] if e["kind"] == "unknown_task"]
    assert "no task with id 'add-1'" in message and "the task id was read from metadata.example_id" in message
    assert "metadata.example_id='add-1'" in message and "tool.name='add'" in message and "--task-key ATTRIBUTE" in message
    assert "llm.token_count" not in message and "tool.parameters" not in message  # measurements and content are no ids
    assert "read from metadata.example_id" in result.output  # the console line, unbroken


# ---- --task-key ---------------------------------------------------------------------------------


def test_task_key_names_the_attribute(tmp_path):
    by_metadata = _items(OPENINFERENCE / "metadata.otlp.jsonl", task_key="metadata.example_id")
    assert sorted(i.task_id for i in by_metadata) == ["add-1", "add-2", "add-3"]
    by_name = _items(OPENINFERENCE / "metadata.otlp.jsonl", task_key="example_id")
    assert [i.task_id for i in by_name] == [i.task_id for i in by_metadata]
    agents = _items(OPENAI_V2 / "content_on.otlp.jsonl", task_key="gen_ai.agent.name")  # the agent, not the task: all "adder"
    assert [(i.task_id, i.trajectory_id) for i in agents] == [("adder", "add-1"), ("adder", "add-2"), ("adder", "add-3")]
    _, rows = _grade(tmp_path, OPENINFERENCE / "tags.otlp.jsonl", "--task-key", "task_id")
    assert _verdicts(rows) == RIGHT


def test_task_key_picks_the_id_over_a_user_session(write_jsonl):
    marks = {"session.id": "user-42", "metadata": json.dumps({"case": "add-1"})}
    path = write_jsonl("t.jsonl", [export(chat("a" * 32, "01", 0, [user("What is 2 + 3?")], [says("5")], **marks))])
    (default,) = _items(path)
    assert (default.task_id, default.trajectory.metadata["otel"]["task_id_from"]) == ("user-42", "session.id")  # no task named: the session stands in
    (keyed,) = _items(path, task_key="case")
    assert (keyed.task_id, keyed.trajectory_id, keyed.trajectory.metadata["otel"]["task_id_from"]) == ("add-1", "user-42", "metadata.case")


def test_a_task_key_no_span_carries_is_an_error_row_listing_what_they_carry():
    items = _items(OPENAI_V2 / "content_on.otlp.jsonl", task_key="nope")
    assert len(items) == 3 and all(i.trajectory is None for i in items)
    error = items[0].error
    assert error.kind == "unknown_task" and error.field == "nope"
    assert "no span of this trace carries 'nope'" in error.message and "gen_ai.conversation.id='add-1'" in error.message


def test_task_key_on_a_format_that_names_its_tasks_is_a_usage_error(tmp_path):
    native = tmp_path / "runs.jsonl"
    native.write_text(json.dumps({"task_id": "add-1", "trajectory_id": "r", "steps": [], "final_answer": "5"}) + "\n")
    result, _ = _grade(tmp_path, native, "--task-key", "task", code=2)
    assert "--task-key" in result.output and "native trajectories name their task themselves" in result.output


def test_task_key_is_recorded_for_resume():
    from pipelines.run import GradeOptions
    from pipelines.run.options import recipe

    opts = GradeOptions(tasks=TASKS, trajectories=OPENINFERENCE / "tags.otlp.jsonl", out=Path("run"), task_key="task_id")
    assert recipe(opts).task_key == "task_id"


# ---- grouping -----------------------------------------------------------------------------------


def test_a_session_over_several_tasks_is_one_trajectory_per_task(write_jsonl):
    """A session (a user's, or the whole eval run's) that names a task per trace: a run is one task's."""
    spans = [
        chat("b" * 32, "01", 0, [user("q1")], [says("a1")], **{"session.id": "s", "metadata": json.dumps({"task_id": "t1"})}),
        chat("c" * 32, "01", 1, [user("q2")], [says("a2")], **{"session.id": "s", "metadata": json.dumps({"task_id": "t2"})}),
        chat("d" * 32, "01", 2, [user("q1"), says("a1"), user("more")], [says("a3")], **{"session.id": "s", "metadata": json.dumps({"task_id": "t1"})}),
    ]
    items = _items(write_jsonl("t.jsonl", [export(*spans)]))
    assert [(i.task_id, i.trajectory_id, len(i.trajectory.metadata["otel"]["trace_ids"])) for i in items] == [("t1", "s", 2), ("t2", "s", 1)]


def test_a_task_named_on_one_trace_of_a_conversation_names_it_for_all(write_jsonl):
    first = span("e" * 32, "01", "invoke_agent a", 0, {"gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": "c", "task.id": "T"})
    later = chat("f" * 32, "01", 5, [user("again")], [says("ok")], **{"gen_ai.conversation.id": "c"})
    (item,) = _items(write_jsonl("t.jsonl", [export(first, later)]))
    assert (item.task_id, item.trajectory_id, len(item.trajectory.metadata["otel"]["trace_ids"])) == ("T", "c", 2)
