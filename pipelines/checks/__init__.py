"""The deterministic checks of the waterfall, one per module, each returning a ``StageResult``."""

from pipelines.checks._context import StepView, TurnContext, build_context
from pipelines.checks.answer import AnswerCheck, instruction_evidence
from pipelines.checks.calls import CallMatching, match_calls
from pipelines.checks.grounding import GroundingCheck
from pipelines.checks.policy import PolicyCheck, policy_violations

__all__ = [
    "AnswerCheck",
    "CallMatching",
    "GroundingCheck",
    "PolicyCheck",
    "StepView",
    "TurnContext",
    "build_context",
    "instruction_evidence",
    "match_calls",
    "policy_violations",
]
