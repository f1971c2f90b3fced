"""``judge convert``: any trajectory input as native JSONL (and its tasks), what ``judge grade`` reads."""

from __future__ import annotations

import contextlib
import os
import secrets
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, BinaryIO, Optional

import typer

from pipelines.cli import _usage as usage
from pipelines.cli._common import EXIT_INPUT_ERROR, EXIT_USAGE, console, labelled
from pipelines.cli._formats import TASK_FORMAT_NAMES, TRAJECTORY_FORMAT_NAMES, names
from pipelines.cli.grade import OnError

if TYPE_CHECKING:
    from judge import InputErrorInfo


def _one_file(value: Optional[Path]) -> Optional[Path]:
    """An input file, or ``-``: a folder (a BFCL result or data folder, graded whole by ``judge
    grade``) is converted one file at a time."""
    if value is not None and value.is_dir():
        raise typer.BadParameter(f"'{value}' is a folder: convert reads one file (a BFCL result folder: each result file with its questions file as --tasks)")
    return usage.input_or_folder(value)


def convert(
    trajectories: Annotated[
        Path,
        typer.Option(callback=_one_file, help="Trajectories in any format judge grade reads (auto-detected); - for standard input."),
    ],
    out: Annotated[Path, typer.Option(help="The native trajectories (JSONL); - for standard output.")] = Path("-"),
    tasks_out: Annotated[Optional[Path], typer.Option(help="Also write the tasks (those the file carries, or --tasks) as a native tasks file (JSONL).")] = None,
    tasks: Annotated[
        Optional[Path],
        typer.Option(callback=_one_file, help="Tasks (native, VAKRA or BFCL): to match transcripts that name no task, and for --tasks-out."),
    ] = None,
    reference: Annotated[Optional[Path], typer.Option(callback=_one_file, help="Separate ground truth of the tasks (VAKRA, BFCL).")] = None,
    format: Annotated[Optional[str], typer.Option("--format", help=f"Trajectory format (auto-detected by default): {names(TRAJECTORY_FORMAT_NAMES)}.")] = None,
    task_format: Annotated[Optional[str], typer.Option(help=f"Task format (auto-detected by default): {names(TASK_FORMAT_NAMES)}.")] = None,
    task_key: Annotated[
        Optional[str], typer.Option("--task-key", metavar="ATTRIBUTE", help="OTel traces: where the task id is (as judge grade --task-key).")
    ] = None,
    tool_specs: Annotated[Optional[Path], typer.Option(callback=usage.input_path, help="Tool specs for task formats whose files carry none.")] = None,
    strict: Annotated[bool, typer.Option("--strict", help="Fields the schema does not know are errors instead of warnings.")] = False,
    on_error: Annotated[OnError, typer.Option(help="skip: write the rest and list bad items; fail: stop at the first.")] = OnError.skip,
) -> None:
    """Write trajectories in any format as native JSONL, what judge grade reads from them."""
    from pipelines.ingest import ToolSpecError, UnreadableInput, UsageError
    from pipelines.run import InputErrorsFound, NoTasks
    from pipelines.run.convert import ConvertOptions, convert_trajectories

    usage.check_format_names(format, task_format)
    piped = [name for name, path in (("--trajectories", trajectories), ("--tasks", tasks), ("--reference", reference)) if path is not None and str(path) == "-"]
    if len(piped) > 1:
        usage.fail(piped[1], f"standard input (-) can feed one input only, not {' and '.join(piped)}")
    if tasks_out is not None and str(tasks_out) == "-":
        usage.fail("--tasks-out", "a file, not standard output (--out may be -)")
    if str(out) != "-" and tasks_out is not None and out.resolve() == tasks_out.resolve():
        usage.fail("--tasks-out", "must differ from --out")
    opts = ConvertOptions(
        trajectories=trajectories,
        tasks=tasks,
        reference=reference,
        trajectory_format=format,
        task_format=task_format,
        task_key=task_key,
        tool_specs=tool_specs,
        strict=strict,
        stop_at_error=on_error is OnError.fail,
    )
    shown = 0

    def listed(info: InputErrorInfo) -> None:
        nonlocal shown
        shown += 1
        if shown <= LISTED_ERRORS:
            console.print(labelled("input error:", info.render()), highlight=False, soft_wrap=True)

    try:
        with _written(out) as sink, _written(tasks_out) if tasks_out is not None else contextlib.nullcontext() as tasks_sink:
            done = convert_trajectories(opts, sink, tasks_sink, on_error=listed)
    except InputErrorsFound as exc:
        raise typer.Exit(EXIT_INPUT_ERROR) from exc
    except UnreadableInput as exc:  # a compressed input that is corrupt, cut short or inflates past its cap
        console.print(labelled("input error:", str(exc)), highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_INPUT_ERROR) from exc
    except UsageError as exc:
        usage.fail(exc.option, str(exc))
    except (NoTasks, ToolSpecError) as exc:
        console.print(labelled("error:", str(exc)), highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_USAGE) from exc
    if shown > LISTED_ERRORS:
        console.print(f"... and {shown - LISTED_ERRORS} more input errors", style="red")
    where = "standard output" if str(out) == "-" else str(out)
    line = f"{done.trajectories} trajectories written to {where}"
    if done.tasks is not None:
        line += f", {done.tasks} tasks to {tasks_out}"
    if done.errors:
        line += f"; {len(done.errors)} input items could not be read (listed above)"
    if done.warnings:
        line += f"; {len(done.warnings)} warnings (e.g. {done.warnings[0].render()})"
    console.print(line, highlight=False, soft_wrap=True)
    if done.trajectories == 0 and done.errors:
        raise typer.Exit(EXIT_INPUT_ERROR)


LISTED_ERRORS = 20  # input errors printed one by one; the rest are counted


@contextlib.contextmanager
def _written(path: Path) -> Iterator[BinaryIO]:
    """Standard output for ``-``; else a temporary file beside ``path``, renamed onto it when the
    conversion ends normally: one that fails or is interrupted leaves no half-written file. The
    file is created as ``open`` creates one (the umask's mode, as the run's outputs are), not with
    ``mkstemp``'s owner-only 0600."""
    if str(path) == "-":
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.partial")
    try:
        with open(tmp, "xb") as fh:
            yield fh
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


__all__ = ["convert"]
