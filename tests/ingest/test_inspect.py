"""Inspect AI eval logs -> tasks and trajectories: the real logs in ../shared (see their SOURCE.md), a
fixture derived from Inspect's own tool-error log (fixtures/formats/INSPECT_ORIGIN.md), and logs
written here for what those do not show, hostile archives included."""

from __future__ import annotations

import json
import struct
import zipfile
import zlib
from pathlib import Path
from typing import Any

import pytest
import zstandard

from pipelines.ingest import detect_trajectory_format, read_trajectories
from pipelines.ingest._base import Limits
from pipelines.ingest._inspect import BUNDLE

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "external" / "formats" / "inspect"
FRAMEWORKS = Path(__file__).resolve().parents[1] / "fixtures" / "frameworks"
METR = "metr_oxdna_simple_claude-opus-4-1_2-of-6-epochs.eval"


def shared(name: str) -> Path:
    path = SHARED / name
    if not path.exists():
        pytest.skip(f"shared sample {path} not present")
    return path


def read(path: Path, limits: Limits = Limits()):
    bundle = BUNDLE.read(str(path), limits)
    return bundle.tasks, list(bundle.items)


# ---- the real logs ------------------------------------------------------------------------------


def test_metr_agent_run_two_epochs_one_task():
    path = shared(METR)
    assert detect_trajectory_format(path) == "inspect"
    tasks, items = read(path)
    assert list(tasks.tasks) == ["default"] and not tasks.errors  # one task for both epochs
    task = tasks.tasks["default"]
    assert [t.name for t in task.tools] == ["bash", "python", "set_timeout", "submit"]
    python = task.tool("python")
    assert python.description.startswith("Use the python function") and "attachment://" not in python.description
    assert python.parameters["required"] == ["code"]
    assert task.turns[0].gold_answers is None  # target "": the scorer checks files, there is no gold answer
    assert task.metadata.domain == "oxdna_simple" and task.metadata.tags["inspect"]["eval"]["model"] == "anthropic/claude-opus-4-1-20250805"
    assert sorted(i.trajectory_id for i in items) == ["default:2", "default:3"] and all(i.error is None for i in items)
    traj = next(i.trajectory for i in items if i.trajectory_id == "default:2")
    assert traj.agent == "anthropic/claude-opus-4-1-20250805"
    assert [s.name for s in traj.steps] == ["bash"] * 11 and all(s.status == "ok" for s in traj.steps)
    assert traj.steps[0].arguments == {"cmd": "ls -la /home/agent/"} and "initial.conf" in traj.steps[0].result
    said = [m for t in traj.turns for m in t.agent_messages]
    assert said and not any("Let me start by understanding" in m for m in said)  # reasoning is not what the agent said
    assert traj.final_answer.startswith("Perfect! The simulation has completed successfully.")
    (label,) = traj.external_labels
    assert (label.source, label.value, label.passed) == ("inspect:score_metr_task", 1, True)
    assert (traj.token_usage.input_tokens, traj.token_usage.output_tokens) == (96, 1638)
    assert traj.metadata["epoch"] == 2 and "events" not in traj.metadata and "attachments" not in traj.metadata


def test_v3_log_with_message_pool():
    tasks, items = read(shared("inspect_ai_log_message_deduplication.eval"))
    task = tasks.tasks["0"]
    assert task.turns[0].gold_answers == ["42.7"] and [t.name for t in task.tools] == ["bash", "python"]
    (item,) = items
    traj = item.trajectory
    assert [(s.name, s.arguments, s.status) for s in traj.steps] == [("bash", {"cmd": "ls"}, "ok")] * 5
    assert traj.final_answer == "done"
    assert traj.external_labels[0].value == 0.0 and traj.external_labels[0].passed is False


def test_json_and_eval_of_one_run_read_the_same():
    json_tasks, json_items = read(shared("inspect_ai_log_formats.json"))
    eval_tasks, eval_items = read(shared("inspect_ai_log_formats.eval"))
    assert json_tasks.tasks == eval_tasks.tasks
    (a,), (b,) = json_items, eval_items
    assert a.trajectory.turns == b.trajectory.turns and a.trajectory.external_labels == b.trajectory.external_labels
    assert a.trajectory.final_answer == "No" and a.trajectory.external_labels[0].passed is False  # scorer said I
    assert json_tasks.tasks["1"].turns[0].gold_answers == [" Yes"]


