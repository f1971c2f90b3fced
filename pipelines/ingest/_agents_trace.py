"""The OpenAI Agents SDK's own trace export -> one trajectory per conversation.

What the SDK exports (``agents.tracing``): ``Trace.export()`` = ``{"object": "trace", "id",
"workflow_name", "group_id", "metadata"}`` and ``Span.export()`` = ``{"object": "trace.span",
"id", "trace_id", "parent_id", "started_at", "ended_at", "span_data": {"type", ...}, "error"}``.
Accepted files: those items one per line (what a ``TracingProcessor`` writing ``export()``
produces), one JSON array of them, or the payloads the SDK's ``BackendSpanExporter`` posts
(``{"data": [items]}``, one per line or one object).

Grouping: spans by ``trace_id``; traces that share a ``group_id`` (the SDK's conversation id)
form one trajectory, in the order they started. ids: ``task_id`` is the first of the trace
metadata keys ``task_id`` / ``task.id`` / ``task`` / ``example_id``, else the group id, else the
trace id; ``trajectory_id`` is metadata ``trajectory_id``, else the group id, else the trace id.

What maps to what (spans in start order):

- ``generation`` spans (Chat Completions models, LiteLLM) keep the messages: ``input`` is the
  history sent (system, user, assistant ``tool_calls``, ``tool`` results), ``output`` the
  model's messages. Each is read once: a message is new when a span's input holds it more
  often than was read so far (the SDK resends the whole history on every call). The merged
  messages are read as a Chat Completions transcript (``pipelines.ingest._openai``): user
  messages start turns, each model message with calls is a round, the last text without calls
  is the answer.
- ``function`` spans (``name``, ``input`` = the arguments as JSON text, ``output``, ``error``)
  are paired with the calls of that tool in order when their counts agree: a span's ``error``
  fails its call, and a call whose result no later model call saw (a run that stopped on a
  tool) gets the span's output. Unequal counts leave the calls as the messages say, with a
  warning.
- ``response`` spans (the default ``OpenAIResponsesModel``) keep only the response id, and
  spans exported with ``trace_include_sensitive_data=False`` keep no input or output: such a
  trace records neither the question nor the answer. It is read as what it records: its
  ``function`` spans are the calls (arguments as recorded, ``null`` when the span kept no input:
  unknown), the answer is not recorded (``answer_recorded: false``), and ``not_recorded`` says
  why. What the calls decide is decided (a wrong tool fails); what rests on the missing content is
  unresolved, never a failure of the agent's (or grade ``result.to_input_list()`` with
  ``--format responses``).
- ``agent`` spans: their names -> ``agent`` (the first) and ``metadata.agents``; an agent span
  error with ``data.max_turns`` (the SDK's "Max turns exceeded") -> ``ended_early`` (limit);
  other span errors -> ``metadata.span_errors``. ``handoff`` / ``guardrail`` spans ->
  ``metadata.handoffs`` / ``metadata.guardrails``. Usage: summed over generation and response
  spans.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import msgspec

from judge import Trajectory, parse_json_text
from pipelines.ingest import _openai
from pipelines.ingest._base import Bundle, BundleFormat, ItemContext, ItemError, Limits, Loaded, expect, short
from pipelines.ingest._reader import read_items
from pipelines.ingest._rows import Rows

_TASK_KEYS = ("task_id", "task.id", "task", "example_id")
_MESSAGES = re.compile(r"^messages\[(\d+)\]")


def _is_export(value: Any) -> bool:
    return isinstance(value, dict) and value.get("object") in ("trace", "trace.span") and isinstance(value.get("id"), str)


def _sniff(head: bytes, first: dict[str, Any] | None) -> bool:
    if first is None:
        return False
    if _is_export(first):
        return True
    data = first.get("data")
    return set(first) == {"data"} and isinstance(data, list) and bool(data) and _is_export(data[0])


class _Span(msgspec.Struct):
    data: dict[str, Any]  # span_data
    kind: str
    trace_id: str
    started: float
    order: int
    line: int
    path: str  # where the span is in its line ("<root>" or "data[3]")
    error: Any = None


class _Group(msgspec.Struct):
    key: str
    trace_ids: list[str] = msgspec.field(default_factory=list)
    traces: list[dict[str, Any]] = msgspec.field(default_factory=list)
    spans: list[_Span] = msgspec.field(default_factory=list)


def _time(value: Any) -> float:
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value).timestamp()
        except ValueError:
            return float("inf")
    return float("inf")


def _read(path: str, limits: Limits) -> Bundle:
    return Bundle(tasks=None, items=_items(path, limits))


def _items(path: str, limits: Limits) -> Iterator[Loaded]:
    rows = Rows(path)
    traces: dict[str, dict[str, Any]] = {}
    spans: list[_Span] = []
    errors: list[Loaded] = []
    for raw in read_items(path, limits):
        if raw.error is not None:
            errors.append(rows.error(raw.error, line=raw.line, task_id=None, trajectory_id=None))
            continue
        value = raw.value
        entries: list[tuple[Any, str]]
        if isinstance(value, dict) and set(value) == {"data"} and isinstance(value["data"], list):
            entries = [(item, f"data[{i}]") for i, item in enumerate(value["data"])]
        else:
            entries = [(value, "<root>")]
        for item, where in entries:
            try:
                _add(item, where, raw.line, traces, spans)
            except ItemError as err:
                errors.append(rows.error(err.info(path, raw.line), line=raw.line, task_id=None, trajectory_id=None))
    yield from errors
    for group in _group(traces, spans):
        line = min((s.line for s in group.spans), default=None)
        first_trace = group.trace_ids[0]
        yield rows.convert(_builder(group), line=line, task_id=None, trajectory_id=first_trace, where=f"the spans at line {line}")


def _builder(group: _Group) -> Callable[[ItemContext], Trajectory]:
    def build(ctx: ItemContext) -> Trajectory:
        return _build(group, ctx)

    return build


def _add(item: Any, where: str, line: int, traces: dict[str, dict[str, Any]], spans: list[_Span]) -> None:
    prefix = "" if where == "<root>" else f"{where}."
    if not isinstance(item, dict) or item.get("object") not in ("trace", "trace.span"):
        got = item.get("object") if isinstance(item, dict) else type(item).__name__
        raise ItemError("invalid_field", f"not an Agents SDK trace export item: 'object' must be 'trace' or 'trace.span', got {short(got)}", f"{prefix}object")
    if item["object"] == "trace":
        trace_id = expect(item.get("id"), str, f"{prefix}id", "a trace's id")
        metadata = item.get("metadata")
        if metadata is not None:
            expect(metadata, dict, f"{prefix}metadata", "a trace's metadata")
        traces.setdefault(trace_id, item)
        return
    trace_id = expect(item.get("trace_id"), str, f"{prefix}trace_id", "a span's trace_id")
    data = expect(item.get("span_data"), dict, f"{prefix}span_data", "span_data")
    kind = expect(data.get("type"), str, f"{prefix}span_data.type", "span_data.type")
    spans.append(_Span(data, kind, trace_id, _time(item.get("started_at")), len(spans), line, where, item.get("error")))


def _group(traces: dict[str, dict[str, Any]], spans: list[_Span]) -> list[_Group]:
    by_trace: dict[str, list[_Span]] = {}
    for span in spans:
        by_trace.setdefault(span.trace_id, []).append(span)
    groups: dict[str, _Group] = {}

    def first(trace_id: str) -> tuple[float, int]:
        own = by_trace.get(trace_id, [])
        return min((s.started for s in own), default=float("inf")), min((s.order for s in own), default=0)

    for trace_id in sorted(by_trace, key=first):
        trace = traces.get(trace_id, {})
        group_id = trace.get("group_id")
        key = group_id if isinstance(group_id, str) and group_id else trace_id
        group = groups.setdefault(key, _Group(key))
        group.trace_ids.append(trace_id)
        if trace:
            group.traces.append(trace)
        group.spans.extend(by_trace[trace_id])
    for group in groups.values():
        group.spans.sort(key=lambda s: (s.started, s.order))
    return list(groups.values())


def _metadata_value(group: _Group, keys: tuple[str, ...]) -> str | None:
    for trace in group.traces:
        metadata = trace.get("metadata") or {}
        for key in keys:
            value = metadata.get(key)
            if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value):
                return str(value)
    return None


def _checked(message: Any, path: str) -> dict[str, Any]:
    """A message of a generation span, with the fields this reader reads itself (to identify
    messages and pair function spans, before the Chat Completions reader sees them) of the JSON
    types it reads them as: a wrong type is an invalid_field naming where it is in the span."""
    expect(message, dict, path, "a message")
    calls = message.get("tool_calls")
    if calls is not None:
        expect(calls, list, f"{path}.tool_calls", "tool_calls")
        for j, call in enumerate(calls):
            expect(call, dict, f"{path}.tool_calls[{j}]", "a tool call")
            function = call.get("function")
            if function is not None:
                expect(function, dict, f"{path}.tool_calls[{j}].function", "function")
                _optional(function.get("name"), f"{path}.tool_calls[{j}].function.name", "a function name")
            _optional(call.get("id"), f"{path}.tool_calls[{j}].id", "tool call id")
    _optional(message.get("tool_call_id"), f"{path}.tool_call_id", "tool_call_id")
    return message


def _optional(value: Any, path: str, what: str) -> None:
    if value is not None:
        expect(value, str, path, what)


def _key(message: dict[str, Any]) -> str:
    """A message's identity across spans: an output message and the same message resent as
    input differ in their empty fields (``refusal: null``, ``audio: null``...), not in these."""
    calls = message.get("tool_calls") or []
    shown = [(c.get("id"), (c.get("function") or {}).get("name"), (c.get("function") or {}).get("arguments")) for c in calls]
    content = message.get("content")
    return json.dumps([message.get("role"), content if content not in ("", []) else None, shown, message.get("tool_call_id")], sort_keys=True, default=str)


def _messages(group: _Group) -> tuple[list[dict[str, Any]], list[tuple[int, str]]]:
    """The conversation's Chat Completions messages, each read once, and where each came from."""
    merged: list[dict[str, Any]] = []
    origin: list[tuple[int, str]] = []
    seen: Counter[str] = Counter()
    for span in group.spans:
        if span.kind != "generation":
            continue
        with _at(span):
            where = "" if span.path == "<root>" else f"{span.path}."
            inputs = span.data.get("input")
            if isinstance(inputs, str):
                inputs = [{"role": "user", "content": inputs}]
            counted: Counter[str] = Counter()
            for i, message in enumerate(expect(inputs or [], list, f"{where}span_data.input", "a generation's input")):
                key = _key(_checked(message, f"{where}span_data.input[{i}]"))
                counted[key] += 1
                if counted[key] > seen[key]:
                    seen[key] += 1
                    merged.append(message)
                    origin.append((span.line, f"{where}span_data.input[{i}]"))
            for i, message in enumerate(expect(span.data.get("output") or [], list, f"{where}span_data.output", "a generation's output")):
                message = _checked(message, f"{where}span_data.output[{i}]")
                message = {"role": "assistant", **message} if "role" not in message else message
                seen[_key(message)] += 1
                merged.append(message)
                origin.append((span.line, f"{where}span_data.output[{i}]"))
    return merged, origin


