"""Task loading shares tool specs across task lines without changing what a task means."""

from __future__ import annotations

from judge import ToolSpec
from pipelines.ingest import load_tasks
from pipelines.ingest._base import ToolSpecs

TOOL = {"type": "function", "function": {"name": "get_order", "parameters": {"type": "object", "properties": {"id": {"type": "string"}}}}}
WRITE = {"name": "cancel", "side_effect": "write", "parameters": {"type": "object", "properties": {"id": {"type": "string"}}}}


def _task(i: int, tools: list, **extra) -> dict:
    return {"task_id": f"t{i}", "question": "q", "tools": tools, "reference_calls": [{"name": "get_order", "arguments": {"id": "1"}}], **extra}


def test_repeated_specs_become_one_object(write_jsonl):
    path = write_jsonl("tasks.jsonl", [_task(i, [TOOL, WRITE]) for i in range(5)])
    tasks = load_tasks(path).tasks
    assert len(tasks) == 5
    first = tasks["t0"].tools
    for task in tasks.values():
        assert [a is b for a, b in zip(task.tools, first)] == [True, True]
        assert task.tool("cancel") is first[1] and task.is_write("cancel")


def test_same_content_in_another_spelling_is_shared_too(write_jsonl):
    flat = {"name": "get_order", "parameters": {"properties": {"id": {"type": "string"}}, "type": "object"}}
    path = write_jsonl("tasks.jsonl", [_task(0, [TOOL]), _task(1, [flat])])
    tasks = load_tasks(path).tasks
    assert tasks["t0"].tools[0] is tasks["t1"].tools[0]


def test_a_raw_text_hit_is_confirmed_by_equality():
    # orjson writes NaN as null: the raw-text key alone would take one spec for the other
    specs = ToolSpecs()
    with_null = {"name": "f", "parameters": {"type": "object", "properties": {"x": {"default": None}}}}
    with_nan = {"name": "f", "parameters": {"type": "object", "properties": {"x": {"default": float("nan")}}}}
    specs.remember(with_null, ToolSpec.model_validate(with_null))
    assert specs.lookup(with_null) is not None
    assert specs.lookup(dict(with_null)) is not None
    assert specs.lookup(with_nan) is None
    assert specs.lookup({"name": "f", "parameters": {"huge": 2**70}}) is None  # no fast key: validated as usual


def test_a_bad_spec_after_good_copies_still_names_its_field(write_jsonl):
    bad = {"name": "", "parameters": {}}
    path = write_jsonl("tasks.jsonl", [_task(0, [TOOL]), _task(1, [TOOL, bad]), _task(2, [TOOL])])
    taskset = load_tasks(path)
    assert sorted(taskset.tasks) == ["t0", "t2"]
    [error] = taskset.errors
    assert (error.line, error.field) == (2, "tools[1].name")


def test_duplicate_ids_still_compare_whole_content(write_jsonl):
    same = _task(0, [TOOL])
    different = _task(0, [TOOL], gold_answer="x")
    path = write_jsonl("tasks.jsonl", [same, same, different])
    taskset = load_tasks(path)
    kinds = [(e.kind, e.line) for e in taskset.errors]
    assert kinds == [("duplicate_id", 2), ("duplicate_id", 3)]
    assert "identical content" in taskset.errors[0].message
    assert "different content" in taskset.errors[1].message
    assert "t0" in taskset.ambiguous and "t0" not in taskset.tasks
