"""Inspect AI eval logs: ``.eval`` zip archives (deflate or, as current Inspect writes them, zstd
members: ``_archive``) and ``.json`` logs (log format versions 1 to 3).

``.eval``: ``header.json`` (or, for a log still running, ``_journal/start.json``; very old logs:
``start.json`` + ``results.json``) and one member per sample and epoch, ``samples/<id>_epoch_<n>.json``.
``.json``: one object ``{version, status, eval, plan, results, stats, samples[]}`` with the same samples.
Version 3 logs store model-event inputs once, in ``message_pool`` (``input_refs`` point into it);
the sample's own ``messages`` are complete, so the pool is not needed. Strings replaced by
``attachment://<hash>`` (v2 condensing; ``tc://`` before it) are resolved from ``attachments``.
Chunked samples (``samples/<id>_epoch_<n>/sample.json``) are reported as ``unsupported``.

Tasks (one per sample id):
| Inspect | ours |
| sample ``id`` | task_id |
| ``input`` (a string, or the text of its user messages) | the one turn's query |
| ``target`` (a list = alternatives; ``""`` / ``[]`` = none) | gold answers |
| tools offered in the sample's model events (else the plan's ``use_tools`` names) | tools |
| ``choices``, ``metadata``, ``setup``, ``sandbox``, ``files``; the eval's task and model | metadata.tags["inspect"] |

Trajectories (one per sample and epoch): trajectory_id = ``"<id>:<epoch>"``, agent = the eval's model.
A user message with text starts a turn (one carrying a ``tool_call_id`` is a tool's payload, kept in
metadata); assistant ``tool_calls`` are steps (``parse_error`` -> a failed step), answered by ``tool``
messages; provider-side tool uses (``tool_use`` content parts) are steps with their own result.
``error: {type, message}`` on a tool message fails the step with that message, except ``approval``
(the call was refused: ``blocked``) and ``output_limit`` (the tool ran; only its output was cut:
recorded in ``metadata.truncated_outputs``). Reasoning parts and ``<think>`` blocks are not text the
agent said, nor answers. The answer is ``output.completion``, what Inspect's scorers read (a react
agent's submitted answer is only there); when it differs from the agent's last message it is added
as the agent's last message. Each scorer's value -> external label ``inspect:<scorer>`` (C/I/P/N, numbers,
booleans via ``label_passed``; other values are kept with ``passed`` unknown). A sample ``error``
(``EvalError``) or ``limit`` (``EvalSampleLimit``) did not complete -> ``ended_early`` (``error`` /
``limit``, with the error's first line or the limit's type and value). Other sample fields (those
two too) are kept in metadata, except the event transcript, attachments and message pool (storage
of what the messages already hold).
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import msgspec
from pydantic import ValidationError

from judge import EndedEarly, ExternalLabel, InputErrorInfo, InputWarning, SourceRef, Task, Trajectory, parse_json_text
from pipelines.ingest._archive import Archive, ArchiveError
from pipelines.ingest._base import (
    Bundle,
    BundleFormat,
    ItemContext,
    ItemError,
    Limits,
    Loaded,
    TaskCollector,
    TaskSet,
    as_id,
    expect,
    guarded,
    short,
    validation_error,
)
from pipelines.ingest._chat import TurnBuilder, text_of
from pipelines.ingest._document import DocumentError, Span, read_document
from pipelines.ingest._openai import parse_arguments
from pipelines.ingest._rows import Rows

_SAMPLE_MEMBER = re.compile(r"^samples/(?P<stem>.+)_epoch_(?P<epoch>\d+)\.json$")
_CHUNKED_SHELL = re.compile(r"^samples/(?P<stem>.+)_epoch_(?P<epoch>\d+)/sample\.json$")
_JSON_HEAD = re.compile(r'[\ufeff \t\r\n]*\{\s*"version"\s*:\s*\d+\s*,')  # EvalLog writes its version first
_HEADERS = ("header.json", "_journal/start.json", "start.json")
_ATTACHMENT = ("attachment://", "tc://")
_THINK = re.compile(r"<think([^>]*)>(.*?)</think>", re.DOTALL)  # as Inspect splits reasoning from text
_NOT_KEPT = {"events", "transcript", "attachments", "message_pool", "call_pool"}  # storage of what the messages hold
_MAPPED = {"id", "epoch", "input", "target", "messages", "scores"}


def _sniff(head: bytes, first: dict[str, Any] | None) -> bool:
    if head[:4] == b"PK\x03\x04":
        name = _first_member(head)
        return name is not None and (name in (*_HEADERS, "results.json", "summaries.json", "reductions.json") or name.startswith(("samples/", "_journal/")))
    if first is not None and isinstance(first.get("eval"), dict) and "version" in first and any(k in first for k in ("samples", "plan", "results", "status")):
        return True
    text = head.decode("utf-8", "replace")
    return _JSON_HEAD.match(text) is not None and '"eval"' in text


def _first_member(head: bytes) -> str | None:
    """The name of the first member, from the zip's first local file header."""
    if len(head) < 30:
        return None
    length = int.from_bytes(head[26:28], "little")
    raw = head[30 : 30 + length]
    return raw.decode("utf-8", "replace") if len(raw) == length else None


