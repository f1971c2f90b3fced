"""What every ``judge`` command shares: the console, exit codes and the judge options.

Start-up matters (``judge --help`` runs in well under a second): this module and the command
modules import only typer at the top; everything heavy is imported inside the command that needs it.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, Optional

import typer
from rich.console import Console
from rich.text import Text

if TYPE_CHECKING:
    from rich.table import Table

    from judge import Escalator

# Messages carry user text (ids, paths, field values, tool names): never read as rich markup, so
# "[/x]" in a task id prints as written instead of raising, and "[unknown_task]" is not swallowed.
# Colour goes through ``style=`` and ``labelled``.
console = Console(stderr=True, markup=False)
# Standard output: summaries and tables. A line is never broken where the console thinks the
# screen ends (a terminal wraps it itself; piped, a line is a line): see also ``print_table``.
stdout = Console(markup=False, soft_wrap=True)
PIPED_WIDTH = 10_000  # piped, a table is as wide as its content: no console width to fit


def print_table(table: Table) -> None:
    """A table on standard output: on a terminal, fitted to the window; piped (a file, ``less``,
    CI logs) as wide as its content, so no cell wraps at rich's 80-column default and the title
    is a line of its own above it (a title wraps to the table's width, not the line's)."""
    if stdout.is_terminal:
        stdout.print(table)
        return
    wide = Console(file=stdout.file, markup=False, soft_wrap=True, width=PIPED_WIDTH, color_system=None)
    if table.title:
        wide.print(str(table.title), highlight=False)
        table = copy.copy(table)
        table.title = None
    wide.print(table)


def labelled(label: str, text: str, style: str = "red") -> Text:
    """``label`` in ``style``, a space, then ``text`` exactly as given."""
    return Text.assemble((label, style), " ", text)


EXIT_OK, EXIT_INTERNAL, EXIT_USAGE, EXIT_INPUT_ERROR, EXIT_JUDGE_CONFIG = 0, 1, 2, 3, 4
EXIT_WAITING = 5  # the run waits for provider batches (--judge-mode batch): continue it with judge resume


def fail(option: str, message: str) -> NoReturn:
    """A usage error naming the option as typed: exit 2 (``pipelines.cli._usage``)."""
    console.print(labelled("error:", f"{option}: {message}"), highlight=False, soft_wrap=True)
    raise typer.Exit(EXIT_USAGE)


JudgeOpt = Annotated[Optional[list[str]], typer.Option("--judge", help="A judge as provider:model (repeat for a panel), e.g. openai:gpt-4.1-mini.")]
JudgeConfigOpt = Annotated[
    Optional[Path], typer.Option("--config", help="TOML config: [grading] weights/thresholds, [judges] panels, base URLs, prices, limits.")
]
CacheOpt = Annotated[Optional[Path], typer.Option("--cache", help="Judge response cache (SQLite). Default: a per-user cache shared by all runs.")]
NoCacheOpt = Annotated[bool, typer.Option("--no-cache", help="Do not read or write the judge cache.")]
OfflineOpt = Annotated[bool, typer.Option("--offline", help="Answer judge requests from the cache only; a miss ends unresolved.")]
MaxCostOpt = Annotated[Optional[float], typer.Option("--max-cost", help="Stop launching judge calls once this many USD are spent.")]
VoteOpt = Annotated[Optional[str], typer.Option("--vote", help="Panel rule: majority | unanimous | weighted.")]
WeightsOpt = Annotated[Optional[Path], typer.Option("--weights", help="Vote weights written by `judge calibrate`.")]
TieOpt = Annotated[Optional[str], typer.Option("--tie-breaker", help="Judge (provider:model) that breaks panel ties.")]
MinVotesOpt = Annotated[
    Optional[int],
    typer.Option("--min-votes", min=1, help="Counted (non-abstaining) judge votes needed to decide; fewer: unresolved. Default: a majority of the panel."),
]
JudgeModeOpt = Annotated[
    str,
    typer.Option(
        "--judge-mode",
        help="online: ask judges live; batch: send the questions as provider batches (OpenAI Batch API, Anthropic Message Batches), exit 5, finish with `judge resume`.",
    ),
]
ReplayOpt = Annotated[bool, typer.Option("--replay/--no-replay", help="Re-execute calls in the task's environment when it has one.")]


def build_escalator(
    judges: list[str] | None,
    config: Path | None,
    cache: Path | None,
    no_cache: bool,
    offline: bool,
    max_cost: float | None,
    vote: str | None,
    weights: Path | None,
    tie_breaker: str | None,
    rubrics: Mapping[str, Any] | None = None,
    min_votes: int | None = None,
    mode: str = "online",
) -> Escalator | None:
    """The judge panel the options describe, or None when no judge is configured (exit 4 if invalid).
    ``rubrics``: the table from ``--rubrics`` (``pipelines.cli.rubrics.load_rubric_table``); None: built-ins."""
    settings = judge_settings(judges, config, cache, no_cache, offline, max_cost, vote, weights, tie_breaker, min_votes, mode)
    return None if settings is None else escalator_from(settings, rubrics)


def judge_settings(
    judges: list[str] | None,
    config: Path | None,
    cache: Path | None,
    no_cache: bool,
    offline: bool,
    max_cost: float | None,
    vote: str | None,
    weights: Path | None,
    tie_breaker: str | None,
    min_votes: int | None = None,
    mode: str = "online",
    options: Mapping[str, str] | None = None,
) -> Any:
    """The ``judge.llm.JudgeSettings`` the options describe, or None when no judge is configured.
    A value of an option the settings refuse (``--vote maj``, ``--max-cost -1``) is a usage error
    naming the option as typed (exit 2, as ``--judge-mode`` and ``--controls`` are); anything else
    invalid exits 4. ``options``: the option names of this command where they differ from
    ``SETTING_OPTIONS`` (``judge run``'s ``--judge-max-cost``)."""
    if not judges and config is None:
        return None
    from pydantic import ValidationError

    from judge.llm import JudgeSettings

    fields: dict[str, Any] = {
        "judges": judges or [],
        "config_path": config,
        "cache_path": cache,
        "no_cache": no_cache,
        "offline": offline,
        "max_cost_usd": max_cost,
        "rule": vote,
        "weights_path": weights,
        "tie_breaker": tie_breaker,
        "min_votes": min_votes,
        "mode": mode,
    }
    try:
        return JudgeSettings(**{k: v for k, v in fields.items() if v is not None})
    except ValidationError as exc:
        names = {**SETTING_OPTIONS, **(options or {})}
        first = exc.errors(include_url=False)[0]
        field = str(first["loc"][0]) if first["loc"] else ""
        if field in names and fields.get(field) is not None:
            fail(names[field], f"{_refusal(first)}, not {first['input']!r}")
        detail = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors(include_url=False))
        console.print(f"invalid judge configuration: {detail}", style="red", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_JUDGE_CONFIG) from exc
    except Exception as exc:
        console.print(f"invalid judge configuration: {exc}", style="red")
        raise typer.Exit(EXIT_JUDGE_CONFIG) from exc


