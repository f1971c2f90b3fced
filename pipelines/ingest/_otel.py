"""OpenTelemetry GenAI traces (OTLP JSON / JSONL, Langfuse exports) -> one trajectory per conversation.

Grouping: spans are grouped by trace; traces that share a conversation (``gen_ai.conversation.id``
or OpenInference ``session.id`` on any of their spans, else Langfuse's ``sessionId``) and name no
different tasks form one trajectory (``_otel_ids``). ids:

- task_id: an attribute ``trajectory_judge.task_id`` / ``task.id`` / ``task_id``, a ``metadata``
  key or ``tag.tags`` entry named ``task_id`` / ``task`` / ``example_id``, or the one attribute
  ``--task-key`` names; else the conversation id; else the trace id (``_otel_ids`` has the
  order). Traces carry no tasks: ``--tasks`` is required. When the id matches no task, the error
  says where it was read and lists what the spans carry (``Loaded.task_id_note``).
- trajectory_id: ``trajectory_judge.trajectory_id`` if set, else the conversation id, else the trace id.

What maps to what (spans in start-time order; chat = ``gen_ai.operation.name`` chat /
generate_content / text_completion, Langfuse GENERATION or OpenInference LLM; tool = execute_tool,
Langfuse TOOL, OpenInference TOOL or a span with ``gen_ai.tool.name``):

- a chat span's *output* messages are the model's production: its tool calls are steps of one
  round (rounds = chat spans that issued calls), its texts are agent messages, the last text
  without calls is the answer;
- input messages (and an agent span's input / output) are history: a user message starts a turn,
  a tool result answers a call; frameworks repeat the whole history on every call, so history is
  merged by counting (an item is new when a message list holds it more often than already read),
  which also handles frameworks that send only the new messages;
- a tool span answers the call with its ``gen_ai.tool.call.id`` (else the oldest unanswered call
  of that tool); with no such call (content capture off) the span itself is the call, with
  ``gen_ai.tool.call.arguments`` / ``input.value`` as arguments, or, when it records none, with
  arguments unknown (``Step.arguments`` None, never ``{}``); ``error.type`` or an error status
  fails it;
- content not recorded (the instrumentations' default): a turn whose last model output (chat span
  output, or an agent span's output) records no content, or a conversation with no output
  recorded at all, has an unknown answer (``answer_recorded`` false, not "no answer"); the
  trajectory's ``not_recorded`` then says how to record it (``NOT_RECORDED``), and grading leaves
  what depends on it undecided;
- results pair with the most recent unanswered call of their id (as ``TurnBuilder``: a result
  while two such calls are unanswered is an input error, one that answers no call is kept in
  ``metadata.orphan_results`` with a warning); a call never answered keeps status ``unknown``.
  (``TurnBuilder`` itself is not used: spans repeat history and results arrive from two places.)
- ``gen_ai.tool.definitions`` (and OpenInference / OpenLLMetry forms) -> ``metadata.tools``;
  ``gen_ai.system_instructions`` -> ``metadata.system``; usage summed over chat spans;
- labels: Langfuse trace ``scores`` -> ``langfuse:<name>`` and ``gen_ai.evaluation.result`` events
  -> ``otel:<name>``; a numeric score's polarity is unknown (a defect rate or a reward), so only
  boolean and categorical values say pass/fail.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import msgspec
from pydantic import ValidationError

from judge import ExternalLabel, InputErrorInfo, SourceRef, Trajectory, label_passed
from pipelines.ingest._base import (
    DELIBERATE,
    Bundle,
    BundleFormat,
    ItemContext,
    ItemError,
    Limits,
    Loaded,
    default_trajectory_id,
    guarded,
    one_of,
    unforeseen,
    validation_error,
)
from pipelines.ingest._openai import parse_arguments
from pipelines.ingest._otel_ids import Found, conversation_id, named_task, present, root_first
from pipelines.ingest._otel_messages import Call, Message, indexed_messages, json_text, messages_from, tool_definitions
from pipelines.ingest._otel_spans import Span, SpanFormatError, TraceInfo, parse_json_value, spans_of_item
from pipelines.ingest._reader import read_items

_CHAT_OPS = {"chat", "generate_content", "text_completion", "completion", "responses"}
_AGENT_OPS = {"invoke_agent", "invoke_workflow"}
_MAX_SNIFF_SPANS = 50
NOT_RECORDED = (
    "content not recorded: set OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true "
    "(span_only for instrumentations built on opentelemetry-util-genai, such as opentelemetry-instrumentation-openai-v2 2.x)"
)

# ---------------------------------------------------------------- detection


def _sniff(head: bytes, first: dict[str, Any] | None) -> bool:
    if first is None:
        return False
    if "resourceSpans" in first or "resource_spans" in first:
        return True
    if isinstance(first.get("trace"), dict) and isinstance(first.get("observations"), list):
        return True
    observations = first.get("observations")
    if isinstance(observations, list) and observations and isinstance(observations[0], dict) and "traceId" in observations[0]:
        return True
    return isinstance(first.get("context"), dict) and "trace_id" in first["context"] and "name" in first


# ---------------------------------------------------------------- span roles


def _kind(span: Span) -> str | None:
    a = span.attributes
    op = a.get("gen_ai.operation.name")
    if one_of(op, _CHAT_OPS):
        return "chat"
    if op == "execute_tool":
        return "tool"
    if one_of(op, _AGENT_OPS):
        return "agent"
    if op == "create_agent":
        return None
    kind = {"GENERATION": "chat", "TOOL": "tool", "AGENT": "agent"}.get(span.observation_type or "")
    if kind:
        return kind
    kind = {"LLM": "chat", "TOOL": "tool", "AGENT": "agent"}.get(str(a.get("openinference.span.kind") or "").upper())
    if kind:
        return kind
    if any(k in a for k in ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.prompt", "gen_ai.completion")):
        return "chat"
    if any(k.startswith(("gen_ai.prompt.", "gen_ai.completion.", "llm.input_messages.", "llm.output_messages.")) for k in a):
        return "chat"
    if "gen_ai.tool.name" in a:
        return "tool"
    return None


def _has_indexed(attributes: dict[str, Any], prefix: str) -> bool:
    head = prefix + "."
    return any(k.startswith(head) for k in attributes)


def _messages_value(span: Span, side: str) -> Any:
    """The span's input or output messages, from wherever its instrumentation put them."""
    a = span.attributes
    current, deprecated, openllmetry, openinference = (
        ("gen_ai.input.messages", "gen_ai.prompt", "gen_ai.prompt", "llm.input_messages")
        if side == "input"
        else ("gen_ai.output.messages", "gen_ai.completion", "gen_ai.completion", "llm.output_messages")
    )
    if current in a:
        return a[current]
    langfuse = span.input if side == "input" else span.output
    if langfuse is not None:
        return langfuse
    if deprecated in a:
        return a[deprecated]
    if _has_indexed(a, openllmetry):
        return indexed_messages(a, openllmetry)
    if _has_indexed(a, openinference):
        return indexed_messages(a, openinference)
    for event in span.events:  # content captured on events (current or the older gen_ai.content.* events)
        for key in (current, deprecated):
            if key in event.attributes:
                return event.attributes[key]
    return None


