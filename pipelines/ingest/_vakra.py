"""VAKRA: input cases + ground truth -> tasks; predictions -> trajectories.

Input case: ``{uuid, domain, num_turns, dialogue: {turns: [{turn_id, query}]}, additional_instructions}``
(optional ``capability``, ``hop_types`` / ``hop_type``, ``hop_count`` / ``num_hops``,
``policy_condition``). Ground truth and predictions: ``{uuid, domain, output: [{turn_id, query,
answer, sequence: {tool_call: [{name, arguments, label?}], tool_response: [...]}}]}``.

Every turn is scored: each turn keeps its reference calls (``label`` kept, and used as the call id),
``expected_output`` = the aligned tool response, and ``gold_answers=[answer]`` (the answer list such
as ``["23"]`` is the one acceptable value). A reference argument that mentions ``$LABEL.path$`` of an
earlier labelled call depends on that call. The policy is ``additional_instructions`` as text.

A ground-truth file alone is a valid task file. Joined with input cases, a uuid present on only
one side is an ``unknown_task`` error naming both files.

Predictions may add ``status``, ``error``, ``duration_s`` per call (-> the step), per turn (kept
in ``metadata["turns"][turn_id]``, since ``TrajectoryTurn`` has no such fields) or per prediction
(VAKRA's runner writes ``{uuid, domain, status: "success" | "error", error, duration_s, output}``;
kept in metadata). ``status: "error"`` on a prediction or a turn means the agent's run crashed or
timed out (VAKRA's runner records its timeout as an error) -> ``ended_early`` (kind ``error``, with
the ``error`` text), in the first turn so marked, else the last turn.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import ValidationError

from judge import Policy, SourceRef, Task, Trajectory, parse_json_text
from pipelines.ingest._base import (
    ItemContext,
    ItemError,
    Limits,
    TaskCollector,
    TaskFormat,
    TaskSet,
    TrajectoryFormat,
    as_id,
    expect,
    guarded,
    short,
    validation_error,
)
from pipelines.ingest._join import JoinSpec, join, object_or_error
from pipelines.ingest._reader import read_items
from pipelines.ingest._usage import UsageError

_LABEL_REF = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)(?:\.[^$]*)?\$")
_CASE_META = ("capability", "hop_types", "hop_type", "hop_count", "num_hops", "policy_condition")


def _sniff_task(item: dict[str, Any]) -> bool:
    return "uuid" in item and ("dialogue" in item or "output" in item)


def _sniff_trajectory(item: dict[str, Any]) -> bool:
    return "uuid" in item and "output" in item


def _uuid(item: dict[str, Any]) -> str:
    uid = as_id(item.get("uuid"))
    if uid is None:
        raise ItemError("invalid_field", "uuid must be a non-empty string or an integer", "uuid")
    return uid


def _turn_id(turn: dict[str, Any], path: str) -> str:
    tid = as_id(turn.get("turn_id"))
    if tid is None:
        raise ItemError("invalid_field", "turn_id must be a non-empty string or an integer", f"{path}.turn_id")
    return tid


def _sequence(turn: dict[str, Any], path: str) -> tuple[list[Any], list[Any] | None]:
    seq = turn.get("sequence")
    if seq is None:
        return [], None
    expect(seq, dict, f"{path}.sequence", "sequence")
    calls = seq.get("tool_call")
    calls = [] if calls is None else expect(calls, list, f"{path}.sequence.tool_call", "tool_call")
    responses = seq.get("tool_response")
    if responses is not None:
        expect(responses, list, f"{path}.sequence.tool_response", "tool_response")
    return calls, responses


def _call(call: Any, path: str) -> tuple[str, dict[str, Any]]:
    expect(call, dict, path, "a tool call")
    name = call.get("name")
    if not isinstance(name, str) or not name:
        raise ItemError("invalid_field", "a tool call needs a non-empty string name", f"{path}.name")
    arguments = call.get("arguments")
    arguments = {} if arguments is None else expect(arguments, dict, f"{path}.arguments", "arguments")
    return name, arguments


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _reference_turn(turn: Any, path: str) -> dict[str, Any]:
    """One ground-truth turn as a ``judge.Turn`` dict (query filled in by the caller if needed)."""
    expect(turn, dict, path, "a turn")
    turn_id = _turn_id(turn, path)
    calls, responses = _sequence(turn, path)
    if responses and len(responses) != len(calls):
        raise ItemError(
            "invalid_field",
            f"tool_response has {len(responses)} items but tool_call has {len(calls)}: responses cannot be aligned with calls",
            f"{path}.sequence.tool_response",
        )
    reference = []
    labels: dict[str, str] = {}  # label without a leading "$" -> call id
    for j, call in enumerate(calls):
        cpath = f"{path}.sequence.tool_call[{j}]"
        name, arguments = _call(call, cpath)
        ref: dict[str, Any] = {"name": name, "arguments": arguments}
        label = call.get("label")
        if label is not None:
            expect(label, str, f"{cpath}.label", "label")
            ref["label"] = label
            ref["id"] = label
        deps = []
        for text in _strings(arguments):
            for match in _LABEL_REF.finditer(text):
                dep = labels.get(match.group(1))
                if dep is not None and dep not in deps:
                    deps.append(dep)
        if deps:
            ref["depends_on"] = deps
        if responses:
            ref["expected_output"] = parse_json_text(responses[j])
        if label is not None:
            labels[label.lstrip("$")] = label
        reference.append(ref)
    answer = turn.get("answer")
    out: dict[str, Any] = {"turn_id": turn_id, "reference_calls": reference, "gold_answers": None if answer is None else [answer]}
    if turn.get("query") is not None:
        out["query"] = expect(turn["query"], str, f"{path}.query", "query")
    return out


def _hop_types(value: Any, path: str) -> list[str]:
    if isinstance(value, str):
        return [part.strip() for part in value.split("-") if part.strip()]
    expect(value, list, path, "hop types")
    return [expect(v, str, f"{path}[{i}]", "a hop type") for i, v in enumerate(value)]


def _metadata(case: dict[str, Any] | None, gt: dict[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    for source in (gt, case or {}):  # the input case wins where both say something
        if source.get("domain") is not None:
            meta["domain"] = expect(source["domain"], str, "domain", "domain")
        if source.get("capability") is not None:
            meta["capability"] = source["capability"]
        for key in ("hop_types", "hop_type"):
            if source.get(key) is not None:
                meta["hop_types"] = _hop_types(source[key], key)
        for key in ("hop_count", "num_hops"):
            if source.get(key) is not None:
                meta["hop_count"] = source[key]
        if source.get("policy_condition") is not None:
            meta["policy_condition"] = source["policy_condition"]
    return meta


@guarded
def build_task(gt: dict[str, Any], case: dict[str, Any] | None) -> Task:
    """A Task from one ground-truth item, joined with its input case when there is one.

    Errors name fields of the ground-truth item, except those raised while reading the case
    (``ItemError.file`` is left to the caller, who knows which file each came from).
    """
    uid = _uuid(gt)
    output = expect(gt.get("output"), list, "output", "output")
    if not output:
        raise ItemError("invalid_field", "output must list at least one turn", "output")
    turns = [_reference_turn(t, f"output[{i}]") for i, t in enumerate(output)]
    policy = None
    if case is not None:
        case_turns = _case_turns(case)
        gt_ids = [t["turn_id"] for t in turns]
        if set(case_turns) != set(gt_ids):
            raise ItemError(
                "invalid_field",
                f"the input case has turns {sorted(case_turns)} but the ground truth has {sorted(gt_ids)}",
                "dialogue.turns",
            )
        for turn in turns:
            turn["query"] = case_turns[turn["turn_id"]]
        instructions = case.get("additional_instructions")
        if instructions is not None:
            expect(instructions, str, "additional_instructions", "additional_instructions")
            if instructions.strip():
                policy = Policy(text=instructions.strip())
    for i, turn in enumerate(turns):
        if "query" not in turn:
            raise ItemError("invalid_field", "a turn needs its query (from the input case or the ground truth)", f"output[{i}].query")
    meta = _metadata(case, gt)
    # No ``environment``: VAKRA's executable domains are not bundled here (a domain of the same name in
    # data/envs is a different database); calls are compared with the ground truth's recorded tool
    # responses (``expected_output``) instead of being replayed.
    data: dict[str, Any] = {"task_id": uid, "turns": turns, "metadata": meta}
    if policy is not None:
        data["policy"] = policy
    try:
        return Task.model_validate(data)
    except ValidationError as err:
        raise validation_error(err, note="converted task is invalid") from None


def _case_turns(case: dict[str, Any]) -> dict[str, str]:
    dialogue = expect(case.get("dialogue"), dict, "dialogue", "dialogue")
    turns = expect(dialogue.get("turns"), list, "dialogue.turns", "dialogue.turns")
    out: dict[str, str] = {}
    for i, turn in enumerate(turns):
        path = f"dialogue.turns[{i}]"
        expect(turn, dict, path, "a turn")
        tid = _turn_id(turn, path)
        if tid in out:
            raise ItemError("invalid_field", f"turn_id {tid!r} appears twice", f"{path}.turn_id")
        out[tid] = expect(turn.get("query"), str, f"{path}.query", "query")
    num = case.get("num_turns")
    if num is not None and num != len(out):
        raise ItemError("invalid_field", f"num_turns is {num!r} but dialogue.turns has {len(out)} turns", "num_turns")
    return out


def _input_not_ground_truth(case: dict[str, Any], path: str) -> None:
    if "output" in case and "dialogue" not in case:
        raise UsageError(
            "--tasks",
            f"{path} holds ground truth (items with 'output'), not input cases; pass the input cases as --tasks and the ground truth as --reference",
        )


def _from_case(err: ItemError) -> bool:
    """Errors in case fields point at the input file, the others at the ground-truth item."""
    return (err.field or "").split(".")[0].split("[")[0] in ("dialogue", "num_turns", "additional_instructions")


def _required(gt: dict[str, Any] | None) -> dict[str, Any]:
    """The ground-truth item of a join (the join builds VAKRA tasks only with one: no item is graded alone)."""
    assert gt is not None
    return gt


def _load_tasks(path: str, reference: str | None, limits: Limits) -> TaskSet:
    collector = TaskCollector()
    if reference is None:
        _load_ground_truth_only(path, limits, collector)
        return collector.result
    spec = JoinSpec(
        main_role="input case",
        ref_role="ground truth",
        key=_uuid,
        key_field="uuid",
        build=lambda case, gt: (build_task(_required(gt), case), []),
        from_main_file=_from_case,
        check_file=lambda case: _input_not_ground_truth(case, path),
    )
    join(path, reference, limits, collector, spec)
    return collector.result


def _load_ground_truth_only(path: str, limits: Limits, collector: TaskCollector) -> None:
    for raw in read_items(path, limits):
        source = SourceRef(file=path, line=raw.line, item=raw.index)
        gt = object_or_error(raw, path, collector)
        if gt is None:
            continue
        if "dialogue" in gt and "output" not in gt:
            raise UsageError("--reference", f"{path} holds VAKRA input cases, which carry no reference: pass the ground-truth file as --reference")
        try:
            task = build_task(gt, None)
        except ItemError as err:
            collector.add_error(err.info(path, raw.line), as_id(gt.get("uuid")))
            continue
        collector.add(task, source)


# -- predictions ----------------------------------------------------------------------------------

_PRED_KNOWN = {"uuid", "trajectory_id", "agent", "output", "metadata"}


def _ids(item: dict[str, Any], default: str) -> tuple[str | None, str | None]:
    uid = as_id(item.get("uuid"))
    tid = as_id(item.get("trajectory_id")) if "trajectory_id" in item else uid
    return uid, tid


def _step(call: Any, response: Any, has_response: bool, path: str) -> dict[str, Any]:
    name, arguments = _call(call, path)
    step: dict[str, Any] = {"name": name, "arguments": arguments, "result": parse_json_text(response) if has_response else None}
    if call.get("status") is not None:
        step["status"] = call["status"]
    if call.get("error") is not None:
        step["error"] = expect(call["error"], str, f"{path}.error", "error")
    if call.get("duration_s") is not None:
        seconds = expect(call["duration_s"], (int, float), f"{path}.duration_s", "duration_s")
        if seconds < 0:
            raise ItemError("invalid_field", f"duration_s must not be negative, got {seconds}", f"{path}.duration_s")
        step["latency_ms"] = seconds * 1000.0
    if not has_response and step.get("status") is None:
        step["status"] = "unknown"  # the call was made; nothing recorded what came back
    if call.get("id") is not None:
        step["call_id"] = as_id(call["id"])
    return step


def _convert_trajectory(item: dict[str, Any], ctx: ItemContext) -> Trajectory:
    uid = _uuid(item)
    output = expect(item.get("output"), list, "output", "output")
    if not output:
        raise ItemError("invalid_field", "output must list at least one turn", "output")
    turns = []
    turn_meta: dict[str, Any] = {}
    for i, turn in enumerate(output):
        path = f"output[{i}]"
        expect(turn, dict, path, "a turn")
        turn_id = _turn_id(turn, path)
        calls, responses = _sequence(turn, path)
        responses = responses or []
        if len(responses) > len(calls):
            raise ItemError("invalid_field", f"tool_response has {len(responses)} items but tool_call only {len(calls)}", f"{path}.sequence.tool_response")
        steps = [
            _step(call, responses[j] if j < len(responses) else None, j < len(responses), f"{path}.sequence.tool_call[{j}]") for j, call in enumerate(calls)
        ]
        query = turn.get("query")
        if query is not None:
            expect(query, str, f"{path}.query", "query")
        turns.append({"turn_id": turn_id, "query": query, "steps": steps, "final_answer": turn.get("answer")})
        extra = {k: turn[k] for k in ("status", "error", "duration_s") if turn.get(k) is not None}
        if extra:
            turn_meta[turn_id] = extra
    ended = _ended_early(item, output)
    meta = dict(item["metadata"]) if isinstance(item.get("metadata"), dict) else {}
    for key, value in item.items():
        if key not in _PRED_KNOWN:
            meta.setdefault(key, value)
    if turn_meta:
        meta["turns"] = turn_meta
    data = {
        "task_id": uid,
        "trajectory_id": item.get("trajectory_id", uid),
        "agent": item.get("agent"),
        "turns": turns,
        "metadata": meta,
        "ended_early": ended,
    }
    try:
        return Trajectory.model_validate(data)
    except ValidationError as err:
        raise _prediction_error(err, output) from None


def _crashed(record: dict[str, Any]) -> bool:
    status = record.get("status")
    return isinstance(status, str) and status.strip().lower() == "error"


def _ended_early(item: dict[str, Any], output: list[Any]) -> dict[str, Any] | None:
    """``status: "error"`` on a turn (the first such turn) or on the prediction (its last turn)."""
    for turn in output:
        if isinstance(turn, dict) and _crashed(turn):
            return {"kind": "error", "reason": _crash_reason(turn, f"turn {turn.get('turn_id')}"), "turn_id": turn.get("turn_id")}
    if _crashed(item):
        return {"kind": "error", "reason": _crash_reason(item, "the prediction")}
    return None


def _crash_reason(record: dict[str, Any], where: str) -> str:
    error = record.get("error")
    text = error.strip() if isinstance(error, str) else (short(error, 300) if error is not None else "")
    return f"VAKRA status 'error' on {where}: " + (text[:300] or "no error text recorded")


def _prediction_error(err: ValidationError, output: list[Any]) -> ItemError:
    """Map a model error at turns[i].steps[j].x back to output[i].sequence.tool_call[j].x."""
    loc = tuple(err.errors(include_url=False)[0]["loc"])
    if len(loc) >= 4 and loc[0] == "turns" and loc[2] == "steps":
        return validation_error(err, prefix=f"output[{loc[1]}].sequence.tool_call[{loc[3]}]", strip=4)
    return validation_error(err, note="converted trajectory is invalid")


TASKS = TaskFormat(
    name="vakra",
    description="VAKRA input cases joined with a ground-truth file (reference), or a ground-truth file alone",
    sniff=_sniff_task,
    load=_load_tasks,
    reference="optional",
)

TRAJECTORIES = TrajectoryFormat(
    name="vakra",
    description="VAKRA predictions: {uuid, output: [{turn_id, query, answer, sequence: {tool_call, tool_response}}]}",
    sniff=_sniff_trajectory,
    ids=_ids,
    convert=_convert_trajectory,
)
