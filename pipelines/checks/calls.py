"""Calls check: did the agent make the calls the task needs? (tool selection, argument names,
argument values).

Invariants, each a general rule:
- A step's name is the tool it means (``StepView``, ``Task.tool_names``): a name that is no known
  tool but the sanitised form of exactly one (``math_factorial`` for ``math.factorial``, as
  function-calling APIs require) is that tool, and every message about the step says so.
- A failed call (error status, a blocked call, or an error replayed) changed nothing: it never
  satisfies a reference call and is never an unexpected side effect; it still tells *where* the
  agent broke. A call with no recorded result (and no replay) was *made* with an unknown outcome: it
  counts for selection, names and values like a successful one, but its result is no evidence
  (only grounding may take the recorded output of an identical reference call: ``_borrowed``).
- An advisory reference call (``required=False``, or a read under ``grading="outcome"``) is matched
  and reported when it is satisfied; its absence never fails the check nor leaves it inconclusive.
- With ``extra_calls="forbid"`` (BFCL) every made call must satisfy a reference call: a surplus call
  fails at tool selection (a turn with no reference call then passes only with no call made: BFCL's
  irrelevance). A turn that ``requires_a_call`` (BFCL's relevance) fails at tool selection when no
  call was made, whichever call it would have been. By default only surplus writes do (reads are evidence). A same-name call
  that is the attempt at an unsatisfied reference call is diagnosed through that call instead; only
  same-name calls beyond the number of unsatisfied references are surplus.
- Structurally, each predicted step satisfies at most one reference call, so retries and
  duplicates never inflate a score. (Response containment is about information, as in VAKRA:
  one response that holds what two reference reads returned covers both.)
- Order matters only along ``depends_on``: a reference call is satisfied by the earliest matching
  step that comes after the steps satisfying its dependencies, not beside them (issued in the same
  model message, ``Step.round``: parallel calls, none of which saw another's result).
- Read calls are evidence: extra reads are fine; a read reference call is also satisfied when its
  response (replayed, or ``expected_output``) appears among the responses the agent got
  (VAKRA's response-set containment). A response that tells nothing of the read (empty, or only
  booleans and acknowledgements: ``true``, ``"OK"``, ``{"status": "success"}``) can only be
  covered by a call to the same tool.
- Write calls must match as a multiset; a surplus successful write (a duplicate, or a write the
  task never asked for) fails at tool selection: calling it was the mistake. With replay, the
  final state must equal the reference's final state. A turn that states its reference calls and
  requires none therefore passes when no write succeeded and fails at the first one ("no write").
  Under ``final_state="unchecked"`` (the benchmark scores no end state) surplus writes and the final
  state are not checked: only the reference calls count.
- When a reference read has no counterpart but the agent made other calls and got the answer
  right, an alternative path is possible: inconclusive (trajectory-sufficiency rubric), unless
  the turn specifies no answer (then the calls are the whole specification). On the turn a run
  ended early in, whether the answer is right is unknown (it fails because the run stopped, not
  because it is wrong), so a missing read is not decisive there for that reason.
- The failure stage of an unsatisfied reference call is the furthest stage an attempt at it
  reached (tool selection < argument names < argument values), where an attempt is a same-name call
  that satisfied no other reference call; with no attempt the call was never made. The check
  reports the earliest stage over all unsatisfied calls.
- A call whose arguments were not recorded (tracing without content) is compared by name only: a
  reference call whose closest attempt is such a call is undecided (``not_recorded``), never failed
  for arguments nobody saw; the alternative-path question is too when every call that could stand
  in has unrecorded arguments. Names still decide: a reference call no call of its name attempted,
  or a surplus write, fails as it would with the arguments known. A ``not_recorded`` finding
  leaves the check inconclusive (unless something recorded fails it) and is never sent to a judge:
  the judge would see no more than the rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from judge import Check, Evidence, EvidenceKind, FailureStage, Outcome, StageResult, canonical_json, dependency_order, parse_json_text, response_key
from pipelines.checks._context import StepView, TurnContext
from pipelines.checks._diff import CallDiff, diff_call
from pipelines.checks._waterfall import CheckOutcome


class RefStatus(msgspec.Struct):
    index: int
    satisfied_by: int | None = None  # step index
    how: str = ""  # structural | response | undeclared (equal but for keys no schema declares)
    undeclared: tuple[str, ...] = ()  # those keys, when how is "undeclared"
    stage: FailureStage | None = None  # when unsatisfied and decisive
    attempt: int | None = None  # the step diagnosed as the attempt at it (None: never called)
    inconclusive: bool = False
    unrecorded: bool = False  # inconclusive because the attempt's arguments (or those of every stand-in) were not recorded
    advisory: bool = False  # its absence never fails the check
    problems: list[str] = msgspec.field(default_factory=list)


class CallMatching(msgspec.Struct):
    """The full matching of one turn, kept for scores and drill-down evidence."""

    refs: list[RefStatus]
    used_steps: set[int]
    extra_writes: list[tuple[int, FailureStage, str]]
    order_edges: int
    order_respected: int
    state_mismatch: bool
    result: StageResult


# Acknowledgements any tool may return: no evidence of which read was made.
_ACKNOWLEDGEMENTS = frozenset({"ok", "okay", "success", "succeeded", "successful", "done", "completed", "complete", "true", "false", "yes", "no"})


def _is_trivial(value: Any) -> bool:
    """A response that tells nothing of the read that produced it: nothing, or only booleans and
    acknowledgements (``true``, ``"OK"``, ``{"status": "success"}``). A different tool returning
    the same counts as no evidence (a number, a name, a row does)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            if item.strip() and item.strip().casefold() not in _ACKNOWLEDGEMENTS:
                return False
        elif item is not None and not isinstance(item, bool):
            return False
    return True


