"""``judge convert``: any trajectory input as native JSONL, graded as the input is.

Inputs: the format fixtures of ``tests/fixtures/formats/`` and ``tests/fixtures/frameworks/`` (their
origin in the ``*ORIGIN.md`` files beside them), and the real tau2 results in
``../shared/data/external/formats/tau2`` (see its SOURCE.md) where the shared samples are checked out.
"""

from __future__ import annotations

import gzip
import io
import os
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from pipelines.cli import app
from pipelines.ingest import UsageError
from pipelines.run import GradeOptions, NoTasks, run_grading
from pipelines.run.convert import ConvertOptions, convert_trajectories

ROOT = Path(__file__).resolve().parents[2]
FORMATS = ROOT / "tests" / "fixtures" / "formats"
FRAMEWORKS = ROOT / "tests" / "fixtures" / "frameworks"
TAU2 = ROOT.parent / "shared" / "data" / "external" / "formats" / "tau2" / "retail_gpt-4.1-mini_results.json"
runner = CliRunner()

# name: (trajectories, tasks, reference); tasks None: the file carries them
CASES: dict[str, tuple[Path, Path | None, Path | None]] = {
    "native": (FORMATS / "native_trajectories.jsonl", FORMATS / "native_tasks.jsonl", None),
    "native-array": (FORMATS / "native_trajectories_array.json", FORMATS / "native_tasks.jsonl", None),
    "openai": (FORMATS / "openai_trajectories.jsonl", FORMATS / "native_tasks.jsonl", None),
    "anthropic": (FORMATS / "anthropic_trajectories.jsonl", FORMATS / "native_tasks.jsonl", None),
    "vakra": (FORMATS / "vakra_predictions.jsonl", FORMATS / "vakra_input.jsonl", FORMATS / "vakra_ground_truth.jsonl"),
    "bfcl": (FORMATS / "bfcl_results.jsonl", FORMATS / "bfcl_questions.jsonl", FORMATS / "bfcl_possible_answers.jsonl"),
    "tau2-derived": (FORMATS / "tau2_airline_max_steps.json", None, None),
    "inspect": (FORMATS / "inspect_tool_call_errors.json", None, None),
    "inspect-eval": (FRAMEWORKS / "inspect" / "scripted_add.eval", None, None),
    "responses": (FRAMEWORKS / "agents_input_list.jsonl", FRAMEWORKS / "tasks.jsonl", None),
    "agents-trace": (FRAMEWORKS / "agents_trace.jsonl", FRAMEWORKS / "tasks.jsonl", None),
    "langchain": (FRAMEWORKS / "langchain_dumpd.jsonl", FRAMEWORKS / "tasks.jsonl", None),
    "pydantic-ai": (FRAMEWORKS / "pydantic_ai_messages.jsonl", FRAMEWORKS / "tasks.jsonl", None),
    "otel": (FRAMEWORKS / "otel_openai_v2" / "content_on.otlp.jsonl", FRAMEWORKS / "add_tasks.jsonl", None),
    "otel-no-content": (FRAMEWORKS / "otel_openai_v2" / "content_off.otlp.jsonl", FRAMEWORKS / "add_tasks.jsonl", None),
}


def _rows(run: Path) -> list[dict]:
    """The results, each without ``source`` (it names the file read)."""
    rows = [orjson.loads(line) for line in (run / "results.jsonl").read_bytes().splitlines()]
    for row in rows:
        row.pop("source", None)
    return rows


def _convert(tmp_path: Path, trajectories: Path, tasks: Path | None, reference: Path | None) -> tuple[Path, Path]:
    out, tasks_out = tmp_path / "trajectories.jsonl", tmp_path / "tasks.jsonl"
    with open(out, "wb") as sink, open(tasks_out, "wb") as tasks_sink:
        done = convert_trajectories(ConvertOptions(trajectories=trajectories, tasks=tasks, reference=reference), sink, tasks_sink)
    assert [e for e in done.errors if e.file == str(trajectories)] == []  # a task file's own errors (BFCL's fixture has one) are reported too
    assert done.trajectories == len(out.read_bytes().splitlines()) > 0
    assert done.tasks == len(tasks_out.read_bytes().splitlines()) > 0
    return out, tasks_out


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_converted_files_grade_as_the_input(tmp_path, name):
    """Grading what convert wrote (native trajectories and tasks) gives the input's results, row
    for row, ``source`` aside."""
    trajectories, tasks, reference = CASES[name]
    out, tasks_out = _convert(tmp_path, trajectories, tasks, reference)
    run_grading(GradeOptions(tasks=tasks, reference=reference, trajectories=trajectories, out=tmp_path / "input"))
    run_grading(GradeOptions(tasks=tasks_out, trajectories=out, out=tmp_path / "converted"))
    original = _rows(tmp_path / "input")
    assert any(row["verdict"] != "error" for row in original)  # graded rows, not only input errors
    assert _rows(tmp_path / "converted") == original
    assert {orjson.loads(line)["task_id"] for line in out.read_bytes().splitlines()} == {row["task_id"] for row in original}


