"""``extra_fields`` skips children that can yield nothing; against the old walk (kept verbatim).

Generated tasks and trajectories carry unknown fields at random places (top level, turns,
reference calls and their argument rules and alternatives, tool specs, policy rules, metadata,
steps, token usage), and the walk must yield the same (path, value) pairs in the same order.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from judge import Task, Trajectory, extra_fields
from judge.core._extras import _model_fields_of, _path


def _old_extra_fields(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """``extra_fields`` before children that yield nothing were skipped (verbatim)."""
    stack: list[tuple[Any, Any]] = [(value, None)]
    while stack:
        node, link = stack.pop()
        if isinstance(node, BaseModel):
            names = _model_fields_of(type(node))
            if names:
                children = [(child, (link, name)) for name in names if isinstance(child := getattr(node, name, None), (BaseModel, list, dict))]
                stack.extend(reversed(children))
            extra = node.__pydantic_extra__
            if extra:
                for key, item in extra.items():
                    yield _path(path, (link, key)), item
        elif isinstance(node, list):
            stack.extend(reversed([(item, (link, i)) for i, item in enumerate(node) if isinstance(item, BaseModel)]))
        elif isinstance(node, dict):
            stack.extend(reversed([(item, (link, str(k))) for k, item in node.items() if isinstance(item, BaseModel)]))


_extra = st.dictionaries(st.sampled_from(["colour", "x", "reward", "id2", "nested"]), st.integers(0, 3) | st.just({"a": [1]}), max_size=2)


@st.composite
def _task(draw: st.DrawFn) -> Task:
    tools = [{"name": f"t{i}", "parameters": {"type": "object"}, **draw(_extra)} for i in range(draw(st.integers(0, 4)))]
    names = [t["name"] for t in tools] or ["free"]
    calls = [
        {
            "name": draw(st.sampled_from(names)) if tools else "free",
            "arguments": {"a": 1},
            "argument_rules": {"a": {"optional": True, **draw(_extra)}} if draw(st.booleans()) else {},
            "alternatives": [{"arguments": {"a": 2}, **draw(_extra)}] if draw(st.booleans()) else [],
            **draw(_extra),
        }
        for _ in range(draw(st.integers(0, 3)))
    ]
    turns = [{"turn_id": str(i), "query": "q", "reference_calls": calls, **draw(_extra)} for i in range(draw(st.integers(1, 2)))]
    item: dict[str, Any] = {"task_id": "t", "turns": turns, "tools": tools, "metadata": {"domain": "d", **draw(_extra)}, **draw(_extra)}
    if draw(st.booleans()):
        item["policy"] = {
            "text": "p",
            "forbidden_arguments": [{"argument": "a", **draw(_extra)}],
            "allowed_sources": [{"allowed": ["api"], **draw(_extra)}],
            **draw(_extra),
        }
    return Task.model_validate(item)


@st.composite
def _trajectory(draw: st.DrawFn) -> Trajectory:
    steps = [{"name": "f", "arguments": {}, "result": 1, **draw(_extra)} for _ in range(draw(st.integers(0, 3)))]
    turns = [{"turn_id": str(i), "steps": steps, "final_answer": "a", **draw(_extra)} for i in range(draw(st.integers(1, 2)))]
    usage = {"input_tokens": 1, **draw(_extra)} if draw(st.booleans()) else None
    return Trajectory.model_validate({"task_id": "t", "trajectory_id": "r", "turns": turns, "token_usage": usage, **draw(_extra)})


@given(st.lists(_task() | _trajectory(), min_size=1, max_size=4))
@settings(max_examples=300, deadline=None)
def test_the_walk_yields_what_the_old_walk_yielded(models):
    for model in models:  # several per example: the walk learns leaf classes as it meets them
        assert list(extra_fields(model)) == list(_old_extra_fields(model))
        assert list(extra_fields(model, "items[3]")) == list(_old_extra_fields(model, "items[3]"))


def test_an_unknown_field_of_a_shared_leaf_is_still_reported():
    task = Task.model_validate({"task_id": "t", "question": "q", "tools": [{"name": "a"}, {"name": "b", "colour": "red"}]})
    assert list(extra_fields(task)) == list(extra_fields(task)) == [("tools[1].colour", "red")]
