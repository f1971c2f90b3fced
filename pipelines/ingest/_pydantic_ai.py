"""pydantic-ai message histories: ``ModelMessagesTypeAdapter.dump_json(result.all_messages())``.

Read bare (the dumped JSON array, one per line) or wrapped ``{task_id?, trajectory_id?, agent?,
usage?, messages: [...]}``. Built from ``pydantic_ai.messages``: a ``ModelRequest`` (``kind:
"request"``) or ``ModelResponse`` (``kind: "response"``) holds ``parts`` told apart by
``part_kind``:

- request parts: ``user-prompt`` (a string, or a list whose strings and ``text-content`` items
  are its text) starts a turn; ``system-prompt`` / ``instruction`` parts and the request's
  ``instructions`` go to ``metadata["system"]``; ``tool-return {tool_call_id, content,
  outcome}`` is the result of that call (``outcome`` ``failed`` / ``retried`` fail it,
  ``denied`` marks it blocked, ``interrupted`` leaves it unknown; histories from before
  ``outcome`` existed let the ``Step`` model infer errors); ``retry-prompt`` with a
  ``tool_name`` (older versions: a tool call that failed validation or raised ``ModelRetry``)
  fails its call, one without is feedback on the output and carries no call;
- response parts: each response is one round; ``tool-call {tool_name, args, tool_call_id}``
  (``args`` an object or JSON text) and ``builtin-tool-call`` are steps (``builtin-tool-return``
  their results); ``text`` is what the agent said, and a response with text and no calls is the
  answer; ``thinking`` is never said to the user;
- the output tool: a call whose tool return is pydantic-ai's fixed "Final result processed."
  (``_tool_execution._FINAL_RESULT_PROCESSED``) delivers the run's structured output: its
  arguments are the final answer, not a step;
- bookkeeping parts (``retry-feedback``, instruction / tool / capability / settings deltas,
  ``compaction``, ``file``, ``speech``, tool-search and capability-load calls) carry nothing
  graded and are skipped; an unknown ``part_kind`` is ``unsupported``;
- usage: the responses' ``usage`` summed (``input_tokens`` / ``output_tokens``, or the older
  ``request_tokens`` / ``response_tokens``); a wrapped ``usage`` wins.
- A transcript that names no task is matched to the task whose question is its first user prompt.
"""

from __future__ import annotations

import json
from typing import Any

from judge import Trajectory, parse_json_text
from pipelines.ingest._base import ItemContext, ItemError, TrajectoryFormat, expect, guarded, short
from pipelines.ingest._chat import TurnBuilder, common_ids, extra_metadata, finish, path_of, token_usage, transcript
from pipelines.ingest._openai import parse_arguments

_KNOWN = {"task_id", "trajectory_id", "agent", "usage", "messages", "metadata"}
_FORM = '{"task_id": ..., "messages": [...]}'
_FINAL_RESULT_PROCESSED = "Final result processed."  # pydantic_ai/_tool_execution.py: the output tool's return
_SKIPPED_REQUEST = {
    "retry-feedback",
    "instruction-delta",
    "tool-availability-delta",
    "capability-load-delta",
    "model-settings-delta",
    "instruction-digest",
    "instruction-baseline",
    "compaction",
    "speech",
    "tool-search-return",
    "capability-load-return",
}
_SKIPPED_RESPONSE = {
    "thinking",
    "compaction",
    "file",
    "speech",
    "tool-search-call",
    "capability-load-call",
    "builtin-tool-search-call",
    "builtin-tool-search-return",
}
_OUTCOMES = {"success": "ok", "failed": "error", "retried": "error", "denied": "blocked"}


def _is_message(value: Any) -> bool:
    return isinstance(value, dict) and value.get("kind") in ("request", "response") and isinstance(value.get("parts"), list)


def _sniff(item: dict[str, Any]) -> bool:
    messages = item.get("messages")
    return isinstance(messages, list) and any(_is_message(m) for m in messages)