@pytest.mark.skipif(not TAU2.exists(), reason="the shared samples (../shared) are not checked out")
def test_a_real_tau2_results_file_converts_with_its_tasks_and_labels(tmp_path):
    out, tasks_out = _convert(tmp_path, TAU2, None, None)
    lines = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    assert all(line["external_labels"] and line["external_labels"][0]["source"] == "tau2.reward" for line in lines)
    run_grading(GradeOptions(tasks=None, trajectories=TAU2, out=tmp_path / "input"))
    run_grading(GradeOptions(tasks=tasks_out, trajectories=out, out=tmp_path / "converted"))
    assert _rows(tmp_path / "converted") == _rows(tmp_path / "input")


def test_nothing_is_lost_an_unreadable_item_is_reported_with_its_line(tmp_path):
    good = (FORMATS / "openai_trajectories.jsonl").read_bytes().splitlines()
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_bytes(b"\n".join([good[0], b'{"task_id": "t1", "messages": 5}', b'{"not json', good[1]]) + b"\n")
    sink = io.BytesIO()
    seen = []
    done = convert_trajectories(ConvertOptions(trajectories=mixed, trajectory_format="openai"), sink, on_error=seen.append)
    assert done.trajectories == 2 and len(sink.getvalue().splitlines()) == 2
    assert (
        [(e.line, e.field, e.kind) for e in done.errors]
        == [(2, "messages", "invalid_field"), (3, None, "malformed_json")]
        == [(e.line, e.field, e.kind) for e in seen]
    )
    assert all(e.file == str(mixed) for e in done.errors)


def test_tasks_out_without_tasks_anywhere_is_refused_before_anything_is_written():
    sink = io.BytesIO()
    with pytest.raises(NoTasks, match="carries no tasks"):
        convert_trajectories(ConvertOptions(trajectories=FORMATS / "openai_trajectories.jsonl"), sink, io.BytesIO())
    assert sink.getvalue() == b""


@pytest.mark.parametrize("stdin", [False, True], ids=["file", "stdin"])
def test_an_empty_input_is_a_usage_error_that_writes_nothing(tmp_path, stdin):
    """Exit 2, as judge grade refuses the same input, not "0 trajectories written" and exit 0 (an
    empty file written over --out); exit 3 stays for items none of which could be read."""
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"\n\n")
    out = tmp_path / "out.jsonl"
    out.write_bytes(b"kept\n")
    args = ["convert", "--trajectories", "-" if stdin else str(empty), "--out", str(out)]
    result = runner.invoke(app, args, input=gzip.compress(b"") if stdin else None)
    assert result.exit_code == 2, result.output
    assert "error: --trajectories:" in result.output and "holds no trajectories" in result.output
    assert out.read_bytes() == b"kept\n" and sorted(p.name for p in tmp_path.iterdir()) == ["empty.jsonl", "out.jsonl"]
    sink = io.BytesIO()
    with pytest.raises(UsageError, match="is empty"):
        convert_trajectories(ConvertOptions(trajectories=empty, tasks=FORMATS / "native_tasks.jsonl"), sink, io.BytesIO())
    assert sink.getvalue() == b""


def test_cli_reads_compressed_standard_input_and_names_it_as_given(tmp_path):
    data = gzip.compress((FORMATS / "openai_trajectories.jsonl").read_bytes() + b'{"task_id": "t", "messages": 5}\n')
    result = runner.invoke(app, ["convert", "--trajectories", "-", "--out", str(tmp_path / "t.jsonl")], input=data)
    assert result.exit_code == 0, result.output
    assert "input error: -:3: field messages" in result.output  # the input as given, never its spool
    assert "2 trajectories written to" in result.output and "1 input items could not be read" in result.output
    assert len((tmp_path / "t.jsonl").read_bytes().splitlines()) == 2


