"""Native tasks and trajectories, JSON Schemas of the native format, format detection."""

from __future__ import annotations

import json

import pytest

from judge import Task, Trajectory
from pipelines.ingest import (
    TASK_FORMATS,
    TRAJECTORY_FORMATS,
    UsageError,
    check_task,
    detect_task_format,
    detect_trajectory_format,
    export_json_schemas,
    iter_trajectories,
    load_tasks,
)
from pipelines.ingest._schemas import SCHEMA_FILES
from tests.ingest.conftest import FIXTURES

DOCS_SCHEMAS = FIXTURES.parents[2] / "docs" / "schemas"


def test_registry_names():
    assert TASK_FORMATS == ("native", "vakra", "bfcl")
    assert TRAJECTORY_FORMATS[:4] == ("native", "openai", "anthropic", "vakra")  # streaming formats, then bundles
    assert "bfcl" in TRAJECTORY_FORMATS and {"tau2", "inspect", "otel"} <= set(TRAJECTORY_FORMATS)


@pytest.mark.parametrize(
    ("name", "expected"),
    [("native_tasks.jsonl", "native"), ("vakra_input.jsonl", "vakra"), ("vakra_ground_truth.jsonl", "vakra"), ("bfcl_questions.jsonl", "bfcl")],
)
def test_detect_task_format(fixtures, name, expected):
    assert detect_task_format(fixtures / name) == expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("native_trajectories.jsonl", "native"),
        ("native_trajectories_array.json", "native"),
        ("openai_trajectories.jsonl", "openai"),
        ("anthropic_trajectories.jsonl", "anthropic"),
        ("vakra_predictions.jsonl", "vakra"),
    ],
)
def test_detect_trajectory_format(fixtures, name, expected):
    assert detect_trajectory_format(fixtures / name) == expected


def test_unknown_format_name_lists_known_ones(fixtures):
    with pytest.raises(ValueError, match="native, openai, anthropic, vakra"):
        list(iter_trajectories(fixtures / "native_trajectories.jsonl", fmt="csv-ish"))
    with pytest.raises(ValueError, match="native, vakra, bfcl"):
        load_tasks(fixtures / "native_tasks.jsonl", fmt="csv")


def test_undetectable_file(write_jsonl):
    path = write_jsonl("odd.jsonl", [{"foo": 1}, "not json", {"bar": 2}])
    with pytest.raises(ValueError, match=r"cannot detect the trajectory format .*keys \['foo'\]"):
        detect_trajectory_format(path)
    with pytest.raises(ValueError, match="cannot detect the task format"):
        load_tasks(path)
    with pytest.raises(UsageError, match=r"cannot detect the trajectory format .*keys \['foo'\] \(line 1\)") as caught:
        list(iter_trajectories(path))  # nothing in it could be graded: the run must not start
    assert caught.value.option == "--format" and "native" in caught.value.accepted
    assert "fmt=" not in str(caught.value)


def test_detection_skips_unreadable_first_items(write_jsonl):
    path = write_jsonl("t.jsonl", ["{broken", {"task_id": "a", "steps": [], "final_answer": "x"}])
    loaded = list(iter_trajectories(path))
    assert [x.source.line for x in loaded] == [1, 2]
    assert loaded[0].error.kind == "malformed_json"
    assert loaded[1].trajectory is not None


def test_native_tasks(fixtures):
    tasks = load_tasks(fixtures / "native_tasks.jsonl")
    assert tasks.errors == [] and tasks.ambiguous == {}
    assert list(tasks.tasks) == ["weather-1", "bank-7"]
    weather = tasks.tasks["weather-1"]
    assert weather.turns[0].gold_answers == ["18 °C"]
    assert weather.turns[0].reference_calls[0].argument_rules["unit"].optional
    assert weather.tools[0].name == "get_weather"  # OpenAI-wrapped tool spec unwrapped
    bank = tasks.tasks["bank-7"]
    assert [t.turn_id for t in bank.turns] == ["1", "2"]
    assert bank.turns[0].reference_calls[1].depends_on == ["bal"]
    assert bank.is_write("transfer") and bank.policy.max_calls == 6
    assert tasks.sources["bank-7"].line == 2 and tasks.sources["bank-7"].item == 1


