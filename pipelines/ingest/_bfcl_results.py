"""BFCL result files as ``bfcl generate`` writes them: one ``{"id", "result", ...}`` per line.

Graded against the BFCL questions and possible answers (``--tasks`` + ``--reference``, see
``_bfcl.py``). task_id = trajectory_id = the BFCL id.

- ``result`` is decoded into calls by ``_bfcl_decode`` (Python call syntax, JSON text, or a list
  of ``{name: args}``), never evaluated. Each call is a step with status ``unknown``: BFCL's
  single-turn categories propose calls and never execute them. All calls of one result share
  round 0 (one model message).
- A result that is not a call structure is the model's failure, never an input error: the
  trajectory has no steps and the model's text as its final answer (``metadata.decode_error``
  says why, and a ``bfcl_unparseable_result`` warning counts such rows). A call whose arguments
  cannot be read is a failed step (status ``error``).
- ``input_token_count`` / ``output_token_count`` -> ``token_usage``; every other key (``latency``,
  ``reasoning_content``, ...) is kept in ``metadata`` with the raw ``result``.
- In the relevance categories (``irrelevance``, ``live_irrelevance``, ``live_relevance``), a result
  with a call that cannot be read has no calls at all (BFCL's decoder fails on the whole result, and
  those categories grade only whether it decodes to a call).
- ``agent``: the model folder when the file sits in BFCL's ``result/<model>/...`` layout.
- Multi-turn results (``multi_turn_*``: ``result`` a list per turn of the model's messages) become
  one trajectory turn per BFCL turn (ids ``"0"``, ``"1"``... as BFCL numbers them); each message
  is decoded as BFCL's ``decode_execute`` would, and its calls are steps (``round`` = the message's
  index in the turn). A message that decodes to no call (text, ``[]``) is something the agent said;
  one with a call that cannot be read is not executed by BFCL at all (its decoder drops the whole
  message): it counts as text, and ``metadata.decode_errors`` says why. ``inference_log`` (when
  present) gives each turn's user query (``begin_of_turn_query``) and each call's result as the
  run recorded it (the ``tool`` entries of its step); a step whose recorded results do not line up
  with its calls keeps them unknown (warning ``bfcl_inference_log``). The per-step token counts and
  latencies stay in metadata. Grading replays the calls in BFCL's environments (``pipelines.env``).
- Agentic results (``memory_*``, ``web_search_*``) are ``unsupported``: their environments reach a
  web search backend or a memory store.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from judge import Trajectory
from pipelines.ingest._base import ItemContext, ItemError, TrajectoryFormat, as_id, validation_error
from pipelines.ingest._bfcl import category, relevance_rule
from pipelines.ingest._bfcl_decode import Decoded, decode_result

_AGENTIC_PREFIXES = ("memory", "web_search")


def _sniff(item: dict[str, Any]) -> bool:
    return "id" in item and "result" in item and not any(k in item for k in ("question", "messages", "task_id", "turns", "ground_truth"))


def _ids(item: dict[str, Any], default: str) -> tuple[str | None, str | None]:
    uid = as_id(item.get("id"))
    return uid, uid


def _agent_from_path(file: str) -> str | None:
    """BFCL writes ``result/<model>/[non_live|live|...]/BFCL_*_result.json``: the model folder."""
    parts = Path(file).parts
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] == "result" and i + 1 < len(parts) - 1:
            return parts[i + 1]
    return None


def _is_multi_turn(uid: str, result: Any) -> bool:
    if uid.startswith("multi_turn"):
        return True
    return isinstance(result, list) and bool(result) and all(isinstance(turn, list) for turn in result)


def _token_usage(item: dict[str, Any], metadata: dict[str, Any], ctx: ItemContext) -> dict[str, int] | None:
    """Token counts that are plain integers move to ``token_usage``; others stay in metadata."""
    usage: dict[str, int] = {}
    for src, dst in (("input_token_count", "input_tokens"), ("output_token_count", "output_tokens")):
        value = item.get(src)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            usage[dst] = value
            metadata.pop(src, None)
        elif value is not None:
            ctx.warn("bfcl_token_count", f"{src} is not a non-negative integer ({type(value).__name__}); kept in metadata", src)
    return usage or None


def _convert(item: dict[str, Any], ctx: ItemContext) -> Trajectory:
    uid = as_id(item.get("id"))
    if uid is None:
        raise ItemError("invalid_field", "id must be a non-empty string (the BFCL entry id)", "id")
    result = item.get("result")
    if uid.startswith(_AGENTIC_PREFIXES):
        raise ItemError(
            "unsupported", "BFCL's agentic results (memory, web_search) need a web search backend or a memory store to be graded; not graded", "result"
        )
    if _is_multi_turn(uid, result):
        return _multi_turn(uid, item, ctx)
    decoded = decode_result(result)
    unreadable = [c for c in decoded.calls if c.error is not None]
    if unreadable and relevance_rule(category(uid)) is not None:
        # BFCL's decoder fails on the whole result when one call cannot be read; its relevance
        # categories grade only that (a decoded call or not), so no call of it counts
        why = f"call {unreadable[0].name}: {unreadable[0].error}; BFCL's decoder then reads no call at all"
        decoded = Decoded(error=why, text=result if isinstance(result, str) else json.dumps(result, ensure_ascii=False))
    metadata: dict[str, Any] = {k: v for k, v in item.items() if k != "id"}  # the raw result included
    if decoded.syntax is not None:
        metadata["result_syntax"] = decoded.syntax
    steps: list[dict[str, Any]] = []
    final_answer = None
    agent_messages: list[str] = []
    if decoded.error is not None:
        metadata["decode_error"] = decoded.error
        ctx.warn("bfcl_unparseable_result", f"graded as a response without calls: {decoded.error}", "result")
        if decoded.text is not None and decoded.text.strip():
            final_answer = decoded.text
            agent_messages.append(decoded.text)
    positional: dict[str, list[str]] = {}
    for i, call in enumerate(decoded.calls):
        step: dict[str, Any] = {"name": call.name, "arguments": call.arguments, "round": 0}
        if call.error is not None:
            step.update(status="error", error=call.error)
        else:
            step["status"] = "unknown"  # proposed, never executed
        if call.positional:
            positional[str(i)] = call.positional
            ctx.warn(
                "bfcl_positional_arguments",
                f"call {i} ({call.name}) has positional arguments {call.positional} that name no parameter; ignored as BFCL ignores them",
                "result",
            )
        steps.append(step)
    if positional:
        metadata["positional_arguments"] = positional
    data = {
        "task_id": uid,
        "trajectory_id": uid,
        "agent": _agent_from_path(ctx.file),
        "turns": [{"turn_id": "1", "steps": steps, "final_answer": final_answer, "agent_messages": agent_messages}],
        "token_usage": _token_usage(item, metadata, ctx),
        "metadata": metadata,
    }
    try:
        return Trajectory.model_validate(data)
    except ValidationError as err:
        raise validation_error(err, note="converted trajectory is invalid") from None


def _multi_turn(uid: str, item: dict[str, Any], ctx: ItemContext) -> Trajectory:
    result = item.get("result")
    if not isinstance(result, list) or not all(isinstance(turn, list) for turn in result):
        raise ItemError("invalid_field", f"a multi-turn result must be a list per turn of the model's messages, got {type(result).__name__}", "result")
    logs = _turn_logs(item.get("inference_log"))
    metadata: dict[str, Any] = {k: v for k, v in item.items() if k not in ("id", "inference_log")}
    if "inference_log" in item:
        metadata["inference_log_turns"] = len(logs)
    decode_errors: list[dict[str, Any]] = []
    turns = []
    for t, messages in enumerate(result):
        log = logs[t] if t < len(logs) else None
        steps: list[dict[str, Any]] = []
        said: list[str] = []
        for k, message in enumerate(messages):
            decoded = decode_result(message)
            unreadable = [c for c in decoded.calls if c.error is not None]
            if decoded.error is not None or unreadable or not decoded.calls:
                if unreadable:  # BFCL's decoder fails on the message: none of its calls runs
                    why = f"call {unreadable[0].name}: {unreadable[0].error}"
                    decode_errors.append({"turn": t, "step": k, "error": why})
                    ctx.warn("bfcl_unparseable_result", f"turn {t} step {k}: not executed, BFCL cannot decode it ({why})", f"result[{t}][{k}]")
                text = message if isinstance(message, str) else json.dumps(message, ensure_ascii=False)
                if decoded.calls == [] and decoded.error is None and not unreadable:
                    continue  # an empty call list: BFCL's "empty response", nothing said
                if text.strip():
                    said.append(text)
                continue
            outputs = _tool_outputs(log, k)
            if outputs is not None and len(outputs) != len(decoded.calls):
                ctx.warn(
                    "bfcl_inference_log",
                    f"turn {t} step {k}: {len(outputs)} recorded tool results for {len(decoded.calls)} calls; results left unknown",
                    "inference_log",
                )
                outputs = None
            for j, call in enumerate(decoded.calls):
                step: dict[str, Any] = {"name": call.name, "arguments": call.arguments, "round": k}
                if outputs is None:
                    step["status"] = "unknown"
                else:
                    step["result"] = outputs[j]
                steps.append(step)
        turns.append({"turn_id": str(t), "query": _query(log), "steps": steps, "final_answer": said[-1] if said else None, "agent_messages": said})
    if decode_errors:
        metadata["decode_errors"] = decode_errors
    data = {
        "task_id": uid,
        "trajectory_id": uid,
        "agent": _agent_from_path(ctx.file),
        "turns": turns,
        "metadata": metadata,
    }
    try:
        return Trajectory.model_validate(data)
    except ValidationError as err:
        raise validation_error(err, note="converted trajectory is invalid") from None


def _turn_logs(log: Any) -> list[dict[str, Any]]:
    """The per-turn dicts of an ``inference_log`` (the lists between them are state snapshots)."""
    return [entry for entry in log if isinstance(entry, dict)] if isinstance(log, list) else []


def _query(log: dict[str, Any] | None) -> str | None:
    messages = log.get("begin_of_turn_query") if log is not None else None
    if not isinstance(messages, list):
        return None
    texts = [m["content"] for m in messages if isinstance(m, dict) and m.get("role") == "user" and isinstance(m.get("content"), str)]
    return "\n".join(texts) if texts else None


def _tool_outputs(log: dict[str, Any] | None, step: int) -> list[Any] | None:
    """The results recorded for the calls of message ``step`` (the ``tool`` entries of ``step_<k>``)."""
    entries = log.get(f"step_{step}") if log is not None else None
    if not isinstance(entries, list):
        return None
    return [e.get("content") for e in entries if isinstance(e, dict) and e.get("role") == "tool"]


TRAJECTORIES = TrajectoryFormat(
    name="bfcl",
    description="BFCL result file (bfcl generate): {id, result, input_token_count?, output_token_count?, ...} per line",
    sniff=_sniff,
    ids=_ids,
    convert=_convert,
)
