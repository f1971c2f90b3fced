"""``judge run``: drive an agent through the tasks, record its trajectories, grade them.

Exit codes (beyond the common ones): 5 the run is incomplete: some trajectories could not be
collected (listed in ``run_errors.jsonl``; the same command resumes and runs only those).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from pipelines.cli._common import (
    EXIT_INPUT_ERROR,
    EXIT_JUDGE_CONFIG,
    EXIT_USAGE,
    CacheOpt,
    JudgeConfigOpt,
    JudgeOpt,
    NoCacheOpt,
    ReplayOpt,
    TieOpt,
    VoteOpt,
    WeightsOpt,
    build_replayer,
    console,
    escalator_from,
    judge_settings,
    labelled,
)
from pipelines.cli._formats import TASK_FORMAT_NAMES, names
from pipelines.cli.grade import OnError
from pipelines.cli.rubrics import RubricsOpt, load_rubric_table

EXIT_INCOMPLETE = 5


def _headers(values: list[str] | None) -> dict[str, str]:
    headers = {}
    for value in values or []:
        name, sep, content = value.partition(":")
        if not sep or not name.strip():
            console.print(f"--mcp-header {value!r}: expected 'Name: value'", style="red")
            raise typer.Exit(EXIT_USAGE)
        headers[name.strip()] = content.strip()
    return headers


def run(
    agent: Annotated[str, typer.Option(help="The agent as provider:model, e.g. openai:gpt-4.1-mini or anthropic:claude-haiku-4-5.")],
    tasks: Annotated[Path, typer.Option(exists=True, dir_okay=False, help="Tasks file (native JSONL, VAKRA input/ground truth, BFCL questions).")],
    trials: Annotated[int, typer.Option(min=1, help="Runs per task (pass@k / pass^k in the report).")] = 1,
    out: Annotated[Path, typer.Option(help="Output directory: trajectories.jsonl, run.json, then the graded outputs.")] = Path("runs/latest-run"),
    reference: Annotated[Optional[Path], typer.Option(exists=True, dir_okay=False, help="Separate ground truth (VAKRA, BFCL).")] = None,
    task_format: Annotated[Optional[str], typer.Option(help=f"Task format (auto-detected by default): {names(TASK_FORMAT_NAMES)}.")] = None,
    seed: Annotated[int, typer.Option(help="Base seed: per-trial seeds, fault draws and cache keys derive from it.")] = 0,
    max_steps: Annotated[int, typer.Option(min=1, help="Most tool calls per trajectory (the policy's max_calls + 1 caps it further).")] = 30,
    enforce_policy: Annotated[
        bool, typer.Option("--enforce-policy/--no-enforce-policy", help="Block calls that break a machine-checkable policy rule.")
    ] = True,
    faults: Annotated[
        Optional[list[str]],
        typer.Option("--faults", help="Fault injection, e.g. 'rate=0.1,kinds=error,timeout,empty,malformed,seed=7'; add tool=NAME for one tool."),
    ] = None,
    mcp: Annotated[Optional[str], typer.Option("--mcp", help="Tools from an MCP server over stdio: the command line that starts it.")] = None,
    mcp_url: Annotated[Optional[str], typer.Option("--mcp-url", help="Tools from an MCP server over streamable HTTP.")] = None,
    mcp_header: Annotated[Optional[list[str]], typer.Option("--mcp-header", help="HTTP header for --mcp-url, 'Name: value' (repeatable).")] = None,
    env_root: Annotated[Optional[Path], typer.Option("--env-root", help="Folder of environment domains (default: the bundled ones).")] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Trajectories running at once.")] = 8,
    rpm: Annotated[Optional[float], typer.Option(min=0.001, help="Model requests per minute (default: the config's [providers.X] rpm, else none).")] = None,
    max_cost: Annotated[
        Optional[float], typer.Option("--max-cost", min=0, help="Start no further trajectory once the agent's model calls cost this many USD.")
    ] = None,
    base_url: Annotated[
        Optional[str], typer.Option("--base-url", help="The agent's API base URL (an OpenAI-compatible server: vLLM, Ollama, llama.cpp).")
    ] = None,
    temperature: Annotated[Optional[float], typer.Option(min=0, help="Sampling temperature (default: the provider's; not sent to Anthropic).")] = None,
    max_tokens: Annotated[Optional[int], typer.Option(min=1, help="Most tokens per model message.")] = None,
    timeout: Annotated[float, typer.Option(min=0.1, help="Seconds per model request and per MCP tool call.")] = 120.0,
    max_tools: Annotated[
        Optional[int], typer.Option(min=0, help="Most tools declared per request (default: the provider's cap, OpenAI 128); 0 = no cap.")
    ] = None,
    agent_name: Annotated[Optional[str], typer.Option(help="Name recorded as the trajectories' agent (default: --agent).")] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace the run in --out instead of resuming it.")] = False,
    no_grade: Annotated[bool, typer.Option("--no-grade", help="Only collect the trajectories.")] = False,
    on_error: Annotated[OnError, typer.Option(help="Bad task items: skip them (listed) or stop at the first.")] = OnError.skip,
    cache: CacheOpt = None,
    no_cache: NoCacheOpt = False,
    offline: Annotated[bool, typer.Option("--offline", help="Answer every model and judge request from the cache; a miss is reported.")] = False,
    judge: JudgeOpt = None,
    config: JudgeConfigOpt = None,
    judge_max_cost: Annotated[Optional[float], typer.Option("--judge-max-cost", help="Stop launching judge calls once this many USD are spent.")] = None,
    vote: VoteOpt = None,
    weights: WeightsOpt = None,
    tie_breaker: TieOpt = None,
    controls: Annotated[
        Optional[str], typer.Option(help="Control items among the judges' questions: gate (default), report, off (as judge grade; config: [grading] controls).")
    ] = None,
    replay: ReplayOpt = True,
    rubrics: RubricsOpt = None,
) -> None:
    """Run an agent on every task (x trials), record trajectories.jsonl, then grade them like `judge grade`."""
    from pipelines.runner import (
        AgentConfigError,
        FaultSpecError,
        RunDirConflict,
        RunOptions,
        Sampling,
        TaskInputError,
        add_runner_to_manifest,
        collect_trajectories,
        parse_faults,
    )

    if mcp is not None and mcp_url is not None:
        console.print("give either --mcp (stdio) or --mcp-url (HTTP), not both", style="red")
        raise typer.Exit(EXIT_USAGE)
    if mcp_header and mcp_url is None:
        console.print("--mcp-header goes with --mcp-url", style="red")
        raise typer.Exit(EXIT_USAGE)
    try:
        plan = parse_faults(faults or [], default_seed=seed)
    except FaultSpecError as exc:
        console.print(str(exc), style="red")
        raise typer.Exit(EXIT_USAGE) from exc
    rubric_table = None if no_grade else load_rubric_table(rubrics)
    # recorded with the run (judge resume rebuilds the panel from them; --workers shards judge calls with them)
    settings = (
        None
        if no_grade
        else judge_settings(
            judge, config, cache, no_cache, offline, judge_max_cost, vote, weights, tie_breaker, None, "online", options={"max_cost_usd": "--judge-max-cost"}
        )
    )
    escalator = None if settings is None else escalator_from(settings, rubric_table)
    opts = RunOptions(
        agent=agent,
        tasks=tasks,
        out=out,
        trials=trials,
        reference=reference,
        task_format=task_format,
        seed=seed,
        max_steps=max_steps,
        enforce_policy=enforce_policy,
        faults=plan,
        concurrency=concurrency,
        rpm=rpm,
        max_cost_usd=max_cost,
        config_path=config,
        base_url=base_url,
        sampling=Sampling(temperature=temperature, max_tokens=max_tokens, timeout_s=timeout),
        max_tools=max_tools,
        mcp_command=mcp,
        mcp_url=mcp_url,
        mcp_headers=_headers(mcp_header),
        env_root=env_root,
        cache_path=cache,
        no_cache=no_cache,
        offline=offline,
        agent_name=agent_name,
        overwrite=overwrite,
        on_error=on_error.value,
        command=["judge", *sys.argv[1:]],
    )
    try:
        outcome = _collect_with_progress(opts, collect_trajectories)
    except AgentConfigError as exc:
        console.print(f"invalid agent configuration: {exc}", style="red")
        raise typer.Exit(EXIT_JUDGE_CONFIG) from exc
    except TaskInputError as exc:
        console.print(labelled("input error:", exc.info.render()))
        raise typer.Exit(EXIT_INPUT_ERROR) from exc
    except (RunDirConflict, ValueError) as exc:
        console.print(str(exc), style="red")
        raise typer.Exit(EXIT_USAGE) from exc
    _print_collection(outcome)
    if not no_grade:
        from pipelines.cli.grade import run_and_print
        from pipelines.run import GradeOptions, default_workers

        grading = GradeOptions(
            tasks=tasks,
            trajectories=outcome.trajectories,
            reference=reference,
            task_format=task_format,
            trajectory_format="native",
            out=out,
            on_error=on_error.value,
            config=_grading(config, controls),
            escalator=escalator,
            rubrics=rubric_table,
            rubrics_dir=rubrics,  # recorded with the run: judge resume rebuilds the same rubrics
            judge_settings=settings,
            replayer=build_replayer(replay),
            workers=default_workers(),
            command=["judge", *sys.argv[1:]],
            overwrite=True,  # the run directory is this run's (checked above): its graded outputs are replaced
            empty_ok=True,  # nothing collected (every trial failed) is graded as such: the run says why in run_errors.jsonl
        )
        run_and_print(grading)
        add_runner_to_manifest(out, outcome.info)
    if not outcome.complete:
        raise typer.Exit(EXIT_INCOMPLETE)


def _collect_with_progress(opts: Any, collect: Callable[[Any], Any]) -> Any:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    columns = (TextColumn("running the agent"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=True, disable=not console.is_terminal) as bar:
        task = bar.add_task("running", total=None)
        opts.progress = lambda done, total: bar.update(task, completed=done, total=total)
        return collect(opts)


def _print_collection(outcome: object) -> None:
    from pipelines.runner import CollectOutcome

    assert isinstance(outcome, CollectOutcome)
    c = outcome.info["counts"]
    calls = outcome.info["model_calls"]
    line = (
        f"collected {outcome.collected}/{outcome.planned} trajectories ({outcome.resumed} resumed) - "
        f"{calls['live_calls']} live model calls, {calls['cache_hits']} from the cache, {calls['retries']} retries, "
        f"${outcome.info['budget']['spent_usd']:.4f} spent"
    )
    console.print(line)
    if c["stop_reasons"].get("max_steps"):
        console.print(f"{c['stop_reasons']['max_steps']} trajectories hit the call budget", style="yellow")
    if outcome.task_errors:
        console.print(f"{len(outcome.task_errors)} task items could not be read (listed in summary.json / run.json)", style="yellow")
    if outcome.errors:
        kinds = ", ".join(f"{k}: {n}" for k, n in c["errors_by_kind"].items())
        console.print(f"{len(outcome.errors)} trajectories not collected ({kinds}); see {outcome.out}/run_errors.jsonl - rerun to resume", style="yellow")
        for err in outcome.errors[:3]:
            console.print(f"  {err.trajectory_id}: {err.kind}: {err.message[:200]}")


def _grading(config: Path | None, controls: str | None) -> Any:
    """The run's grading config, with ``--controls`` when given."""
    from pipelines.config import GradingConfig

    grading = GradingConfig.load(config)
    if controls is None:
        return grading
    if controls not in ("off", "report", "gate"):
        console.print(f"--controls must be off, report or gate, not {controls!r}", style="red")
        raise typer.Exit(EXIT_USAGE)
    return grading.model_copy(update={"controls": controls})
