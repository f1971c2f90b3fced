"""Anthropic Messages transcripts: ``{task_id, trajectory_id?, agent?, system?, usage?, messages}``.

- Assistant content blocks: ``text`` and ``tool_use {id, name, input}`` (each a step).
- User content blocks: ``tool_result {tool_use_id, content, is_error}`` give step results
  (content is a string or a list of text blocks; JSON text is parsed into structures).
  ``is_error: true`` marks the step failed; otherwise the ``Step`` model infers errors.
- A user message made only of tool results continues the turn; a user message with text starts a
  new turn (its tool results, if any, still belong to the calls of the previous turn).
- Final answer: text of the last assistant message of the turn that has no ``tool_use``.
- ``thinking`` / ``redacted_thinking`` / ``image`` / ``document`` blocks carry nothing we grade and
  are skipped; server-side tool blocks (``server_tool_use``, ``*_tool_result``) are ``unsupported``.
"""

from __future__ import annotations

from typing import Any

from judge import Trajectory, parse_json_text
from pipelines.ingest._base import ItemContext, ItemError, TrajectoryFormat, expect, short
from pipelines.ingest._chat import TurnBuilder, common_ids, extra_metadata, text_of, token_usage

_KNOWN = {"task_id", "trajectory_id", "agent", "system", "usage", "messages", "metadata"}
_SKIPPED = {"thinking", "redacted_thinking", "image", "document"}


def _sniff(item: dict[str, Any]) -> bool:
    messages = item.get("messages")
    if not isinstance(messages, list):
        return False
    if "system" in item:
        return True
    usage = item.get("usage")
    if isinstance(usage, dict) and ("input_tokens" in usage or "output_tokens" in usage):
        return True
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") in ("tool_use", "tool_result") for b in content):
            return True
    return False


def _blocks(content: Any, path: str) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    expect(content, list, path, "message content")
    for i, block in enumerate(content):
        expect(block, dict, f"{path}[{i}]", "a content block")
        kind = block.get("type")
        if not isinstance(kind, str):
            raise ItemError("invalid_field", "a content block needs a string 'type'", f"{path}[{i}].type")
        if kind not in ("text", "tool_use", "tool_result") and kind not in _SKIPPED:
            raise ItemError("unsupported", f"content block type {kind!r} is not supported", f"{path}[{i}].type")
    return content


def _result_value(content: Any, path: str) -> Any:
    if content is None or isinstance(content, str):
        return parse_json_text(content)
    expect(content, list, path, "tool_result content")
    texts = []
    for i, block in enumerate(content):
        expect(block, dict, f"{path}[{i}]", "a tool_result content block")
        if block.get("type") == "text":
            texts.append(expect(block.get("text"), str, f"{path}[{i}].text", "text"))
    if texts:
        return parse_json_text("\n".join(texts))
    return content or None  # only non-text blocks (images): keep them as they are


def _convert(item: dict[str, Any], ctx: ItemContext) -> Trajectory:
    messages = expect(item.get("messages"), list, "messages", "messages")
    if not messages:
        raise ItemError("invalid_field", "messages must not be empty", "messages")
    builder = TurnBuilder(ctx)
    for i, message in enumerate(messages):
        path = f"messages[{i}]"
        expect(message, dict, path, "a message")
        role = message.get("role")
        blocks = _blocks(message.get("content"), f"{path}.content")
        if role == "user":
            texts = []
            for j, block in enumerate(blocks):
                bpath = f"{path}.content[{j}]"
                if block["type"] == "tool_result":
                    call_id = expect(block.get("tool_use_id"), str, f"{bpath}.tool_use_id", "tool_use_id")
                    is_error = block.get("is_error")
                    if is_error is not None:
                        expect(is_error, bool, f"{bpath}.is_error", "is_error")
                    status = "error" if is_error else None
                    builder.add_result(call_id, _result_value(block.get("content"), f"{bpath}.content"), status, bpath, "tool_use_id")
                elif block["type"] == "text":
                    texts.append(expect(block.get("text"), str, f"{bpath}.text", "text"))
                elif block["type"] == "tool_use":
                    raise ItemError("invalid_field", "a user message cannot contain tool_use", f"{bpath}.type")
            if texts:
                builder.start("\n".join(texts))
        elif role == "assistant":
            builder.begin_message()
            texts = []
            has_tool_use = False
            for j, block in enumerate(blocks):
                bpath = f"{path}.content[{j}]"
                if block["type"] == "tool_use":
                    has_tool_use = True
                    name = block.get("name")
                    if not isinstance(name, str) or not name:
                        raise ItemError("invalid_field", f"tool_use needs a name, got {short(name)}", f"{bpath}.name")
                    call_id = expect(block.get("id"), str, f"{bpath}.id", "tool_use id")
                    arguments = block.get("input", {})
                    error = None
                    if not isinstance(arguments, dict):
                        arguments, error = {}, f"unparseable arguments: input is not an object: {short(block.get('input'), 200)}"
                    builder.add_call(name, arguments, call_id, bpath, error)
                elif block["type"] == "text":
                    texts.append(expect(block.get("text"), str, f"{bpath}.text", "text"))
                elif block["type"] == "tool_result":
                    raise ItemError("invalid_field", "an assistant message cannot contain tool_result", f"{bpath}.type")
            if texts:
                builder.say("\n".join(texts))
            if not has_tool_use and texts:
                builder.set_answer("\n".join(texts))
        else:
            raise ItemError("invalid_field", f"unknown role {role!r}; the Messages API has 'user' and 'assistant' (system is top-level)", f"{path}.role")
    meta = extra_metadata(item, _KNOWN)
    system = item.get("system")
    if system is not None:
        text = text_of(system, "system")
        if text:
            meta.setdefault("system", text)
    return builder.build(item, ctx, token_usage(item, (("input_tokens", "input_tokens"), ("output_tokens", "output_tokens"))), meta)


TRAJECTORIES = TrajectoryFormat(
    name="anthropic",
    description="Anthropic Messages transcript: {task_id, trajectory_id?, agent?, system?, usage?, messages}",
    sniff=_sniff,
    ids=common_ids,
    convert=_convert,
)
