"""The ``judge`` command line: one module per command (or command group), mounted here.

Exit codes: 0 the run completed (whatever the verdicts); 1 an unexpected internal error;
2 bad usage (unknown option, missing file, undetectable format); 3 input errors (with
``--on-error fail``, or when no input item could be used); 4 the judge configuration is invalid;
5 the run waits for provider batches (``--judge-mode batch``): continue it with ``judge resume``.

To add a command: write ``pipelines/cli/<name>.py`` with the command function (heavy imports
inside the function, so ``judge --help`` stays fast) and register it below.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

import typer

from pipelines.cli import calibrate as _calibrate
from pipelines.cli import convert as _convert
from pipelines.cli import grade as _grade
from pipelines.cli import report as _report
from pipelines.cli import resume as _resume
from pipelines.cli import run as _run
from pipelines.cli import schema as _schema
from pipelines.cli._common import EXIT_INPUT_ERROR, EXIT_INTERNAL, EXIT_JUDGE_CONFIG, EXIT_USAGE, EXIT_WAITING, console, labelled
from pipelines.cli.env import env_app
from pipelines.cli.gold import gold_app
from pipelines.cli.rubrics import rubrics_app


def collector_policy(command: Callable[..., Any]) -> Callable[..., Any]:
    """A command that grades: its start-up (its imports) runs with rare young collections, and from
    ``work_starts`` (``run_and_print``) what it imported is set aside from the collector for the
    rest of the command (``judge.core._heap``). A wrapper per command, not in ``main``: light
    commands (``judge env list``, ``--help``) must not import ``judge`` (pydantic) at all."""

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        from judge.core._heap import frozen_heap, quiet_gc

        with frozen_heap(), quiet_gc():
            return command(*args, **kwargs)

    return run


app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_show_locals=False, help="Grade tool-calling agent trajectories, VAKRA-style.")
app.command()(collector_policy(_grade.grade))
app.command()(collector_policy(_grade.demo))
app.command()(_report.report)
app.command()(collector_policy(_resume.resume))
app.command()(_run.run)
app.command()(_calibrate.calibrate)
app.command()(_schema.schema)
app.command()(_convert.convert)
app.add_typer(env_app, name="env", help="Executable environments: list, show tools, serve over MCP.")
app.add_typer(gold_app, name="gold", help="Human gold from your own runs: export a labelling set, write the labelling page, import labels.")
app.add_typer(rubrics_app, name="rubrics", help="Rubric files: export the built-ins, check a folder of your own.")


# Options whose value may be left out (``--ray`` alone means ``--ray local``): click takes the
# next word as the value, so the console script fills the default in when none follows.
_OPTIONAL_VALUES = {"--ray": "local"}


def optional_values(argv: list[str]) -> list[str]:
    out: list[str] = []
    for i, arg in enumerate(argv):
        out.append(arg)
        if arg in _OPTIONAL_VALUES and (i + 1 == len(argv) or argv[i + 1].startswith("-")):
            out.append(_OPTIONAL_VALUES[arg])
    return out


def _group() -> None:
    """The callback of an app of one command: it keeps that app a group (``judge NAME ...``)."""


def app_for(argv: list[str]) -> typer.Typer:
    """The app to run ``argv`` with: for ``judge NAME ...`` one that holds command (or group)
    NAME alone, for anything else (``--help``, no arguments, an unknown name) the whole ``app``.
    Typer converts the signature of every command an app holds on each call (~0.1 s for all of
    them), so the console script builds only the one it runs: help, errors and exit codes are the
    whole app's, command for command."""
    import copy

    from typer.main import get_command_name

    name = argv[0] if argv else None
    commands = [c for c in app.registered_commands if (c.name or get_command_name(c.callback.__name__ if c.callback else "")) == name]
    groups = [g for g in app.registered_groups if g.name == name]
    if not commands and not groups:
        return app
    one = copy.copy(app)
    one.registered_commands, one.registered_groups = commands, groups
    one.info = copy.copy(app.info)
    one.info.callback = _group
    return one


def main() -> None:  # pragma: no cover - the console script
    try:
        argv = optional_values(sys.argv[1:])
        app_for(argv)(args=argv)
    except SystemExit:
        raise
    except Exception as exc:
        from pipelines.ingest import UsageError

        if isinstance(exc, UsageError):  # inputs named wrongly, found by a command without its own check
            console.print(labelled("error:", exc.for_cli()), highlight=False, soft_wrap=True)
            sys.exit(EXIT_USAGE)
        console.print(f"internal error: {type(exc).__name__}: {exc}", style="red")
        sys.exit(EXIT_INTERNAL)


__all__ = ["EXIT_INPUT_ERROR", "EXIT_JUDGE_CONFIG", "EXIT_USAGE", "EXIT_WAITING", "app", "app_for", "main", "optional_values"]
