"""Core vocabulary of trajectory-judge and the LLM judges.

Public API: the data model of tasks, trajectories and verdicts, the failure-stage enum, input
errors, and the escalation protocol. Everything else in ``judge`` is private (``_module``).
"""

from judge._canonical import canonical_json, content_hash, parse_json_text, response_key
from judge._errors import InputError, InputErrorInfo, SourceRef, field_path
from judge._escalation import RUBRIC_FOR_CHECK, Escalator, JudgeRequest
from judge._stages import CHECK_DEFAULT_STAGE, FAILURE_STAGE_ORDER, Check, FailureStage, Outcome, VerdictLabel
from judge._task import (
    ArgumentRule,
    ForbiddenArgument,
    Policy,
    ReferenceCall,
    SourceRule,
    Task,
    TaskMetadata,
    ToolSpec,
    Turn,
    dependency_order,
)
from judge._trajectory import Step, TokenUsage, Trajectory, TrajectoryTurn, looks_like_error, normalise_status
from judge._verdict import Evidence, PanelDecision, Scores, StageResult, TrajectoryResult, TurnResult, Vote

__all__ = [
    "CHECK_DEFAULT_STAGE",
    "FAILURE_STAGE_ORDER",
    "RUBRIC_FOR_CHECK",
    "ArgumentRule",
    "Check",
    "Escalator",
    "Evidence",
    "FailureStage",
    "ForbiddenArgument",
    "InputError",
    "InputErrorInfo",
    "JudgeRequest",
    "Outcome",
    "PanelDecision",
    "Policy",
    "ReferenceCall",
    "Scores",
    "SourceRef",
    "SourceRule",
    "StageResult",
    "Step",
    "Task",
    "TaskMetadata",
    "TokenUsage",
    "ToolSpec",
    "Trajectory",
    "TrajectoryResult",
    "TrajectoryTurn",
    "Turn",
    "TurnResult",
    "Vote",
    "VerdictLabel",
    "canonical_json",
    "dependency_order",
    "content_hash",
    "field_path",
    "looks_like_error",
    "normalise_status",
    "parse_json_text",
    "response_key",
]

# --- LLM judges: settings, providers, panel (appended by the judges work, issue 4) ---
from judge._cache import JudgeCache, cache_key
from judge._limits import Budget, RateLimiter, RetryPolicy
from judge._panel import JudgeUsage, Panel, PanelStats, build_panel
from judge._providers import Completion, JudgeCallError, JudgeClient, create_client, parse_judge_name, provider_kinds, register_provider
from judge._rubric import JudgeVerdict, Rubric, register_rubric, registered_rubrics
from judge._settings import ConfigFile, JudgeConfigError, JudgeSettings, PanelConfig, PriceConfig, ProviderConfig, RetryConfig
from judge._voting import Tally, tally
from judge._weights import JudgeWeight, VoteWeights, load_weights

__all__ += [
    "Budget",
    "Completion",
    "ConfigFile",
    "JudgeCache",
    "JudgeCallError",
    "JudgeClient",
    "JudgeConfigError",
    "JudgeSettings",
    "JudgeUsage",
    "JudgeVerdict",
    "JudgeWeight",
    "Panel",
    "PanelConfig",
    "PanelStats",
    "PriceConfig",
    "ProviderConfig",
    "RateLimiter",
    "RetryConfig",
    "RetryPolicy",
    "Rubric",
    "Tally",
    "VoteWeights",
    "build_panel",
    "cache_key",
    "create_client",
    "load_weights",
    "parse_judge_name",
    "provider_kinds",
    "register_provider",
    "register_rubric",
    "registered_rubrics",
    "tally",
]
