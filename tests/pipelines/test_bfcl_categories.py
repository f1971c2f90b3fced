"""BFCL's categories beyond the Python AST ones, graded as BFCL grades them, and a whole result folder
graded in one command.

- irrelevance / live_irrelevance: pass when the model made no valid call; live_relevance: when it
  made at least one (BFCL's ``relevance_file_runner``: a result "contains a call" when it decodes and
  is not empty; a call that cannot be read fails the whole decode). Graded from the questions alone.
- simple_java / simple_javascript: arguments are source text read by the declared type.
- ``judge grade --trajectories result/<model>/ --tasks data/ --labels score/<model>/``: every category.

Real data: ``tests/fixtures/formats/bfcl_v4_glyphh/`` (see its SOURCE.md: BFCL v4 results and score
files of glyphh-ada-1.1) and the shared v3 sample (with a multi-turn category and its score file).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipelines.cli import EXIT_INPUT_ERROR, app
from pipelines.config import GradingConfig
from pipelines.grade import grade_case
from pipelines.ingest import UsageError, convert_trajectory, load_tasks
from pipelines.ingest._bfcl import build_task

ROOT = Path(__file__).resolve().parents[2]
GLYPHH = ROOT / "tests" / "fixtures" / "formats" / "bfcl_v4_glyphh"
SHARED = ROOT.parent / "shared" / "data" / "external" / "formats" / "bfcl"
V3 = SHARED / "v3_Salesforce_Llama-xLAM-2-8b-fc-r"
needs_shared = pytest.mark.skipif(not V3.is_dir(), reason="the shared samples (../shared) are not checked out")

FUNCTION = {
    "name": "determine_body_mass_index",
    "description": "Calculate body mass index given weight and height.",
    "parameters": {"type": "dict", "properties": {"weight": {"type": "float"}, "height": {"type": "float"}}, "required": ["weight", "height"]},
}


def _question(uid: str) -> dict:
    return {"id": uid, "question": [[{"role": "user", "content": "Calculate the area of a triangle with base 10 and height 5."}]], "function": [FUNCTION]}


def _grade(uid: str, result):
    task = build_task(_question(uid), None)
    loaded = convert_trajectory({"id": uid, "result": result}, "bfcl")
    assert loaded.error is None and loaded.trajectory is not None
    return grade_case(task, loaded.trajectory, GradingConfig()).result()


NO_CALL = "I cannot compute a triangle's area with these tools."
A_CALL = [{"determine_body_mass_index": '{"weight": 70, "height": 1.8}'}]
EMPTY_ARGUMENTS = [{"determine_body_mass_index": "{}"}]  # decodes to a call: BFCL counts it
UNREADABLE = [{"determine_body_mass_index": "{weight: 70"}, {"determine_body_mass_index": '{"weight": 70, "height": 1.8}'}]


@pytest.mark.parametrize(
    ("uid", "result", "verdict"),
    [
        ("irrelevance_0", NO_CALL, "pass"),
        ("irrelevance_0", [], "pass"),
        ("irrelevance_0", A_CALL, "fail"),
        ("irrelevance_0", EMPTY_ARGUMENTS, "fail"),
        ("irrelevance_0", UNREADABLE, "pass"),  # BFCL's decoder fails on the whole result: no call
        ("live_irrelevance_3-0-0", A_CALL, "fail"),
        ("live_relevance_0-0-0", A_CALL, "pass"),
        ("live_relevance_0-0-0", EMPTY_ARGUMENTS, "pass"),  # which call, with which arguments, is not checked
        ("live_relevance_0-0-0", NO_CALL, "fail"),
        ("live_relevance_0-0-0", UNREADABLE, "fail"),
    ],
)
def test_relevance_categories_follow_bfcls_rule(uid, result, verdict):
    graded = _grade(uid, result)
    assert graded.verdict == verdict
    if verdict == "fail":
        assert graded.failure_stage == "tool_selection"


def test_relevance_questions_need_no_possible_answer_and_the_others_do(tmp_path):
    questions = tmp_path / "BFCL_v4_irrelevance.json"
    questions.write_text(json.dumps(_question("irrelevance_0")) + "\n")
    tasks = load_tasks(questions)  # no reference file: BFCL has none for these categories
    (task,) = tasks.tasks.values()
    assert task.extra_calls == "forbid" and task.turns[0].reference_calls == [] and task.metadata.tags["bfcl_rule"] == "irrelevance"
    simple = tmp_path / "BFCL_v4_simple_python.json"
    simple.write_text(json.dumps(_question("simple_python_0")) + "\n")
    with pytest.raises(UsageError, match="possible-answer file"):
        load_tasks(simple)


def test_java_and_javascript_parameters_are_typed_literals_of_their_language():
    tasks = load_tasks(GLYPHH / "data" / "BFCL_v4_simple_java.json", reference=GLYPHH / "data" / "possible_answer" / "BFCL_v4_simple_java.json")
    assert not tasks.errors and len(tasks.tasks) == 62
    params = tasks.tasks["simple_java_1"].tools[0].parameters["properties"]
    assert params["params"] == params["params"] | {"type": "string", "x-bfcl-type": "HashMap", "x-bfcl-language": "java"}
    js = load_tasks(GLYPHH / "data" / "BFCL_v4_simple_javascript.json", reference=GLYPHH / "data" / "possible_answer" / "BFCL_v4_simple_javascript.json")
    assert not js.errors and len(js.tasks) == 50


def test_a_java_type_bfcl_cannot_read_is_an_error_naming_the_field(tmp_path):
    question = _question("simple_java_900") | {
        "function": [{"name": "f", "description": "", "parameters": {"type": "dict", "properties": {"s": {"type": "Set"}}}}]
    }
    answer = {"id": "simple_java_900", "ground_truth": [{"f": {"s": ["x"]}}]}
    (tmp_path / "q.json").write_text(json.dumps(question) + "\n")
    (tmp_path / "a.json").write_text(json.dumps(answer) + "\n")
    tasks = load_tasks(tmp_path / "q.json", reference=tmp_path / "a.json")
    (error,) = tasks.errors
    assert error.kind == "unsupported" and error.field == "function[0].parameters.properties.s.type" and "'Set'" in error.message


def _grade_folder(tmp_path: Path, *args: str):
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["grade", *args, "--out", str(out), "--workers", "1"])
    return result, out


def test_a_result_folder_is_graded_category_by_category_and_agrees_with_bfcls_score_files(tmp_path):
    model = "glyphh-ada-1.1"
    result, out = _grade_folder(
        tmp_path, "--trajectories", str(GLYPHH / "result" / model), "--tasks", str(GLYPHH / "data"), "--labels", str(GLYPHH / "score" / model)
    )
    assert result.exit_code == 0, result.output
    row = json.loads((out / "bfcl.json").read_text())
    by_name = {c["name"]: c for c in row["categories"]}
    assert list(by_name) == ["BFCL_v4_irrelevance", "BFCL_v4_simple_java", "BFCL_v4_simple_javascript"]
    for name, entries in [("BFCL_v4_irrelevance", 30), ("BFCL_v4_simple_java", 62), ("BFCL_v4_simple_javascript", 50)]:
        cat = by_name[name]
        assert (cat["entries"], cat["errors"], cat["both_decided"], cat["agreeing"]) == (entries, 0, entries, entries), cat
        assert (out / name / "results.jsonl").is_file()  # each category is a run of its own
    assert by_name["BFCL_v4_simple_javascript"]["bfcl_file_counts"] == "36/50"  # the score file's summary line, the whole category
    assert row["total"]["agreement"] == 1.0 and "| BFCL_v4_simple_java | 62 | 51 | 11 |" in (out / "bfcl.md").read_text()


@needs_shared
def test_the_shared_v3_folder_with_its_multi_turn_category(tmp_path):
    model = "Salesforce_Llama-xLAM-2-8b-fc-r"
    result, out = _grade_folder(tmp_path, "--trajectories", str(V3 / "result" / model), "--tasks", str(V3 / "data"), "--labels", str(V3 / "score" / model))
    assert result.exit_code == 0, result.output
    row = json.loads((out / "bfcl.json").read_text())
    assert [(c["name"], c["entries"], c["passed"], c["agreeing"]) for c in row["categories"]] == [
        ("BFCL_v3_multi_turn_base", 5, 3, 5),
        ("BFCL_v3_parallel", 30, 24, 30),
        ("BFCL_v3_simple", 30, 28, 30),
    ]


def test_a_category_without_its_question_file_is_a_row_saying_why(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    for name in ("BFCL_v4_simple_java.json",):
        (data / name).write_bytes((GLYPHH / "data" / name).read_bytes())
    (data / "possible_answer").mkdir()
    (data / "possible_answer" / "BFCL_v4_simple_java.json").write_bytes((GLYPHH / "data" / "possible_answer" / "BFCL_v4_simple_java.json").read_bytes())
    result, out = _grade_folder(tmp_path, "--trajectories", str(GLYPHH / "result"), "--tasks", str(data))
    assert result.exit_code == EXIT_INPUT_ERROR, result.output
    row = {c["name"]: c for c in json.loads((out / "bfcl.json").read_text())["categories"]}
    assert row["BFCL_v4_simple_java"]["entries"] == 62 and row["BFCL_v4_simple_java"]["problem"] is None
    assert "no question file" in row["BFCL_v4_irrelevance"]["problem"] and "not graded: BFCL_v4_irrelevance" in result.output


def test_a_folder_without_result_files_is_a_usage_error(tmp_path):
    result, _ = _grade_folder(tmp_path, "--trajectories", str(GLYPHH / "data"), "--tasks", str(GLYPHH / "data"))
    assert result.exit_code == 2 and "holds no BFCL result files" in result.output


def test_an_empty_result_file_is_a_row_saying_so_and_the_others_are_graded(tmp_path):
    """Its run is refused before it writes a folder, so the row points at the printed error, not at
    a folder that is not there."""
    import shutil

    results = tmp_path / "result"
    shutil.copytree(GLYPHH / "result", results)
    (empty,) = results.rglob("BFCL_v4_irrelevance_result.json")
    empty.write_bytes(b"")
    result, out = _grade_folder(tmp_path, "--trajectories", str(results), "--tasks", str(GLYPHH / "data"))
    assert result.exit_code == EXIT_INPUT_ERROR, result.output
    assert f"{empty} is empty: it holds no trajectories" in " ".join(result.output.split())
    row = {c["name"]: c for c in json.loads((out / "bfcl.json").read_text())["categories"]}
    assert row["BFCL_v4_irrelevance"]["problem"] == "the run stopped (exit code 2): its error is printed above"
    assert not (out / "BFCL_v4_irrelevance").exists() and row["BFCL_v4_simple_java"]["entries"] == 62
