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
from judge.core._numbers import fmt_num, fmt_pct, fmt_pct_ci, fmt_signed_pct, missing
from judge.core._patterns import PatternError, compile_pattern, pattern_full_match, pattern_search
from judge.core._stages import CHECK_DEFAULT_STAGE, CRAG_SCORES, FAILURE_STAGE_ORDER, AnswerLabel, Check, DecidedBy, FailureStage, Outcome, VerdictLabel
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
    "CRAG_SCORES",
    "FAILURE_STAGE_ORDER",
    "RUBRIC_FOR_CHECK",
    "AnswerLabel",
    "ArgumentRule",
    "ArgumentSet",
    "BadInputError",
    "Check",
    "ConfigurationError",
    "DecidedBy",
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
    "Outcome",
    "PanelDecision",
    "PatternError",
    "Policy",
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
    "fmt_num",
    "fmt_pct",
    "fmt_pct_ci",
    "fmt_signed_pct",
    "label_passed",
    "looks_like_error",
    "missing",
    "normalise_status",
    "parse_json_text",
    "pattern_full_match",
    "pattern_search",
    "response_key",
]
