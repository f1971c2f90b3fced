"""Policy check: the machine-checkable part of a tool-use policy, per call.

Rules (each violation is evidence naming the step):
- ``allowed_tools`` / ``forbidden_tools`` by tool name (the name a call means: ``StepView``);
- ``max_calls`` counts every attempted call over the whole trajectory (failed ones too: an attempt
  costs what the policy limits), the violation is flagged on the call that exceeds it;
- ``read_only`` forbids attempting any tool whose spec says ``side_effect="write"``;
- ``forbidden_arguments`` by normalised value or regex (RE2, searched anywhere in the value: a
  string as written, anything else as JSON), linear in the text whatever the pattern; a call the
  rule applies to whose arguments were not recorded leaves it open (``not_recorded``);
- ``allowed_sources`` per turn: a call's source is its tool's ``source`` kind, or its name.
An attempted violation counts even if the call failed: the policy governs behaviour, not effects.
These per-call rules are ``policy_violations`` (the run-time gate asks them too, ``pipelines.runner``).

- ``confirm_writes`` reads the dialogue: every successful (or unknown-outcome) write must come after
  an agent message describing it and a user message confirming it (``_confirmation``). A failed call
  changed nothing and needs none. Per write it is confirmed, a violation, or open (the user's
  replies are unclear): the one rule that can leave the check inconclusive by itself. The grading
  config can add it to every task (``[grading] confirm_writes``, ``judge grade --confirm-writes``).

A violation of any rule decides (mismatch at the policy stage), open writes or not. Otherwise an
open write makes the check inconclusive (the policy judge decides). The task's own structured rules
(``confirm_writes`` included) are taken as the formalisation of its text (``judge.Policy``); a rule
the grading config adds formalises nothing: a task whose own policy is plain text still needs the
policy rubric (inconclusive) when that text gates. A policy with plain text only cannot be checked
by a machine -> inconclusive (policy rubric), unless it is a benchmark's domain-wide policy document
(``Policy.scope="domain"``): that is context for the judges, audited only with ``--policy-text
gate``; otherwise the check is skipped (or, when the config's rule was checked, matched) with a
``policy_not_audited`` evidence item, which the summary counts.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import msgspec

from judge import Check, Evidence, EvidenceKind, FailureStage, Outcome, Policy, StageResult, pattern_search
from pipelines.checks._confirmation import judge_writes
from pipelines.checks._context import TurnContext
from pipelines.checks._waterfall import CheckOutcome
from pipelines.config import GradingConfig
from pipelines.matching import values_equal


def policy_violations(ctx: TurnContext, policy: Policy) -> list[Evidence]:
    found: list[Evidence] = []
    task = ctx.task
    source_rules = [r for r in policy.allowed_sources if r.turn_id in (None, ctx.turn.turn_id)]
    for view in ctx.steps:
        step, i, note = view.step, view.index, view.name_note
        name = step.name
        if policy.allowed_tools is not None and name not in policy.allowed_tools:
            found.append(
                Evidence(kind=EvidenceKind.POLICY_VIOLATION, step=i, tool=name, message=f"tool {name!r} is not in the allowed tools{note}", actual=name)
            )
        if name in policy.forbidden_tools:
            found.append(Evidence(kind=EvidenceKind.POLICY_VIOLATION, step=i, tool=name, message=f"tool {name!r} is forbidden{note}", actual=name))
        if policy.max_calls is not None and ctx.calls_before + i + 1 == policy.max_calls + 1:
            found.append(
                Evidence(kind=EvidenceKind.POLICY_VIOLATION, step=i, tool=name, message=f"call {ctx.calls_before + i + 1} exceeds max_calls={policy.max_calls}")
            )
        if policy.read_only and task.is_write(name):
            found.append(
                Evidence(
                    kind=EvidenceKind.POLICY_VIOLATION, step=i, tool=name, message=f"write tool {name!r} called under a read-only policy{note}", actual=name
                )
            )
        for ban in policy.forbidden_arguments:
            if ban.tool not in ("*", name) or step.arguments is None or ban.argument not in step.arguments:
                continue  # arguments not recorded: ``unrecorded_bans`` says so
            value = step.arguments[ban.argument]
            hit = any(values_equal(v, value) for v in ban.values)
            if not hit and ban.pattern is not None:
                hit = pattern_search(ban.pattern, _as_text(value))
            if hit:
                found.append(
                    Evidence(kind=EvidenceKind.POLICY_VIOLATION, step=i, tool=name, message=f"forbidden value for {name}.{ban.argument}{note}", actual=value)
                )
        for rule in source_rules:
            spec = task.tool(name)
            source = spec.source if spec is not None and spec.source else name
            if source not in rule.allowed and name not in rule.allowed:
                found.append(
                    Evidence(
                        kind=EvidenceKind.POLICY_VIOLATION,
                        step=i,
                        tool=name,
                        message=f"source {source!r} of {name!r} not allowed in turn {ctx.turn.turn_id} (allowed: {rule.allowed}){note}",
                        actual=source,
                    )
                )
    return found


class PolicyFindings(msgspec.Struct, frozen=True):
    """Every rule of a policy over one turn: ``violations`` decide; ``open`` are findings a rule could
    not decide (the reason in each message); ``facts`` are what a passed rule rested on."""

    violations: list[Evidence] = msgspec.field(default_factory=list)
    open: list[Evidence] = msgspec.field(default_factory=list)
    facts: list[Evidence] = msgspec.field(default_factory=list)


def unrecorded_bans(ctx: TurnContext, policy: Policy) -> list[Evidence]:
    """A call a ``forbidden_arguments`` rule applies to whose arguments were not recorded: whether
    it broke the rule is unknown (``not_recorded``: open, never asked of a judge)."""
    found = []
    for view in ctx.steps:
        name = view.step.name
        bans = sorted({f"{name}.{b.argument}" for b in policy.forbidden_arguments if b.tool in ("*", name)})
        if bans and view.step.arguments is None:
            found.append(
                Evidence(
                    kind=EvidenceKind.NOT_RECORDED,
                    step=view.index,
                    tool=name,
                    message=f"the arguments of step {view.index} ({name}) were not recorded: whether it passed a forbidden value for {', '.join(bans)} "
                    f"is unknown ({ctx.trajectory.not_recorded})",
                )
            )
    return found


def policy_findings(ctx: TurnContext, policy: Policy) -> PolicyFindings:
    """The per-call rules (``policy_violations``) and, when the policy asks for it, confirm_writes;
    violations in step order."""
    violations = policy_violations(ctx, policy)
    unknown = unrecorded_bans(ctx, policy)
    if not policy.confirm_writes:
        return PolicyFindings(violations, open=unknown)
    verdicts = judge_writes(ctx)
    violations += [v.evidence for v in verdicts if v.finding == "violation"]
    violations.sort(key=lambda e: -1 if e.step is None else e.step)  # stable: per step, the per-call rules first
    return PolicyFindings(
        violations,
        open=[*unknown, *(v.evidence for v in verdicts if v.finding in ("open", "unrecorded"))],
        facts=[v.evidence for v in verdicts if v.finding == "confirmed"],
    )


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


class PolicyCheck:
    check: Check = Check.POLICY
    depends_on: tuple[Check, ...] = ()

    def run(self, ctx: TurnContext, decided: Mapping[Check, StageResult]) -> CheckOutcome:
        return CheckOutcome(self._result(ctx))

    def _result(self, ctx: TurnContext) -> StageResult:
        policy = ctx.policy
        if policy is None:
            return StageResult(check=self.check, outcome=Outcome.SKIPPED, reason="no policy")
        found = policy_findings(ctx, policy)
        if found.violations:
            return StageResult(
                check=self.check,
                outcome=Outcome.MISMATCH,
                failure_stage=FailureStage.POLICY,
                reason=found.violations[0].message,
                evidence=[*found.violations, *found.open, *found.facts],
                decisive_step=found.violations[0].step,
            )
        if found.open:
            return StageResult(check=self.check, outcome=Outcome.INCONCLUSIVE, reason=found.open[0].message, evidence=[*found.open, *found.facts])
        own = ctx.task.policy
        own_text_only = own is None or not own.has_rules  # a rule the config adds never formalises the task's text
        if own_text_only and not (own is not None and policy_gates(own, ctx.config)):
            reason = "domain-wide policy document: context for the judges, not audited (--policy-text gate audits it)"
            not_audited = [Evidence(kind=EvidenceKind.POLICY_NOT_AUDITED, message=reason)] if own is not None else []
            if policy.has_rules:  # the config's rule was checked
                return StageResult(check=self.check, outcome=Outcome.MATCH, reason="no rule violated", evidence=[*found.facts, *not_audited])
            return StageResult(check=self.check, outcome=Outcome.SKIPPED, reason=reason, evidence=not_audited)
        if own_text_only:
            return StageResult(
                check=self.check,
                outcome=Outcome.INCONCLUSIVE,
                reason="plain-text policy without machine-checkable rules",
                evidence=found.facts,
            )
        return StageResult(check=self.check, outcome=Outcome.MATCH, reason="no rule violated", evidence=found.facts)


def policy_gates(policy: Policy, config: GradingConfig) -> bool:
    """Whether the policy can decide a verdict: machine rules and per-task text always; a domain-wide
    policy document's text only when the run asks for it (``policy_text = "gate"``)."""
    if policy.has_rules or (policy.text and policy.scope == "task"):
        return True
    return bool(policy.text) and config.policy_text == "gate"