@contextmanager
def _at(span: _Span) -> Iterator[None]:
    """An error found in ``span`` names the span's own line (a conversation's spans are on many)."""
    try:
        yield
    except ItemError as err:
        if err.line is None:
            err.line = span.line
        raise


def _pair_functions(group: _Group, messages: list[dict[str, Any]], ctx: ItemContext) -> list[dict[str, Any]]:
    """Function spans answer the calls of their tool, in order (see the module docstring)."""
    calls = [(c.get("id"), (c.get("function") or {}).get("name")) for m in messages if m.get("role") == "assistant" for c in m.get("tool_calls") or []]
    functions = [s for s in group.spans if s.kind == "function"]
    if not functions:
        return messages
    for span in functions:
        _span_name(span)
    by_name_calls = Counter(name for _, name in calls)
    by_name_spans = Counter(s.data.get("name") for s in functions)
    if by_name_calls != by_name_spans:
        ctx.warn(
            "unpaired_function_spans",
            f"function spans {dict(sorted(by_name_spans.items(), key=str))} do not match the calls {dict(sorted(by_name_calls.items(), key=str))}: the calls keep the results the messages give",
        )
        return messages
    results = {m.get("tool_call_id"): i for i, m in enumerate(messages) if m.get("role") == "tool"}
    queue: dict[Any, list[_Span]] = {}
    for span in functions:
        queue.setdefault(span.data.get("name"), []).append(span)
    out = list(messages)
    for call_id, name in calls:
        span = queue[name].pop(0)
        if not isinstance(call_id, str):
            continue
        failed = span.error is not None
        reason = span.error.get("message") if isinstance(span.error, dict) else span.error
        at = results.get(call_id)
        if at is not None:
            if failed:
                out[at] = {**out[at], "status": "error"}
        elif failed or span.data.get("output") is not None:
            content = span.data.get("output") if span.data.get("output") is not None else str(reason)
            out.append({"role": "tool", "tool_call_id": call_id, "content": content, **({"status": "error"} if failed else {})})
    return out