class _CallMatcher:
    """One turn's matching, phase by phase: structural assignment, response containment, diagnosis
    of what stays unsatisfied, surplus calls, dependency-order bookkeeping."""

    def __init__(self, ctx: TurnContext, answer_correct: bool | None):
        self.ctx = ctx
        self.task = ctx.task
        self.refs = ctx.turn.reference_calls
        self.answer_correct = answer_correct
        self.made = [v for v in ctx.steps if v.made]  # successful or unknown outcome: the call happened
        self.status = [RefStatus(ri, advisory=_advisory(ctx, ri)) for ri in range(len(self.refs))]
        self.used: set[int] = set()
        self.id_to_index = {c.id: i for i, c in enumerate(self.refs) if c.id is not None}
        self.order_violations: dict[int, int] = {}
        self.order = dependency_order(self.refs)  # walked by the structural and the undeclared-keys phases alike
        self._diffs: dict[tuple[int, int], CallDiff] = {}

    def diff(self, ri: int, si: int) -> CallDiff:
        key = (ri, si)
        if key not in self._diffs:
            ref = self.refs[ri]
            allow = (ref.extra_arguments or self.task.extra_arguments) == "allow"
            # under outcome grading a write counts for its effect: a nested key no schema declares may be one the tool ignores
            lenient = self.task.grading == "outcome" and self.task.is_write(ref.name)
            self._diffs[key] = diff_call(ref, self.ctx.steps[si].step, self.task.tool(ref.name), extra_arguments=allow, undeclared_keys=lenient)
        return self._diffs[key]

    def run(self) -> CallMatching:
        self.assign_structurally()
        self.assign_by_response()
        self.assign_but_undeclared()
        self.diagnose_unsatisfied()
        surplus = self.surplus_calls()
        ctx = self.ctx
        state_mismatch = (
            self.task.final_state == "checked"
            and ctx.reference_state is not None
            and ctx.predicted_state is not None
            and ctx.reference_state != ctx.predicted_state
        )
        edges, respected = self.order_edges()
        if ctx.environment is not None:  # the benchmark's own environment checked the turn: its checks decide
            result = _environment_result(ctx, self.status)
            return CallMatching(self.status, self.used, [], edges, respected, bool(ctx.environment.state_differences), result)
        result = _stage_result(ctx, self.status, surplus, state_mismatch)
        return CallMatching(self.status, self.used, surplus, edges, respected, state_mismatch, result)

    def assign_structurally(self) -> None:
        """In dependency order, each reference call takes the earliest matching unused call that
        comes after the calls satisfying its dependencies."""
        rounds = {v.index: v.step.round for v in self.made}
        for ri in self.order:
            name = self.refs[ri].name
            deps = [self.id_to_index[d] for d in self.refs[ri].depends_on]
            satisfying = [s for d in deps if (s := self.status[d].satisfied_by) is not None]
            after = max(satisfying, default=-1)
            beside = {rounds[s] for s in satisfying} - {None}  # a call issued with them in one message did not see their results
            for view in self.made:
                if view.step.name != name or view.index in self.used or not self.diff(ri, view.index).matches:
                    continue
                if view.index <= after or view.step.round in beside:
                    self.order_violations.setdefault(ri, view.index)
                    continue
                self.status[ri].satisfied_by, self.status[ri].how = view.index, "structural"
                self.used.add(view.index)
                break

    def assign_by_response(self) -> None:
        """VAKRA's containment: a read is satisfied when its response (replayed, or
        ``expected_output``) is among the responses the agent got."""
        ok_views = [v for v in self.made if v.ok]  # a result to compare responses with
        outputs = self.ctx.reference_outputs or [None] * len(self.refs)
        keys_by_step: dict[int, str] = {}  # computed when a reference output is compared (most tasks have none)

        def step_key(view: StepView) -> str:
            key = keys_by_step.get(view.index)
            if key is None:
                key = keys_by_step[view.index] = response_key(view.result)
            return key

        for st in self.status:
            ref = self.refs[st.index]
            if st.satisfied_by is not None or self.task.is_write(ref.name):
                continue
            out = outputs[st.index] if st.index < len(outputs) else None
            if out is None:
                continue
            key = response_key(out)
            for view in ok_views:
                if step_key(view) != key or (view.step.name != ref.name and _is_trivial(parse_json_text(out))):
                    continue
                st.satisfied_by, st.how = view.index, "response"
                self.used.add(view.index)
                break

    def assign_but_undeclared(self) -> None:
        """A reference write still unsatisfied takes the earliest unused call equal to it on every
        key it names but carrying nested keys no schema declares: satisfied, and the check is
        inconclusive ("undeclared keys"), since whether the tool read those keys is unknown."""
        for ri in self.order:
            st = self.status[ri]
            if st.satisfied_by is not None or st.advisory:
                continue
            for view in self.made:
                d = self.diff(ri, view.index) if view.step.name == self.refs[ri].name and view.index not in self.used else None
                if d is not None and d.matches_but_undeclared:
                    st.satisfied_by, st.how, st.undeclared = view.index, "undeclared", d.undeclared
                    self.used.add(view.index)
                    break

    def diagnose_unsatisfied(self) -> None:
        """Where each unsatisfied required call broke: the furthest stage an attempt at it reached
        (an attempt is a same-name call that satisfied no other reference call), else whether it
        was missed decisively or an alternative path may exist."""
        spare = [v for v in self.made if v.index not in self.used]
        turn = self.ctx.turn
        for st in self.status:
            if st.satisfied_by is not None:
                continue
            ref = self.refs[st.index]
            if st.advisory:
                st.problems = [f"{ref.name} (advisory) was not matched"]
                continue
            if st.index in self.order_violations:
                st.stage, st.attempt = FailureStage.TOOL_SELECTION, self.order_violations[st.index]
                early = self.ctx.steps[self.order_violations[st.index]]
                st.problems = [f"{ref.name} was called (step {early.index}{early.name_note}) before the calls it depends on ({', '.join(ref.depends_on)})"]
                continue
            attempts = [v for v in self.ctx.steps if v.step.name == ref.name and v.index not in self.used]
            if attempts:
                best = max(attempts, key=lambda v: _closeness(self.diff(st.index, v.index)))
                d = self.diff(st.index, best.index)
                st.attempt = best.index
                if d.unrecorded:  # the right tool; whether its arguments were right is not known
                    st.inconclusive = st.unrecorded = True
                    failed = f" and failed ({best.status})" if best.failed else ""
                    st.problems = [f"{ref.name} was called at step {best.index}{best.name_note}{failed}, but its arguments were not recorded"]
                elif d.stage is None:  # the right call, but it failed
                    st.stage = FailureStage.ARGUMENT_VALUES
                    why = best.step.error or best.result or best.status
                    st.problems = [f"{ref.name} was called as expected at step {best.index}{best.name_note} but failed ({best.status}): {why!r}"[:300]]
                else:
                    st.stage = d.stage
                    st.problems = [f"step {best.index}{best.name_note}: {p}" for p in d.problems]
            elif self.task.is_write(ref.name) or not turn.has_answer_spec:
                st.stage = FailureStage.TOOL_SELECTION
                st.problems = [f"{ref.name} was never called"]
            elif not spare:
                st.stage = FailureStage.TOOL_SELECTION
                st.problems = [f"{ref.name} was never called and no other call could stand in for it"]
            elif self.answer_correct is False:
                st.stage = FailureStage.TOOL_SELECTION
                st.problems = [f"{ref.name} was never called and the answer is wrong"]
            elif all(not v.step.arguments_recorded for v in spare):
                st.inconclusive = st.unrecorded = True
                names = ", ".join(sorted({v.step.name for v in spare}))
                st.problems = [
                    f"{ref.name} was never called; the other calls ({names}) may have retrieved the same information, but their arguments were not recorded"
                ]
            else:
                st.inconclusive = True
                st.problems = [f"{ref.name} was never called; the other calls may have retrieved the same information"]

    def surplus_calls(self) -> list[tuple[int, FailureStage, str]]:
        if self.ctx.environment is not None:
            return []  # the environment's checks decide; extra calls are whatever they did to its state
        """Writes (side effects), and every call when the task forbids extra calls. The first k
        unused same-name calls, k = that name's unsatisfied references, are the attempts diagnosed
        above; only those beyond are surplus."""
        attempts_left: dict[str, int] = {}
        for st in self.status:
            if st.satisfied_by is None and not st.advisory:
                name = self.refs[st.index].name
                attempts_left[name] = attempts_left.get(name, 0) + 1
        strict_calls = self.task.extra_calls == "forbid"
        writes_count = self.task.final_state == "checked"  # a benchmark that scores no end state ignores surplus writes
        surplus: list[tuple[int, FailureStage, str]] = []
        for view in self.made:
            name = view.step.name
            if view.index in self.used or not (strict_calls or (writes_count and self.task.is_write(name))):
                continue
            if attempts_left.get(name, 0) > 0:
                attempts_left[name] -= 1
                continue
            what = "write" if self.task.is_write(name) else "call"
            surplus.append((view.index, FailureStage.TOOL_SELECTION, f"surplus {what} {name} at step {view.index}{view.name_note}"))
        return surplus

    def order_edges(self) -> tuple[int, int]:
        """(dependency edges, edges whose two calls were satisfied in order): the order score."""
        edges = respected = 0
        for ri, ref in enumerate(self.refs):
            for dep in ref.depends_on:
                edges += 1
                a, b = self.status[self.id_to_index[dep]].satisfied_by, self.status[ri].satisfied_by
                respected += int(a is not None and b is not None and a < b)
        return edges, respected


