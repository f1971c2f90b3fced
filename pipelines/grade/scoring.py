"""Per-trajectory metrics: the seed article's four, the tool-chain scores, and CRAG.

Every ratio is bounded by 1: a reference call is counted at most once however often the agent
repeated it (ragas' tool-call accuracy can exceed 1 with retries; ours cannot), and a parameter
score with no call made is 0, not 1 (deepeval's bug). Definitions:
- answer_accuracy: share of answered-and-graded turns whose answer is correct; crag: mean of
  correct 1 / missing 0 / incorrect -1.
- path_completeness: weighted share of reference calls whose tool was called (and did not fail).
- policy_compliance: share of calls violating no policy rule (None when no policy applies: the task has
  none and the grading config adds no rule).
- tool_efficiency: distinct successful calls / all calls (repeats and failures earn nothing).
- tool_selection: share of the distinct reference tools that were called successfully.
- tool_order: share of dependency edges whose two calls were satisfied in order (1 with no edges).
- parameter: weighted share of reference calls satisfied (structurally or by response).
- success: 1 when every reference call of every turn is satisfied with no extra write.
Critical reference calls weigh ``critical_weight``; advisory reference calls (``required=False``,
reads under ``grading="outcome"``) count in no score. A call with an unknown outcome counts as made.
When some call's arguments were not recorded, parameter, tool_efficiency and weighted_total are
None: whether the arguments matched, or repeated, is unknown.
"""

from __future__ import annotations

import msgspec

from judge import AnswerLabel, Outcome, Scores, StageResult, Task
from pipelines.checks._context import TurnContext
from pipelines.checks.calls import CallMatching, call_signature
from pipelines.config import GradingConfig


class TurnFacts(msgspec.Struct):
    ctx: TurnContext
    matching: CallMatching
    policy: StageResult
    answer: StageResult


def _crag(label: str) -> float:
    """CRAG's score of an answer label; a rubric label outside CRAG's three (open-ended) counts 0."""
    return AnswerLabel(label).score if label in AnswerLabel._value2member_map_ else 0.0


def compute_scores(task: Task, facts: list[TurnFacts], config: GradingConfig) -> Scores:
    cw = config.critical_weight
    total_w = called_w = satisfied_w = 0.0
    needed: set[str] = set()
    used_ok: set[str] = set()
    edges = respected = 0
    calls = violations = 0
    distinct_ok: set[str] = set()
    unrecorded = False  # some call's arguments were not recorded: parameter match and repeats are unknown
    labels: list[str] = []
    success = True
    for f in facts:
        refs = f.ctx.turn.reference_calls
        ok_names = {v.step.name for v in f.ctx.steps if v.made}
        used_ok |= ok_names
        for st in f.matching.refs:
            if st.advisory:
                continue
            ref = refs[st.index]
            w = cw if ref.critical else 1.0
            total_w += w
            needed.add(ref.name)
            called_w += w if (ref.name in ok_names or st.satisfied_by is not None) else 0.0
            satisfied_w += w if st.satisfied_by is not None else 0.0
        edges += f.matching.order_edges
        respected += f.matching.order_respected
        success &= f.matching.result.outcome == Outcome.MATCH
        calls += len(f.ctx.steps)
        violations += len({e.step for e in f.policy.evidence if e.kind == "policy_violation"})
        distinct_ok |= {f"{f.ctx.turn.turn_id}/{call_signature(v.step.name, v.step.arguments)}" for v in f.ctx.steps if v.made}
        unrecorded |= any(not v.step.arguments_recorded for v in f.ctx.steps)
        if f.answer.label is not None:
            labels.append(f.answer.label)

    s = Scores()
    if labels:
        s.answer_accuracy = sum(lbl == "correct" for lbl in labels) / len(labels)
        s.crag = sum(_crag(lbl) for lbl in labels) / len(labels)
    if config.policy_for(task) is not None:
        s.policy_compliance = 1.0 - violations / calls if calls else 1.0
    s.tool_efficiency = len(distinct_ok) / calls if calls else None
    if total_w:
        s.path_completeness = called_w / total_w
        s.parameter = satisfied_w / total_w
        s.tool_selection = len(needed & used_ok) / len(needed)
    else:
        s.path_completeness = s.parameter = s.tool_selection = 1.0
    s.tool_order = respected / edges if edges else 1.0
    s.success = 1.0 if success else 0.0
    if unrecorded:
        s.parameter = s.tool_efficiency = None
        return s
    weights = config.weights
    s.weighted_total = weights.selection * s.tool_selection + weights.order * s.tool_order + weights.parameter * s.parameter + weights.success * s.success
    return s
