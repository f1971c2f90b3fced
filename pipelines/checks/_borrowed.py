"""Borrowed outputs: a call the log recorded without its result may take, as grounding evidence,
the output the task records for the *identical* reference call.

Real logs often keep a call but not what came back (a model output whose calls were never
executed, a run cut off after its last call). When the task states what the reference call
returned (``ReferenceCall.expected_output``; VAKRA's ground truth ``tool_response``) and the agent
made exactly that call to a read tool, executing the agent's call would return that same output.
Each condition below is what makes that so; when any fails, nothing is borrowed:

- the step's outcome is unknown: no result recorded, not failed or blocked, and no replay (replay
  gives every step its own result, and the reference outputs are then the replayed ones);
- the task declares the tool and marks it read (``ToolSpec.side_effect == "read"``); a tool the
  task does not declare is not marked;
- identical call (never one whose arguments were not recorded): the same tool name, and the canonical JSON (``judge.canonical_json``: key order
  ignored, 1.0 written as 1) of the arguments equal once the tool schema's defaults fill what
  either side omits (what the tool receives). Nothing more lenient: the normalisation and rules
  that let a call *satisfy* a reference (case, whitespace, "7" for 7, tolerances, ``any_of``,
  ``alternatives``) accept calls that may return something else; the recorded output is the
  output of the reference call's written arguments only;
- no argument on either side refers to an earlier result (VAKRA's ``$LABEL.path$``): the same
  text names whatever each run's own labelled call returned;
- the same state: no call that may change it (a write, or a call to a tool the task does not
  declare) was made, with a known or unknown outcome, before the step in the trajectory, and no
  reference write comes before the reference call (in dependency order, earlier turns first);
- the reference output is recorded (not null, not an error), and every identical reference call
  of the turn recorded the same output (otherwise the tool is not a function of its arguments).

Borrowed outputs are evidence for grounding only (and shown, marked, to a groundedness judge): the
calls check matches calls on their own, and later turns see only recorded results.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from judge import ReferenceCall, Step, Task, ToolSpec, Trajectory, TrajectoryTurn, Turn, canonical_json, dependency_order, looks_like_error, parse_json_text
from pipelines.env import has_reference

if TYPE_CHECKING:
    from pipelines.checks._context import StepView


def call_identity(arguments: dict[str, Any], spec: ToolSpec) -> str | None:
    """The arguments as the tool receives them (schema defaults filled in), as canonical JSON;
    None when an argument refers to an earlier result (its value is not in the call itself)."""
    filled = {**spec.defaults, **arguments}
    if has_reference(filled):
        return None
    return canonical_json(filled)


def is_read(task: Task, name: str) -> bool:
    """The task declares the tool and marks it read."""
    spec = task.tool(name)
    return spec is not None and spec.side_effect == "read"


def _recorded_output(ref: ReferenceCall) -> Any:
    """The reference call's recorded output, or None (not recorded, null, or an error)."""
    if not ref.has_expected_output:
        return None
    output = parse_json_text(ref.expected_output)
    if output is None or looks_like_error(output):
        return None
    return output


def _state_kept_until(task: Task, turn: Turn) -> list[bool]:
    """Per reference call of ``turn``: no reference write comes before it (earlier turns of the
    task first, then the turn's calls in dependency order)."""
    earlier = _turns_before(task.turns, turn)
    written = any(task.is_write(c.name) for t in earlier for c in t.reference_calls)
    kept = [False] * len(turn.reference_calls)
    for ri in dependency_order(turn.reference_calls):
        kept[ri] = not written
        written = written or task.is_write(turn.reference_calls[ri].name)
    return kept


def _turns_before(turns: list[Any], current: Any) -> list[Any]:
    """The turns before ``current`` (found by identity); none when ``current`` is not among them
    (a whole dialogue merged into one episode: nothing comes before it)."""
    for i, turn in enumerate(turns):
        if turn is current:
            return turns[:i]
    return []


def _may_change_state(task: Task, step: Step) -> bool:
    return not step.failed and not is_read(task, step.name)


def borrow_outputs(task: Task, turn: Turn, trajectory: Trajectory, traj_turn: TrajectoryTurn | None, views: list[StepView]) -> list[StepView]:
    """``views`` with ``borrowed_from`` / ``borrowed`` set on each unknown-outcome step that takes
    the output of an identical reference call (see the module rules). Call only without replay."""
    if traj_turn is None or not any(v.status == "unknown" for v in views):
        return views
    kept = _state_kept_until(task, turn)
    by_call: dict[tuple[str, str], list[tuple[int, Any]]] = {}  # (tool, identity) -> [(reference index, output)]
    for ri, ref in enumerate(turn.reference_calls):
        spec = task.tool(ref.name)
        if spec is None or not is_read(task, ref.name):
            continue
        identity = call_identity(ref.arguments, spec)
        if identity is not None:
            by_call.setdefault((ref.name, identity), []).append((ri, _recorded_output(ref) if kept[ri] else None))
    if not by_call:
        return views
    changed = any(_may_change_state(task, s) for t in _turns_before(trajectory.turns, traj_turn) for s in t.steps)
    out: list[StepView] = []
    for view in views:
        lent = None if changed or view.status != "unknown" or view.step.result is not None else _lender(task, view.step, by_call)
        out.append(view if lent is None else msgspec.structs.replace(view, borrowed_from=lent[0], borrowed=lent[1]))
        changed = changed or _may_change_state(task, view.step)
    return out


def _lender(task: Task, step: Step, by_call: dict[tuple[str, str], list[tuple[int, Any]]]) -> tuple[int, Any] | None:
    """The first identical reference call and its output, when every identical one recorded the
    same usable output."""
    spec = task.tool(step.name)
    if spec is None or step.arguments is None:  # no identity without the arguments
        return None
    identity = call_identity(step.arguments, spec)
    refs = by_call.get((step.name, identity)) if identity is not None else None
    if not refs or any(output is None for _, output in refs):
        return None
    if len({canonical_json(output) for _, output in refs}) > 1:
        return None
    return refs[0]