@pytest.mark.parametrize("name", ["inspect_ai_log_formats.json", "inspect_ai_log_formats.eval"])
def test_the_popularity_answer_is_decided_and_agrees_with_the_scorer(name):
    """The real run answers "No" to a target stored as " Yes" (untrimmed, as the log has it): the
    yes/no rule decides it, without a judge, as the log's own `match` scorer did ("I")."""
    from judge import Check, FailureStage, VerdictLabel
    from pipelines.config import GradingConfig
    from pipelines.grade import grade_case

    tasks, items = read(shared(name))
    (item,) = items
    task = tasks.tasks[str(item.trajectory.task_id)]
    assert task.turns[0].gold_answers == [" Yes"] and item.trajectory.final_answer == "No"  # reaches the answer check untrimmed
    case = grade_case(task, item.trajectory, GradingConfig())
    result = case.result()
    assert (result.verdict, result.failure_stage, result.decided_by) == (VerdictLabel.FAIL, FailureStage.ANSWER_CORRECTNESS, "deterministic")
    assert "clearly answers 'no', the opposite of the gold's 'yes'" in case.turns[0].checks[Check.ANSWER].reason
    (label,) = item.trajectory.external_labels
    assert (label.source, label.passed) == ("inspect:match", False)  # the scorer's verdict, which ours agrees with


def test_tool_errors_fail_their_steps(fixtures):
    _, items = read(fixtures / "inspect_tool_call_errors.json")
    (item,) = items
    steps = item.trajectory.steps
    assert len(steps) == 11 and "orphan_results" not in item.trajectory.metadata
    status = {s.call_id: (s.status, s.error) for s in steps}
    assert status["bash_1"] == ("error", "parsing: ...")
    assert status["bash_2"] == ("error", "timeout: ...")
    assert status["bash_9"] == ("blocked", "approval: ...")  # the approver refused: the call never ran
    assert status["bash_11"] == ("ok", None)  # the tool ran; only its output was cut
    assert item.trajectory.metadata["truncated_outputs"] == ["samples[0].messages[12]"]
    assert item.trajectory_id == "1:4"


def test_the_unmodified_tool_error_log_keeps_orphan_results():
    _, items = read(shared("inspect_ai_log_tool_call_error.json"))
    (item,) = items
    assert len(item.trajectory.metadata["orphan_results"]) == 11
    assert {w.kind for w in item.warnings} == {"orphan_result"}
    assert item.trajectory.turns[0].query == "..."  # no user message: the sample's input is the query


# ---- logs written here --------------------------------------------------------------------------

HEADER = {
    "version": 2,
    "status": "success",
    "eval": {"task": "quiz", "task_id": "T", "run_id": "R", "model": "openai/gpt-x", "created": "2026-01-01"},
    "plan": {"name": "plan", "steps": [{"solver": "use_tools", "params": {"tools": [{"type": "tool", "name": "search", "params": {}}]}}]},
}


def sample(sample_id: Any = 1, epoch: int = 1, **fields: Any) -> dict[str, Any]:
    base = {
        "id": sample_id,
        "epoch": epoch,
        "input": "What is 2+2?",
        "target": "4",
        "messages": [{"role": "user", "content": "What is 2+2?", "source": "input"}, {"role": "assistant", "content": "4", "source": "generate"}],
        "scores": {"match": {"value": "C", "answer": "4", "explanation": "4"}},
    }
    return {**base, **fields}


def write_eval(path: Path, samples: list[dict[str, Any]], header: dict[str, Any] | None = HEADER, extra: dict[str, bytes] | None = None) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("_journal/start.json", json.dumps({"version": 2, "eval": (header or HEADER)["eval"], "plan": HEADER["plan"]}))
        for s in samples:
            z.writestr(f"samples/{s['id']}_epoch_{s['epoch']}.json", json.dumps(s, indent=2))
        for name, data in (extra or {}).items():
            z.writestr(name, data)
        if header is not None:
            z.writestr("header.json", json.dumps(header))
    return path


def write_json(path: Path, samples: list[dict[str, Any]] | None, **header: Any) -> Path:
    doc = {**HEADER, **header}
    if samples is not None:
        doc["samples"] = samples
    path.write_text(json.dumps(doc, indent=2))
    return path


def test_targets_and_alternatives(tmp_path):
    samples = [sample(1, target=["4", "four"]), sample(2, target=""), sample(3, target=[]), sample("q-4", target="x")]
    tasks, items = read(write_json(tmp_path / "log.json", samples))
    assert [tasks.tasks[k].turns[0].gold_answers for k in ("1", "2", "3", "q-4")] == [["4", "four"], None, None, ["x"]]
    assert [i.trajectory_id for i in items] == ["1:1", "2:1", "3:1", "q-4:1"]
    assert [t.name for t in tasks.tasks["1"].tools] == ["search"]  # no model events: the plan's use_tools names


def test_reasoning_is_neither_said_nor_the_answer(tmp_path):
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "What is 2+2?"}, {"type": "image", "image": "attachment://img"}]},
        {"role": "assistant", "content": "<think>2+2 is 4, obviously</think>The answer is 4."},
        {"role": "user", "content": "Sure?"},
        {
            "role": "assistant",
            "content": [{"type": "reasoning", "reasoning": "double-check: 4", "signature": "s"}, {"type": "text", "text": "Yes, 4."}],
        },
    ]
    _, items = read(write_json(tmp_path / "log.json", [sample(messages=messages, attachments={"img": "data:image/png;base64,AAAA"})]))
    traj = items[0].trajectory
    assert [t.query for t in traj.turns] == ["What is 2+2?", "Sure?"]
    assert [t.final_answer for t in traj.turns] == ["The answer is 4.", "Yes, 4."]
    assert traj.turns[0].agent_messages == ["The answer is 4."] and traj.metadata["system"] == "Be brief."
    assert items[0].warnings == []


