"""Spans as the files people export them, read into one shape (``Span``) for the OTel GenAI reader.

Accepted, item by item (a file may be JSONL, one JSON array, or one object; items may mix):

- **OTLP JSON** (``TracesData`` / ``ExportTraceServiceRequest``, as the collector's file exporter
  writes it, one export per line): ``resourceSpans[].scopeSpans[].spans[]`` (also the older
  ``instrumentationLibrarySpans`` and snake_case keys), attributes as ``[{key, value: AnyValue}]``
  with ``stringValue | intValue (JSON string or number) | doubleValue | boolValue | arrayValue |
  kvlistValue | bytesValue``, times in ``*UnixNano``, ``status.code`` 0/1/2 or ``STATUS_CODE_*``;
- **Langfuse trace exports** (what the Langfuse UI / public API download gives): ``{trace,
  observations}`` or a trace object holding ``observations``. Each observation is a span; the
  original OTel attributes are in ``metadata.attributes`` (``metadata``, ``input`` and ``output``
  are often JSON *strings*); Langfuse moves ``gen_ai.input/output.messages`` into ``input`` /
  ``output`` and keeps its own ``type`` (GENERATION, TOOL, AGENT, SPAN), ``level`` (ERROR) and
  usage; the trace's ``scores`` are kept for labels;
- **console-exporter spans** (OpenTelemetry Python's ``ConsoleSpanExporter``):
  ``{name, context: {trace_id, span_id}, parent_id, attributes: {...}, status: {status_code}}``.

Invariant: values are decoded, never executed; an item that is none of these is reported (with
file, line and field) by the caller, never dropped.
"""

from __future__ import annotations

import ast
import json
from datetime import datetime
from typing import Any

import msgspec

from judge import BadInputError
from pipelines.ingest._base import short

__all__ = ["Span", "SpanEvent", "TraceInfo", "parse_json_value", "spans_of_item"]

_MAX_LITERAL = 1 << 20  # Python-literal text (LangChain dumps) longer than this stays text


class SpanEvent(msgspec.Struct):
    name: str
    attributes: dict[str, Any]


class Span(msgspec.Struct):
    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start: float | None  # seconds since the epoch
    end: float | None
    attributes: dict[str, Any]
    resource: dict[str, Any] = msgspec.field(default_factory=dict)
    status: str = "unset"  # ok | error | unset
    status_message: str | None = None
    events: list[SpanEvent] = msgspec.field(default_factory=list)
    observation_type: str | None = None  # Langfuse: GENERATION, TOOL, AGENT, SPAN, EVENT...
    input: Any = None  # Langfuse: the observation's input (messages, or a tool's arguments)
    output: Any = None
    usage: dict[str, Any] | None = None  # Langfuse usageDetails
    cost: float | None = None  # Langfuse totalCost (USD)
    model: str | None = None
    line: int | None = None  # where the span was read
    path: str = ""  # its field path in that item
    order: int = 0  # position in the file (a stable tie-break)


class TraceInfo(msgspec.Struct):
    """What an export says about a whole trace besides its spans (Langfuse: scores, metadata)."""

    trace_id: str
    name: str | None = None
    session_id: str | None = None
    user_id: str | None = None
    tags: list[Any] = msgspec.field(default_factory=list)
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
    scores: list[dict[str, Any]] = msgspec.field(default_factory=list)
    line: int | None = None


class SpanFormatError(BadInputError):
    def __init__(self, message: str, field: str):
        super().__init__(message)
        self.field = field


def parse_json_value(value: Any) -> Any:
    """A JSON (or Python-literal) *string* as its structure; anything else unchanged.

    Exports store structured attributes as JSON text, sometimes twice over (Langfuse), and
    LangChain dumps as Python reprs; ``ast.literal_eval`` reads literals only, nothing runs."""
    for _ in range(3):
        if not isinstance(value, str):
            return value
        text = value.strip()
        if not text or text[0] not in '[{"':
            return value
        try:
            value = json.loads(text)
            continue
        except ValueError:
            pass
        except RecursionError:
            return value
        if text[0] in "[{" and len(text) <= _MAX_LITERAL:
            try:
                return ast.literal_eval(text)
            except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
                return value
        return value
    return value


