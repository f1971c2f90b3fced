"""LangChain / LangGraph message dumps: a LangGraph state's ``messages``, or any list of LangChain
messages, in the three forms ``langchain_core`` writes.

- ``messages_to_dict(messages)``: ``{"type": "human" | "ai" | "tool" | "system", "data": {...}}``;
- ``message.model_dump()``: ``{"type", "content", "tool_calls", "tool_call_id", ...}``;
- ``dumpd(messages)``: ``{"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages",
  "AIMessage"], "kwargs": {...}}`` (the class name says the type when ``kwargs`` does not).

Read bare (a JSON array per line) or wrapped: ``{task_id?, trajectory_id?, agent?, usage?,
messages: [...]}`` (a LangGraph state dump is wrapped). Built from ``langchain_core.messages``:

- ``human`` text starts a turn; ``system`` goes to ``metadata["system"]``; ``chat`` messages by
  their ``role``; chunk classes (``AIMessageChunk``) read as their message type.
- ``ai``: each message is one round. Its ``tool_calls [{name, args, id}]`` are steps (args that
  are not an object are the agent's error); ``invalid_tool_calls [{name, args, id, error}]`` (the
  model's calls LangChain could not parse) are failed steps; without a ``tool_calls`` field
  (older versions) ``additional_kwargs.tool_calls`` (OpenAI wire) is read. Text content (a string
  or ``text`` blocks) is what the agent said; an ``ai`` message with text and no calls is the
  answer. Reasoning / media blocks carry nothing graded; server-side tool blocks are
  ``unsupported``.
- ``tool {tool_call_id, content, status}``: the result of the call with that id (JSON text
  parsed); ``status: "error"`` fails it.
- Usage: the sum of the ``ai`` messages' ``usage_metadata`` (a wrapped ``usage`` wins).
- A transcript that names no task is matched to the task whose question is its first human
  message. Legacy ``function`` messages and LangGraph ``remove`` markers are ``unsupported``.
"""

from __future__ import annotations

from typing import Any

from judge import Trajectory, parse_json_text
from pipelines.ingest._base import ItemContext, ItemError, TrajectoryFormat, expect, guarded, short
from pipelines.ingest._chat import TurnBuilder, common_ids, extra_metadata, finish, path_of, token_usage, transcript
from pipelines.ingest._openai import parse_arguments

_KNOWN = {"task_id", "trajectory_id", "agent", "usage", "messages", "metadata"}
_FORM = '{"task_id": ..., "messages": [...]}'
_TYPES = {"human", "ai", "tool", "system", "chat", "function", "remove"}
_CLASSES = {"HumanMessage": "human", "AIMessage": "ai", "ToolMessage": "tool", "SystemMessage": "system", "ChatMessage": "chat", "FunctionMessage": "function"}
_CLASSES.update({f"{name}Chunk": kind for name, kind in list(_CLASSES.items())})
_CLASSES["RemoveMessage"] = "remove"
_CHAT_ROLES = {"user": "human", "human": "human", "assistant": "ai", "ai": "ai", "system": "system", "developer": "system"}
_SKIPPED_BLOCKS = {"reasoning", "thinking", "redacted_thinking", "tool_use", "tool_call", "tool_call_chunk", "invalid_tool_call"}


def _kind(value: str) -> str | None:
    return value if value in _TYPES else _CLASSES.get(value)