def test_calls_parse_errors_server_tools_and_payloads(tmp_path):
    messages = [
        {"role": "user", "content": "Find it."},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Searching."},
                {"type": "tool_use", "tool_type": "web_search", "id": "ws1", "name": "web_search", "arguments": '{"query": "it"}', "result": "found it"},
            ],
            "tool_calls": [
                {"id": "c1", "function": "search", "arguments": {"q": "it"}},
                {"id": "c2", "function": "search", "arguments": {}, "parse_error": "Expecting value: line 1 column 1"},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "function": "search", "content": '{"hits": 3}'},
        {"role": "user", "content": [{"type": "image", "image": "x"}], "tool_call_id": ["c1"]},
        {"role": "tool", "tool_call_id": "c2", "function": "search", "content": "", "tool_error": "bad arguments"},
        {"role": "assistant", "content": "It is found."},
    ]
    _, items = read(write_json(tmp_path / "log.json", [sample(messages=messages)]))
    traj = items[0].trajectory
    assert len(traj.turns) == 1  # a user message carrying a tool's payload starts no turn
    web, c1, c2 = traj.steps
    assert (web.name, web.arguments, web.result, web.status) == ("web_search", {"query": "it"}, "found it", "ok")
    assert (c1.status, c1.result) == ("ok", {"hits": 3})
    assert c2.status == "error" and c2.error.startswith("unparseable arguments: Expecting value")
    assert traj.metadata["tool_payloads"] == [{"tool_call_id": ["c1"], "text": None, "at": "samples[0].messages[3]"}]
    assert traj.final_answer == "It is found." and traj.turns[0].agent_messages == ["Searching.", "It is found."]


def test_the_answer_is_what_scorers_read(tmp_path):
    """A react agent's submit call is removed from its messages; the answer is in output.completion."""
    messages = [
        {"role": "user", "content": "What is 6 x 7?"},
        {"role": "assistant", "content": "Let me compute.", "tool_calls": [{"id": "c1", "function": "python", "arguments": {"code": "print(6*7)"}}]},
        {"role": "tool", "tool_call_id": "c1", "function": "python", "content": "42"},
        {"role": "assistant", "content": [{"type": "text", "text": "Done."}, {"type": "text", "text": ""}]},
    ]
    output = {"model": "m", "choices": [], "completion": "Done.\n\n42"}
    _, items = read(write_json(tmp_path / "log.json", [sample(messages=messages, output=output, target="42")]))
    traj = items[0].trajectory
    assert traj.final_answer == "Done.\n\n42" and [m.strip() for m in traj.turns[-1].agent_messages] == ["Let me compute.", "Done.", "Done.\n\n42"]
    plain = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]
    _, items = read(write_json(tmp_path / "plain.json", [sample(messages=plain, output={"completion": "Hello"})]))
    assert items[0].trajectory.turns[0].agent_messages == ["Hello"]  # the usual case: not said twice


def _with_sample_fields(tmp_path: Path, name: str, **fields: Any) -> Path:
    """The shared v3 log (inspect_ai_log_message_deduplication.eval, see its SOURCE.md) with fields
    set on its one sample, every other member copied as it is: Inspect's sample ``error``
    (``EvalError``) and ``limit`` (``EvalSampleLimit``), which no shared log shows."""
    source = shared("inspect_ai_log_message_deduplication.eval")
    path = tmp_path / name
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename == "samples/0_epoch_1.json":
                data = json.dumps({**json.loads(data), **fields}).encode()
            dst.writestr(info.filename, data)
    return path


def test_a_sample_that_hit_a_limit_or_an_error_ended_early(tmp_path):
    _, [item] = read(_with_sample_fields(tmp_path, "limit.eval", limit={"type": "message", "limit": 12}))
    traj = item.trajectory
    assert (traj.ended_early.kind, traj.ended_early.reason) == ("limit", "Inspect: the sample hit its message limit (12)")
    assert traj.metadata["limit"] == {"type": "message", "limit": 12}  # kept where it was
    error = {"message": "RuntimeError('sandbox gone')\nmore", "traceback": "Traceback ...", "traceback_ansi": "Traceback ..."}
    _, [item] = read(_with_sample_fields(tmp_path, "error.eval", error=error, limit={"type": "time", "limit": 60.0}))
    ended = item.trajectory.ended_early
    assert (
        ended.kind == "error" and ended.reason == "Inspect: the sample stopped with an error: RuntimeError('sandbox gone'); the sample hit its time limit (60)"
    )
    assert item.trajectory.metadata["error"] == error
    _, [item] = read(_with_sample_fields(tmp_path, "retried.eval", error_retries=[error]))  # an earlier attempt failed; this one completed
    assert item.trajectory.ended_early is None
    _, [item] = read(shared("inspect_ai_log_message_deduplication.eval"))
    assert item.trajectory.ended_early is None