# ---- attachments --------------------------------------------------------------------------------


class _Attachments:
    """Resolves ``attachment://<key>`` strings from a sample's ``attachments``; a key the sample does
    not hold stays as written, with one warning per key."""

    def __init__(self, table: Any, warn: Callable[[str, str, str | None], None] | None = None, where: str = ""):
        self.table = table if isinstance(table, dict) else {}
        self.warn = warn
        self.where = where
        self.missing: set[str] = set()

    def __call__(self, value: Any) -> Any:
        if isinstance(value, str):
            for prefix in _ATTACHMENT:
                if value.startswith(prefix):
                    key = value[len(prefix) :]
                    found = self.table.get(key)
                    if isinstance(found, str):
                        return found
                    if key not in self.missing and self.warn is not None:
                        self.missing.add(key)
                        self.warn("missing_attachment", f"{value} is not among the sample's attachments; kept as written", self.where or None)
            return value
        if isinstance(value, list):
            return [self(v) for v in value]
        if isinstance(value, dict):
            return {k: self(v) for k, v in value.items()}
        return value


# ---- tasks --------------------------------------------------------------------------------------


class _TaskParts(msgspec.Struct):
    """What one sample id contributes to its task, gathered over its epochs."""

    sample_id: str
    where: SourceRef
    field_prefix: str
    raw: dict[str, Any]  # input, target, choices, metadata, setup, sandbox, files of the first epoch
    tools: dict[str, dict[str, Any]] = msgspec.field(default_factory=dict)
    changed_tools: set[str] = msgspec.field(default_factory=set)  # offered with different definitions (warned once)
    epochs: int = 0