def _sniff_bare(messages: list[Any]) -> bool:
    return any(_is_message(m) for m in messages)


def _prompt_text(content: Any, path: str) -> str | None:
    if content is None or isinstance(content, str):
        return content
    expect(content, list, path, "a user prompt's content")
    texts = []
    for i, part in enumerate(content):
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and part.get("kind") == "text-content":
            texts.append(expect(part.get("content"), str, f"{path}[{i}].content", "a text content's content"))
    return "\n".join(texts) if texts else None


def _detail(content: Any) -> str:
    """A retry prompt's content as text: a string, or its validation errors."""
    if isinstance(content, str):
        return content
    return short(json.dumps(content, ensure_ascii=False, default=str, sort_keys=True), 500)


def _output_tool_ids(messages: list[Any]) -> set[str]:
    """Ids of the calls answered with the output tool's fixed return text."""
    ids = set()
    for message in messages:
        if not isinstance(message, dict) or not isinstance(message.get("parts"), list):
            continue
        for part in message["parts"]:
            returned = isinstance(part, dict) and part.get("part_kind") == "tool-return" and part.get("content") == _FINAL_RESULT_PROCESSED
            if returned and isinstance(part.get("tool_call_id"), str):
                ids.add(part["tool_call_id"])
    return ids


def _result(content: Any) -> Any:
    return parse_json_text(content) if isinstance(content, str) else content


def _name_and_id(part: dict[str, Any], path: str) -> tuple[str, str]:
    name = part.get("tool_name")
    if not isinstance(name, str) or not name:
        raise ItemError("invalid_field", f"a tool part needs a tool_name, got {short(name)}", f"{path}.tool_name")
    return name, expect(part.get("tool_call_id"), str, f"{path}.tool_call_id", "tool_call_id")


def _request(part: dict[str, Any], kind: str, path: str, builder: TurnBuilder, system: list[str], outputs: set[str]) -> None:
    if kind == "user-prompt":
        content = part.get("content")
        text = _prompt_text(content, f"{path}.content")
        if text is not None or content:
            builder.start(text, f"{path}.content")
    elif kind in ("system-prompt", "instruction"):
        text = part.get("content")
        if text is not None and expect(text, str, f"{path}.content", "a system prompt's content") and text not in system:
            system.append(text)
    elif kind in ("tool-return", "builtin-tool-return"):
        _, call_id = _name_and_id(part, path)
        if call_id in outputs:
            return
        outcome = part.get("outcome")
        if outcome is not None and outcome not in (*_OUTCOMES, "interrupted"):
            raise ItemError("invalid_field", f"unknown tool return outcome {outcome!r}", f"{path}.outcome")
        if outcome == "interrupted":  # the run stopped before the tool returned: outcome unknown
            return
        status = _OUTCOMES.get(outcome) if isinstance(outcome, str) else None
        content = part.get("content")
        error = _detail(content) if status == "error" else None
        builder.add_result(call_id, _result(content), status, path, "tool_call_id", error=error)
    elif kind == "retry-prompt":
        if part.get("tool_name") is None:
            return  # feedback on the output, not on a call
        _, call_id = _name_and_id(part, path)
        content = part.get("content")
        builder.add_result(call_id, _result(content) if isinstance(content, str) else content, "error", path, "tool_call_id", error=_detail(content))
    elif kind not in _SKIPPED_REQUEST:
        raise ItemError("unsupported", f"unknown request part kind {kind!r}", f"{path}.part_kind")