def match_calls(ctx: TurnContext, answer_correct: bool | None) -> CallMatching:
    """``answer_correct``: the deterministic answer outcome (True / False / None=unknown)."""
    return _CallMatcher(ctx, answer_correct).run()


class CallsCheck:
    """Tool selection, argument names and values; reads the answer check (a missing read with a
    right answer may be an alternative path; with a wrong one it is decisive)."""

    check: Check = Check.CALLS
    depends_on: tuple[Check, ...] = (Check.ANSWER,)

    def run(self, ctx: TurnContext, decided: Mapping[Check, StageResult]) -> CheckOutcome:
        answer = decided[Check.ANSWER].outcome
        correct = True if answer == Outcome.MATCH else False if answer == Outcome.MISMATCH else None
        if ctx.ended_early is not None:  # the answer fails because the run stopped, not because it is wrong
            correct = None
        matching = match_calls(ctx, correct)
        return CheckOutcome(matching.result, detail=matching)


def _advisory(ctx: TurnContext, ri: int) -> bool:
    ref = ctx.turn.reference_calls[ri]
    if ctx.environment is not None:
        return True  # the environment's checks decide; matching the reference calls is evidence only
    return not ref.required or (ctx.task.grading == "outcome" and not ctx.task.is_write(ref.name))


