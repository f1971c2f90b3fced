"""Usage errors of ``judge grade`` / ``judge demo``: exit 2 with a message naming the option.

Checked before any input is read (format names, the output directory, the config file), or raised
by ingest as ``UsageError`` (undetectable or empty files, a reference file a format does not
take). Never an "internal error", never a Python argument name in the message.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from pipelines.cli._common import fail

if TYPE_CHECKING:
    from pipelines.config import GradingConfig

__all__ = ["check_format_names", "check_out_dir", "fail", "input_or_folder", "input_path", "load_grading_config"]


def check_format_names(trajectory_format: str | None, task_format: str | None) -> None:
    from pipelines.ingest import TASK_FORMATS, TRAJECTORY_FORMATS

    if trajectory_format is not None and trajectory_format not in TRAJECTORY_FORMATS:
        fail("--format", f"unknown trajectory format {trajectory_format!r}; accepted: {', '.join(TRAJECTORY_FORMATS)}")
    if task_format is not None and task_format not in TASK_FORMATS:
        fail("--task-format", f"unknown task format {task_format!r}; accepted: {', '.join(TASK_FORMATS)}")


def input_path(value: Path | None) -> Path | None:
    """An input file, or ``-`` for standard input (read once; see pipelines.run.spool)."""
    if value is not None and value.is_dir():
        raise typer.BadParameter(f"File '{value}' is a directory.")
    return input_or_folder(value)


def input_or_folder(value: Path | None) -> Path | None:
    """An input file or folder (BFCL score files), or ``-`` for standard input."""
    if value is None or str(value) == "-":
        return value
    if not value.exists():
        raise typer.BadParameter(f"File '{value}' does not exist.")
    return value


def check_out_dir(out: Path) -> None:
    """``out`` is a directory this process can write into, or can be created as one. Nothing is
    created here (a run that stops at a later check leaves no empty folder behind)."""
    if out.exists() and not out.is_dir():
        fail("--out", f"{out} is a file, not a directory")
    existing = out
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        fail("--out", f"cannot write into {out}: {existing} is not a directory")
    try:  # os.access says yes to root even on a read-only file system: try it
        with tempfile.NamedTemporaryFile(dir=existing, prefix=".judge-write-check-"):
            pass
    except OSError as exc:
        fail("--out", f"cannot write into {out}: {exc.strerror or exc}")
    if not os.access(existing, os.W_OK | os.X_OK):
        fail("--out", f"cannot write into {out}: {existing} is not writable")


def load_grading_config(path: Path | None) -> GradingConfig:
    from pydantic import ValidationError

    from pipelines.config import GradingConfig

    try:
        return GradingConfig.load(path)
    except OSError as exc:
        fail("--config", f"cannot read {path}: {exc.strerror or exc}")
    except ValueError as exc:  # TOML syntax (tomllib.TOMLDecodeError) or a [grading] field
        detail = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()) if isinstance(exc, ValidationError) else str(exc)
        fail("--config", f"{path}: {detail}")
