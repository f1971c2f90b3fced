"""OpenAI Chat Completions transcripts: ``{task_id, trajectory_id?, agent?, usage?, messages}``.

- Each ``user`` message with content starts a new turn (turn ids "1", "2", ... in order).
- Assistant ``tool_calls`` become steps; ``tool`` messages (matched by ``tool_call_id``) give the
  results, JSON text parsed into structures. A ``status`` on the tool message wins; otherwise the
  ``Step`` model infers errors from the result.
- Arguments that are not a JSON object are the agent's error, not an input error: the step is
  recorded with ``arguments={}``, ``status="error"`` and ``error="unparseable arguments: ..."``.
- A tool call without a tool message keeps status ``unknown`` (made; outcome not recorded). Results
  pair with the most recent unanswered call of their id (see ``TurnBuilder``).
- The last assistant message without tool calls in a turn is the turn's final answer.
- ``system`` / ``developer`` messages go to ``metadata["system"]``; legacy ``function_call`` and
  ``function``-role messages are reported as ``unsupported``.
"""

from __future__ import annotations

from typing import Any

from judge import Trajectory, loads_json, parse_json_text
from pipelines.ingest._base import ItemContext, ItemError, TrajectoryFormat, expect, short
from pipelines.ingest._chat import TurnBuilder, common_ids, extra_metadata, text_of, token_usage

_KNOWN = {"task_id", "trajectory_id", "agent", "usage", "messages", "metadata"}
_ROLES = {"system", "developer", "user", "assistant", "tool"}


def _sniff(item: dict[str, Any]) -> bool:
    messages = item.get("messages")
    if not isinstance(messages, list) or "system" in item:
        return False
    usage = item.get("usage")
    if isinstance(usage, dict) and ("prompt_tokens" in usage or "completion_tokens" in usage):
        return True
    for message in messages:
        if not isinstance(message, dict):
            continue
        if message.get("role") in ("tool", "system", "developer") or "tool_calls" in message:
            return True
        content = message.get("content")
        if isinstance(content, list) and any(isinstance(p, dict) and p.get("type") in ("tool_use", "tool_result") for p in content):
            return False
    return True  # plain user/assistant text reads the same in both chat formats


def parse_arguments(raw: Any) -> tuple[dict[str, Any], str | None]:
    """(arguments, error): arguments that are not a JSON object are the agent's mistake."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}, None
    if isinstance(raw, dict):
        return raw, None
    if not isinstance(raw, str):
        return {}, f"unparseable arguments: expected a JSON object string, got {short(raw)}"
    try:
        value = loads_json(raw)
    except ValueError as err:
        return {}, f"unparseable arguments: {err}: {short(raw, 200)}"
    if not isinstance(value, dict):
        return {}, f"unparseable arguments: a JSON {type(value).__name__} instead of an object: {short(raw, 200)}"
    return value, None


def _convert(item: dict[str, Any], ctx: ItemContext) -> Trajectory:
    messages = expect(item.get("messages"), list, "messages", "messages")
    if not messages:
        raise ItemError("invalid_field", "messages must not be empty", "messages")
    builder = TurnBuilder(ctx)
    system: list[str] = []
    for i, message in enumerate(messages):
        # a message's path is written out only where an error, or a location kept for one, needs it
        if not isinstance(message, dict):
            expect(message, dict, f"messages[{i}]", "a message")
        role = message.get("role")
        if role == "function":
            raise ItemError("unsupported", "legacy 'function' role messages are not supported; convert them to 'tool' messages", f"messages[{i}].role")
        if not isinstance(role, str) or role not in _ROLES:
            raise ItemError("invalid_field", f"unknown role {role!r}; expected one of {sorted(_ROLES)}", f"messages[{i}].role")
        if "function_call" in message and message["function_call"] is not None:
            raise ItemError("unsupported", "legacy 'function_call' messages are not supported; convert them to 'tool_calls'", f"messages[{i}].function_call")
        content = message.get("content")
        if role in ("system", "developer"):
            text = text_of(content, f"messages[{i}].content")
            if text:
                system.append(text)
        elif role == "user":
            if content is None or content == "" or content == []:
                continue
            builder.start(content if isinstance(content, str) else text_of(content, f"messages[{i}].content"))
        elif role == "assistant":
            builder.begin_message()
            calls = message.get("tool_calls")
            text = content if content is None or isinstance(content, str) else text_of(content, f"messages[{i}].content")
            if text:
                builder.say(text)
            if calls:
                if not isinstance(calls, list):
                    expect(calls, list, f"messages[{i}].tool_calls", "tool_calls")
                for j, call in enumerate(calls):
                    _add_call(builder, call, f"messages[{i}].tool_calls[{j}]")
            elif text is not None:  # an empty assistant message does not erase an earlier answer
                builder.set_answer(text)
        else:  # tool
            path = f"messages[{i}]"
            call_id = message.get("tool_call_id")
            if not isinstance(call_id, str):
                expect(call_id, str, f"{path}.tool_call_id", "tool_call_id")
            result = parse_json_text(content if content is None or isinstance(content, str) else text_of(content, f"{path}.content"))
            builder.add_result(call_id, result, message.get("status"), path, "tool_call_id")
    meta = extra_metadata(item, _KNOWN)
    if system:
        meta.setdefault("system", "\n".join(system))
    return builder.build(item, ctx, token_usage(item, (("prompt_tokens", "input_tokens"), ("completion_tokens", "output_tokens"))), meta)


def _add_call(builder: TurnBuilder, call: Any, path: str) -> None:
    if not isinstance(call, dict):
        expect(call, dict, path, "a tool call")
    if call.get("type", "function") != "function":
        raise ItemError("unsupported", f"tool call type {call.get('type')!r} is not supported (only 'function')", f"{path}.type")
    function = call.get("function")
    if not isinstance(function, dict):
        expect(function, dict, f"{path}.function", "function")
    name = function.get("name")
    if not isinstance(name, str) or not name:
        raise ItemError("invalid_field", f"a tool call needs a function name, got {short(name)}", f"{path}.function.name")
    call_id = call.get("id")
    if call_id is not None and not isinstance(call_id, str):
        expect(call_id, str, f"{path}.id", "tool call id")
    arguments, error = parse_arguments(function.get("arguments"))
    builder.add_call(name, arguments, call_id, path, error)


TRAJECTORIES = TrajectoryFormat(
    name="openai",
    description="OpenAI Chat Completions transcript: {task_id, trajectory_id?, agent?, usage?, messages}",
    sniff=_sniff,
    ids=common_ids,
    convert=_convert,
)
