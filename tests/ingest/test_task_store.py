"""The packed task store: equal tasks back, the very shared tool specs, and which tasks stay live."""

from __future__ import annotations

import pickle

from judge import Task, ToolSpec
from pipelines.ingest._store import TaskStore, pack_task

TOOLS = [
    ToolSpec(name="get_order", parameters={"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}),
    ToolSpec(name="cancel_order", side_effect="write"),
]


def task(i: int, tools: list[ToolSpec] = TOOLS) -> Task:
    return Task.model_validate(
        {
            "task_id": f"t{i}",
            "question": f"cancel order {i}",
            "tools": tools,
            "reference_calls": [{"name": "get_order", "arguments": {"order_id": f"#{i}"}}, {"name": "cancel_order", "arguments": {"order_id": f"#{i}"}}],
            "gold_answer": f"order {i} cancelled",
            "metadata": {"domain": "retail", "tags": {"n": i}},
        }
    )


def test_unpacked_tasks_are_equal_and_hold_the_shared_tool_objects():
    store = TaskStore(live=1, pack_from=0)
    originals = [task(i) for i in range(5)]
    for t in originals:
        store[t.task_id] = t
    for t in originals:
        back = store.unpack(store._packed[t.task_id])
        assert back == t and back is not t
        assert all(a is b for a, b in zip(back.tools, TOOLS, strict=True))
        assert back.tool("get_order") is TOOLS[0]  # the cached index is rebuilt from the shared specs
    assert len(store._tools) == len(TOOLS)  # each distinct tool kept once


def test_storing_keeps_the_first_tasks_live_and_never_evicts():
    store = TaskStore(live=2, pack_from=0)
    for i in range(5):
        store[f"t{i}"] = task(i)
    assert list(store._live) == ["t0", "t1"]  # the first ones, asked for first by trajectories in task order
    assert store["t0"] is store._live["t0"]  # live: no unpacking
    changed = task(0).model_copy(update={"question": "changed"})
    store["t0"] = changed  # storing again under a live id replaces the live copy too
    assert store["t0"] is changed
    assert store["t4"] == task(4)  # asked for: unpacked, kept live, the least recently used evicted
    assert list(store._live) == ["t0", "t4"]


def test_tasks_packed_elsewhere_by_tool_key_and_a_tool_without_a_key():
    store = TaskStore()
    spare = ToolSpec(name="refund")
    t = task(1, [*TOOLS, spare])
    keys = {id(tool): f"key-{tool.name}".encode() for tool in TOOLS}  # the spare has no key: it travels inline
    zdict = store.prime(t, keys)
    for tool in TOOLS:
        store.register_key(keys[id(tool)], tool)
    store.put_packed("t1", pack_task(t, keys, zdict))
    back = store["t1"]
    assert back == t
    assert back.tools[0] is TOOLS[0] and back.tools[1] is TOOLS[1] and back.tools[2] == spare


def test_a_store_travels_to_a_worker_without_its_live_cache():
    store = TaskStore(live=4)
    for i in range(3):
        store[f"t{i}"] = task(i)
    copy = pickle.loads(pickle.dumps(store))
    assert not copy._live and list(copy) == ["t0", "t1", "t2"]
    assert [copy[f"t{i}"] for i in range(3)] == [task(i) for i in range(3)]


def test_below_pack_from_tasks_stay_as_stored_and_all_are_packed_when_it_is_reached():
    store = TaskStore(live=2, pack_from=4)
    originals = [task(i) for i in range(3)]
    for t in originals:
        store[t.task_id] = t
    assert all(store[t.task_id] is t for t in originals)  # nothing packed: the very objects
    assert set(store._packed.values()) == {None} and not store._tools
    store["t3"] = task(3)  # the fourth: every task is packed now, the first two stay live
    assert all(isinstance(v, bytes) for v in store._packed.values()) and not store._unpacked
    assert list(store._live) == ["t0", "t1"] and list(store) == ["t0", "t1", "t2", "t3"]
    assert store["t2"] == originals[2] and store["t2"] is not originals[2]
    store["t4"] = task(4)  # after that, packed as it is stored
    assert isinstance(store._packed["t4"], bytes) and store["t4"] == task(4)
    del store["t0"]
    assert "t0" not in store and len(store) == 4


def test_a_store_below_pack_from_travels_packed():
    store = TaskStore(live=1)
    for i in range(3):
        store[f"t{i}"] = task(i)
    copy = pickle.loads(pickle.dumps(store))
    assert all(isinstance(v, bytes) for v in copy._packed.values())
    assert [copy[f"t{i}"] for i in range(3)] == [task(i) for i in range(3)]
