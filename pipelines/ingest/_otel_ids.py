"""Which task, and which conversation, the spans of a trace belong to: what tracing conventions carry.

Task id, the first found (spans root first, each span's attributes then its resource's, then the
Langfuse trace's own data):

1. with ``--task-key NAME``, that and nothing else: a span or resource attribute ``NAME``, else key
   ``NAME`` of the spans' ``metadata`` object (OpenInference ``using_metadata``; Langfuse trace
   metadata), else a tag ``NAME:<id>`` or ``NAME=<id>`` (OpenInference ``tag.tags``; Langfuse
   tags). ``metadata.NAME`` names a metadata key only. None of them: the trajectory is an
   ``unknown_task`` error saying what the spans carry;
2. an attribute ``trajectory_judge.task_id``, ``task.id`` or ``task_id``;
3. a ``metadata`` key ``task_id``, ``task`` or ``example_id`` (in that order);
4. a tag ``task_id:<id>``, ``task:<id>`` or ``example_id:<id>`` (``=`` for ``:`` too);
5. the conversation id: ``gen_ai.conversation.id`` (OTel GenAI), ``session.id`` (OpenInference
   ``using_session``), Langfuse's ``sessionId``;
6. the trace id.

The ids 1 to 4 name a task; 5 and 6 name a run, used as the task id only for want of one.
Conversation: traces that share a conversation id (5) form one trajectory, unless they name
different tasks (1 to 4): a run is one task's run, so those stay apart.

``present`` lists what the spans carry that could be an id (short text attributes, metadata keys,
key:value tags), for the message of a trajectory whose task id matches no task.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import msgspec

from pipelines.ingest._otel_spans import Span, TraceInfo, parse_json_value

__all__ = ["CONVERSATION_KEYS", "Found", "conversation_id", "named_task", "present", "root_first"]

TASK_ATTRIBUTES = ("trajectory_judge.task_id", "task.id", "task_id")
TASK_NAMES = ("task_id", "task", "example_id")  # metadata keys and tag keys that name the task
CONVERSATION_KEYS = ("gen_ai.conversation.id", "session.id")
_METADATA, _TAGS = "metadata", "tag.tags"  # OpenInference: a JSON object as text, a list of strings
_MAX_ID = 200  # characters: a longer text attribute is content, not an id
# attributes that are content or measurements, never ids (left out of the list a message shows)
_NOT_IDS = (
    *("telemetry.sdk.", "input.", "output.", "llm.input_messages.", "llm.output_messages.", "gen_ai.input.", "gen_ai.output."),
    *("gen_ai.usage.", "llm.token_count.", "llm.invocation_parameters", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result"),
    *("tool.description", "tool.parameters", "gen_ai.tool.description"),
)
_SHOWN = 30  # attributes listed in a message


class Found(msgspec.Struct, frozen=True):
    value: str
    source: str  # where it was read, as a user names it: "session.id", "metadata.example_id", "tag task_id:"


def _depths(spans: list[Span]) -> dict[str, int]:
    parents = {s.span_id: s.parent_id for s in spans}
    depth: dict[str, int] = {}
    for s in spans:
        d, node, hops = 0, s.parent_id, 0
        while node is not None and node in parents and hops < len(spans):
            d, node, hops = d + 1, parents[node], hops + 1
        depth[s.span_id] = d
    return depth


def root_first(spans: list[Span]) -> list[Span]:
    depth = _depths(spans)
    return sorted(spans, key=lambda s: (depth[s.span_id], s.start if s.start is not None else float("inf"), s.order))


def _text(value: Any) -> str | None:
    if isinstance(value, bool) or value in (None, ""):
        return None
    if isinstance(value, (str, int)):
        return str(value)
    return None


def _sources(spans: list[Span]) -> Iterator[dict[str, Any]]:
    for span in root_first(spans):
        yield span.attributes
        yield span.resource


def _metadata(spans: list[Span], infos: list[TraceInfo]) -> Iterator[dict[str, Any]]:
    for source in _sources(spans):
        value = parse_json_value(source.get(_METADATA)) if _METADATA in source else None
        if isinstance(value, dict):
            yield value
    for info in infos:
        yield info.metadata


def _tags(spans: list[Span], infos: list[TraceInfo]) -> Iterator[str]:
    for source in _sources(spans):
        value = parse_json_value(source.get(_TAGS)) if _TAGS in source else None
        for tag in value if isinstance(value, list) else ():
            if isinstance(tag, str):
                yield tag
    for info in infos:
        yield from (t for t in info.tags if isinstance(t, str))


def _tag_value(tag: str, name: str) -> str | None:
    for sep in (":", "="):
        head, found, value = tag.partition(sep)
        if found and head.strip() == name and value.strip():
            return value.strip()
    return None


def _attribute(spans: list[Span], infos: list[TraceInfo], names: Iterable[str]) -> Found | None:
    for source in _sources(spans):
        for name in names:
            value = _text(source.get(name))
            if value is not None:
                return Found(value, name)
    for info in infos:  # Langfuse keeps the original attributes in the trace metadata
        nested = info.metadata.get("attributes")
        for source in (info.metadata, nested if isinstance(nested, dict) else {}):
            for name in names:
                value = _text(source.get(name))
                if value is not None:
                    return Found(value, name)
    return None


def _in_metadata(spans: list[Span], infos: list[TraceInfo], names: Iterable[str]) -> Found | None:
    for name in names:
        for meta in _metadata(spans, infos):
            value = _text(meta.get(name))
            if value is not None:
                return Found(value, f"metadata.{name}")
    return None


def _in_tags(spans: list[Span], infos: list[TraceInfo], names: Iterable[str]) -> Found | None:
    for name in names:
        for tag in _tags(spans, infos):
            value = _tag_value(tag, name)
            if value is not None:
                return Found(value, f"tag {name}:")
    return None


def named_task(spans: list[Span], infos: list[TraceInfo], task_key: str | None = None) -> Found | None:
    """The task id the spans name (rules 1 to 4 of the module docstring), else None."""
    if task_key is not None:
        if task_key.startswith("metadata."):
            return _in_metadata(spans, infos, [task_key.removeprefix("metadata.")])
        return _attribute(spans, infos, [task_key]) or _in_metadata(spans, infos, [task_key]) or _in_tags(spans, infos, [task_key])
    return _attribute(spans, infos, TASK_ATTRIBUTES) or _in_metadata(spans, infos, TASK_NAMES) or _in_tags(spans, infos, TASK_NAMES)


def conversation_id(spans: list[Span], info: TraceInfo | None) -> Found | None:
    """The conversation the spans belong to (rule 5), else None."""
    found = _attribute(spans, [], CONVERSATION_KEYS)
    if found is None and info is not None and info.session_id:
        found = Found(info.session_id, "sessionId")
    return found


def present(spans: list[Span], infos: list[TraceInfo]) -> list[str]:
    """``name=value`` of everything the spans carry that could be an id, sorted (at most ``_SHOWN``)."""
    seen: dict[str, str] = {}
    for source in _sources(spans):
        for name, raw in source.items():
            value = _text(raw)
            if name in (_METADATA, _TAGS) or value is None or len(value) > _MAX_ID or value[:1] in "{[" or name.startswith(_NOT_IDS):
                continue  # JSON text is a structure, not an id
            seen.setdefault(name, value)
    for meta in _metadata(spans, infos):
        for name, raw in meta.items():
            value = _text(raw)
            if value is not None and len(value) <= _MAX_ID:
                seen.setdefault(f"metadata.{name}", value)
    for tag in _tags(spans, infos):
        head, sep, value = tag.partition(":") if ":" in tag else tag.partition("=")
        if sep and head.strip() and value.strip():
            seen.setdefault(f"tag {head.strip()}:", value.strip())
    shown = [f"{name}={value[:40]!r}" for name, value in sorted(seen.items())]
    return shown[:_SHOWN] + ([f"and {len(shown) - _SHOWN} more"] if len(shown) > _SHOWN else [])