def test_cli_exit_codes_and_no_half_written_file(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes((FORMATS / "openai_trajectories.jsonl").read_bytes().splitlines()[0] + b"\n{broken\n")
    out = tmp_path / "out.jsonl"
    failed = runner.invoke(app, ["convert", "--trajectories", str(bad), "--format", "openai", "--out", str(out), "--on-error", "fail"])
    assert failed.exit_code == 3 and "input error:" in failed.output and f"{bad}:2:" in failed.output
    assert not out.exists() and list(tmp_path.iterdir()) == [bad]  # no file, no temporary left behind
    skipped = runner.invoke(app, ["convert", "--trajectories", str(bad), "--format", "openai", "--out", str(out)])
    assert skipped.exit_code == 0 and len(out.read_bytes().splitlines()) == 1
    umask = os.umask(0)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~umask  # as open() makes files (the run's outputs too), not owner-only
    nothing = tmp_path / "nothing.jsonl"
    nothing.write_bytes(b"{broken\n")
    assert runner.invoke(app, ["convert", "--trajectories", str(nothing), "--format", "openai"]).exit_code == 3
    no_tasks = runner.invoke(app, ["convert", "--trajectories", str(bad), "--format", "openai", "--out", str(out), "--tasks-out", str(tmp_path / "k.jsonl")])
    assert no_tasks.exit_code == 2 and "carries no tasks" in no_tasks.output
    same = runner.invoke(app, ["convert", "--trajectories", str(bad), "--out", str(out), "--tasks-out", str(out)])
    assert same.exit_code == 2 and "must differ from --out" in same.output
    folder = runner.invoke(app, ["convert", "--trajectories", str(tmp_path)], env={"COLUMNS": "1000"})  # the message names the path: unwrapped
    assert folder.exit_code == 2 and "is a folder" in folder.output
    unknown = runner.invoke(app, ["convert", "--trajectories", str(bad), "--format", "nope"])
    assert unknown.exit_code == 2 and "unknown trajectory format" in unknown.output


def test_a_task_that_cannot_be_read_is_reported_not_written(tmp_path):
    """BFCL's fixture holds a question with no possible answer: an error naming the tasks file's
    line, and that task absent from the written tasks."""
    trajectories, tasks, reference = CASES["bfcl"]
    tasks_out = io.BytesIO()
    done = convert_trajectories(ConvertOptions(trajectories=trajectories, tasks=tasks, reference=reference), io.BytesIO(), tasks_out)
    (error,) = done.errors
    assert (error.file, error.line, error.kind) == (str(tasks), 6, "unknown_task") and "multi_turn_base_3" in error.message
    written = [orjson.loads(line)["task_id"] for line in tasks_out.getvalue().splitlines()]
    assert "multi_turn_base_3" not in written and done.tasks == len(written) > 0


def test_tool_specs_go_into_the_written_tasks_or_the_task_is_reported(tmp_path):
    """VAKRA's files carry no tool specs. Given for every tool a task calls, the written task holds
    them and grades as the input graded with the specs; given for some (the fixture's lack the
    table tools ``get_data``, ``filter_rows``, ``count_rows``), the task is valid in memory but not as a native task line (tools declared, so
    every reference call must name one): reported with its line, not written broken."""
    trajectories, tasks, reference = CASES["vakra"]
    partial = orjson.loads((FORMATS / "vakra_tool_specs.json").read_bytes())
    complete = tmp_path / "specs.json"
    missing = [
        {"name": name, "description": "A table operation.", "parameters": {"type": "object", "properties": {}}}
        for name in ("get_data", "filter_rows", "count_rows")
    ]
    complete.write_bytes(orjson.dumps([*partial, *missing]))
    out, tasks_out = tmp_path / "t.jsonl", tmp_path / "k.jsonl"
    with open(out, "wb") as sink, open(tasks_out, "wb") as tasks_sink:
        done = convert_trajectories(ConvertOptions(trajectories=trajectories, tasks=tasks, reference=reference, tool_specs=complete), sink, tasks_sink)
    assert done.errors == [] and all(orjson.loads(line)["tools"] for line in tasks_out.read_bytes().splitlines())
    run_grading(GradeOptions(tasks=tasks, reference=reference, trajectories=trajectories, tool_specs=complete, out=tmp_path / "input"))
    run_grading(GradeOptions(tasks=tasks_out, trajectories=out, out=tmp_path / "converted"))
    assert _rows(tmp_path / "converted") == _rows(tmp_path / "input")

    kept = io.BytesIO()
    done = convert_trajectories(
        ConvertOptions(trajectories=trajectories, tasks=tasks, reference=reference, tool_specs=FORMATS / "vakra_tool_specs.json"), io.BytesIO(), kept
    )
    (error,) = done.errors
    assert error.file == str(tasks) and error.line == 1 and "c1-olympics-0001" in error.message and "reference call to undeclared tool" in error.message
    assert "c1-olympics-0001" not in kept.getvalue().decode() and done.tasks == len(kept.getvalue().splitlines()) == 1
