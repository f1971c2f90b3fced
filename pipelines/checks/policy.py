"""Policy check: the machine-checkable part of a tool-use policy, per call.

Rules (each violation is evidence naming the step):
- ``allowed_tools`` / ``forbidden_tools`` by tool name;
- ``max_calls`` counts every attempted call over the whole trajectory (failed ones too: an attempt
  costs what the policy limits), the violation is flagged on the call that exceeds it;
- ``read_only`` forbids attempting any tool whose spec says ``side_effect="write"``;
- ``forbidden_arguments`` by normalised value or regex (RE2, searched anywhere in the value: a
  string as written, anything else as JSON), linear in the text whatever the pattern;
- ``allowed_sources`` per turn: a call's source is its tool's ``source`` kind, or its name.
An attempted violation counts even if the call failed: the policy governs behaviour, not effects.
A policy with plain text only cannot be checked by a machine -> inconclusive (policy rubric), unless
it is a benchmark's domain-wide policy document (``Policy.scope="domain"``): that is context for the
judges, audited only with ``--policy-text gate``; otherwise the check is skipped with a
``policy_not_audited`` evidence item, which the summary counts.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from judge import Check, Evidence, EvidenceKind, FailureStage, Outcome, Policy, StageResult, pattern_search
from pipelines.checks._context import TurnContext
from pipelines.checks._waterfall import CheckOutcome
from pipelines.config import GradingConfig
from pipelines.matching import values_equal


def policy_violations(ctx: TurnContext, policy: Policy) -> list[Evidence]:
    found: list[Evidence] = []
    task = ctx.task
    source_rules = [r for r in policy.allowed_sources if r.turn_id in (None, ctx.turn.turn_id)]
    for view in ctx.steps:
        step, i = view.step, view.index
        name = step.name
        if policy.allowed_tools is not None and name not in policy.allowed_tools:
            found.append(Evidence(kind=EvidenceKind.POLICY_VIOLATION, step=i, tool=name, message=f"tool {name!r} is not in the allowed tools", actual=name))
        if name in policy.forbidden_tools:
            found.append(Evidence(kind=EvidenceKind.POLICY_VIOLATION, step=i, tool=name, message=f"tool {name!r} is forbidden", actual=name))
        if policy.max_calls is not None and ctx.calls_before + i + 1 == policy.max_calls + 1:
            found.append(
                Evidence(kind=EvidenceKind.POLICY_VIOLATION, step=i, tool=name, message=f"call {ctx.calls_before + i + 1} exceeds max_calls={policy.max_calls}")
            )
        if policy.read_only and task.is_write(name):
            found.append(
                Evidence(kind=EvidenceKind.POLICY_VIOLATION, step=i, tool=name, message=f"write tool {name!r} called under a read-only policy", actual=name)
            )
        for ban in policy.forbidden_arguments:
            if ban.tool not in ("*", name) or ban.argument not in step.arguments:
                continue
            value = step.arguments[ban.argument]
            hit = any(values_equal(v, value) for v in ban.values)
            if not hit and ban.pattern is not None:
                hit = pattern_search(ban.pattern, _as_text(value))
            if hit:
                found.append(
                    Evidence(kind=EvidenceKind.POLICY_VIOLATION, step=i, tool=name, message=f"forbidden value for {name}.{ban.argument}", actual=value)
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
                        message=f"source {source!r} of {name!r} not allowed in turn {ctx.turn.turn_id} (allowed: {rule.allowed})",
                        actual=source,
                    )
                )
    return found


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


class PolicyCheck:
    check: Check = Check.POLICY
    depends_on: tuple[Check, ...] = ()

    def run(self, ctx: TurnContext, decided: Mapping[Check, StageResult]) -> CheckOutcome:
        return CheckOutcome(self._result(ctx))

    def _result(self, ctx: TurnContext) -> StageResult:
        policy = ctx.task.policy
        if policy is None:
            return StageResult(check=self.check, outcome=Outcome.SKIPPED, reason="no policy")
        violations = policy_violations(ctx, policy)
        if violations:
            return StageResult(
                check=self.check,
                outcome=Outcome.MISMATCH,
                failure_stage=FailureStage.POLICY,
                reason=violations[0].message,
                evidence=violations,
            )
        if not policy.has_rules and not policy_gates(policy, ctx.config):
            reason = "domain-wide policy document: context for the judges, not audited (--policy-text gate audits it)"
            evidence = [Evidence(kind=EvidenceKind.POLICY_NOT_AUDITED, message=reason)]
            return StageResult(check=self.check, outcome=Outcome.SKIPPED, reason=reason, evidence=evidence)
        if not policy.has_rules:
            return StageResult(
                check=self.check,
                outcome=Outcome.INCONCLUSIVE,
                reason="plain-text policy without machine-checkable rules",
            )
        return StageResult(check=self.check, outcome=Outcome.MATCH, reason="no rule violated")


def policy_gates(policy: Policy, config: GradingConfig) -> bool:
    """Whether the policy can decide a verdict: machine rules and per-task text always; a domain-wide
    policy document's text only when the run asks for it (``policy_text = "gate"``)."""
    if policy.has_rules or (policy.text and policy.scope == "task"):
        return True
    return bool(policy.text) and config.policy_text == "gate"
