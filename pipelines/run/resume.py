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
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipelines.run.options import RECIPE_VERSION
from pipelines.run.state import STATE_DIR, RunDirError

if TYPE_CHECKING:
    from pipelines.run.options import GradeOptions

__all__ = ["Recipe", "in_directory", "load_recipe", "options_from"]


class Recipe:
    """A run's recorded recipe and phase, read from its run state."""

    def __init__(self, run_dir: Path):
        self.run_dir = Path(run_dir).resolve()
        path = self.run_dir / STATE_DIR / "state.json"
        if not path.exists():
            complete = _complete(self.run_dir)
            what = "holds a complete run: nothing to resume" if complete else "holds no interrupted or waiting run"
            raise RunDirError(f"judge resume: {run_dir} {what}")
        try:
            state = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise RunDirError(f"{path}: the run state cannot be read ({exc}); start over with judge grade --overwrite") from exc
        self.phase = str(state.get("phase"))
        self.data: dict[str, Any] = state.get("recipe") or {}
        if self.data.get("version") != RECIPE_VERSION:
            raise RunDirError(
                f"judge resume: {run_dir} records no way to start it again (a run of an older version): continue it with judge grade --resume and its options"
            )
        if (state.get("identity") or {}).get("judges") is not None and self.data.get("judges") is None:
            raise RunDirError(
                f"judge resume: {run_dir} was graded with judges whose settings were not recorded (a run started by judge run, or from Python): "
                "continue it with judge grade --resume and the same options"
            )
        piped = [name for name, given in self.data["inputs"].items() if given == "-"]
        if piped:
            raise RunDirError(
                f"judge resume: the run read --{piped[0].replace('_', '-')} from standard input, which is gone: continue it with judge grade --resume, piping the input again"
            )

    @property
    def cwd(self) -> Path:
        return Path(self.data["cwd"])

    @property
    def judge_settings(self) -> dict[str, Any] | None:
        return self.data.get("judges")


def load_recipe(run_dir: Path) -> Recipe:
    return Recipe(run_dir)


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


def options_from(found: Recipe, *, escalator: Any, rubrics: Any, settings: Any, workers: int) -> GradeOptions:
    """The ``GradeOptions`` the run was started with, to resume it (call inside ``in_directory``)."""
    from pipelines.config import GradingConfig
    from pipelines.ingest import Limits
    from pipelines.run.options import GradeOptions

    data = found.data
    inputs = {name: None if given is None else Path(given) for name, given in data["inputs"].items()}
    assert inputs["trajectories"] is not None
    replayer = None
    if data["replay"]:
        from pipelines.grade import Replayer

        replayer = Replayer()
    rubrics_dir = data.get("rubrics_dir")
    return GradeOptions(
        tasks=inputs["tasks"],
        trajectories=inputs["trajectories"],
        out=found.run_dir,
        reference=inputs["reference"],
        task_format=data["task_format"],
        trajectory_format=data["trajectory_format"],
        on_error=data["on_error"],
        config=GradingConfig.model_validate(data["config"]),
        escalator=escalator,
        replayer=replayer,
        limits=Limits(**data["limits"]),
        command=data["command"],
        strict=data["strict"],
        task_key=data.get("task_key"),  # recipes written before --task-key have none
        labels=inputs["labels"],
        tool_specs=inputs["tool_specs"],
        rubrics=rubrics,
        workers=workers,
        ray=data["ray"],
        ray_address=data["ray_address"],
        resume=True,
        shard_lines=data["shards"]["lines"],
        shard_bytes=data["shards"]["bytes"],
        judge_settings=settings,
        rubrics_dir=None if rubrics_dir is None else Path(rubrics_dir),
    )


def _complete(run_dir: Path) -> bool:
    with contextlib.suppress(OSError, ValueError):
        return bool(json.loads((run_dir / "manifest.json").read_text(encoding="utf-8")).get("complete"))
    return False
