"""One item read from an input, graded against its task, or its error row: what every grader of
a run does with each item it reads (nothing is raised: a bad item is a row naming file, line and
field)."""

from __future__ import annotations

from judge import DecidedBy, InputError, InputErrorInfo, TrajectoryResult, VerdictLabel
from pipelines.alignment import TurnAlignmentError
from pipelines.config import GradingConfig
from pipelines.grade.case import GradedCase, grade_case
from pipelines.grade.replay import Replayer
from pipelines.ingest import Loaded, TaskSet, check_task

__all__ = ["error_row", "grade_loaded"]


def grade_loaded(loaded: Loaded, taskset: TaskSet, config: GradingConfig, replayer: Replayer | None = None) -> GradedCase | TrajectoryResult:
    """One read item graded against its task, or its error row (nothing raised)."""
    if loaded.error is not None:
        return error_row(loaded, loaded.error)
    problem = check_task(loaded, taskset)
    if problem is not None:
        return error_row(loaded, problem)
    assert loaded.trajectory is not None  # no error: the item was read
    task = taskset.tasks[loaded.trajectory.task_id]
    try:
        replay = None
        if replayer is not None and task.environment is not None:
            replay = replayer.replay(task, loaded.trajectory, config.turns)
        return grade_case(task, loaded.trajectory, config, source=loaded.source, replay=replay)
    except InputError as exc:
        return error_row(loaded, exc.info)
    except TurnAlignmentError as exc:
        return error_row(loaded, InputErrorInfo(kind="unknown_turn", message=str(exc), file=loaded.source.file, line=loaded.source.line, field="turns"))
    except Exception as exc:  # an environment or replay failure must not sink the run
        info = InputErrorInfo(kind="grading_error", message=f"{type(exc).__name__}: {exc}", file=loaded.source.file, line=loaded.source.line)
        return error_row(loaded, info)


def error_row(loaded: Loaded, info: InputErrorInfo) -> TrajectoryResult:
    return TrajectoryResult(
        task_id=loaded.task_id,
        trajectory_id=loaded.trajectory_id,
        agent=loaded.trajectory.agent if loaded.trajectory is not None else None,
        verdict=VerdictLabel.ERROR,
        decided_by=DecidedBy.ERROR,
        source=loaded.source,
        error=info,
    )
