"""The core vocabulary: tasks, trajectories, verdicts, failure stages, input errors, escalation.

Everything here is plain pydantic and standard library: importing it never pulls in an LLM SDK.
"""

from judge.core._canonical import canonical_json, content_hash, parse_json_text, response_key
from judge.core._errors import (
    BadInputError,
    ConfigurationError,
    ExternalCallError,
    InputError,
    InputErrorInfo,
    InputWarning,
    SourceRef,
    TrajectoryJudgeError,
    field_path,
)
from judge.core._escalation import RUBRIC_FOR_CHECK, Escalator, JudgeRequest
from judge.core._extras import extra_fields
from judge.core._orchestration import DIFFICULTY_TIERS, RECOVERY_OUTCOMES, DifficultyTier, Orchestration, RecoveryEvent, RecoveryOutcome
from judge.core._patterns import PatternError, compile_pattern, pattern_full_match, pattern_search
from judge.core._stages import CHECK_DEFAULT_STAGE, FAILURE_STAGE_ORDER, Check, DecidedBy, FailureStage, Outcome, VerdictLabel
from judge.core._task import (
    ArgumentRule,
    ArgumentSet,
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
from judge.core._trajectory import ExternalLabel, Step, StepStatus, TokenUsage, Trajectory, TrajectoryTurn, label_passed, looks_like_error, normalise_status
from judge.core._verdict import Evidence, EvidenceKind, PanelDecision, Scores, StageResult, TrajectoryResult, TurnResult, Vote

__all__ = [
    "CHECK_DEFAULT_STAGE",
    "DIFFICULTY_TIERS",
    "FAILURE_STAGE_ORDER",
    "RECOVERY_OUTCOMES",
    "RUBRIC_FOR_CHECK",
    "ArgumentRule",
    "ArgumentSet",
    "BadInputError",
    "Check",
    "ConfigurationError",
    "DecidedBy",
    "DifficultyTier",
    "Escalator",
    "Evidence",
    "EvidenceKind",
    "ExternalCallError",
    "ExternalLabel",
    "FailureStage",
    "ForbiddenArgument",
    "InputError",
    "InputErrorInfo",
    "InputWarning",
    "JudgeRequest",
    "Orchestration",
    "Outcome",
    "PanelDecision",
    "PatternError",
    "Policy",
    "RecoveryEvent",
    "RecoveryOutcome",
    "ReferenceCall",
    "Scores",
    "SourceRef",
    "SourceRule",
    "StageResult",
    "Step",
    "StepStatus",
    "Task",
    "TaskMetadata",
    "TokenUsage",
    "ToolSpec",
    "Trajectory",
    "TrajectoryJudgeError",
    "TrajectoryResult",
    "TrajectoryTurn",
    "Turn",
    "TurnResult",
    "VerdictLabel",
    "Vote",
    "canonical_json",
    "compile_pattern",
    "content_hash",
    "dependency_order",
    "extra_fields",
    "field_path",
    "label_passed",
    "looks_like_error",
    "normalise_status",
    "parse_json_text",
    "pattern_full_match",
    "pattern_search",
    "response_key",
]