def test_native_tasks_take_no_reference(fixtures):
    with pytest.raises(ValueError, match="no reference file"):
        load_tasks(fixtures / "native_tasks.jsonl", reference=fixtures / "native_tasks.jsonl")


def test_native_trajectories(fixtures):
    loaded = list(iter_trajectories(fixtures / "native_trajectories.jsonl"))
    assert [x.error for x in loaded] == [None, None]
    first, second = (x.trajectory for x in loaded)
    assert first.trajectory_id == "w-a" and first.token_usage.input_tokens == 210
    assert first.steps[0].latency_ms == 120
    # no trajectory_id: deterministic <file stem>:<line>
    assert second.trajectory_id == "native_trajectories:2" and loaded[1].trajectory_id == "native_trajectories:2"
    assert second.turns[0].steps[1].status == "error"  # "Error: ..." result inferred as a failed call
    tasks = load_tasks(fixtures / "native_tasks.jsonl")
    assert all(check_task(x, tasks) is None for x in loaded)


def test_schemas_in_docs_are_up_to_date(tmp_path):
    written = export_json_schemas(tmp_path)
    assert sorted(p.name for p in written) == sorted(SCHEMA_FILES)
    for path in written:
        committed = DOCS_SCHEMAS / path.name
        assert committed.exists(), "run: .venv/bin/python -m pipelines.ingest._schemas docs/schemas"
        assert committed.read_bytes() == path.read_bytes(), f"{committed} is stale; regenerate it"


def test_schema_export_is_deterministic_and_matches_models(tmp_path):
    first = [p.read_bytes() for p in export_json_schemas(tmp_path / "a")]
    second = [p.read_bytes() for p in export_json_schemas(tmp_path / "b")]
    assert first == second
    task_schema = json.loads((tmp_path / "a" / "task.schema.json").read_text())
    assert task_schema == json.loads(json.dumps(Task.model_json_schema()))
    assert json.loads((tmp_path / "a" / "trajectory.schema.json").read_text())["title"] == Trajectory.__name__


# -- unknown fields (issue 9): kept and warned about, errors only with --strict ------------------


def test_unknown_fields_are_kept_as_warnings_and_errors_only_when_strict(write_jsonl):
    from pipelines.ingest import load_tasks, read_trajectories

    tasks = write_jsonl("t.jsonl", [{"task_id": "t", "question": "q", "refrence_calls": [], "domain": "air", "gold_answer": "1"}])
    loaded = load_tasks(tasks)
    assert loaded.tasks["t"].metadata.tags == {"refrence_calls": [], "domain": "air"}
    messages = {w.field: w.message for w in loaded.warnings}
    assert "did you mean 'reference_calls'" in messages["refrence_calls"]
    assert "another level of the schema" in messages["domain"]  # metadata.domain is where it belongs
    strict = load_tasks(tasks, strict=True)
    assert "t" not in strict.tasks and "t" in strict.invalid and strict.errors[0].field == "refrence_calls"

    trajs = write_jsonl("j.jsonl", [{"task_id": "t", "reward": 1.0, "steps": [{"name": "f", "id": "c1", "result": 1}], "final_answer": "1"}])
    (item,) = read_trajectories(trajs).items
    assert item.error is None and item.trajectory.metadata["reward"] == 1.0
    assert [(w.kind, w.field, w.line) for w in item.warnings] == [("unknown_field", "reward", 1), ("unknown_field", "steps[0].id", 1)]
    (strict_item,) = read_trajectories(trajs, strict=True).items
    assert strict_item.trajectory is None and strict_item.error.field == "reward" and "and 1 more (--strict)" in strict_item.error.message