class _Tasks:
    """Collects the parts of every sample's task (pass one), then builds the tasks."""

    def __init__(self, file: str, header: dict[str, Any]):
        self.file = file
        self.header = header
        self.parts: dict[str, _TaskParts] = {}
        self.warnings: list[InputWarning] = []
        self.errors: list[tuple[InputErrorInfo, str | None]] = []

    def warn(self, kind: str, message: str, line: int | None, field_path: str | None) -> None:
        self.warnings.append(InputWarning(kind=kind, message=message, file=self.file, line=line, field=field_path))

    def add_sample(self, sample: Any, where: SourceRef, prefix: str) -> None:
        if not isinstance(sample, dict):
            return  # its row reports it
        sample_id = as_id(sample.get("id"))
        if sample_id is None:
            return
        attachments = _Attachments(sample.get("attachments"))
        parts = self.parts.get(sample_id)
        if parts is None:
            raw = {k: sample.get(k) for k in ("input", "target", "choices", "metadata", "setup", "sandbox", "files") if sample.get(k) is not None}
            parts = self.parts[sample_id] = _TaskParts(sample_id, where, prefix, attachments(raw))
        parts.epochs += 1
        for event_tools in _model_event_tools(sample.get("events")):
            for k, tool in enumerate(event_tools):
                if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
                    continue
                tool = attachments(tool)
                known = parts.tools.setdefault(tool["name"], tool)
                if known != tool and tool["name"] not in parts.changed_tools:
                    parts.changed_tools.add(tool["name"])
                    self.warn(
                        "tool_definition_changed",
                        f"sample {sample_id!r}: tool {tool['name']!r} is offered with different definitions; the first is kept",
                        where.line,
                        f"{prefix}events[].tools[{k}]",
                    )

    def build(self) -> TaskSet:
        collector = TaskCollector()
        for info, task_id in self.errors:
            collector.add_error(info, task_id)
        plan_tools = _plan_tools(self.header.get("plan"))
        for parts in self.parts.values():
            try:
                task = self._task(parts, plan_tools)
            except ItemError as err:
                info = err.info(self.file, parts.where.line)
                collector.add_error(info, parts.sample_id)
                continue
            except ValidationError as err:
                info = validation_error(err, note=f"sample {parts.sample_id!r} converts to an invalid task").info(self.file, parts.where.line)
                collector.add_error(info, parts.sample_id)
                continue
            collector.add(task, parts.where)
        collector.result.warnings.extend(self.warnings)
        status = self.header.get("status")
        if isinstance(status, str) and status != "success":
            collector.result.warnings.append(
                InputWarning(
                    kind="incomplete_log", message=f"the log's status is {status!r}: samples may be missing or unscored", file=self.file, field="status"
                )
            )
        return collector.result

    @guarded
    def _task(self, parts: _TaskParts, plan_tools: list[str]) -> Task:
        raw, prefix = parts.raw, parts.field_prefix
        tools = [{k: v for k, v in t.items() if k in ("name", "description", "parameters")} for t in parts.tools.values()]
        for tool in tools:
            if not isinstance(tool.get("description"), str):
                tool.pop("description", None)
            if not isinstance(tool.get("parameters"), dict):
                tool.pop("parameters", None)
        if not tools:
            tools = [{"name": name} for name in plan_tools]
        eval_spec = _object(self.header.get("eval"))
        tags: dict[str, Any] = {k: v for k, v in raw.items() if k not in ("input", "target")}
        extra_tool_fields = {name: {k: v for k, v in t.items() if k not in ("name", "description", "parameters")} for name, t in parts.tools.items()}
        extra_tool_fields = {k: v for k, v in extra_tool_fields.items() if v}
        if extra_tool_fields:
            tags["tool_options"] = extra_tool_fields
        tags["eval"] = {k: eval_spec[k] for k in ("task", "task_version", "task_id", "run_id", "eval_id", "model", "created") if eval_spec.get(k) is not None}
        turn = {"turn_id": "1", "query": _query(raw.get("input"), f"{prefix}input"), "gold_answers": _golds(raw.get("target"), f"{prefix}target")}
        return Task.model_validate(
            {
                "task_id": parts.sample_id,
                "turns": [turn],
                "tools": tools,
                "metadata": {"domain": as_id(eval_spec.get("task")), "tags": {"inspect": tags}},
            }
        )


def _model_event_tools(events: Any) -> Iterator[list[Any]]:
    """The tool lists offered in the sample's model events (nested ``events`` of older subtask events too)."""
    for event in events if isinstance(events, list) else ():
        if not isinstance(event, dict):
            continue
        if event.get("event") == "model" and isinstance(event.get("tools"), list):
            yield event["tools"]
        if isinstance(event.get("events"), list) and event.get("event") == "subtask":
            yield from _model_event_tools(event["events"])


def _plan_tools(plan: Any) -> list[str]:
    """Tool names the plan's solvers declare (``use_tools(tools=[{name}])``): a fallback without events."""
    names: list[str] = []
    steps = plan.get("steps") if isinstance(plan, dict) else None
    for step in steps if isinstance(steps, list) else ():
        params = step.get("params") if isinstance(step, dict) else None
        tools = params.get("tools") if isinstance(params, dict) else None
        for tool in tools if isinstance(tools, list) else ():
            name = tool.get("name") if isinstance(tool, dict) else None
            if isinstance(name, str) and name not in names:
                names.append(name)
    return names


def _query(value: Any, path: str) -> str:
    if value is None or isinstance(value, str):
        return value or ""
    messages = expect(value, list, path, "input (a string or a list of messages)")
    texts = []
    for i, message in enumerate(messages):
        expect(message, dict, f"{path}[{i}]", "an input message")
        if message.get("role") == "user":
            text = _text(message.get("content"), f"{path}[{i}].content")
            if text:
                texts.append(text)
    return "\n\n".join(texts)


