"""``judge resume RUN_DIR``: continue a run from its run state alone, without its command line.

A run records, when it starts, how to start it again (``recipe``, in ``.judge-run/state.json``):
the inputs and options as given, the working directory they were given in, and the judge
settings. Resuming rebuilds the options from it (in that directory, so every input resolves and
is named as it was: rows carry input names as given), rebuilds the judge panel from the recorded
settings, and continues the run through ``run_grading`` with ``resume``: inputs are re-read and
checked against the hashes the run recorded, the waiting cases rebuilt from the shard records,
the journaled rounds replayed, and, for a run waiting for provider batches, the batches polled,
collected and the run finished (or left waiting again).

A run that read an input from standard input cannot be rebuilt this way (the input is gone):
``judge grade --resume`` with the input piped again continues it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipelines.run.folder import MANIFEST, complete_run
from pipelines.run.records import Recipe
from pipelines.run.state import STATE_DIR, RunDirError, RunState

if TYPE_CHECKING:
    from pipelines.run.options import GradeOptions

__all__ = ["RecordedRun", "in_directory", "load_recipe", "options_from"]


class RecordedRun:
    """A run's recorded recipe and phase, read (typed, version-checked) from its run state."""

    def __init__(self, run_dir: Path):
        self.run_dir = Path(run_dir).resolve()
        state = RunState(self.run_dir / STATE_DIR)
        if not state.state_path.exists():
            what = "holds a complete run: nothing to resume" if complete_run(self.run_dir / MANIFEST) else "holds no interrupted or waiting run"
            raise RunDirError(f"judge resume: {run_dir} {what}")
        record = state.peek()
        self.phase = record.phase
        if record.recipe is None:
            raise RunDirError(
                f"judge resume: {run_dir} records no way to start it again (a run started from Python): continue it with judge grade --resume and its options"
            )
        self.recipe: Recipe = record.recipe
        if record.identity.judges is not None and self.recipe.judges is None:
            raise RunDirError(
                f"judge resume: {run_dir} was graded with judges whose settings were not recorded (a run started by judge run, or from Python): "
                "continue it with judge grade --resume and the same options"
            )
        piped = [name for name, given in self.recipe.inputs.items() if given == "-"]
        if piped:
            raise RunDirError(
                f"judge resume: the run read --{piped[0].replace('_', '-')} from standard input, which is gone: continue it with judge grade --resume, piping the input again"
            )

    @property
    def cwd(self) -> Path:
        return Path(self.recipe.cwd)

    @property
    def judge_settings(self) -> dict[str, Any] | None:
        return self.recipe.judges


def load_recipe(run_dir: Path) -> RecordedRun:
    return RecordedRun(run_dir)


@contextlib.contextmanager
def in_directory(path: Path) -> Iterator[None]:
    """Work in ``path`` (the run's inputs are resolved, and named, as they were given there)."""
    if not path.is_dir():
        raise RunDirError(f"judge resume: the run was started in {path}, which no longer exists: its inputs cannot be found as given")
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def options_from(found: RecordedRun, *, escalator: Any, rubrics: Any, settings: Any, workers: int) -> GradeOptions:
    """The ``GradeOptions`` the run was started with, to resume it (call inside ``in_directory``)."""
    from pipelines.ingest import Limits
    from pipelines.run.options import GradeOptions

    recipe = found.recipe
    inputs = {name: None if given is None else Path(given) for name, given in recipe.inputs.items()}
    trajectories = inputs.get("trajectories")
    if trajectories is None:
        raise RunDirError(f"judge resume: {found.run_dir}: the recipe names no trajectories input; start over with judge grade --overwrite")
    replayer = None
    if recipe.replay:
        from pipelines.grade import Replayer

        replayer = Replayer()
    limits = recipe.limits
    return GradeOptions(
        tasks=inputs.get("tasks"),
        trajectories=trajectories,
        out=found.run_dir,
        reference=inputs.get("reference"),
        task_format=recipe.task_format,
        trajectory_format=recipe.trajectory_format,
        on_error=recipe.on_error,
        config=recipe.config,
        escalator=escalator,
        replayer=replayer,
        limits=Limits(
            max_line_bytes=limits.max_line_bytes,
            max_string_bytes=limits.max_string_bytes,
            **({} if limits.max_depth is None else {"max_depth": limits.max_depth}),
        ),
        command=recipe.command,
        strict=recipe.strict,
        task_key=recipe.task_key,
        labels=inputs.get("labels"),
        tool_specs=inputs.get("tool_specs"),
        rubrics=rubrics,
        workers=workers,
        ray=recipe.ray,
        ray_address=recipe.ray_address,
        resume=True,
        shard_lines=recipe.shards.lines,
        shard_bytes=recipe.shards.bytes,
        judge_settings=settings,
        rubrics_dir=None if recipe.rubrics_dir is None else Path(recipe.rubrics_dir),
        parquet=recipe.parquet,
    )
