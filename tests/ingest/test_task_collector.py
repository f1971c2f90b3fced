"""Task loading shares tool specs across task lines without changing what a task means."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

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


def _task_sets_alike(a, b) -> bool:
    def shape(ts):
        return (
            {tid: ts.tasks[tid].model_dump(mode="json") for tid in ts.tasks},
            [e.model_dump() for e in ts.errors],
            [w.model_dump() for w in ts.warnings],
            {k: v.model_dump() for k, v in ts.ambiguous.items()},
            {k: v.model_dump() for k, v in ts.invalid.items()},
        )

    return shape(a) == shape(b)


_BAD = {"name": "", "parameters": {}}  # fails validation: its line is an error, its specs never remembered
_ODD = {"name": "odd", "parameters": {"type": "object"}, "colour": "red"}  # an unknown field: a warning on every line


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c", "bad", "odd"]), st.integers(0, 3), st.booleans()), min_size=1, max_size=12))
def test_specs_found_by_identity_are_the_specs_looked_up(tmp_path_factory, plan):
    """``prepare(unchanged=True)`` (a reader's shared tools list) against the old lookup of every
    spec: the same tasks, errors and warnings (file, line, field), whichever lists repeat, fail or
    carry unknown fields."""
    import orjson

    from pipelines.ingest._base import TaskCollector
    from pipelines.ingest._native import load_task_items
    from pipelines.ingest._reader import read_items

    lists = {"a": [TOOL, WRITE, *({"name": f"pad{i}", "description": "x" * 300} for i in range(2))], "b": [TOOL], "c": [TOOL, WRITE]}
    lists["bad"] = [TOOL, _BAD, {"name": "pad", "description": "x" * 600}]
    lists["odd"] = [TOOL, _ODD, {"name": "pad", "description": "x" * 600}]
    lines = []
    for n, (which, tid, typo) in enumerate(plan):
        item = _task(tid, lists[which], **({"colour": "blue"} if typo else {}))
        if n % 5 == 4:
            item["tools"] = "not a list"
        lines.append(orjson.dumps(item))
    path = tmp_path_factory.mktemp("t") / "tasks.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")

    class Old(TaskCollector):
        def prepare(self, item, *, unchanged=False):
            return super().prepare(item)

    new = load_task_items(read_items(path, shared=("tools",)), str(path), TaskCollector())
    old = load_task_items(read_items(path, shared=("tools",)), str(path), Old())
    assert _task_sets_alike(new, old)


def test_a_list_changed_between_calls_is_read_again():
    from pipelines.ingest._base import TaskCollector
    from pipelines.ingest._native import read_task_item

    collector = TaskCollector()
    tools = [TOOL]
    first, _ = read_task_item(_task(0, tools), collector)
    tools.append(WRITE)  # a caller's own list, changed in place
    second, _ = read_task_item(_task(1, tools), collector)
    assert [t.name for t in first.tools] == ["get_order"] and [t.name for t in second.tools] == ["get_order", "cancel"]