def test_a_limited_sample_fails_for_its_limit(tmp_path):
    from typer.testing import CliRunner

    from pipelines.cli import app

    path = _with_sample_fields(tmp_path, "limit.eval", limit={"type": "token", "limit": 5000})
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["grade", "--trajectories", str(path), "--out", str(out), "--offline"])
    assert result.exit_code == 0, result.output
    (row,) = map(json.loads, (out / "results.jsonl").read_text().splitlines())
    assert (row["verdict"], row["failure_stage"]) == ("fail", "answer_correctness")
    answer = next(c for c in row["turns"][0]["checks"] if c["check"] == "answer")
    assert answer["label"] == "missing" and answer["reason"].endswith("Inspect: the sample hit its token limit (5000)")


def test_limit_and_error_as_older_or_sparser_logs_write_them(tmp_path):
    samples = [sample(1, limit="message"), sample(2, error="boom"), sample(3, error={"message": ""}), sample(4, limit=None, error=None)]
    _, items = read(write_json(tmp_path / "log.json", samples))
    ended = [i.trajectory.ended_early for i in items]
    assert (ended[0].kind, ended[0].reason) == ("limit", "Inspect: the sample hit its message limit")
    assert (ended[1].kind, ended[1].reason) == ("error", "Inspect: the sample stopped with an error: boom")
    assert (ended[2].kind, ended[2].reason) == ("error", "Inspect: the sample stopped with an error: no message recorded")
    assert ended[3] is None


def test_missing_attachment_is_a_warning(tmp_path):
    messages = [{"role": "user", "content": "attachment://nope"}, {"role": "assistant", "content": "ok"}]
    _, items = read(write_json(tmp_path / "log.json", [sample(messages=messages, attachments={})]))
    (warning,) = items[0].warnings
    assert warning.kind == "missing_attachment" and "attachment://nope" in warning.message


def test_scores_become_labels(tmp_path):
    scores = {
        "match": {"value": "C", "answer": "4"},
        "partial": {"value": "P"},
        "reward": {"value": 0.5},
        "rubric": {"value": {"accuracy": 1, "style": 0}},
        "flag": {"value": True},
    }
    _, items = read(write_json(tmp_path / "log.json", [sample(scores=scores)]))
    labels = {label.source: label.passed for label in items[0].trajectory.external_labels}
    assert labels == {"inspect:match": True, "inspect:partial": False, "inspect:reward": False, "inspect:rubric": None, "inspect:flag": True}


def test_eval_archive_epochs_tools_from_model_events(tmp_path):
    events = [
        {
            "event": "model",
            "tools": [{"name": "search", "description": "attachment://d", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}],
        },
        {"event": "subtask", "events": [{"event": "model", "tools": [{"name": "calc", "description": "math"}]}]},
    ]
    samples = [sample(1, 1, events=events, attachments={"d": "Search the web."}), sample(1, 2), sample(2, 1)]
    tasks, items = read(write_eval(tmp_path / "log.eval", samples))
    assert sorted(tasks.tasks) == ["1", "2"] and not tasks.errors
    assert [(t.name, t.description) for t in tasks.tasks["1"].tools] == [("search", "Search the web."), ("calc", "math")]
    assert sorted(i.trajectory_id for i in items) == ["1:1", "1:2", "2:1"]
    assert all(i.source.file == str(tmp_path / "log.eval") for i in items)


def test_duplicate_sample_is_an_error(tmp_path):
    path = write_eval(tmp_path / "log.eval", [sample(1, 1)], extra={"samples/one_epoch_1.json": json.dumps(sample(1, 1)).encode()})
    _, items = read(path)
    assert [i.error.kind if i.error else None for i in items] == [None, "duplicate_id"]


def test_a_running_log_without_header_reads_its_journal(tmp_path):
    tasks, items = read(write_eval(tmp_path / "log.eval", [sample()], header=None))
    assert list(tasks.tasks) == ["1"] and items[0].trajectory.agent == "openai/gpt-x"
    assert [w.kind for w in tasks.warnings] == ["incomplete_log"]


def test_broken_members_are_rows_naming_the_member(tmp_path):
    extra = {"samples/2_epoch_1.json": b'{"id": 2, "epoch": 1, "messages": [', "samples/3_epoch_1/sample.json": b"{}"}
    _, items = read(write_eval(tmp_path / "log.eval", [sample()], extra=extra))
    errors = {i.error.field: i.error.kind for i in items if i.error is not None}
    assert errors == {"samples/2_epoch_1.json": "malformed_json", "samples/3_epoch_1/sample.json": "unsupported"}
    assert [i.trajectory_id for i in items if i.error is None] == ["1:1"]