def _span_name(span: _Span) -> str | None:
    """A function span's tool name (None when it records none); a name of another JSON type is
    an invalid_field naming the span's line and field (it keys the pairing with the calls)."""
    name = span.data.get("name")
    if name is not None:
        with _at(span):
            expect(name, str, f"{'' if span.path == '<root>' else span.path + '.'}span_data.name", "a function span's name")
    return name


def _usage(group: _Group) -> dict[str, int] | None:
    totals: dict[str, int] = {}
    for span in group.spans:
        usage = span.data.get("usage") if span.kind in ("generation", "response") else None
        if not isinstance(usage, dict):
            continue
        for key in ("input_tokens", "output_tokens"):
            value = usage.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                totals[key] = totals.get(key, 0) + value
    return totals or None


def _build(group: _Group, ctx: ItemContext) -> Trajectory:
    task_id = _metadata_value(group, _TASK_KEYS) or group.key
    trajectory_id = _metadata_value(group, ("trajectory_id",)) or group.key
    messages, origin = _messages(group)
    if not any(m.get("role") in ("user", "assistant") for m in messages):
        return _calls_only(group, task_id, trajectory_id)
    messages = _pair_functions(group, messages, ctx)
    agents = [s.data.get("name") for s in group.spans if s.kind == "agent" and isinstance(s.data.get("name"), str)]
    meta: dict[str, Any] = {"trace_ids": group.trace_ids, "agents": list(dict.fromkeys(agents))}
    workflows = [t.get("workflow_name") for t in group.traces if isinstance(t.get("workflow_name"), str)]
    if workflows:
        meta["workflow_name"] = workflows[0]
    if group.key not in group.trace_ids:
        meta["group_id"] = group.key
    trace_meta = [t["metadata"] for t in group.traces if isinstance(t.get("metadata"), dict) and t["metadata"]]
    if trace_meta:
        meta["trace_metadata"] = trace_meta[0] if len(trace_meta) == 1 else trace_meta
    handoffs = [{"from": s.data.get("from_agent"), "to": s.data.get("to_agent")} for s in group.spans if s.kind == "handoff"]
    if handoffs:
        meta["handoffs"] = handoffs
    guardrails = [{"name": s.data.get("name"), "triggered": s.data.get("triggered")} for s in group.spans if s.kind == "guardrail"]
    if guardrails:
        meta["guardrails"] = guardrails
    ended: dict[str, Any] | None = None
    span_errors = []
    for span in group.spans:
        if span.error is None or span.kind == "function":
            continue
        data = span.error.get("data") if isinstance(span.error, dict) else None
        message = span.error.get("message") if isinstance(span.error, dict) else str(span.error)
        if span.kind == "agent" and isinstance(data, dict) and "max_turns" in data and ended is None:
            ended = {"kind": "limit", "reason": f"{message} (max_turns={data['max_turns']})"}
        else:
            span_errors.append({"span": span.kind, "message": message, "data": data})
    if span_errors:
        meta["span_errors"] = span_errors
    item = {"task_id": task_id, "trajectory_id": trajectory_id, "agent": agents[0] if agents else None, "messages": messages}
    try:
        trajectory = _openai.TRAJECTORIES.convert(item, ctx)
    except ItemError as err:
        found = _MESSAGES.match(err.field or "")
        if found is not None and int(found.group(1)) < len(origin):
            line, where = origin[int(found.group(1))]
            err.field, err.line = where + (err.field or "")[found.end() :], line
        raise
    usage = _usage(group)
    update: dict[str, Any] = {"metadata": {**trajectory.metadata, **meta}}
    if usage is not None:
        update["token_usage"] = usage
    if ended is not None:
        update["ended_early"] = ended
    return Trajectory.model_validate({**trajectory.model_dump(), **update})