def test_loading_sets_the_loaded_tasks_aside_from_the_collector_and_hands_them_back():
    """Full collections during a large load would walk the task set again and again: every
    ``FREEZE_EVERY`` items what is loaded is frozen (``judge.core._heap``), and unfrozen after."""
    import gc

    from pipelines.ingest import TaskCollector
    from pipelines.ingest._native import FREEZE_EVERY, load_task_items
    from pipelines.ingest._reader import RawItem

    assert gc.get_freeze_count() == 0
    seen: list[int] = []

    def items():
        for i in range(2 * FREEZE_EVERY + 1):
            if i == 2 * FREEZE_EVERY:
                seen.append(gc.get_freeze_count())
            yield RawItem(line=i + 1, index=i, value={"task_id": f"t{i}", "question": "q?", "gold_answer": "a"})

    tasks = load_task_items(items(), "tasks.jsonl", TaskCollector())
    assert len(tasks.tasks) == 2 * FREEZE_EVERY + 1
    assert seen[0] > 0
    assert gc.get_freeze_count() == 0


# ---------------------------------------------------------------- a bad first item; several items on one line


NATIVE = [{"task_id": "t1", "trajectory_id": f"r{i}", "steps": [], "final_answer": "x"} for i in range(5)]


@pytest.mark.parametrize("first", [{k: v for k, v in NATIVE[0].items() if k != "task_id"}, {}])
def test_a_bad_first_item_is_its_own_error_row_when_later_items_name_the_format(write_jsonl, first):
    path = write_jsonl("t.jsonl", [first, *NATIVE[1:]])
    assert detect_trajectory_format(path) == "native"
    for fmt in (None, "native"):  # read as one stream (the reader detects), or with the format detected
        loaded = list(iter_trajectories(path, fmt=fmt))
        assert (loaded[0].error.kind, loaded[0].error.line, loaded[0].error.field) == ("invalid_field", 1, "task_id")
        assert [x.trajectory.trajectory_id for x in loaded[1:]] == ["r1", "r2", "r3", "r4"]


def test_detection_looks_past_a_bounded_number_of_objects_only(write_jsonl):
    from pipelines.ingest._api import DETECTION_ITEMS

    path = write_jsonl("t.jsonl", [{"what": i} for i in range(DETECTION_ITEMS)] + NATIVE)
    with pytest.raises(UsageError, match=r"cannot detect the trajectory format .*keys \['what'\]"):
        detect_trajectory_format(path)
    with pytest.raises(UsageError, match=r"keys \['what'\] \(line 1\)"):
        list(iter_trajectories(path))
    tasks = write_jsonl("tasks.jsonl", [{"what": i} for i in range(DETECTION_ITEMS)] + [{"task_id": "t1", "question": "q"}])
    with pytest.raises(UsageError, match="cannot detect the task format"):
        detect_task_format(tasks)


def test_a_bad_first_task_is_its_own_error_when_later_tasks_name_the_format(write_jsonl):
    path = write_jsonl("tasks.jsonl", [{}, {"task_id": "t1", "question": "q?", "gold_answer": "a"}])
    assert detect_task_format(path) == "native"
    tasks = load_tasks(path)
    assert list(tasks.tasks) == ["t1"]
    assert [(e.kind, e.line) for e in tasks.errors] == [("invalid_field", 1)]


def test_items_sharing_a_line_get_default_ids_of_their_own(fixtures, tmp_path):
    """A one-line JSON array: the default id is the line plus the item's place on it (the first
    keeps the plain line), so two trajectories of one task are not false duplicates."""
    a, b = (json.loads(line) for line in (fixtures / "openai_trajectories.jsonl").read_text().splitlines())
    for item in (a, b):
        item.pop("trajectory_id", None)
    path = tmp_path / "runs.json"
    path.write_text(json.dumps([a, dict(a), b]))
    loaded = list(iter_trajectories(path))
    assert [x.error for x in loaded] == [None, None, None]
    assert [x.trajectory_id for x in loaded] == ["runs:1", "runs:1:2", "runs:1:3"]
    path.write_text("[1, 2]\n3\n")
    assert [x.trajectory_id for x in iter_trajectories(path, fmt="native")] == ["runs:1", "runs:1:2", "runs:2"]
    lines = tmp_path / "runs.jsonl"  # one item a line: the ids are the lines, as always
    lines.write_text(json.dumps(a) + "\n" + json.dumps(b) + "\n")
    assert [x.trajectory_id for x in iter_trajectories(lines)] == ["runs:1", "runs:2"]