def test_zip_bomb_and_oversize_members_are_too_large(tmp_path):
    bomb = sample(2, messages=[{"role": "user", "content": " " * 3_000_000}])
    tasks, items = read(write_eval(tmp_path / "log.eval", [sample(), bomb]), Limits(max_line_bytes=1_000_000))
    assert (tmp_path / "log.eval").stat().st_size < 100_000  # it compresses to almost nothing
    (error,) = [i.error for i in items if i.error is not None]
    assert error.kind == "too_large" and error.field == "samples/2_epoch_1.json" and "inflates" in error.message
    assert list(tasks.tasks) == ["1"]


def test_unsupported_compression_is_an_error_row(tmp_path):
    path = write_eval(tmp_path / "log.eval", [sample(), sample(2)])
    _set_compression(path, "samples/2_epoch_1.json", 9)  # Deflate64: zipfile cannot inflate it
    _, items = read(path)
    (error,) = [i.error for i in items if i.error is not None]
    assert error.kind == "unsupported" and error.field == "samples/2_epoch_1.json"
    assert "inspect log convert --to json" in error.message  # the way out


def _set_compression(path: Path, member: str, method: int) -> None:
    """Rewrite a member's compression method in the zip's central directory (what zipfile trusts)."""
    data = bytearray(path.read_bytes())
    name = member.encode()
    pos = data.find(b"PK\x01\x02")
    while pos != -1:
        name_len = struct.unpack_from("<H", data, pos + 28)[0]
        if bytes(data[pos + 46 : pos + 46 + name_len]) == name:
            struct.pack_into("<H", data, pos + 10, method)
            break
        pos = data.find(b"PK\x01\x02", pos + 4)
    path.write_bytes(bytes(data))


def test_not_a_zip_and_not_an_inspect_zip(tmp_path):
    bad = tmp_path / "log.eval"
    bad.write_bytes(b"PK\x03\x04 truncated")
    _, items = read(bad)
    assert items[0].error.kind == "malformed_archive"  # a zip by its first bytes, though it has no directory
    other = tmp_path / "other.zip"
    with zipfile.ZipFile(other, "w") as z:
        z.writestr("readme.txt", "hello")
    assert not BUNDLE.sniff(other.read_bytes()[:4096], None)
    assert BUNDLE.sniff(write_eval(tmp_path / "log2.eval", [sample()]).read_bytes()[:4096], None)


def test_json_log_without_samples_says_so(tmp_path):
    tasks, items = read(write_json(tmp_path / "log.json", None, status="error"))
    assert [i.error.kind for i in items] == ["no_samples"] and [w.kind for w in tasks.warnings] == ["incomplete_log"]
    _, items = read(write_json(tmp_path / "empty.json", []))
    assert [i.error.kind for i in items] == ["no_samples"]


def test_a_sample_whose_task_cannot_be_built(tmp_path):
    tasks, items = read(write_json(tmp_path / "log.json", [sample(target={"not": "a target"})]))
    (error,) = tasks.errors
    assert error.field == "samples[0].target" and error.line is not None
    from pipelines.ingest import check_task

    problem = check_task(items[0], tasks)
    assert problem is not None and "could not be read" in problem.message


def test_a_broken_sample_in_a_json_log_names_its_line(tmp_path):
    path = write_json(tmp_path / "log.json", [sample(), sample(2, messages=[{"role": "robot", "content": "x"}])])
    _, items = read(path)
    error = items[1].error
    assert error.field == "samples[1].messages[0].role" and error.line is not None
    assert path.read_text().splitlines()[error.line - 1].strip() == "{" and items[1].trajectory_id == "2:1"


def test_detection_through_read_trajectories(tmp_path):
    path = write_eval(tmp_path / "log.eval", [sample()])
    bundle = read_trajectories(path)
    assert bundle.tasks is not None and list(bundle.tasks.tasks) == ["1"]
    assert detect_trajectory_format(write_json(tmp_path / "log.json", [sample()])) == "inspect"


def test_judge_grade_takes_the_tasks_from_the_log(tmp_path):
    from typer.testing import CliRunner

    from pipelines.cli import app

    out = tmp_path / "run"
    log = shared("inspect_ai_log_message_deduplication.eval")
    result = CliRunner().invoke(app, ["grade", "--trajectories", str(log), "--out", str(out), "--offline"])
    assert result.exit_code == 0, result.output
    (row,) = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert (row["task_id"], row["trajectory_id"]) == ("0", "0:1")
    assert (row["verdict"], row["failure_stage"]) == ("fail", "answer_correctness")  # "done" is not 42.7; the scorer agrees (0.0)