def _system_instructions(span: Span) -> list[str]:
    value = parse_json_value(span.attributes.get("gen_ai.system_instructions"))
    if isinstance(value, str):
        return [value] if value else []
    texts = []
    for part in value if isinstance(value, list) else []:
        if isinstance(part, dict) and isinstance(part.get("content"), str):
            texts.append(part["content"])
        elif isinstance(part, str):
            texts.append(part)
    return texts


# ---------------------------------------------------------------- the transcript


class _Step(msgspec.Struct):
    name: str
    arguments: dict[str, Any] | None  # None: not recorded (a tool span without content)
    call_id: str | None
    round: int | None
    path: str
    result: Any = None
    answered: bool = False
    status: str | None = None
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        step: dict[str, Any] = {"name": self.name, "arguments": self.arguments, "call_id": self.call_id, "round": self.round}
        if self.error is not None:
            step["error"] = self.error
        if self.answered:
            step["result"] = self.result
        if self.status is not None:
            step["status"] = self.status
        elif not self.answered and self.error is None:
            step["status"] = "unknown"  # made; what came back was not recorded
        return step


class _Transcript(msgspec.Struct):
    """Turns, steps and rounds of one conversation, merged from overlapping span views."""

    ctx: ItemContext
    turns: list[dict[str, Any]] = msgspec.field(default_factory=list)
    steps: list[_Step] = msgspec.field(default_factory=list)
    seen: Counter = msgspec.field(default_factory=Counter)
    orphans: list[dict[str, Any]] = msgspec.field(default_factory=list)
    rounds: int = 0
    round_of_span: dict[str, int] = msgspec.field(default_factory=dict)
    last_model_span: str | None = None

    # -- turns
    @property
    def turn(self) -> dict[str, Any]:
        if not self.turns:
            self.start(None)
        return self.turns[-1]

    def start(self, query: str | None) -> None:
        self.turns.append(
            {"turn_id": str(len(self.turns) + 1), "query": query, "steps": [], "final_answer": None, "agent_messages": [], "answer_recorded": None}
        )

    def produced(self, recorded: bool) -> None:
        """The model (or the agent) produced its output for the current turn; ``recorded``: the
        output's content is in the spans. The turn's answer is its last production's."""
        self.turn["answer_recorded"] = recorded

    def new_round(self, span_id: str | None) -> int:
        if span_id is not None and span_id in self.round_of_span:
            return self.round_of_span[span_id]
        number = self.rounds
        self.rounds += 1
        if span_id is not None:
            self.round_of_span[span_id] = number
        return number

    # -- steps
    def call(self, call: Call, round_: int | None, path: str, *, recorded: bool = True) -> _Step:
        """``recorded=False``: the call's arguments were not recorded (its step's are None)."""
        arguments, error = _arguments(call.arguments)
        step = _Step(call.name, arguments if recorded else None, call.id, round_, path, error=error)
        if error is not None:
            step.status = "error"  # unreadable arguments: the agent's malformed call
        self.steps.append(step)
        self.turn["steps"].append(step)
        self._remember_call(call.id, call.name, arguments)
        return step

    def _remember_call(self, call_id: str | None, name: str, arguments: Any) -> None:
        self.seen[("call", call_id) if call_id else ("call", name, json_text(arguments))] += 1

    def answer(self, step: _Step, result: Any, status: str | None, error: str | None = None) -> None:
        step.result, step.answered = result, True
        if step.status != "error":  # a malformed call failed whatever came back
            step.status = status
            if error is not None:
                step.error = error
        self._remember_result(step.call_id, result)

    def _remember_result(self, call_id: str | None, result: Any) -> None:
        if call_id:
            self.seen[("result", call_id)] += 1
        self.seen[("result-text", json_text(result))] += 1

    def waiting(self, call_id: str | None, name: str | None, path: str) -> _Step | None:
        """The call a result answers: the most recent unanswered call of its id, else (no id) the
        oldest unanswered call of that tool (or of any tool when the result names none)."""
        if call_id is not None:
            pending = [s for s in self.steps if s.call_id == call_id and not s.answered]
            if len(pending) > 1:
                where = ", ".join(s.path for s in pending)
                raise ItemError(
                    "invalid_field", f"a tool result for call id {call_id!r} while {len(pending)} calls with that id are unanswered ({where})", path
                )
            return pending[-1] if pending else None
        return next((s for s in self.steps if not s.answered and (name is None or s.name == name)), None)

    def orphan(self, call_id: str | None, result: Any, path: str) -> None:
        self.orphans.append({"call_id": call_id, "result": result, "at": path})
        self._remember_result(call_id, result)
        self.ctx.warn("orphan_result", f"a tool result for call id {call_id!r} answers no call; kept in metadata.orphan_results", path)

    # -- texts
    def say(self, text: str, final: bool) -> None:
        self.turn["agent_messages"].append(text)
        if final:
            self.turn["final_answer"] = text


