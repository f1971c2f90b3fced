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
- ``agent``: the model folder when the file sits in BFCL's ``result/<model>/...`` layout.
- Multi-turn and agentic results (a list per turn, ``inference_log``) are ``unsupported``: they
  need BFCL's stateful Python environments to be graded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from judge import Trajectory
from pipelines.ingest._base import ItemContext, ItemError, TrajectoryFormat, as_id, validation_error
from pipelines.ingest._bfcl_decode import decode_result

_MULTI_TURN_PREFIXES = ("multi_turn", "memory", "web_search")


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
    if uid.startswith(_MULTI_TURN_PREFIXES):
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
    if _is_multi_turn(uid, result):
        raise ItemError(
            "unsupported",
            "multi-turn / agentic BFCL results (a list of model responses per turn) need BFCL's stateful Python environments; "
            "only single-turn categories (simple, multiple, parallel, parallel_multiple, live_*) are graded",
            "result",
        )
    decoded = decode_result(result)
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


TRAJECTORIES = TrajectoryFormat(
    name="bfcl",
    description="BFCL result file (bfcl generate): {id, result, input_token_count?, output_token_count?, ...} per line",
    sniff=_sniff,
    ids=_ids,
    convert=_convert,
)
