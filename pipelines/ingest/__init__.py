"""Ingestion: streaming readers for every input format, with precise errors.

Tasks come from the native, VAKRA or BFCL formats; trajectories from the native, OpenAI Chat
Completions, Anthropic Messages or VAKRA formats. Files are JSONL, one JSON array, or a single
JSON object. Every item becomes exactly one task / trajectory or one ``InputErrorInfo`` naming
file, line and field path; nothing is silently dropped or overwritten.
"""

from pipelines.ingest._api import check_task, detect_task_format, detect_trajectory_format, iter_trajectories, load_tasks
from pipelines.ingest._base import Limits, Loaded, TaskSet
from pipelines.ingest._registry import TASK_FORMATS, TRAJECTORY_FORMATS
from pipelines.ingest._schemas import export_json_schemas
from pipelines.ingest._usage import UsageError

__all__ = [
    "TASK_FORMATS",
    "TRAJECTORY_FORMATS",
    "Limits",
    "Loaded",
    "TaskSet",
    "UsageError",
    "check_task",
    "detect_task_format",
    "detect_trajectory_format",
    "export_json_schemas",
    "iter_trajectories",
    "load_tasks",
]
