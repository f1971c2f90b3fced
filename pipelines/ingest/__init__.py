"""Ingestion: streaming readers for every input format, with precise errors.

Tasks come from the native, VAKRA or BFCL formats; trajectories from the native, OpenAI Chat
Completions, Anthropic Messages, VAKRA or BFCL result formats, the agent frameworks' own dumps
(OpenAI Responses API items, LangChain / LangGraph messages, pydantic-ai histories; bare lists or
wrapped), and traces (read whole: OpenTelemetry GenAI as OTLP JSON / JSONL or Langfuse exports, the
OpenAI Agents SDK's trace export). BFCL score files give BFCL's own verdicts as labels.
Files are JSONL, one JSON array, or a single JSON object. Every item becomes exactly one task /
trajectory or one ``InputErrorInfo`` naming file, line and field path; nothing is silently dropped
or overwritten.
"""

from pipelines.ingest._api import (
    check_task,
    check_task_key,
    convert_trajectory,
    detect_task_format,
    detect_trajectory_format,
    iter_trajectories,
    load_tasks,
    read_trajectories,
    strict_tasks,
)
from pipelines.ingest._base import Bundle, BundleFormat, ItemError, Limits, Loaded, TaskCollector, TaskSet
from pipelines.ingest._bfcl_scores import BfclScoreLabels, read_bfcl_scores, sniff_bfcl_scores
from pipelines.ingest._compressed import MAGIC_BYTES, UnreadableInput, compression_of, inflate, inner_name
from pipelines.ingest._native import convert_task, read_task_item
from pipelines.ingest._parallel import TaskShard, read_task_shard, replay_task_shard
from pipelines.ingest._reader import reader_lines
from pipelines.ingest._registry import TASK_FORMATS, TRAJECTORY_FORMATS, trajectory_format
from pipelines.ingest._schemas import export_json_schemas
from pipelines.ingest._tool_specs import ToolSpecError, load_tool_specs, with_tool_specs
from pipelines.ingest._usage import UsageError

__all__ = [
    "MAGIC_BYTES",
    "TASK_FORMATS",
    "TRAJECTORY_FORMATS",
    "BfclScoreLabels",
    "Bundle",
    "BundleFormat",
    "ItemError",
    "Limits",
    "Loaded",
    "TaskCollector",
    "TaskSet",
    "TaskShard",
    "ToolSpecError",
    "UnreadableInput",
    "UsageError",
    "check_task",
    "check_task_key",
    "compression_of",
    "convert_task",
    "convert_trajectory",
    "detect_task_format",
    "detect_trajectory_format",
    "export_json_schemas",
    "inflate",
    "inner_name",
    "iter_trajectories",
    "load_tasks",
    "load_tool_specs",
    "read_bfcl_scores",
    "read_task_item",
    "read_task_shard",
    "read_trajectories",
    "reader_lines",
    "replay_task_shard",
    "sniff_bfcl_scores",
    "strict_tasks",
    "trajectory_format",
    "with_tool_specs",
]