# ---------------------------------------------------------------- dispatch


def spans_of_item(item: Any, line: int | None, first_order: int) -> tuple[list[Span], list[TraceInfo]]:
    """The spans of one file item; ``SpanFormatError`` (naming the field) when it holds none."""
    if not isinstance(item, dict):
        raise SpanFormatError(f"expected an object (an OTLP export, a Langfuse trace or a span), got {type(item).__name__}", "<root>")
    resource_spans = _get(item, "resourceSpans", "resource_spans")
    if resource_spans is not None:
        return _otlp(resource_spans, line, first_order), []
    if isinstance(item.get("observations"), list) or isinstance(item.get("trace"), dict):
        return _langfuse(item, line, first_order)
    if isinstance(item.get("context"), dict) and "name" in item:
        return [_console_span(item, line, first_order, "")], []
    raise SpanFormatError(f"not an OTLP export (resourceSpans), a Langfuse trace (trace, observations) or a span; keys {sorted(item)[:10]}", "<root>")


def _get(obj: dict[str, Any], *names: str) -> Any:
    for name in names:
        if name in obj:
            return obj[name]
    return None


# ---------------------------------------------------------------- OTLP JSON


def _array(value: Any, path: str) -> list[Any]:
    """A container the export may leave out (None: empty); any other non-array is the item's error."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise SpanFormatError(f"{_name(path)} must be an array, got {short(value)}", path)
    return value


def _object(value: Any, path: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise SpanFormatError(f"{_name(path)} must be an object, got {short(value)}", path)
    return value


def _name(path: str) -> str:
    """What a field path names, for the message: ``spans`` for ``...scopeSpans[0].spans``, ``a
    scopeSpans entry`` for ``...scopeSpans[0]``."""
    name = path.rpartition(".")[2].partition("[")[0] or path
    return f"a {name} entry" if path.endswith("]") else name


def any_value(value: Any, path: str = "value") -> Any:
    """An OTLP ``AnyValue`` as a plain value (JSON text stays text: the reader decides)."""
    if not isinstance(value, dict):
        return value
    for key, convert in (
        ("stringValue", str),
        ("string_value", str),
        ("boolValue", bool),
        ("bool_value", bool),
        ("intValue", _int),
        ("int_value", _int),
        ("doubleValue", _float),
        ("double_value", _float),
        ("bytesValue", str),
        ("bytes_value", str),
    ):
        if key in value:
            return convert(value[key])
    array = _get(value, "arrayValue", "array_value")
    if isinstance(array, dict):
        where = f"{path}.arrayValue.values"
        return [any_value(v, f"{where}[{i}]") for i, v in enumerate(_array(array.get("values"), where))]
    kvlist = _get(value, "kvlistValue", "kvlist_value")
    if isinstance(kvlist, dict):
        return attribute_map(kvlist.get("values"), f"{path}.kvlistValue.values")
    return None  # an empty AnyValue


def _int(value: Any) -> Any:
    try:
        return int(value)
    except (TypeError, ValueError):
        return value


def _float(value: Any) -> Any:
    try:
        return float(value)
    except (TypeError, ValueError):
        return value


def attribute_map(attributes: Any, path: str = "attributes") -> dict[str, Any]:
    """``[{key, value: AnyValue}]`` (OTLP) or an already flat object, as a flat dict."""
    if isinstance(attributes, dict):
        return dict(attributes)
    out: dict[str, Any] = {}
    for i, entry in enumerate(_array(attributes, path)):
        if isinstance(entry, dict) and isinstance(entry.get("key"), str):
            out[entry["key"]] = any_value(entry.get("value"), f"{path}[{i}].value")
    return out


def _nanos(value: Any) -> float | None:
    try:
        return int(value) / 1e9 if value not in (None, "", 0, "0") else None
    except (TypeError, ValueError):
        return None


_STATUS = {0: "unset", 1: "ok", 2: "error", "STATUS_CODE_UNSET": "unset", "STATUS_CODE_OK": "ok", "STATUS_CODE_ERROR": "error"}


def _status(status: Any) -> tuple[str, str | None]:
    if not isinstance(status, dict):
        return "unset", None
    code = _get(status, "code", "status_code")
    text = str(code).upper()
    name = (
        (_STATUS.get(code) if isinstance(code, (int, str)) else None)
        or _STATUS.get(text)
        or {"OK": "ok", "ERROR": "error", "UNSET": "unset", "2": "error", "1": "ok"}.get(text, "unset")
    )
    message = _get(status, "message", "description")
    return name, message if isinstance(message, str) and message else None


def _otlp(resource_spans: Any, line: int | None, first_order: int) -> list[Span]:
    if not isinstance(resource_spans, list):
        raise SpanFormatError("resourceSpans must be an array", "resourceSpans")
    spans: list[Span] = []
    for r, rs in enumerate(resource_spans):
        if not isinstance(rs, dict):
            raise SpanFormatError("a resourceSpans entry must be an object", f"resourceSpans[{r}]")
        here = f"resourceSpans[{r}]"
        resource = attribute_map(_object(rs.get("resource"), f"{here}.resource").get("attributes"), f"{here}.resource.attributes")
        scope_key = next((k for k in ("scopeSpans", "scope_spans", "instrumentationLibrarySpans") if k in rs), "scopeSpans")
        for s, ss in enumerate(_array(rs.get(scope_key), f"{here}.{scope_key}")):
            scope = f"{here}.{scope_key}[{s}]"
            for i, raw in enumerate(_array(_object(ss, scope).get("spans"), f"{scope}.spans")):
                spans.append(_otlp_span(raw, resource, line, first_order + len(spans), f"{scope}.spans[{i}]"))
    return spans


def _hex_id(value: Any) -> str | None:
    if isinstance(value, str) and value.strip():
        text = value.strip().lower()
        return text[2:] if text.startswith("0x") else text
    return None


def _otlp_span(raw: Any, resource: dict[str, Any], line: int | None, order: int, path: str) -> Span:
    if not isinstance(raw, dict):
        raise SpanFormatError("a span must be an object", path)
    trace_id = _hex_id(_get(raw, "traceId", "trace_id"))
    span_id = _hex_id(_get(raw, "spanId", "span_id"))
    if trace_id is None or span_id is None:
        missing = "traceId" if trace_id is None else "spanId"
        raise SpanFormatError(f"a span needs its {missing}", f"{path}.{missing}")
    status, message = _status(raw.get("status"))
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_id=_hex_id(_get(raw, "parentSpanId", "parent_span_id")),
        name=str(raw.get("name") or ""),
        start=_nanos(_get(raw, "startTimeUnixNano", "start_time_unix_nano")),
        end=_nanos(_get(raw, "endTimeUnixNano", "end_time_unix_nano")),
        attributes=attribute_map(raw.get("attributes"), f"{path}.attributes"),
        resource=resource,
        status=status,
        status_message=message,
        events=_events(raw.get("events"), path),
        line=line,
        path=path,
        order=order,
    )


def _events(events: Any, path: str) -> list[SpanEvent]:
    where = f"{path}.events" if path else "events"
    return [
        SpanEvent(str(e.get("name") or ""), attribute_map(e.get("attributes"), f"{where}[{i}].attributes"))
        for i, e in enumerate(_array(events, where))
        if isinstance(e, dict)
    ]


def _console_span(raw: dict[str, Any], line: int | None, order: int, path: str) -> Span:
    context = raw["context"]
    trace_id, span_id = _hex_id(context.get("trace_id")), _hex_id(context.get("span_id"))
    if trace_id is None or span_id is None:
        raise SpanFormatError("a span needs context.trace_id and context.span_id", f"{path}context")
    status, message = _status(raw.get("status"))
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_id=_hex_id(raw.get("parent_id")),
        name=str(raw.get("name") or ""),
        start=_iso(raw.get("start_time")),
        end=_iso(raw.get("end_time")),
        attributes=attribute_map(raw.get("attributes")),
        resource=attribute_map(_object(raw.get("resource"), "resource").get("attributes"), "resource.attributes"),
        status=status,
        status_message=message,
        events=_events(raw.get("events"), path),
        line=line,
        path=path or "<root>",
        order=order,
    )


def _iso(value: Any) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


# ---------------------------------------------------------------- Langfuse


def _langfuse(item: dict[str, Any], line: int | None, first_order: int) -> tuple[list[Span], list[TraceInfo]]:
    trace: dict[str, Any] = item["trace"] if isinstance(item.get("trace"), dict) else item
    observations = item.get("observations") if isinstance(item.get("observations"), list) else trace.get("observations")
    prefix = "observations" if isinstance(item.get("observations"), list) else "trace.observations"
    if not isinstance(observations, list):
        raise SpanFormatError("a Langfuse trace export needs its observations", prefix)
    trace_id = trace.get("id") if isinstance(trace.get("id"), str) else None
    metadata = parse_json_value(trace.get("metadata"))
    info = None
    if trace_id:
        info = TraceInfo(
            trace_id=trace_id.lower(),
            name=trace.get("name") if isinstance(trace.get("name"), str) else None,
            session_id=trace.get("sessionId") if isinstance(trace.get("sessionId"), str) else None,
            user_id=trace.get("userId") if isinstance(trace.get("userId"), str) else None,
            tags=list(trace.get("tags") or []) if isinstance(trace.get("tags"), list) else [],
            metadata=metadata if isinstance(metadata, dict) else {},
            scores=[s for s in trace.get("scores") or [] if isinstance(s, dict)] if isinstance(trace.get("scores"), list) else [],
            line=line,
        )
    spans = [_observation(o, trace_id, line, first_order + i, f"{prefix}[{i}]") for i, o in enumerate(observations)]
    return spans, [info] if info else []


def _observation(raw: Any, trace_id: str | None, line: int | None, order: int, path: str) -> Span:
    if not isinstance(raw, dict):
        raise SpanFormatError("an observation must be an object", path)
    tid = _hex_id(raw.get("traceId")) or _hex_id(trace_id)
    sid = _hex_id(raw.get("id"))
    if tid is None or sid is None:
        raise SpanFormatError(f"an observation needs its {'traceId' if tid is None else 'id'}", f"{path}.{'traceId' if tid is None else 'id'}")
    metadata = parse_json_value(raw.get("metadata"))
    metadata = metadata if isinstance(metadata, dict) else {}
    attributes = attribute_map(metadata.get("attributes")) if isinstance(metadata.get("attributes"), (dict, list)) else {}
    level = raw.get("level")
    usage = raw.get("usageDetails") if isinstance(raw.get("usageDetails"), dict) else None
    cost = raw.get("totalCost") if isinstance(raw.get("totalCost"), (int, float)) and not isinstance(raw.get("totalCost"), bool) else None
    return Span(
        trace_id=tid,
        span_id=sid,
        parent_id=_hex_id(raw.get("parentObservationId")),
        name=str(raw.get("name") or ""),
        start=_iso(raw.get("startTime")),
        end=_iso(raw.get("endTime")),
        attributes=attributes,
        resource=attribute_map(metadata.get("resourceAttributes")) if isinstance(metadata.get("resourceAttributes"), (dict, list)) else {},
        status="error" if level == "ERROR" else "unset",
        status_message=raw.get("statusMessage") if isinstance(raw.get("statusMessage"), str) else None,
        observation_type=raw.get("type") if isinstance(raw.get("type"), str) else None,
        input=parse_json_value(raw.get("input")),
        output=parse_json_value(raw.get("output")),
        usage=usage,
        cost=cost,
        model=raw.get("model") if isinstance(raw.get("model"), str) else None,
        line=line,
        path=path,
        order=order,
    )