def _arguments(raw: Any) -> tuple[dict[str, Any], str | None]:
    if raw is None:
        return {}, None
    return parse_arguments(parse_json_value(raw) if isinstance(raw, str) and raw.strip()[:1] != "{" else raw)


def _absorb(t: _Transcript, messages: list[Message], *, fresh: bool, span: Span, path: str) -> None:
    """Merge one message list. ``fresh``: the span's own output (all new, one round); otherwise
    history, where only what this list holds more often than already read is new."""
    local: Counter = Counter()

    def new(key: tuple) -> bool:
        local[key] += 1
        if fresh:
            return True
        return local[key] > t.seen[key]

    output_round = None
    for i, message in enumerate(messages):
        where = f"{path}[{i}]"
        for result in message.results:  # tool messages; Anthropic puts tool_result blocks in user messages
            key = ("result", result.id) if result.id else ("result-text", json_text(result.response))
            if not new(key):
                continue
            step = t.waiting(result.id, None, where)
            if step is None:
                t.orphan(result.id, result.response, where)
            else:
                t.answer(step, result.response, result.status)
        if message.role == "user":
            text = "\n".join(message.texts)
            if text and new(("user", text)):
                t.seen[("user", text)] += 1
                t.start(text)
            continue
        if message.role == "tool":
            continue
        # assistant
        new_calls = [c for c in message.calls if new(("call", c.id) if c.id else ("call", c.name, json_text(_arguments(c.arguments)[0])))]
        new_texts = [x for x in message.texts if new(("text", x))]
        for x in new_texts:
            t.seen[("text", x)] += 1
        if new_calls:
            if fresh:
                output_round = output_round if output_round is not None else t.new_round(span.span_id)
                round_ = output_round
            else:
                round_ = t.new_round(None)  # an earlier model message this trace did not record as a span
            for c in new_calls:
                t.call(c, round_, where)
        for j, x in enumerate(new_texts):
            t.say(x, final=not message.calls and j == len(new_texts) - 1)