def _closeness(d: CallDiff) -> int:
    return 99 if d.stage is None else d.stage.rank


def _stage_result(ctx: TurnContext, status: list[RefStatus], extra_writes, state_mismatch: bool) -> StageResult:
    refs = ctx.turn.reference_calls
    evidence: list[Evidence] = []
    decisive: list[tuple[FailureStage, Evidence]] = []  # what fails the check, each with its stage
    undeclared: list[Evidence] = []
    for st in status:
        ref = refs[st.index]
        if st.how == "undeclared":
            item = Evidence(
                kind=EvidenceKind.UNDECLARED_KEYS,
                reference=st.index,
                step=st.satisfied_by,
                tool=ref.name,
                message=f"inconclusive: undeclared keys: step {st.satisfied_by} equals {ref.name} on every key the reference names but also passes "
                f"{', '.join(st.undeclared)}, which no tool schema declares (whether the tool reads them is unknown)",
                expected={"name": ref.name, "arguments": ref.arguments},
            )
            evidence.append(item)
            undeclared.append(item)
        elif st.satisfied_by is not None:
            view = ctx.steps[st.satisfied_by]
            unknown = "; no result recorded" if view.status == "unknown" else ""
            evidence.append(
                Evidence(
                    kind=EvidenceKind.MATCHED_RESPONSE if st.how == "response" else EvidenceKind.MATCHED_STRUCTURAL,
                    reference=st.index,
                    step=st.satisfied_by,
                    message=f"{ref.name} satisfied by step {st.satisfied_by} ({st.how}){view.name_note}{unknown}",
                    tool=ref.name,
                    expected={"name": ref.name, "arguments": ref.arguments},
                )
            )
        elif st.advisory:
            evidence.append(
                Evidence(
                    kind=EvidenceKind.ADVISORY_UNMATCHED,
                    reference=st.index,
                    tool=ref.name,
                    message="; ".join(st.problems),
                    expected={"name": ref.name, "arguments": ref.arguments},
                )
            )
        elif st.unrecorded:
            evidence.append(
                Evidence(
                    kind=EvidenceKind.NOT_RECORDED,
                    reference=st.index,
                    step=st.attempt,
                    tool=ref.name,
                    message=f"inconclusive: {'; '.join(st.problems)} ({ctx.trajectory.not_recorded})",
                    expected={"name": ref.name, "arguments": ref.arguments},
                )
            )
        elif st.inconclusive:
            evidence.append(
                Evidence(
                    kind=EvidenceKind.NO_COUNTERPART,
                    reference=st.index,
                    tool=ref.name,
                    message="; ".join(st.problems),
                    expected={"name": ref.name, "arguments": ref.arguments},
                )
            )
        else:
            item = Evidence(
                kind=EvidenceKind.UNSATISFIED,
                reference=st.index,
                step=st.attempt,
                tool=ref.name,
                message="; ".join(st.problems),
                expected={"name": ref.name, "arguments": ref.arguments},
            )
            evidence.append(item)
            if st.stage is not None:
                decisive.append((st.stage, item))
    for step_index, stage, message in extra_writes:
        item = Evidence(kind=EvidenceKind.EXTRA_WRITE, step=step_index, tool=ctx.steps[step_index].step.name, message=message)
        evidence.append(item)
        decisive.append((stage, item))
    if ctx.turn.requires_a_call and not any(v.made for v in ctx.steps):
        item = Evidence(kind=EvidenceKind.UNSATISFIED, message="no call was made, but the turn requires one (any tool serves: the question needs a call)")
        evidence.append(item)
        decisive.append((FailureStage.TOOL_SELECTION, item))
    if state_mismatch and not decisive:
        written = [v.index for v in ctx.steps if v.ok and ctx.task.is_write(v.step.name)]
        item = Evidence(
            kind=EvidenceKind.STATE_MISMATCH,
            step=written[-1] if written else None,
            message="the final state after the agent's writes differs from the reference final state",
        )
        evidence.append(item)
        decisive.append((FailureStage.ARGUMENT_VALUES, item))
    if decisive:
        # where it broke: the earliest stage; within it, the earliest step (a call made before a call missed)
        stage, first = min(decisive, key=lambda d: (d[0].rank, d[1].step is None, d[1].step or 0))
        return StageResult(check=Check.CALLS, outcome=Outcome.MISMATCH, failure_stage=stage, reason=first.message, evidence=evidence, decisive_step=first.step)
    if any(st.inconclusive for st in status) or undeclared:
        reason = next(e.message for e in evidence if e.kind in ("not_recorded", "no_counterpart", "undeclared_keys"))
        return StageResult(check=Check.CALLS, outcome=Outcome.INCONCLUSIVE, reason=reason, evidence=evidence)
    required = [st for st in status if not st.advisory]
    if not required and ctx.turn.requires_a_call:
        made = sorted({v.step.name for v in ctx.steps if v.made})
        return StageResult(
            check=Check.CALLS,
            outcome=Outcome.MATCH,
            reason=f"a call was made ({', '.join(made)}), as the turn requires (which call is not checked)",
            evidence=evidence,
        )
    if not required and ctx.task.extra_calls == "forbid":
        return StageResult(
            check=Check.CALLS, outcome=Outcome.MATCH, reason="no call was made, as the task requires (every call would be one too many)", evidence=evidence
        )
    if not required:
        what = "no required reference calls" if refs else "no reference calls"
        if ctx.task.final_state == "unchecked":
            return StageResult(check=Check.CALLS, outcome=Outcome.MATCH, reason=f"{what}; the end state is not part of the task", evidence=evidence)
        made_writes = any(v.made and ctx.task.is_write(v.step.name) for v in ctx.steps)
        tail = "no unexpected writes" if made_writes else "no write succeeded: the state stays unchanged"
        return StageResult(check=Check.CALLS, outcome=Outcome.MATCH, reason=f"{what}; {tail}", evidence=evidence)
    return StageResult(check=Check.CALLS, outcome=Outcome.MATCH, reason=f"all {len(required)} required reference calls satisfied", evidence=evidence)