def _golds(target: Any, path: str) -> list[Any] | None:
    """``target`` as gold answers: a string is one, a list is alternatives; empty means no gold."""
    if target is None or target == "" or target == []:
        return None
    if isinstance(target, (str, int, float)) and not isinstance(target, bool):
        return [target]
    items = expect(target, list, path, "target (a string or a list of strings)")
    for i, item in enumerate(items):
        expect(item, (str, int, float), f"{path}[{i}]", "a target")
    golds = [t for t in items if t != ""]
    return golds or None


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(content: Any, path: str) -> str | None:
    return text_of(content, path, text_types=("text",))


# ---- samples ------------------------------------------------------------------------------------


class _Sample:
    """One sample and epoch -> one trajectory (see the module docstring)."""

    def __init__(self, raw: Any, prefix: str, ctx: ItemContext, header: dict[str, Any]):
        self.raw = raw
        self.prefix = prefix
        self.ctx = ctx
        self.header = header
        self.builder = TurnBuilder(ctx)
        self.system: list[str] = []
        self.payloads: list[dict[str, Any]] = []
        self.truncated: list[str] = []

    def convert(self) -> Trajectory:
        raw = expect(self.raw, dict, self.prefix.rstrip(".") or "<root>", "a sample")
        sample_id = as_id(raw.get("id"))
        if sample_id is None:
            raise ItemError("invalid_field", f"a sample needs an id (a string or an integer), got {short(raw.get('id'))}", f"{self.prefix}id")
        epoch = raw.get("epoch", 1)
        if not isinstance(epoch, int) or isinstance(epoch, bool):
            raise ItemError("invalid_field", f"epoch must be an integer, got {short(epoch)}", f"{self.prefix}epoch")
        resolve = _Attachments(raw.get("attachments"), self.ctx.warn, f"{self.prefix}attachments")
        messages = resolve(raw.get("messages"))
        messages = expect(messages, list, f"{self.prefix}messages", "messages") if messages is not None else []
        for j, message in enumerate(messages):
            self.message(message, f"{self.prefix}messages[{j}]")
        if not self.builder.turns:  # no user text and nothing the agent did: the input is the turn's query
            self.builder.start(_query(resolve(raw.get("input")), f"{self.prefix}input"))
        self.completion(resolve(raw.get("output")))
        eval_spec = _object(self.header.get("eval"))
        agent = as_id(eval_spec.get("model"))
        metadata: dict[str, Any] = {k: v for k, v in raw.items() if k not in _MAPPED and k not in _NOT_KEPT and v is not None}
        metadata["epoch"] = epoch
        if raw.get("scores") is not None:
            metadata["scores"] = raw["scores"]
        if self.system:
            metadata["system"] = "\n".join(self.system)
        if self.payloads:
            metadata["tool_payloads"] = self.payloads
        if self.truncated:
            metadata["truncated_outputs"] = self.truncated
        item = {"task_id": sample_id, "trajectory_id": f"{sample_id}:{epoch}", "agent": agent}
        trajectory = self.builder.build(item, self.ctx, _usage(raw.get("model_usage"), agent), metadata)
        update: dict[str, Any] = {"external_labels": _labels(raw.get("scores"), f"{self.prefix}scores")}
        ended = _ended_early(raw.get("error"), raw.get("limit"))
        if ended is not None:
            update["ended_early"] = ended
        return trajectory.model_copy(update=update)

    def completion(self, output: Any) -> None:
        """The answer Inspect's scorers read is ``output.completion``. A react agent's submitted answer
        is only there (its submit call is removed from the messages): when the completion is not the
        last thing the agent said, it is what the agent said last, and the answer."""
        completion = output.get("completion") if isinstance(output, dict) else None
        if not isinstance(completion, str) or not completion.strip():
            return
        said = self.builder.current["agent_messages"]
        if not said or said[-1].strip() != completion.strip():
            self.builder.say(completion)
        self.builder.set_answer(completion)

    def message(self, message: Any, path: str) -> None:
        expect(message, dict, path, "a message")
        role = message.get("role")
        content = message.get("content")
        if role == "system":
            text = _text(content, f"{path}.content")
            if text:
                self.system.append(text)
        elif role == "user":
            text = _text(content, f"{path}.content")
            if message.get("tool_call_id"):  # content a tool returned, delivered as a user message
                self.payloads.append({"tool_call_id": message["tool_call_id"], "text": text, "at": path})
            elif text and text.strip():
                self.builder.start(text)
        elif role == "assistant":
            self.assistant(message, path)
        elif role == "tool":
            self.tool(message, path)
        else:
            raise ItemError("invalid_field", f"unknown role {role!r}; expected system, user, assistant or tool", f"{path}.role")

    def assistant(self, message: dict[str, Any], path: str) -> None:
        self.builder.begin_message()
        content = message.get("content")
        made_calls = False
        if isinstance(content, str):
            text: str | None = _THINK.sub("", content, count=1).strip() if "<think" in content else content
        else:
            text = _text(content, f"{path}.content")
            for k, part in enumerate(content if isinstance(content, list) else ()):
                if isinstance(part, dict) and part.get("type") == "tool_use":
                    self.server_tool_use(part, f"{path}.content[{k}]")
                    made_calls = True
        if text and text.strip():
            self.builder.say(text)
        calls = message.get("tool_calls")
        for k, call in enumerate(expect(calls, list, f"{path}.tool_calls", "tool_calls") if calls is not None else ()):
            cpath = f"{path}.tool_calls[{k}]"
            expect(call, dict, cpath, "a tool call")
            name = call.get("function")
            if not isinstance(name, str) or not name:
                raise ItemError("invalid_field", f"a tool call needs a function name, got {short(name)}", f"{cpath}.function")
            call_id = call.get("id")
            if call_id is not None:
                expect(call_id, str, f"{cpath}.id", "tool call id")
            arguments, error = parse_arguments(call.get("arguments"))
            if call.get("parse_error"):
                error = f"unparseable arguments: {call['parse_error']}"
            self.builder.add_call(name, arguments, call_id or None, cpath, error)
            made_calls = True
        if not made_calls and text and text.strip():
            self.builder.set_answer(text)

    def server_tool_use(self, part: dict[str, Any], path: str) -> None:
        """A tool the provider ran itself (web search, code execution): call and result in one part."""
        name = part.get("name")
        if not isinstance(name, str) or not name:
            raise ItemError("invalid_field", f"a tool_use part needs a name, got {short(name)}", f"{path}.name")
        part_id = part.get("id")
        call_id = part_id if isinstance(part_id, str) and part_id else path
        arguments, error = parse_arguments(part.get("arguments"))
        self.builder.add_call(name, arguments, call_id, path, error)
        failure = part.get("error")
        self.builder.add_result(call_id, parse_json_text(part.get("result")), "error" if failure else "ok", path, "id", error=str(failure) if failure else None)

    def tool(self, message: dict[str, Any], path: str) -> None:
        call_id = message.get("tool_call_id")
        result = parse_json_text(_text(message.get("content"), f"{path}.content"))
        error = message.get("error")
        if error is None and isinstance(message.get("tool_error"), str):  # the field before ToolCallError
            error = {"type": "unknown", "message": message["tool_error"]}
        status, why = "ok", None
        if error is not None:
            expect(error, dict, f"{path}.error", "a tool error")
            kind, text = str(error.get("type", "unknown")), str(error.get("message", ""))
            if kind == "output_limit":
                self.truncated.append(path)
            else:
                status, why = ("blocked" if kind == "approval" else "error"), f"{kind}: {text}" if text else kind
        if not isinstance(call_id, str) or not call_id:
            self.builder.orphans.append({"call_id": call_id, "function": message.get("function"), "result": result, "at": path})
            self.ctx.warn("orphan_result", "a tool message without a tool_call_id answers no call; kept in metadata.orphan_results", f"{path}.tool_call_id")
            return
        self.builder.add_result(call_id, result, status, path, "tool_call_id", error=why)