def test_other_formats_that_mention_the_same_keys_are_not_bundles(write_jsonl):
    line = {
        "task_id": "t",
        "trajectory_id": "r",
        "steps": [],
        "final_answer": "4",
        "metadata": {"version": 2, "eval": "nightly", "info": {"num_trials": 1, "max_steps": 3, "user_info": {}}},
    }
    path = write_jsonl("native.jsonl", [line])
    assert detect_trajectory_format(path) == "native"


def test_tool_specs_do_not_replace_the_logs_own_definitions(tmp_path):
    from pipelines.ingest import load_tool_specs, with_tool_specs

    events = [{"event": "model", "tools": [{"name": "search", "description": "Search the web.", "parameters": {"type": "object", "properties": {}}}]}]
    tasks, _ = read(write_json(tmp_path / "log.json", [sample(events=events)]))
    specs = tmp_path / "specs.json"
    specs.write_text(json.dumps([{"name": "search", "description": "other", "side_effect": "write"}, {"name": "delete", "side_effect": "write"}]))
    task = with_tool_specs(tasks, load_tool_specs(specs)).tasks["1"]
    assert task.tool("search").description == "Search the web." and not task.is_write("search")  # a described tool: the log wins
    assert task.is_write("delete")  # a tool the log does not declare is added


def test_an_oversize_string_in_a_member_is_too_large_naming_its_path(tmp_path):
    wordy = sample(2, messages=[{"role": "user", "content": "y" * 5000}])
    _, items = read(write_eval(tmp_path / "log.eval", [sample(), wordy]), Limits(max_line_bytes=1_000_000, max_string_bytes=3000))
    (error,) = [i.error for i in items if i.error is not None]
    assert error.kind == "too_large" and "messages[0].content" in error.message


# ---- Zstandard members (current Inspect's default) ----------------------------------------------


def test_a_log_current_inspect_wrote_with_default_settings():
    """inspect_ai 0.3.285 writes every member zstd-compressed (fixtures/frameworks/inspect/ORIGIN.md)."""
    path = FRAMEWORKS / "inspect" / "scripted_add.eval"
    with zipfile.ZipFile(path) as z:
        assert {i.compress_type for i in z.infolist()} == {93}  # what Python 3.11's zipfile cannot inflate
    assert detect_trajectory_format(path) == "inspect"
    tasks, items = read(path)
    assert sorted(tasks.tasks) == ["add-1", "add-2", "add-3"] and not tasks.errors
    assert [t.name for t in tasks.tasks["add-1"].tools] == ["add"] and tasks.tasks["add-3"].turns[0].gold_answers == ["15"]
    assert all(i.error is None for i in items)
    by_id = {i.trajectory_id: i.trajectory for i in items}
    assert sorted(by_id) == ["add-1:1", "add-2:1", "add-3:1"]
    third = by_id["add-3:1"]
    assert [(s.name, s.arguments, s.result, s.status) for s in third.steps] == [("add", {"a": 7, "b": 8}, "15", "ok")]
    assert third.final_answer == "The sum is 16." and third.agent == "openai-api/loopback/scripted-agent"
    assert [(label.source, label.passed) for label in third.external_labels] == [("inspect:includes", False)]