def _is_message(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    if value.get("lc") == 1 and isinstance(value.get("id"), list) and value["id"] and isinstance(value["id"][-1], str):
        return value["id"][-1] in _CLASSES
    kind = value.get("type")
    if not isinstance(kind, str) or _kind(kind) is None or "role" in value:
        return False
    return isinstance(value.get("data"), dict) or "content" in value


def _sniff(item: dict[str, Any]) -> bool:
    messages = item.get("messages")
    return isinstance(messages, list) and any(_is_message(m) for m in messages)


def _sniff_bare(messages: list[Any]) -> bool:
    return any(_is_message(m) for m in messages)


def _fields(entry: dict[str, Any], path: str) -> tuple[str, dict[str, Any], str]:
    """(message type, its fields, the path of the fields) of any of the three forms."""
    if "lc" in entry:
        if entry.get("type") != "constructor":
            raise ItemError("unsupported", f"a serialised LangChain {entry.get('type')!r} object is not a message", f"{path}.type")
        ids = expect(entry.get("id"), list, f"{path}.id", "a serialised object's id")
        name = ids[-1] if ids and isinstance(ids[-1], str) else None
        fields = expect(entry.get("kwargs", {}), dict, f"{path}.kwargs", "kwargs")
        kind = _kind(fields["type"]) if isinstance(fields.get("type"), str) else None
        kind = kind or (_CLASSES.get(name) if name else None)
        if kind is None:
            raise ItemError("unsupported", f"serialised class {short(ids)} is not a LangChain message", f"{path}.id")
        return kind, fields, f"{path}.kwargs"
    raw = entry.get("type")
    if not isinstance(raw, str) or _kind(raw) is None:
        raise ItemError("invalid_field", f"unknown message type {raw!r}; expected one of {sorted(_TYPES - {'remove'})}", f"{path}.type")
    kind = _kind(raw) or raw
    if isinstance(entry.get("data"), dict):
        return kind, entry["data"], f"{path}.data"
    return kind, entry, path


def _text(content: Any, path: str) -> str | None:
    if content is None or isinstance(content, str):
        return content
    expect(content, list, path, "message content")
    texts = []
    for i, block in enumerate(content):
        if isinstance(block, str):
            texts.append(block)
            continue
        expect(block, dict, f"{path}[{i}]", "a content block")
        kind = block.get("type")
        if kind == "text":
            texts.append(expect(block.get("text"), str, f"{path}[{i}].text", "a text block's text"))
        elif kind == "refusal" and isinstance(block.get("refusal"), str):
            texts.append(block["refusal"])
        elif isinstance(kind, str) and (kind.startswith("server_tool") or kind.endswith("_tool_result")):
            raise ItemError("unsupported", f"content block type {kind!r} (a server-side tool) is not supported", f"{path}[{i}].type")
    return "\n".join(texts) if texts else None


def _calls(builder: TurnBuilder, fields: dict[str, Any], path: str) -> int:
    """Add the calls of an ``ai`` message; how many there were."""
    count = 0
    if "tool_calls" in fields:
        for j, call in enumerate(expect(fields["tool_calls"] or [], list, f"{path}.tool_calls", "tool_calls")):
            where = f"{path}.tool_calls[{j}]"
            expect(call, dict, where, "a tool call")
            name = call.get("name")
            if not isinstance(name, str) or not name:
                raise ItemError("invalid_field", f"a tool call needs a name, got {short(name)}", f"{where}.name")
            call_id = call.get("id")
            if call_id is not None:
                expect(call_id, str, f"{where}.id", "tool call id")
            arguments, error = parse_arguments(call.get("args"))
            builder.add_call(name, arguments, call_id, where, error)
            count += 1
    else:  # before tool_calls existed: the provider's raw calls
        extra = fields.get("additional_kwargs")
        raw = extra.get("tool_calls") if isinstance(extra, dict) else None
        for j, call in enumerate(expect(raw or [], list, f"{path}.additional_kwargs.tool_calls", "tool_calls")):
            where = f"{path}.additional_kwargs.tool_calls[{j}]"
            expect(call, dict, where, "a tool call")
            function = expect(call.get("function"), dict, f"{where}.function", "function")
            name = function.get("name")
            if not isinstance(name, str) or not name:
                raise ItemError("invalid_field", f"a tool call needs a function name, got {short(name)}", f"{where}.function.name")
            arguments, error = parse_arguments(function.get("arguments"))
            builder.add_call(name, arguments, call.get("id") if isinstance(call.get("id"), str) else None, where, error)
            count += 1
    for j, call in enumerate(expect(fields.get("invalid_tool_calls") or [], list, f"{path}.invalid_tool_calls", "invalid_tool_calls")):
        where = f"{path}.invalid_tool_calls[{j}]"
        expect(call, dict, where, "an invalid tool call")
        name = call.get("name") if isinstance(call.get("name"), str) else ""
        call_id = call.get("id") if isinstance(call.get("id"), str) else None
        why = call.get("error") if isinstance(call.get("error"), str) else "not parsed"
        builder.add_call(name, {}, call_id, where, f"unparseable arguments: {why}: {short(call.get('args'), 200)}")
        count += 1
    return count


def _usage(messages: list[tuple[str, dict[str, Any], str]]) -> dict[str, Any] | None:
    totals: dict[str, int] = {}
    for kind, fields, path in messages:
        usage = fields.get("usage_metadata")
        if kind != "ai" or usage is None:
            continue
        expect(usage, dict, f"{path}.usage_metadata", "usage_metadata")
        for key in ("input_tokens", "output_tokens"):
            if usage.get(key) is not None:
                totals[key] = totals.get(key, 0) + expect(usage[key], int, f"{path}.usage_metadata.{key}", key)
    return totals or None


@guarded
def _convert(item: Any, ctx: ItemContext) -> Trajectory:
    entries, prefix, wrapper = transcript(item, ("messages",))
    if not entries:
        raise ItemError("invalid_field", "messages must not be empty", prefix or "<root>")
    builder = TurnBuilder(ctx)
    system: list[str] = []
    read = []
    for i, entry in enumerate(entries):
        path = path_of(prefix, i)
        expect(entry, dict, path, "a message")
        kind, fields, fpath = _fields(entry, path)
        read.append((kind, fields, fpath))
        if kind == "chat":
            role = fields.get("role")
            mapped = _CHAT_ROLES.get(role) if isinstance(role, str) else None
            if mapped is None:
                raise ItemError("unsupported", f"a chat message with role {role!r} is not supported", f"{fpath}.role")
            kind = mapped
        if kind in ("function", "remove"):
            raise ItemError("unsupported", f"{kind!r} messages are not supported (tool results are 'tool' messages)", f"{fpath}.type")
        text = _text(fields.get("content"), f"{fpath}.content")
        if kind == "human":
            if text is not None or fields.get("content"):
                builder.start(text, f"{fpath}.content")
        elif kind == "system":
            if text:
                system.append(text)
        elif kind == "ai":
            builder.begin_message()
            if text:
                builder.say(text)
            if not _calls(builder, fields, fpath) and text:
                builder.set_answer(text)
        else:  # tool
            call_id = expect(fields.get("tool_call_id"), str, f"{fpath}.tool_call_id", "tool_call_id")
            content = fields.get("content")
            result = parse_json_text(text) if text is not None else (content or None)
            status = fields.get("status")
            if status is not None:
                expect(status, str, f"{fpath}.status", "status")
            builder.add_result(call_id, result, status, fpath, "tool_call_id")
    meta = extra_metadata(wrapper, _KNOWN)
    if system:
        meta.setdefault("system", "\n".join(system))
    usage = token_usage(wrapper, (("input_tokens", "input_tokens"), ("output_tokens", "output_tokens"))) if wrapper.get("usage") is not None else _usage(read)
    return finish(builder, wrapper, ctx, usage, meta, _FORM)


TRAJECTORIES = TrajectoryFormat(
    name="langchain",
    description="LangChain / LangGraph messages (messages_to_dict, model_dump or dumpd): a bare list, or {task_id, messages: [...]}",
    sniff=_sniff,
    ids=common_ids,
    convert=_convert,
    bare=_sniff_bare,
)