def _ended_early(error: Any, limit: Any) -> EndedEarly | None:
    """The sample did not complete: ``error`` (an ``EvalError`` ``{message, traceback}``: a solver
    or the sandbox failed) or ``limit`` (an ``EvalSampleLimit`` ``{type, limit}``: the message,
    token, time, working-time, context, cost, operator or custom limit halted it). The error wins
    when both are set; the limit is then named in the reason. ``error_retries`` (errors of attempts
    retried before this one) say nothing of this attempt."""
    if not error and not limit:
        return None
    halted = []
    if limit:
        kind, value = (limit.get("type"), limit.get("limit")) if isinstance(limit, dict) else (limit, None)
        halted.append(f"the sample hit its {kind} limit" + (f" ({value:g})" if isinstance(value, (int, float)) and not isinstance(value, bool) else ""))
    if error:
        message = error.get("message") if isinstance(error, dict) else error
        if isinstance(message, str):
            text = message.strip().splitlines()[0] if message.strip() else "no message recorded"
        else:
            text = short(message, 300) if message is not None else "no message recorded"
        halted.insert(0, f"the sample stopped with an error: {text[:300]}")
    return EndedEarly(kind="error" if error else "limit", reason="Inspect: " + "; ".join(halted))


def _usage(model_usage: Any, agent: str | None) -> dict[str, Any] | None:
    """The agent model's token usage (scorer or tool models of the sample are not the agent's)."""
    if not isinstance(model_usage, dict) or not model_usage:
        return None
    entries = [model_usage[agent]] if agent in model_usage else list(model_usage.values())
    totals: dict[str, Any] = {}
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        for src, dst in (("input_tokens", "input_tokens"), ("output_tokens", "output_tokens"), ("total_cost", "cost_usd")):
            value = entry.get(src)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
                totals[dst] = totals.get(dst, 0) + value
    return totals or None