_NO_MESSAGES = (
    "content not recorded: the trace keeps no messages (the Agents SDK keeps only the response id on response spans of the default "
    "OpenAIResponsesModel, and no input or output with trace_include_sensitive_data=False); grade result.to_input_list() with "
    "--format responses, or trace a Chat Completions model"
)


def _calls_only(group: _Group, task_id: str, trajectory_id: str) -> Trajectory:
    """A trace without messages: its function spans as the calls, the question and answer unknown."""
    steps: list[dict[str, Any]] = []
    for span in (s for s in group.spans if s.kind == "function"):
        name = _span_name(span)
        if not name:
            continue
        raw = span.data.get("input")
        arguments = parse_json_text(raw) if isinstance(raw, str) else raw
        step: dict[str, Any] = {"name": name, "arguments": arguments if isinstance(arguments, dict) else None}
        if span.error is not None:
            message = span.error.get("message") if isinstance(span.error, dict) else str(span.error)
            step.update(status="error", error=str(message))
        elif span.data.get("output") is not None:
            step["result"] = parse_json_text(span.data["output"])
        steps.append(step)
    agents = [s.data.get("name") for s in group.spans if s.kind == "agent" and isinstance(s.data.get("name"), str)]
    kinds = Counter(s.kind for s in group.spans)
    return Trajectory.model_validate(
        {
            "task_id": task_id,
            "trajectory_id": trajectory_id,
            "agent": agents[0] if agents else None,
            "turns": [{"turn_id": "1", "steps": steps, "answer_recorded": False}],
            "not_recorded": _NO_MESSAGES,
            "metadata": {"trace_ids": group.trace_ids, "agents": list(dict.fromkeys(agents)), "span_kinds": dict(sorted(kinds.items()))},
            "token_usage": _usage(group),
        }
    )


BUNDLE = BundleFormat(
    name="agents-trace",
    description="OpenAI Agents SDK trace export (trace / trace.span items, or BackendSpanExporter {data: [...]} payloads); one trajectory per conversation",
    sniff=_sniff,
    read=_read,
)

__all__ = ["BUNDLE"]