def _environment_result(ctx: TurnContext, status: list[RefStatus]) -> StageResult:
    """The turn as the benchmark's own environment checked it (BFCL multi-turn, see
    ``pipelines.env._bfcl``): a turn it does not check passes; a checked turn fails when the agent
    made no call in it, when an instance's state differs from the reference's, or when a reference
    call's result is not among the results the agent's calls got so far. Where each failure broke
    (general rules over the turn's calls, the class whose instance each call ran on):
    - no call, or a reference call on a differing instance whose method the agent never called in
      the turn, or a missing result whose reference method the agent never called: tool selection,
      at the turn's end;
    - otherwise argument values, at the agent's last call that changed the differing instance (else
      its last call on it), or its last call of the missing result's method."""
    env = ctx.environment
    refs = ctx.turn.reference_calls
    steps = ctx.steps
    evidence: list[Evidence] = []
    for st in status:
        if st.satisfied_by is not None and st.how == "structural":
            ref = refs[st.index]
            evidence.append(
                Evidence(
                    kind=EvidenceKind.MATCHED_STRUCTURAL,
                    reference=st.index,
                    step=st.satisfied_by,
                    tool=ref.name,
                    message=f"{ref.name} made as the reference makes it, by step {st.satisfied_by}",
                    expected={"name": ref.name, "arguments": ref.arguments},
                )
            )
    decisive: list[tuple[FailureStage, Evidence]] = []
    if not env.reached:
        item = Evidence(
            kind=EvidenceKind.UNSATISFIED, message="the agent's run never reached this turn (BFCL fails an entry whose result stops before its last turn)"
        )
        decisive.append((FailureStage.TOOL_SELECTION, item))
    elif not env.checked:
        return StageResult(
            check=Check.CALLS,
            outcome=Outcome.MATCH,
            reason="BFCL checks nothing on this turn: its ground truth makes no call (the agent's calls still ran and shape the next turns)",
            evidence=evidence,
        )
    elif not steps:
        item = Evidence(kind=EvidenceKind.UNSATISFIED, message=f"no call was made in this turn; the ground truth makes {len(refs)} (BFCL's empty turn)")
        decisive.append((FailureStage.TOOL_SELECTION, item))
    else:
        for name, attributes in sorted(env.state_differences.items()):
            decisive.append(_state_difference(ctx, name, attributes))
        for ri in env.missing:
            decisive.append(_missing_result(ctx, ri))
    evidence.extend(e for _, e in decisive)
    if decisive:
        stage, first = min(decisive, key=lambda d: (d[0].rank, d[1].step is None, d[1].step or 0))
        return StageResult(check=Check.CALLS, outcome=Outcome.MISMATCH, failure_stage=stage, reason=first.message, evidence=evidence, decisive_step=first.step)
    instances = sorted(
        {c for c in env.truth_classes if c is not None} | set(ctx.task.environment_config.get("involved_classes", []) if ctx.task.environment_config else [])
    )
    evidence.append(
        Evidence(
            kind=EvidenceKind.STATE_MATCH,
            message=f"after this turn the state of every instance ({', '.join(instances)}) equals the ground truth's",
        )
    )
    for ri, ref in enumerate(refs):
        evidence.append(
            Evidence(
                kind=EvidenceKind.MATCHED_RESPONSE,
                reference=ri,
                tool=ref.name,
                message=f"the result of {ref.name} is among the agent's results so far",
                expected={"name": ref.name, "arguments": ref.arguments},
                actual=_clip(env.truth_results[ri]),
            )
        )
    return StageResult(
        check=Check.CALLS,
        outcome=Outcome.MATCH,
        reason=f"BFCL's checks pass: every instance's state equals the ground truth's and all {len(refs)} ground-truth results are among the agent's",
        evidence=evidence,
    )


