"""What a grading run is asked to do and what it gives back: the options of ``judge grade``, the
outcomes (a finished run, or one waiting for provider batches), the progress it reports, and the
two ways it stops on purpose (no tasks, ``--on-error fail``)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import msgspec

from judge import BadInputError, ConfigurationError, Escalator, InputErrorInfo, RunSummary
from pipelines.config import GradingConfig
from pipelines.ingest import Limits
from pipelines.run.lines import SHARD_BYTES
from pipelines.run.records import LimitsRecord, Recipe, ShardSize

if TYPE_CHECKING:
    from judge.llm import JudgeSettings, Rubric
    from pipelines.grade import Replayer

__all__ = ["BatchWait", "GradeOptions", "InputErrorsFound", "JudgingProgress", "NoTasks", "Progress", "RunOutcome", "recipe"]

_INPUTS = ("tasks", "trajectories", "reference", "labels", "tool_specs")


class NoTasks(ConfigurationError):
    """Neither ``--tasks`` nor the trajectory file provides tasks."""


class InputErrorsFound(BadInputError):
    """Raised with ``--on-error fail`` at the first bad input item."""

    def __init__(self, info: InputErrorInfo):
        super().__init__(info.render())
        self.info = info


class GradeOptions(msgspec.Struct):
    tasks: Path | None  # None: the trajectory file carries its tasks (tau2 results, Inspect logs)
    trajectories: Path
    out: Path
    reference: Path | None = None
    task_format: str | None = None
    trajectory_format: str | None = None
    on_error: Literal["skip", "fail"] = "skip"
    config: GradingConfig = msgspec.field(default_factory=GradingConfig)
    escalator: Escalator | None = None
    replayer: Replayer | None = None  # replay in executable environments (--replay)
    limits: Limits = msgspec.field(default_factory=Limits)
    command: list[str] = msgspec.field(default_factory=list)
    strict: bool = False  # unknown fields are errors, not warnings
    task_key: str | None = None  # --task-key: the attribute that holds a trace's task id (otel)
    labels: Path | None = None  # external labels (--labels) to report agreement with
    tool_specs: Path | None = None  # tool specs for tasks whose source carries none (--tool-specs)
    rubrics: Mapping[str, Rubric] | None = None  # the rubric table the panel uses (--rubrics); None: the built-ins
    workers: int = 1  # processes grading shards (the CLI defaults to the machine's cores)
    ray: bool = False  # grade shards on a Ray cluster instead
    ray_address: str | None = None  # None: a local Ray instance; "auto" / "ray://host:port": a cluster
    overwrite: bool = False  # replace another run's files in ``out``
    resume: bool = False  # continue the interrupted run in ``out``
    shard_lines: int = 1000  # lines per shard (a shard is the unit of work of a worker)
    shard_bytes: int = SHARD_BYTES
    judge_settings: JudgeSettings | None = None  # the settings the escalator was built from (recorded: judge resume rebuilds it)
    rubrics_dir: Path | None = None  # --rubrics (recorded with the judge settings)
    parquet: bool | None = None  # tables/*.parquet: True always, False never, None from reports.PARQUET_FROM trajectories
    judge_shard_min: int | None = None  # escalation rounds this large are judged by ``workers`` processes (None: judge.llm.SHARD_MIN_REQUESTS)
    empty_ok: bool = False  # grade a trajectories input that holds none (judge run's own record) instead of refusing it as a usage error


class BatchWait(msgspec.Struct):
    """A run that stopped to wait for provider batches (``--judge-mode batch``): the escalation
    round they answer, each batch as last seen, how many this invocation submitted."""

    round: int
    batches: list[str]  # "<api> batch <id>: <state> (counts)"
    submitted: int = 0
    out: Path | None = None


class JudgingProgress(msgspec.Struct, frozen=True):
    """Where an escalation round stands, for a live line while judges work: questions of the round
    (controls included), those decided so far (None: not known until the round's worker shares come
    back), and the judge calls, free answers (cache, shared), abstentions and cost of the run so far."""

    round: int  # 1-based
    questions: int
    answered: int | None
    calls: int
    cached: int
    abstained: int
    cost_usd: float
    elapsed_s: float
    done: bool = False

    @property
    def eta_s(self) -> float | None:
        """Seconds left at the round's pace so far (None until something is answered)."""
        if not self.answered or self.answered >= self.questions:
            return None if not self.answered else 0.0
        return self.elapsed_s / self.answered * (self.questions - self.answered)


class RunOutcome(msgspec.Struct):
    summary: RunSummary
    out: Path
    files: list[Path]
    resumed: bool = False


Progress = Callable[[int], None]


def recipe(opts: GradeOptions) -> Recipe:
    """What ``judge resume`` needs to rebuild ``opts``: the options as given and where."""
    settings = opts.judge_settings
    return Recipe(
        cwd=os.getcwd(),
        inputs={name: None if getattr(opts, name) is None else str(getattr(opts, name)) for name in _INPUTS},
        task_format=opts.task_format,
        trajectory_format=opts.trajectory_format,
        on_error=opts.on_error,
        config=opts.config,
        strict=opts.strict,
        task_key=opts.task_key,
        limits=LimitsRecord(max_line_bytes=opts.limits.max_line_bytes, max_string_bytes=opts.limits.max_string_bytes, max_depth=opts.limits.max_depth),
        replay=opts.replayer is not None,
        ray=opts.ray,
        ray_address=opts.ray_address,
        shards=ShardSize(lines=opts.shard_lines, bytes=opts.shard_bytes),
        command=list(opts.command),
        judges=None if settings is None else settings.model_dump(mode="json", exclude_none=True),
        rubrics_dir=None if opts.rubrics_dir is None else str(opts.rubrics_dir),
        parquet=opts.parquet,
    )
