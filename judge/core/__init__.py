"""The core vocabulary: tasks, trajectories, verdicts, failure stages, input errors, escalation.

Everything here is plain pydantic and standard library: importing it never pulls in an LLM SDK.
"""

from judge.core._canonical import canonical_json, content_hash, parse_json_text, response_key
from judge.core._depth import MAX_DEPTH, TooDeep, nesting_error, parse_json_bounded
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
from judge.core._instructions import REMOVED_MARK, InstructionScan, find_instructions, strip_instructions, strip_instructions_deep
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
    "MAX_DEPTH",
    "REMOVED_MARK",
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
    "InstructionScan",
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
    "TooDeep",
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
    "find_instructions",
    "label_passed",
    "looks_like_error",
    "nesting_error",
    "normalise_status",
    "parse_json_bounded",
    "parse_json_text",
    "pattern_full_match",
    "pattern_search",
    "response_key",
    "strip_instructions",
    "strip_instructions_deep",
]