def test_judge_grade_reads_it_as_it_comes(tmp_path):
    from typer.testing import CliRunner

    from pipelines.cli import app

    out = tmp_path / "run"
    log = FRAMEWORKS / "inspect" / "scripted_add.eval"
    result = CliRunner().invoke(app, ["grade", "--trajectories", str(log), "--out", str(out), "--offline"])
    assert result.exit_code == 0, result.output
    rows = {row["task_id"]: row for row in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    assert {k: (r["verdict"], r["failure_stage"]) for k, r in rows.items()} == {
        "add-1": ("pass", "none"),
        "add-2": ("pass", "none"),
        "add-3": ("fail", "answer_correctness"),
    }


def _zstd_zip(path: Path, members: dict[str, bytes], *, frames: int = 1, declared: dict[str, dict[str, int]] | None = None, params=None) -> Path:
    """A zip whose members are zstd-compressed (method 93), written byte by byte as APPNOTE lays
    it out; ``frames`` splits each member into that many zstd frames (Inspect frames every 200 MiB
    of input); ``declared`` overrides a member's recorded ``size`` / ``crc`` / ``flags``."""
    compressor = zstandard.ZstdCompressor(compression_params=params) if params is not None else zstandard.ZstdCompressor(level=3)
    local, central = bytearray(), bytearray()
    for name, raw in members.items():
        step = max(1, -(-len(raw) // frames))
        data = b"".join(compressor.compress(raw[i : i + step]) for i in range(0, len(raw), step))
        if params is not None:
            stream = compressor.compressobj()
            data = stream.compress(raw) + stream.flush()
        over = (declared or {}).get(name, {})
        size, crc, flags = over.get("size", len(raw)), over.get("crc", zlib.crc32(raw)), over.get("flags", 0)
        encoded = name.encode()
        offset = len(local)
        local += struct.pack("<4s2B4HL2L2H", b"PK\x03\x04", 63, 0, flags, 93, 0, 0x21, crc, len(data), size, len(encoded), 0) + encoded + data
        central += struct.pack("<4s4B4HL2L5H2L", b"PK\x01\x02", 63, 3, 63, 0, flags, 93, 0, 0x21, crc, len(data), size, len(encoded), 0, 0, 0, 0, 0, offset)
        central += encoded
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, len(members), len(members), len(central), len(local), 0)
    path.write_bytes(bytes(local + central + end))
    return path


def _zstd_log(path: Path, samples: list[dict[str, Any]], **kw: Any) -> Path:
    members = {"header.json": json.dumps(HEADER).encode()}
    members.update({f"samples/{s['id']}_epoch_{s['epoch']}.json": json.dumps(s, indent=2).encode() for s in samples})
    return _zstd_zip(path, members, **kw)


def test_zstd_members_in_several_frames_read_whole(tmp_path):
    long = sample(2, messages=[{"role": "user", "content": "x" * 50_000}, {"role": "assistant", "content": "4"}])
    path = _zstd_log(tmp_path / "log.eval", [sample(), long], frames=3)
    tasks, items = read(path)
    assert sorted(tasks.tasks) == ["1", "2"] and all(i.error is None for i in items)
    assert next(i for i in items if i.trajectory_id == "2:1").trajectory.turns[0].query == "x" * 50_000


def test_a_zstd_bomb_is_too_large_after_at_most_the_limit(tmp_path):
    bomb = sample(2, messages=[{"role": "user", "content": " " * 3_000_000}])
    member = "samples/2_epoch_1.json"
    path = _zstd_log(tmp_path / "log.eval", [sample(), bomb], declared={member: {"size": 1000}})  # it lies about its size
    assert path.stat().st_size < 20_000
    tasks, items = read(path, Limits(max_line_bytes=1_000_000))
    (error,) = [i.error for i in items if i.error is not None]
    assert error.kind == "too_large" and error.field == member and "its header said 1000" in error.message
    assert list(tasks.tasks) == ["1"]


@pytest.mark.parametrize(
    ("declared", "says"),
    [({"crc": 12345}, "bad CRC-32"), ({"size": 10}, "not the 10 its header says"), ({"flags": 1}, "encrypted")],
)
def test_a_zstd_member_that_does_not_check_out_is_an_error_row(tmp_path, declared, says):
    member = "samples/2_epoch_1.json"
    _, items = read(_zstd_log(tmp_path / "log.eval", [sample(), sample(2)], declared={member: declared}))
    (error,) = [i.error for i in items if i.error is not None]
    assert error.field == member and says in error.message
    assert error.kind == ("unsupported" if "flags" in declared else "malformed_archive")
    assert [i.trajectory_id for i in items if i.error is None] == ["1:1"]


def test_a_zstd_frame_asking_for_a_huge_window_is_refused(tmp_path):
    params = zstandard.ZstdCompressionParameters.from_level(3, window_log=29)  # 512 MiB of decoding memory
    _, items = read(_zstd_log(tmp_path / "log.eval", [sample()], params=params))
    errors = {i.error.field: i.error for i in items if i.error is not None}
    assert sorted(errors) == ["header.json", "samples/1_epoch_1.json"] and not [i for i in items if i.error is None]
    assert all(e.kind == "malformed_archive" and "too much memory" in e.message for e in errors.values())


def test_a_truncated_zstd_member_is_an_error_row(tmp_path):
    path = _zstd_log(tmp_path / "log.eval", [sample(), sample(2)])
    data = bytearray(path.read_bytes())
    member = b"samples/2_epoch_1.json"
    start = data.rfind(b"PK\x03\x04", 0, data.find(member))  # its local header
    size = struct.unpack_from("<L", data, start + 18)[0]
    body = start + 30 + len(member)
    data[body + size // 2 : body + size] = bytes(size - size // 2)  # the second half zeroed: a corrupt frame
    path.write_bytes(bytes(data))
    _, items = read(path)
    (error,) = [i.error for i in items if i.error is not None]
    assert error.kind == "malformed_archive" and error.field == member.decode()


# ---- nesting past the bound and cut archives: the real logs, altered here -------------------------


def _deepened(text: str, depth: int, marker: str = "DEEP") -> str:
    """``"DEEP"`` in ``text`` -> a list nested ``depth`` levels (written as text: json.dumps recurses)."""
    return text.replace(f'"{marker}"', "[" * depth + "1" + "]" * depth)


def _set(value: Any, path: tuple[Any, ...], leaf: Any) -> None:
    for key in path[:-1]:
        value = value[key]
    value[path[-1]] = leaf


# 400 levels: orjson and the recursive decoder read it, pydantic's writer did not (an internal error
# writing the drill-down); 3,000: past every recursive decoder (RecursionError while reading)
DEEP_CASES = [(("scores", "match"), 400, "scores.match[0][0][0][0]..."), (("epoch",), 3000, ""), (("messages", 0), 3000, "")]


@pytest.mark.parametrize(("where", "depth", "path"), DEEP_CASES, ids=["scores-400", "epoch-3000", "message-3000"])
def test_a_sample_nested_too_deep_in_a_json_log_is_its_own_row(tmp_path, where, depth, path):
    log = json.loads(shared("inspect_ai_log_formats.json").read_text())
    (good,) = log["samples"]
    deep = json.loads(json.dumps(good))
    _set(deep, where, "DEEP")
    log["samples"] = [deep, {**good, "epoch": 2}]
    file = tmp_path / "log.json"
    file.write_text(_deepened(json.dumps(log, indent=2), depth))
    tasks, items = read(file)
    error = items[0].error
    expected = f"samples[0].{path}" if path else "samples[0]"
    assert (error.kind, error.field) == ("too_deep", expected) and "nested deeper than 100 levels" in error.message
    assert file.read_text().splitlines()[error.line - 1].strip() == "{"  # the line the sample starts on
    assert items[1].error is None and items[1].trajectory_id == f"{good['id']}:2" and list(tasks.tasks) == [str(good["id"])]


@pytest.mark.parametrize(("where", "depth", "path"), DEEP_CASES[:2], ids=["scores-400", "epoch-3000"])
def test_a_sample_member_nested_too_deep_is_its_own_row(tmp_path, where, depth, path):
    source = zipfile.ZipFile(shared(METR))
    file = tmp_path / "log.eval"
    member = "samples/default_epoch_3.json"
    with zipfile.ZipFile(file, "w", compression=zipfile.ZIP_DEFLATED) as out:
        for info in source.infolist():
            data = source.read(info)
            if info.filename == member:
                value = json.loads(data)
                _set(value, ("scores", "score_metr_task", "value") if where[0] == "scores" else where, "DEEP")
                data = _deepened(json.dumps(value), depth).encode()
            out.writestr(info.filename, data)
    tasks, items = read(file)
    (error,) = [i.error for i in items if i.error is not None]
    assert error.kind == "too_deep" and "nested deeper than 100 levels" in error.message
    assert error.field == (f"{member}:scores.score_metr_task.value[0][0][0]..." if path else member)
    assert [i.trajectory_id for i in items if i.error is None] == ["default:2"] and list(tasks.tasks) == ["default"]


def test_judge_grade_reports_a_deep_sample_and_grades_the_others(tmp_path):
    """The whole run, where the 400-level value was an internal error (exit 1) writing the drill-down."""
    from typer.testing import CliRunner

    from pipelines.cli import app

    log = json.loads(shared("inspect_ai_log_formats.json").read_text())
    (good,) = log["samples"]
    log["samples"] = [{**good, "scores": {"match": "DEEP"}}, {**good, "epoch": 2}, {**good, "epoch": "DEEPER"}]
    file = tmp_path / "log.json"
    file.write_text(_deepened(_deepened(json.dumps(log, indent=2), 400), 3000, "DEEPER"))
    result = CliRunner().invoke(app, ["grade", "--trajectories", str(file), "--out", str(tmp_path / "run"), "--offline"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert [r["error"]["kind"] if r.get("error") else r["verdict"] != "error" for r in rows] == ["too_deep", True, "too_deep"]


@pytest.mark.parametrize(("name", "keep"), [("inspect_ai_log_message_deduplication.eval", 4000), (METR, 40000)])
def test_a_cut_archive_is_a_malformed_archive(tmp_path, name, keep):
    """A cut .eval has no central directory (written last): it was read as JSON, an encoding error."""
    cut = tmp_path / "cut.eval"
    cut.write_bytes(shared(name).read_bytes()[:keep])
    assert detect_trajectory_format(cut) == "inspect"
    _, items = read(cut)
    (item,) = items
    assert item.error.kind == "malformed_archive" and item.error.file == str(cut) and "truncated or damaged" in item.error.message


def test_error_rows_of_an_archive_have_ids_of_their_own(tmp_path):
    """The samples of an .eval archive have no line: the rows of unreadable sample members all had
    the default id "log:None". Each has its own now ("log:None", "log:None:2"); the readable
    samples keep their "<id>:<epoch>"."""
    extra = {"samples/a_epoch_1.json": b"{not json", "samples/b_epoch_1.json": b"[1, 2"}
    _, items = read(write_eval(tmp_path / "log.eval", [sample(1), sample(2)], extra=extra))
    assert sorted((i.trajectory_id, i.error.kind if i.error else None) for i in items) == [
        ("1:1", None),
        ("2:1", None),
        ("log:None", "malformed_json"),
        ("log:None:2", "malformed_json"),
    ]