def _state_difference(ctx: TurnContext, name: str, attributes: dict[str, dict[str, Any]]) -> tuple[FailureStage, Evidence]:
    env = ctx.environment
    on_it = [i for i, c in enumerate(env.model_classes) if c == name and i < len(ctx.steps)]
    needed = [r.name for r, c in zip(ctx.turn.reference_calls, env.truth_classes, strict=False) if c == name]
    called = {ctx.steps[i].step.name for i in on_it}
    never = sorted(set(needed) - called)
    shown = "; ".join(f"{attr}: agent {_clip(d['model'], 120)} vs ground truth {_clip(d['ground_truth'], 120)}" for attr, d in sorted(attributes.items()))
    head = f"the state of {name} after this turn differs from the ground truth's ({shown})"
    if never:
        return FailureStage.TOOL_SELECTION, Evidence(
            kind=EvidenceKind.STATE_MISMATCH, tool=name, message=f"{head}: the ground truth calls {', '.join(never)} on it, the agent never did in this turn"
        )
    changed = [i for i in on_it if env.model_changed[i]]
    if not on_it:
        return FailureStage.TOOL_SELECTION, Evidence(kind=EvidenceKind.STATE_MISMATCH, tool=name, message=f"{head}: the agent made no call on it in this turn")
    at = (changed or on_it)[-1]
    view = ctx.steps[at]
    what = "the last call that changed it" if changed else "the last call on it (none changed it)"
    return FailureStage.ARGUMENT_VALUES, Evidence(
        kind=EvidenceKind.STATE_MISMATCH, step=at, tool=view.step.name, message=f"{head}: {what} is step {at} ({view.step.name}{view.name_note})"
    )


