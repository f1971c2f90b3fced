"""The agent runner (``judge run``): tasks in, trajectories recorded, graded by ``judge grade``'s pipeline.

One concept per module: ``_loop`` (one trajectory), ``_run`` (the whole run: trials, concurrency,
resume), ``agents/`` (one module per provider), ``tools/`` (in-process environments, MCP),
``_faults`` (seeded fault injection), ``_gate`` (the run-time policy gate), ``_caller`` (cache,
retries, rate limit, cost of every model request), ``_shortlist`` (large tool sets), ``_prompt``
(the versioned harness prompt).
"""

from pipelines.runner._caller import CallerStats, ModelCaller
from pipelines.runner._conversation import Conversation, ModelReply, ToolCall, ToolReply
from pipelines.runner._faults import FAULT_KINDS, FaultPlan, FaultRule, FaultSpecError, parse_faults
from pipelines.runner._gate import PolicyGate
from pipelines.runner._loop import LoopSettings, TrajectoryJob, call_budget, run_trajectory
from pipelines.runner._prompt import HARNESS_DIGEST, HARNESS_PROMPT, HARNESS_VERSION, harness_id, system_prompt
from pipelines.runner._run import (
    RUN_ERRORS,
    RUN_STATE,
    TRAJECTORIES,
    CollectOutcome,
    RunDirConflict,
    RunError,
    RunOptions,
    TaskInputError,
    add_runner_to_manifest,
    collect_trajectories,
    trajectory_id,
    trial_seed,
)
from pipelines.runner._shortlist import MenuFactory, ToolMenu
from pipelines.runner.agents import AgentCallError, AgentConfigError, Sampling, create_agent

__all__ = [
    "FAULT_KINDS",
    "HARNESS_DIGEST",
    "HARNESS_PROMPT",
    "HARNESS_VERSION",
    "RUN_ERRORS",
    "RUN_STATE",
    "TRAJECTORIES",
    "AgentCallError",
    "AgentConfigError",
    "CallerStats",
    "CollectOutcome",
    "Conversation",
    "FaultPlan",
    "FaultRule",
    "FaultSpecError",
    "LoopSettings",
    "MenuFactory",
    "ModelCaller",
    "ModelReply",
    "PolicyGate",
    "RunDirConflict",
    "RunError",
    "RunOptions",
    "Sampling",
    "TaskInputError",
    "ToolCall",
    "ToolMenu",
    "ToolReply",
    "TrajectoryJob",
    "add_runner_to_manifest",
    "call_budget",
    "collect_trajectories",
    "create_agent",
    "harness_id",
    "parse_faults",
    "run_trajectory",
    "system_prompt",
    "trajectory_id",
    "trial_seed",
]
