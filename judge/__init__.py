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
)
from judge._trajectory import Step, TokenUsage, Trajectory, TrajectoryTurn, looks_like_error
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
    "content_hash",
    "field_path",
    "looks_like_error",
    "parse_json_text",
    "response_key",
]