def _labels(scores: Any, path: str) -> list[ExternalLabel]:
    if scores is None:
        return []
    labels = []
    for name, score in expect(scores, dict, path, "scores").items():
        if not isinstance(score, dict):
            labels.append(ExternalLabel(source=f"inspect:{name}", value=score))
            continue
        reason = []
        if score.get("answer") is not None:
            reason.append(f"answer {short(score['answer'], 200)}")
        if isinstance(score.get("explanation"), str) and score["explanation"].strip():
            reason.append(short(score["explanation"], 400).strip("'\""))
        labels.append(ExternalLabel(source=f"inspect:{name}", value=score.get("value"), reason="; ".join(reason) or None))
    return labels


# ---- the two containers -------------------------------------------------------------------------


class _SampleRef(msgspec.Struct):
    """Where one sample lies: a member of an archive, or an item of a JSON log's ``samples``."""

    prefix: str  # field path prefix of the sample's fields
    line: int | None
    where: str  # for messages about duplicates
    load: Callable[[], Any]  # the sample's value, or an InputErrorInfo


def _read(path: str, limits: Limits) -> Bundle:
    """A zip archive by its first bytes as ``_sniff`` tells it (a cut one has no central directory,
    which ``zipfile.is_zipfile`` looks for: read as JSON, it was an encoding error), else JSON."""
    with open(path, "rb") as handle:
        zipped = handle.read(4) == b"PK\x03\x04"
    if zipped or zipfile.is_zipfile(path):
        return _read_archive(path, limits)
    return _read_json(path, limits)


def _read_json(path: str, limits: Limits) -> Bundle:
    tasks = _Tasks(path, {})  # pass one runs inside the scan: each sample is seen once as it is located

    def visit(_name: str, span: Span, sample: Any) -> None:
        tasks.add_sample(sample, SourceRef(file=path, line=span.line, item=span.index), f"samples[{span.index}].")

    try:
        doc = read_document(path, limits, arrays=("samples",), visit=visit)
    except DocumentError as err:
        return Bundle(tasks=TaskSet(), items=iter([Rows(path).error(err.info, line=err.info.line, task_id=None, trajectory_id=None)]))
    header = dict(doc.members)
    tasks.header = header
    refs = [
        _SampleRef(prefix=f"samples[{span.index}].", line=span.line, where=f"{path}:{span.line}", load=partial(doc.decode, "samples", span))
        for span in doc.spans.get("samples", ())
    ]
    problems: list[InputErrorInfo] = []
    if doc.stopped is not None:
        problems.append(doc.stopped)
    if not doc.spans.get("samples") and doc.stopped is None:
        problems.append(
            InputErrorInfo(kind="no_samples", message="the log holds no samples (was it written with log_samples off?)", file=path, field="samples")
        )
    return Bundle(tasks=tasks.build(), items=_rows(path, refs, header, problems))