def _tool_span(t: _Transcript, span: Span) -> None:
    """An executed tool: it answers its call (or is the call, when none was recorded)."""
    a = span.attributes
    call_id = a.get("gen_ai.tool.call.id") or a.get("tool_call.id")
    call_id = str(call_id) if call_id not in (None, "") else None
    name = str(a.get("gen_ai.tool.name") or a.get("tool.name") or span.name.removeprefix("execute_tool ").strip() or "<unnamed tool>")
    result = parse_json_value(a.get("gen_ai.tool.call.result", a.get("output.value", span.output)))
    failed = span.status == "error" or "error.type" in a
    error = None
    if failed:
        error = span.status_message or str(a.get("error.type") or "") or _exception_message(span) or "the tool span ended in error"
        result = result if result is not None else error
    status = "error" if failed else "ok"
    if call_id is not None and any(s.call_id == call_id and s.answered for s in t.steps) and t.waiting(call_id, None, span.path) is None:
        return  # the same execution, already read from the messages
    step = t.waiting(call_id, name, span.path)
    if step is None:  # no call recorded for it (content capture off, or a framework that traces tools only)
        raw_args = a.get("gen_ai.tool.call.arguments", a.get("input.value", span.input))
        round_ = None
        if t.last_model_span is not None:
            round_ = t.new_round(t.last_model_span)  # the model call it followed
        args, bad = _arguments(raw_args)
        if bad is not None:
            t.ctx.warn("otel_tool_arguments", f"arguments of tool span {name!r} are not a JSON object; recorded as {{}}", span.path)
            args = {}
        elif raw_args is None:
            t.ctx.warn("otel_arguments_not_recorded", f"tool span {name!r} records no arguments (content capture off?): they are unknown", span.path)
        step = t.call(Call(call_id, name, args), round_, span.path, recorded=raw_args is not None)
    if result is not None:
        t.answer(step, result, status, error)
    elif step.status is None:
        step.status = status  # it ran; what it returned was not recorded (a later message may say)


