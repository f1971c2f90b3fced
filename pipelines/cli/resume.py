"""``judge resume RUN_DIR``: continue a waiting or interrupted run from its run state alone.

For a run waiting for provider batches (``--judge-mode batch``, exit code 5): poll its batches;
while any is running, say how they stand and exit 5 again (``--wait`` polls until they end);
once all have ended, collect their answers, decide the round, send the next round's questions
as new batches (exit 5) or, when nothing is left to ask, write the outputs and exit 0. An
interrupted run (killed while grading or judging) is continued the same way.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from pipelines.cli._common import EXIT_USAGE, EXIT_WAITING, console

if TYPE_CHECKING:
    from pipelines.run import RunState


def resume(
    run_dir: Annotated[Path, typer.Argument(help="The run's output directory (--out of judge grade).")],
    wait: Annotated[bool, typer.Option("--wait", help="Poll until the provider batches of the waiting round have ended, then go on.")] = False,
    poll_interval: Annotated[float, typer.Option(min=0.0, help="Seconds between polls with --wait.")] = 60.0,
    cancel: Annotated[
        bool, typer.Option("--cancel", help="Cancel the waiting batches: what they answered is kept, the rest abstains batch_cancelled.")
    ] = False,
    workers: Annotated[Optional[int], typer.Option(min=1, help="Processes that regrade the waiting cases (default: the machine's cores).")] = None,
) -> None:
    """Continue a run waiting for provider batches (or interrupted): poll, collect, vote, finish."""
    import asyncio

    from pipelines.cli._common import escalator_from
    from pipelines.cli.grade import print_waiting, run_and_print
    from pipelines.cli.rubrics import load_rubric_table
    from pipelines.run import BatchWait, RunDirError, RunState, default_workers, in_directory, load_recipe, options_from

    try:
        cancelled = False
        while True:
            found = load_recipe(run_dir)
            with in_directory(found.cwd):
                settings, escalator, table = None, None, None
                if found.judge_settings is not None:
                    from judge.llm import JudgeSettings

                    settings = JudgeSettings.model_validate(found.judge_settings)
                    rubrics_dir = found.recipe.rubrics_dir
                    table = load_rubric_table(None if rubrics_dir is None else Path(rubrics_dir))
                    escalator = escalator_from(settings, table)
                state = RunState(found.run_dir / ".judge-run")
                state.peek()  # read only: polling needs no lock
                waiting = state.waiting_batches() if found.phase == "waiting" else []
                batch = getattr(escalator, "batch", None)
                if waiting and batch is not None:  # poll cheaply here; the full resume re-reads the inputs
                    from judge.llm import BatchRecord

                    records = [BatchRecord.from_json(r) for r in waiting]
                    if cancel and not cancelled:
                        asyncio.run(batch.cancel(records))
                        cancelled = True
                        console.print(f"cancellation requested for {len(records)} batch(es)")
                    while True:
                        statuses = asyncio.run(batch.poll(records))
                        if all(s.ended for s in statuses):
                            break
                        if not wait:
                            print_waiting(run_dir, BatchWait(round=_round(state), batches=[s.describe() for s in statuses]))
                            raise typer.Exit(EXIT_WAITING)
                        console.print("; ".join(s.describe() for s in statuses), highlight=False)
                        time.sleep(poll_interval)
                elif cancel and not cancelled:
                    console.print("--cancel: no provider batch is waiting in this run", style="yellow")
                    cancelled = True
                opts = options_from(found, escalator=escalator, rubrics=table, settings=settings, workers=workers or default_workers())
                try:
                    run_and_print(opts)
                    _add_runner(found)
                    return
                except typer.Exit as stop:
                    if stop.exit_code != EXIT_WAITING or not wait:
                        raise
            time.sleep(poll_interval)  # a new round went out as batches: wait for it too
    except RunDirError as exc:
        console.print(str(exc), style="red", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_USAGE) from exc


def _add_runner(found: Any) -> None:
    """A ``judge run``'s grading finished here (it graded the run's own trajectories, beside its
    ``run.json``): its manifest gains the runner section, as when ``judge run`` grades at once."""
    from pipelines.runner import RUN_STATE, TRAJECTORIES, add_runner_to_manifest

    graded = found.recipe.inputs.get("trajectories")
    info = found.run_dir / RUN_STATE
    if graded is None or not info.is_file() or (found.cwd / graded).resolve() != (found.run_dir / TRAJECTORIES).resolve():
        return
    add_runner_to_manifest(found.run_dir, json.loads(info.read_text(encoding="utf-8")))


def _round(state: RunState) -> int:
    """The escalation round in progress (1-based): one past the rounds decided."""
    from pipelines.run.records import DecidedRound

    return sum(1 for entry in state.rounds() if isinstance(entry, DecidedRound)) + 1