def _missing_result(ctx: TurnContext, ri: int) -> tuple[FailureStage, Evidence]:
    env = ctx.environment
    ref = ctx.turn.reference_calls[ri]
    head = f"the ground truth's {ref.name} returned {_clip(env.truth_results[ri], 160)}, which no call of the agent got so far"
    attempts = [v.index for v in ctx.steps if v.step.name == ref.name]
    expected = {"name": ref.name, "arguments": ref.arguments}
    if not attempts:
        return FailureStage.TOOL_SELECTION, Evidence(
            kind=EvidenceKind.RESPONSE_MISSING,
            reference=ri,
            tool=ref.name,
            message=f"{head}: the agent never called {ref.name} in this turn",
            expected=expected,
        )
    at = attempts[-1]
    got = env.model_results[at] if at < len(env.model_results) else None
    return FailureStage.ARGUMENT_VALUES, Evidence(
        kind=EvidenceKind.RESPONSE_MISSING,
        reference=ri,
        step=at,
        tool=ref.name,
        message=f"{head}: the agent's {ref.name} at step {at} returned {_clip(got, 160)}",
        expected=expected,
        actual=ctx.steps[at].step.arguments,
    )


def _clip(value: Any, limit: int = 400) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def call_signature(name: str, arguments: dict | None) -> str:
    """Identity of a call for duplicate detection (efficiency never rewards repeats). Calls whose
    arguments were not recorded (None) share one signature per tool: whether they repeat is
    unknown, so scoring then reports no efficiency."""
    return name + canonical_json(arguments)