def _unrecorded_answers(t: _Transcript) -> None:
    """A turn whose last production was not recorded has an unknown answer (not a missing one);
    with no production recorded anywhere (only tool spans, or chat spans without content), no turn's
    answer is known."""
    anything = any(turn["answer_recorded"] for turn in t.turns)
    for turn in t.turns:
        if turn["answer_recorded"] is None:
            turn["answer_recorded"] = anything
        if not turn["answer_recorded"]:
            turn["final_answer"] = None


def _exception_message(span: Span) -> str | None:
    for event in span.events:
        if event.name == "exception":
            message = event.attributes.get("exception.message") or event.attributes.get("exception.type")
            if message:
                return str(message)
    return None


# ---------------------------------------------------------------- one conversation


class _Conversation(msgspec.Struct):
    key: str
    trace_ids: list[str]
    spans: list[Span]
    infos: list[TraceInfo]
    conversation_id: str | None
    task: Found | None = None  # the task its spans name (None: the conversation or trace id stands in)


def _first_attribute(spans: list[Span], infos: list[TraceInfo], keys: tuple[str, ...]) -> str | None:
    for span in root_first(spans):
        for source in (span.attributes, span.resource):
            for key in keys:
                value = source.get(key)
                if value not in (None, ""):
                    return str(value)
    for trace in infos:
        nested = trace.metadata.get("attributes")
        for source in (trace.metadata, nested if isinstance(nested, dict) else {}):
            for key in keys:
                value = source.get(key)
                if value not in (None, ""):
                    return str(value)
    return None


def _int_value(value: Any) -> int | None:
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if number >= 0 else None


