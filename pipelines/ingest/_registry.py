"""The registry of input formats. Detection tries formats in registry order on the first object.

To add a format: write ``_<name>.py`` exposing ``TASKS`` (a ``TaskFormat``) and/or
``TRAJECTORIES`` (a ``TrajectoryFormat``) and list it here.
"""

from __future__ import annotations

from pipelines.ingest import _anthropic, _bfcl, _native, _openai, _vakra
from pipelines.ingest._base import TaskFormat, TrajectoryFormat
from pipelines.ingest._usage import UsageError

TASK_REGISTRY: dict[str, TaskFormat] = {f.name: f for f in (_native.TASKS, _vakra.TASKS, _bfcl.TASKS)}
TRAJECTORY_REGISTRY: dict[str, TrajectoryFormat] = {
    f.name: f for f in (_native.TRAJECTORIES, _openai.TRAJECTORIES, _anthropic.TRAJECTORIES, _vakra.TRAJECTORIES)
}
# detection order: the most specific signatures first (anthropic before the openai fallback)
_TRAJECTORY_DETECTION = ("native", "vakra", "anthropic", "openai")

TASK_FORMATS: tuple[str, ...] = tuple(TASK_REGISTRY)
TRAJECTORY_FORMATS: tuple[str, ...] = tuple(TRAJECTORY_REGISTRY)


def task_format(name: str) -> TaskFormat:
    try:
        return TASK_REGISTRY[name]
    except KeyError:
        raise UsageError("--task-format", f"unknown task format {name!r}", TASK_FORMATS) from None


def trajectory_format(name: str) -> TrajectoryFormat:
    try:
        return TRAJECTORY_REGISTRY[name]
    except KeyError:
        raise UsageError("--format", f"unknown trajectory format {name!r}", TRAJECTORY_FORMATS) from None


def sniff_task(item: dict) -> str | None:
    for fmt in TASK_REGISTRY.values():
        if fmt.sniff(item):
            return fmt.name
    return None


def sniff_trajectory(item: dict) -> str | None:
    for name in _TRAJECTORY_DETECTION:
        if TRAJECTORY_REGISTRY[name].sniff(item):
            return name
    return None