# The option that sets each JudgeSettings field (judge_settings): an error names what the user typed.
SETTING_OPTIONS = {
    "judges": "--judge",
    "config_path": "--config",
    "cache_path": "--cache",
    "max_cost_usd": "--max-cost",
    "rule": "--vote",
    "weights_path": "--weights",
    "tie_breaker": "--tie-breaker",
    "min_votes": "--min-votes",
    "mode": "--judge-mode",
}


def _refusal(error: Mapping[str, Any]) -> str:
    """A pydantic error as the rest of the command line says it: "must be majority, unanimous or
    weighted", "must be at least 0"."""
    ctx = error.get("ctx") or {}
    kind = error.get("type")
    if kind == "literal_error" and "expected" in ctx:
        return f"must be {str(ctx['expected']).replace(chr(39), '')}"
    bounds = {
        "greater_than_equal": ("at least", "ge"),
        "greater_than": ("more than", "gt"),
        "less_than_equal": ("at most", "le"),
        "less_than": ("less than", "lt"),
    }
    if kind in bounds:
        words, key = bounds[kind]
        return f"must be {words} {ctx.get(key)}"
    message = str(error.get("msg", "invalid value"))
    return message[:1].lower() + message[1:]


def escalator_from(settings: Any, rubrics: Mapping[str, Any] | None = None) -> Escalator | None:
    """The judge panel of ``settings`` (exit 4 if invalid)."""
    import pipelines.checks.answer  # noqa: F401  (registers the comparisons a judge's pass is checked with)
    from judge.llm import build_panel

    if rubrics is None:  # the built-in rubrics register when their package is imported, which a run without judges never does
        import rubrics as builtin_rubrics

        rubrics = builtin_rubrics.RUBRICS
    try:
        return build_panel(settings, rubrics)
    except Exception as exc:
        console.print(f"invalid judge configuration: {exc}", style="red")
        raise typer.Exit(EXIT_JUDGE_CONFIG) from exc


def build_replayer(enabled: bool) -> Any:
    """The replayer that re-executes calls in bundled environments (None: replay off)."""
    if not enabled:
        return None
    from pipelines.grade import Replayer

    return Replayer()