def _response(parts: list[Any], path: str, builder: TurnBuilder, outputs: set[str]) -> None:
    builder.begin_message()
    texts: list[str] = []
    calls = 0
    for j, part in enumerate(parts):
        where = f"{path}.parts[{j}]"
        expect(part, dict, where, "a part")
        kind = part.get("part_kind")
        if not isinstance(kind, str):
            raise ItemError("invalid_field", f"a part needs a string part_kind, got {short(kind)}", f"{where}.part_kind")
        if kind == "text":
            text = expect(part.get("content"), str, f"{where}.content", "a text part's content")
            if text:
                texts.append(text)
        elif kind in ("tool-call", "builtin-tool-call"):
            name, call_id = _name_and_id(part, where)
            arguments, error = parse_arguments(part.get("args"))
            if call_id in outputs and error is None:  # the output tool: the run's structured output
                builder.say(json.dumps(arguments, ensure_ascii=False, sort_keys=True))
                builder.set_answer(arguments)
                continue
            builder.add_call(name, arguments, call_id, where, error)
            calls += 1
        elif kind == "builtin-tool-return":
            _request(part, kind, where, builder, [], outputs)
        elif kind not in _SKIPPED_RESPONSE:
            raise ItemError("unsupported", f"unknown response part kind {kind!r}", f"{where}.part_kind")
    for text in texts:
        builder.say(text)
    if texts and not calls:
        builder.set_answer("\n".join(texts))


def _usage(messages: list[Any], prefix: str) -> dict[str, Any] | None:
    totals: dict[str, int] = {}
    for i, message in enumerate(messages):
        usage = message.get("usage") if message.get("kind") == "response" else None
        if usage is None:
            continue
        path = f"{path_of(prefix, i)}.usage"
        expect(usage, dict, path, "usage")
        for ours, *theirs in (("input_tokens", "input_tokens", "request_tokens"), ("output_tokens", "output_tokens", "response_tokens")):
            key = next((k for k in theirs if usage.get(k) is not None), None)
            if key is not None:
                totals[ours] = totals.get(ours, 0) + expect(usage[key], int, f"{path}.{key}", key)
    return totals or None


@guarded
def _convert(item: Any, ctx: ItemContext) -> Trajectory:
    messages, prefix, wrapper = transcript(item, ("messages",))
    if not messages:
        raise ItemError("invalid_field", "messages must not be empty", prefix or "<root>")
    outputs = _output_tool_ids(messages)
    builder = TurnBuilder(ctx)
    system: list[str] = []
    for i, message in enumerate(messages):
        path = path_of(prefix, i)
        expect(message, dict, path, "a message")
        kind = message.get("kind")
        parts = expect(message.get("parts"), list, f"{path}.parts", "parts")
        if kind == "request":
            instructions = message.get("instructions")
            if instructions is not None and expect(instructions, str, f"{path}.instructions", "instructions") and instructions not in system:
                system.append(instructions)
            for j, part in enumerate(parts):
                where = f"{path}.parts[{j}]"
                expect(part, dict, where, "a part")
                part_kind = part.get("part_kind")
                if not isinstance(part_kind, str):
                    raise ItemError("invalid_field", f"a part needs a string part_kind, got {short(part_kind)}", f"{where}.part_kind")
                _request(part, part_kind, where, builder, system, outputs)
        elif kind == "response":
            _response(parts, path, builder, outputs)
        else:
            raise ItemError("invalid_field", f"unknown message kind {kind!r}; expected 'request' or 'response'", f"{path}.kind")
    meta = extra_metadata(wrapper, _KNOWN)
    if system:
        meta.setdefault("system", "\n".join(system))
    usage = (
        token_usage(wrapper, (("input_tokens", "input_tokens"), ("output_tokens", "output_tokens")))
        if wrapper.get("usage") is not None
        else _usage(messages, prefix)
    )
    return finish(builder, wrapper, ctx, usage, meta, _FORM)


TRAJECTORIES = TrajectoryFormat(
    name="pydantic-ai",
    description="pydantic-ai message history (ModelMessagesTypeAdapter.dump_json): a bare list, or {task_id, messages: [...]}",
    sniff=_sniff,
    ids=common_ids,
    convert=_convert,
    bare=_sniff_bare,
)