def _usage(chat_spans: list[Span]) -> dict[str, Any] | None:
    totals: dict[str, Any] = {}
    for span in chat_spans:
        a, usage = span.attributes, span.usage or {}
        pairs = (
            ("input_tokens", ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt"), "input"),
            ("output_tokens", ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens", "llm.token_count.completion"), "output"),
        )
        for dst, keys, langfuse in pairs:
            value = next((_int_value(a[k]) for k in keys if k in a), None)
            if value is None:
                value = _int_value(usage.get(langfuse))
            if value is not None:
                totals[dst] = totals.get(dst, 0) + value
        if span.cost is not None:
            totals["cost_usd"] = totals.get("cost_usd", 0.0) + float(span.cost)
    return totals or None


def _labels(conversation: _Conversation) -> list[ExternalLabel]:
    labels = []
    for info in conversation.infos:
        for score in info.scores:
            name = score.get("name")
            if not isinstance(name, str):
                continue
            kind = score.get("dataType")
            value = score.get("stringValue") if kind == "CATEGORICAL" and score.get("stringValue") is not None else score.get("value")
            passed = label_passed(value) if kind in ("BOOLEAN", "CATEGORICAL") else None
            comment = score.get("comment") if isinstance(score.get("comment"), str) else None
            labels.append(ExternalLabel(source=f"langfuse:{name}", value=value, passed=passed, reason=comment))
    for span in conversation.spans:
        for event in span.events:
            if event.name != "gen_ai.evaluation.result":
                continue
            ea = event.attributes
            label = ea.get("gen_ai.evaluation.score.label")
            value = label if label is not None else ea.get("gen_ai.evaluation.score.value")
            reason = ea.get("gen_ai.evaluation.explanation")
            labels.append(
                ExternalLabel(
                    source=f"otel:{ea.get('gen_ai.evaluation.name') or 'evaluation'}",
                    value=value,
                    passed=label_passed(label) if label is not None else None,
                    reason=str(reason) if reason is not None else None,
                )
            )
    return labels


def _model(span: Span) -> str | None:
    a = span.attributes
    model = a.get("gen_ai.response.model") or a.get("gen_ai.request.model") or a.get("llm.model_name") or span.model
    return str(model) if model else None


def _unique(items: list[Any]) -> list[Any]:
    out, seen = [], set()
    for item in items:
        key = json_text(item)
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out


@guarded
def build_trajectory(conversation: _Conversation, ctx: ItemContext) -> Trajectory:
    spans = conversation.spans
    kinds = {s.span_id: _kind(s) for s in spans}
    t = _Transcript(ctx)
    tools: list[dict[str, Any]] = []
    system: list[str] = []
    events: list[tuple[float, int, int, str, Span]] = []
    for s in spans:
        kind = kinds[s.span_id]
        start = s.start if s.start is not None else float("inf")
        if kind == "chat":
            events.append((start, 1, s.order, "chat", s))
        elif kind == "tool":
            events.append((start, 2, s.order, "tool", s))
        elif kind == "agent":
            events.append((start, 0, s.order, "agent_in", s))
            events.append((s.end if s.end is not None else float("inf"), 3, s.order, "agent_out", s))
        if kind in ("chat", "agent"):
            tools.extend(tool_definitions(s.attributes))
            system.extend(_system_instructions(s))
    for _, _, _, what, span in sorted(events, key=lambda e: e[:3]):
        if what == "tool":
            _tool_span(t, span)
            continue
        if what in ("chat", "agent_in"):
            extracted = messages_from(_messages_value(span, "input"), "user")
            tools.extend(extracted.tools)
            system.extend(extracted.system)
            _absorb(t, extracted.messages, fresh=False, span=span, path=f"{span.path}.input")
        if what == "chat":
            t.last_model_span = span.span_id
        if what in ("chat", "agent_out"):
            output = _messages_value(span, "output")
            extracted = messages_from(output, "assistant")
            tools.extend(extracted.tools)
            system.extend(extracted.system)
            _absorb(t, extracted.messages, fresh=what == "chat", span=span, path=f"{span.path}.output")
            if what == "chat" or output is not None:  # an agent span without output says nothing of the answer
                t.produced(output is not None)
    chat_spans = [s for s in spans if kinds[s.span_id] == "chat"]
    if not t.turns:
        t.start(None)
    _unrecorded_answers(t)
    if not t.steps and not any(turn["agent_messages"] for turn in t.turns):
        ctx.warn("otel_no_content", "no message content or tool span was recorded (GenAI content capture is opt-in)", None)
    first = root_first(spans)[0] if spans else None
    conv = conversation.conversation_id
    trace = conversation.trace_ids[0]
    task_id = conversation.task.value if conversation.task is not None else conv or trace
    trajectory_id = _first_attribute(spans, conversation.infos, ("trajectory_judge.trajectory_id",)) or conv or trace
    agent = _first_attribute([s for s in spans if kinds[s.span_id] == "agent"], [], ("gen_ai.agent.name",))
    models = sorted({m for m in map(_model, chat_spans) if m})
    otel: dict[str, Any] = {
        "trace_ids": conversation.trace_ids,
        "spans": len(spans),
        "chat_spans": len(chat_spans),
        "tool_spans": sum(1 for k in kinds.values() if k == "tool"),
    }
    if conv:
        otel["conversation_id"] = conv
    otel["task_id_from"] = task_source(conversation)
    if models:
        otel["models"] = models
    if first is not None and first.resource.get("service.name"):
        otel["service"] = first.resource["service.name"]
    metadata: dict[str, Any] = {"otel": otel}
    if tools:
        metadata["tools"] = _unique(tools)
    if system:
        metadata["system"] = "\n".join(_unique(system))
    if t.orphans:
        metadata["orphan_results"] = t.orphans
    langfuse = [{k: v for k, v in (("name", i.name), ("session_id", i.session_id), ("user_id", i.user_id), ("tags", i.tags)) if v} for i in conversation.infos]
    if any(langfuse):
        metadata["langfuse"] = langfuse
    turns = [{**turn, "steps": [s.as_dict() for s in turn["steps"]]} for turn in t.turns]
    unrecorded = any(s.arguments is None for s in t.steps) or not all(turn["answer_recorded"] for turn in t.turns)
    data = {
        "task_id": task_id,
        "trajectory_id": trajectory_id,
        "agent": agent,
        "turns": turns,
        "token_usage": _usage(chat_spans),
        "metadata": metadata,
        "external_labels": _labels(conversation),
        "not_recorded": NOT_RECORDED if unrecorded else None,
    }
    try:
        return Trajectory.model_validate(data)
    except ValidationError as err:
        raise validation_error(err, note="converted trajectory is invalid") from None


# ---------------------------------------------------------------- the bundle


def task_source(conversation: _Conversation) -> str:
    """Where the conversation's task id was read, as a user names it."""
    if conversation.task is not None:
        return conversation.task.source
    if conversation.conversation_id is not None:
        found = conversation_id(conversation.spans, conversation.infos[0] if conversation.infos else None)
        return found.source if found is not None else "the conversation id"
    return "the trace id"


def _group(spans: list[Span], infos: dict[str, TraceInfo], task_key: str | None) -> list[_Conversation]:
    """Traces of one conversation form one trajectory. A run is one task's run: when the traces of
    a conversation name different tasks, each task's traces are a trajectory of their own (traces
    naming none then form one more, whose task id is the conversation's)."""
    by_trace: dict[str, list[Span]] = {}
    for span in spans:
        by_trace.setdefault(span.trace_id, []).append(span)

    def first_seen(spans: list[Span]) -> tuple[float, int]:
        return min((s.start for s in spans if s.start is not None), default=float("inf")), min(s.order for s in spans)

    traces = sorted(by_trace, key=lambda tid: first_seen(by_trace[tid]))
    by_conversation: dict[str, list[tuple[str, str | None, Found | None]]] = {}
    for trace_id in traces:
        info = infos.get(trace_id)
        found = conversation_id(by_trace[trace_id], info)
        conv = found.value if found is not None else None
        task = named_task(by_trace[trace_id], [info] if info is not None else [], task_key)
        by_conversation.setdefault(f"conversation:{conv}" if conv else f"trace:{trace_id}", []).append((trace_id, conv, task))
    groups: dict[str, _Conversation] = {}
    for key, members in by_conversation.items():
        named = {task.value for _, _, task in members if task is not None}
        for trace_id, conv, task in members:
            own = key if len(named) <= 1 else f"{key} task:{task.value if task is not None else ''}"
            group = groups.get(own)
            if group is None:
                group = groups[own] = _Conversation(own, [], [], [], conv, None)
            group.task = group.task or task
            group.trace_ids.append(trace_id)
            group.spans.extend(by_trace[trace_id])
            info = infos.get(trace_id)
            if info is not None:
                group.infos.append(info)
    return sorted(groups.values(), key=lambda g: first_seen(g.spans))


def _read(path: str, limits: Limits) -> Bundle:
    return Bundle(tasks=None, items=_items(path, limits, None))


def _read_keyed(path: str, limits: Limits, task_key: str) -> Bundle:
    return Bundle(tasks=None, items=_items(path, limits, task_key))


def _items(path: str, limits: Limits, task_key: str | None) -> Iterator[Loaded]:
    spans: list[Span] = []
    infos: dict[str, TraceInfo] = {}
    errors: list[Loaded] = []
    for raw in read_items(path, limits):
        source = SourceRef(file=path, line=raw.line, item=raw.index)
        if raw.error is not None:
            errors.append(Loaded(source=source, trajectory=None, error=raw.error, task_id=None, trajectory_id=default_trajectory_id(path, raw.line, raw.nth)))
            continue
        try:
            item_spans, item_infos = spans_of_item(raw.value, raw.line, len(spans))
        except SpanFormatError as err:
            problem = InputErrorInfo(kind="invalid_field", message=str(err), file=path, line=raw.line, field=err.field)
            errors.append(Loaded(source=source, trajectory=None, error=problem, task_id=None, trajectory_id=default_trajectory_id(path, raw.line, raw.nth)))
            continue
        except DELIBERATE:
            raise
        except Exception as exc:  # a shape the span reader did not foresee: this item's error row, not the run's
            problem = unforeseen(exc, "otel").info(path, raw.line)
            errors.append(Loaded(source=source, trajectory=None, error=problem, task_id=None, trajectory_id=default_trajectory_id(path, raw.line, raw.nth)))
            continue
        spans.extend(item_spans)
        for trace_info in item_infos:
            infos.setdefault(trace_info.trace_id, trace_info)
    yield from errors
    seen: dict[tuple[str, str], int | None] = {}
    for index, conversation in enumerate(_group(spans, infos, task_key)):
        line = min((s.line for s in conversation.spans if s.line is not None), default=None)
        ctx = ItemContext(file=path, line=line, default_trajectory_id=conversation.trace_ids[0])
        source = SourceRef(file=path, line=line, item=index)
        carried = "; ".join(present(conversation.spans, conversation.infos)) or "nothing that could be an id"
        if task_key is not None and conversation.task is None:
            error = InputErrorInfo(
                kind="unknown_task",
                message=f"no span of this trace carries {task_key!r} (--task-key) as an attribute, a metadata key or a tag; the spans carry {carried}",
                file=path,
                line=line,
                field=task_key,
            )
            yield Loaded(source=source, trajectory=None, error=error, task_id=None, trajectory_id=conversation.conversation_id or conversation.trace_ids[0])
            continue
        try:
            trajectory = build_trajectory(conversation, ctx)
        except ItemError as err:
            error = err.info(path, line)
            yield Loaded(source=source, trajectory=None, error=error, task_id=None, trajectory_id=conversation.conversation_id or conversation.trace_ids[0])
            continue
        key = (trajectory.task_id, trajectory.trajectory_id)
        if key in seen:
            error = InputErrorInfo(
                kind="duplicate_id",
                message=f"trajectory {trajectory.trajectory_id!r} of task {trajectory.task_id!r} was already built from the spans at line {seen[key]}",
                file=path,
                line=line,
                field="trajectory_judge.trajectory_id",
            )
            yield Loaded(source=source, trajectory=None, error=error, task_id=trajectory.task_id, trajectory_id=trajectory.trajectory_id)
            continue
        seen[key] = line
        note = (
            f"the task id was read from {task_source(conversation)}; the spans carry {carried}; name the one that holds your task ids with --task-key ATTRIBUTE"
        )
        yield Loaded(
            source=source,
            trajectory=trajectory,
            error=None,
            task_id=trajectory.task_id,
            trajectory_id=trajectory.trajectory_id,
            warnings=ctx.warnings,
            task_id_note=note,
        )


BUNDLE = BundleFormat(
    name="otel",
    description="OpenTelemetry GenAI traces: OTLP JSON / JSONL exports, Langfuse trace exports; one trajectory per conversation (or trace)",
    sniff=_sniff,
    read=_read,
    keyed_read=_read_keyed,
)

__all__ = ["BUNDLE", "build_trajectory"]
