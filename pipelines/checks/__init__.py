"""The deterministic checks of the waterfall, one per module, each a ``WaterfallCheck``: the same
context in, a ``CheckOutcome`` out, dependencies declared (see ``_waterfall``).

``WATERFALL`` lists them in waterfall order (attribution: the earliest failure wins).
"""

from pipelines.checks._confirmation import RULE_TEXT as CONFIRM_WRITES_RULE
from pipelines.checks._confirmation import Reply, read_reply, writes_to_confirm
from pipelines.checks._context import StepView, TurnContext, build_context
from pipelines.checks._waterfall import CheckOutcome, WaterfallCheck, dependents, evaluation_order
from pipelines.checks.answer import AnswerCheck, instruction_evidence
from pipelines.checks.calls import CallMatching, CallsCheck, match_calls
from pipelines.checks.grounding import GroundingCheck
from pipelines.checks.policy import PolicyCheck, PolicyFindings, policy_findings, policy_gates, policy_violations

WATERFALL: tuple[WaterfallCheck, ...] = (PolicyCheck(), CallsCheck(), AnswerCheck(), GroundingCheck())

__all__ = [
    "CONFIRM_WRITES_RULE",
    "WATERFALL",
    "AnswerCheck",
    "CallMatching",
    "CallsCheck",
    "CheckOutcome",
    "GroundingCheck",
    "PolicyCheck",
    "PolicyFindings",
    "Reply",
    "StepView",
    "TurnContext",
    "WaterfallCheck",
    "build_context",
    "dependents",
    "evaluation_order",
    "instruction_evidence",
    "match_calls",
    "policy_findings",
    "policy_gates",
    "policy_violations",
    "read_reply",
    "writes_to_confirm",
]