def _read_archive(path: str, limits: Limits) -> Bundle:
    try:
        archive = Archive(path, limits)
    except ArchiveError as err:
        return Bundle(tasks=TaskSet(), items=iter([Rows(path).error(err.info, line=None, task_id=None, trajectory_id=None)]))
    header, problems = _archive_header(archive)
    refs: list[_SampleRef] = []
    for name in archive.names:
        if _SAMPLE_MEMBER.match(name):
            refs.append(_SampleRef(prefix=f"{name}:", line=None, where=name, load=partial(archive.read_json, name)))
        elif _CHUNKED_SHELL.match(name):
            problems.append(
                InputErrorInfo(
                    kind="unsupported",
                    message="a chunked sample (its messages in separate members) is not supported; convert the log to the monolith layout with Inspect",
                    file=path,
                    field=name,
                )
            )
    if not refs and not problems:
        problems.append(InputErrorInfo(kind="no_samples", message="the archive holds no samples/<id>_epoch_<n>.json member", file=path, field="samples/"))
    tasks = _Tasks(path, header)
    for index, ref in enumerate(refs):  # pass one, the tasks: a quick reading; the rows read each sample strictly
        value = archive.read_json(ref.where, strict=False)
        if not isinstance(value, InputErrorInfo):
            tasks.add_sample(value, SourceRef(file=path, line=None, item=index), ref.prefix)
    return Bundle(tasks=tasks.build(), items=_closing(archive, _rows(path, refs, header, problems)))


def _archive_header(archive: Archive) -> tuple[dict[str, Any], list[InputErrorInfo]]:
    """The log header: ``header.json`` when the eval finished, else the journal's start record."""
    for name in _HEADERS:
        if name in archive:
            value = archive.read_json(name)
            if isinstance(value, InputErrorInfo):
                return {}, [value]
            if not isinstance(value, dict):
                return {}, [InputErrorInfo(kind="invalid_field", message=f"{name} must hold a JSON object", file=archive.path, field=name)]
            header = dict(value)
            if name != "header.json":
                header.setdefault("status", "started")
                if "results.json" in archive:  # the oldest layout: start.json + results.json
                    results = archive.read_json("results.json")
                    if isinstance(results, dict):
                        header.update(results)
            return header, []
    return {}, [InputErrorInfo(kind="invalid_field", message=f"the archive has none of {', '.join(_HEADERS)}: not an Inspect log", file=archive.path)]


def _closing(archive: Archive, rows: Iterator[Loaded]) -> Iterator[Loaded]:
    try:
        yield from rows
    finally:
        archive.close()


def _rows(path: str, refs: list[_SampleRef], header: dict[str, Any], problems: list[InputErrorInfo]) -> Iterator[Loaded]:
    rows = Rows(path)
    for info in problems:
        yield rows.error(info, line=info.line, task_id=None, trajectory_id=None)
    for ref in refs:
        value = ref.load()
        if isinstance(value, InputErrorInfo):
            yield rows.error(value, line=ref.line, task_id=None, trajectory_id=None)
            continue
        sample_id = as_id(value.get("id")) if isinstance(value, dict) else None
        epoch = value.get("epoch", 1) if isinstance(value, dict) else None
        trajectory_id = f"{sample_id}:{epoch}" if sample_id is not None else None

        def convert(ctx: ItemContext, value: Any = value, ref: _SampleRef = ref) -> Trajectory:
            return _Sample(value, ref.prefix, ctx, header).convert()

        yield rows.convert(convert, line=ref.line, task_id=sample_id, trajectory_id=trajectory_id, where=ref.where)


BUNDLE = BundleFormat(
    name="inspect",
    description="Inspect AI eval log: .eval archive or .json log (tasks come from the log)",
    sniff=_sniff,
    read=_read,
)

__all__ = ["BUNDLE"]
