"""``TurnBuilder.build`` validates steps and trajectory in one pass; against the old step-by-step
build (kept verbatim): the same trajectory, or the same error (kind, message, field), on generated
OpenAI transcripts whose tool messages carry valid and invalid statuses, calls without results,
unparseable arguments and bad ids."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judge import Step, Trajectory
from pipelines.ingest._base import ItemContext, ItemError, validation_error
from pipelines.ingest._chat import TurnBuilder
from pipelines.ingest._openai import _convert


def _old_build(self: TurnBuilder, item: dict[str, Any], ctx: ItemContext, usage: dict[str, Any] | None, extra_metadata: dict[str, Any]) -> Trajectory:
    """``TurnBuilder.build`` before the one-pass validation (verbatim)."""
    from pydantic import ValidationError

    if "task_id" not in item:
        raise ItemError("invalid_field", "Field required: the id of the task this transcript attempts", "task_id")
    turns = []
    for turn in self.turns:
        steps = []
        for step in turn["steps"]:
            status_path = step.pop("_status_path", None)
            if "result" not in step and step.get("status") != "error":
                step["status"] = "unknown"
            try:
                steps.append(Step.model_validate(step))
            except ValidationError as err:
                raise validation_error(err, prefix=status_path or "", note="tool result status", strip=99 if status_path else 0) from None
        turns.append({**turn, "steps": steps})
    if self.orphans:
        extra_metadata = {**extra_metadata, "orphan_results": self.orphans}
    data: dict[str, Any] = {
        "task_id": item.get("task_id"),
        "trajectory_id": item.get("trajectory_id", ctx.default_trajectory_id),
        "agent": item.get("agent"),
        "turns": turns,
        "token_usage": usage,
        "metadata": extra_metadata,
    }
    try:
        return Trajectory.model_validate(data)
    except ValidationError as err:
        raise validation_error(err, note="converted trajectory is invalid") from None


@st.composite
def _transcript(draw: st.DrawFn) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "hi"}]
    for k in range(draw(st.integers(0, 4))):
        args = draw(st.sampled_from(['{"id": 1}', "{not json", "[1]", "", '{"a": [1, {"b": null}]}']))
        messages.append(
            {"role": "assistant", "content": None, "tool_calls": [{"id": f"c{k}", "type": "function", "function": {"name": "f", "arguments": args}}]}
        )
        if draw(st.booleans()):
            tool: dict[str, Any] = {
                "role": "tool",
                "tool_call_id": f"c{k}",
                "content": draw(st.sampled_from(['{"ok": true}', "Error: boom", "plain", "[1, 2]"])),
            }
            if draw(st.integers(0, 2)) == 0:
                tool["status"] = draw(st.sampled_from(["ok", "error", "success", "failed", "bogus", 3, None]))
            messages.append(tool)
        if draw(st.integers(0, 3)) == 0:
            messages.append({"role": "user", "content": "more"})
    messages.append({"role": "assistant", "content": "done"})
    item: dict[str, Any] = {"task_id": draw(st.sampled_from(["t", 7, None, ""])), "messages": messages}
    if draw(st.booleans()):
        item["trajectory_id"] = draw(st.sampled_from(["r", 3, [1]]))
    if draw(st.integers(0, 4)) == 0:
        item["usage"] = draw(st.sampled_from([{"prompt_tokens": 3, "completion_tokens": 1}, {"prompt_tokens": -1}]))
    return item


def _outcome(item: dict[str, Any]) -> tuple[str, Any]:
    try:
        return ("trajectory", _convert(json.loads(json.dumps(item)), ItemContext("x.jsonl", 1, "x:1")).model_dump(mode="json"))
    except ItemError as err:
        return ("error", (err.kind, err.message, err.field))


@given(_transcript())
@settings(max_examples=400, deadline=None)
def test_one_pass_build_gives_what_the_step_by_step_build_gave(item):
    new = _outcome(item)
    saved = TurnBuilder.build
    TurnBuilder.build = _old_build  # type: ignore[method-assign]
    try:
        old = _outcome(item)
    finally:
        TurnBuilder.build = saved  # type: ignore[method-assign]
    assert new == old


def test_a_bad_status_is_still_named_by_its_field():
    item = {
        "task_id": "t",
        "messages": [
            {"role": "assistant", "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "a", "content": "x", "status": "bogus"},
        ],
    }
    with pytest.raises(ItemError) as caught:
        _convert(item, ItemContext("x.jsonl", 1, "x:1"))
    assert caught.value.field == "messages[1].status" and "tool result status" in caught.value.message
