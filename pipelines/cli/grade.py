"""``judge grade`` and ``judge demo``: grade trajectories, print the breakdown, write the run."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from pipelines.cli import _usage as usage
from pipelines.cli._common import (
    EXIT_INPUT_ERROR,
    EXIT_INTERNAL,
    EXIT_USAGE,
    EXIT_WAITING,
    CacheOpt,
    JudgeConfigOpt,
    JudgeModeOpt,
    JudgeOpt,
    MaxCostOpt,
    MinVotesOpt,
    NoCacheOpt,
    OfflineOpt,
    ReplayOpt,
    TieOpt,
    VoteOpt,
    WeightsOpt,
    build_escalator,
    build_replayer,
    console,
    escalator_from,
    judge_settings,
    labelled,
    print_table,
    stdout,
)
from pipelines.cli._formats import TASK_FORMAT_NAMES, TRAJECTORY_FORMAT_NAMES, names
from pipelines.cli.rubrics import RubricsOpt, load_rubric_table

if TYPE_CHECKING:
    from judge import RunSummary
    from pipelines.run import BatchWait, GradeOptions


class OnError(StrEnum):
    skip = "skip"
    fail = "fail"


def progress_bar() -> Any:
    """The live bar of a run on a terminal: bytes read while grading, questions answered while judging."""
    from rich.progress import BarColumn, DownloadColumn, Progress, ProgressColumn, Task, TextColumn, TimeElapsedColumn, TimeRemainingColumn
    from rich.text import Text

    class Amount(ProgressColumn):
        """Bytes read while grading; questions answered while judging."""

        def render(self, task: Task) -> Text:
            if task.fields.get("judging"):
                return Text(f"{int(task.completed)}/{int(task.total or 0)}")
            return DownloadColumn().render(task)

    columns = (TextColumn("{task.description}"), BarColumn(), Amount(), TimeElapsedColumn(), TimeRemainingColumn())
    return Progress(*columns, console=console, transient=True)


class NoBar:
    """The bar where standard error is no terminal: nothing shown, as ``Progress(disable=True)``
    does, without importing ``rich.progress`` (~10 ms of a one-line run's start-up)."""

    def __enter__(self) -> NoBar:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def add_task(self, *args: Any, **kwargs: Any) -> int:
        return 0

    def update(self, *args: Any, **kwargs: Any) -> None:
        return None


def run_and_print(opts: GradeOptions) -> RunSummary:
    """Run the grading with a progress bar, print the summary table, return summary.json's content."""
    from judge import ExternalCallError
    from judge.core._heap import work_starts
    from pipelines.ingest import ToolSpecError, UnreadableInput, UsageError
    from pipelines.run import BatchWait, InputChanged, InputErrorsFound, NoTasks, RunDirError, run_grading

    work_starts()  # start-up is over: normal collections, and what is imported stays set aside

    try:
        with progress_bar() if console.is_terminal else NoBar() as bar:
            task = bar.add_task("grading 0 trajectories", total=None)
            judging = JudgingLine(bar)
            outcome = run_grading(
                opts,
                progress=lambda n: bar.update(task, description=f"grading {n:,} trajectories"),
                on_bytes=lambda done, total: bar.update(task, completed=done, total=total),
                on_judging=judging,
            )
    except InputErrorsFound as exc:
        console.print(labelled("input error:", exc.info.render()))
        raise typer.Exit(EXIT_INPUT_ERROR) from exc
    except (InputChanged, UnreadableInput) as exc:
        console.print(f"input error: {exc}", style="red", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_INPUT_ERROR) from exc
    except UsageError as exc:
        usage.fail(exc.option, str(exc))
    except (NoTasks, ToolSpecError, RunDirError) as exc:
        console.print(f"{exc}", style="red")
        raise typer.Exit(EXIT_USAGE) from exc
    except ExternalCallError as exc:  # a provider batch could not be submitted: the run stays resumable
        console.print(
            f"{exc}\nthe run is kept: `judge resume {opts.out}` submits what did not go out", style="red", markup=False, highlight=False, soft_wrap=True
        )
        raise typer.Exit(EXIT_INTERNAL) from exc
    if isinstance(outcome, BatchWait):
        print_waiting(opts.out, outcome)
        raise typer.Exit(EXIT_WAITING)
    _print_summary(outcome.summary, outcome.out)
    stats = getattr(opts.escalator, "stats", None)
    if stats is not None and getattr(stats, "budget_exhausted", False):
        console.print(f"judge budget reached: {stats.budget_message}", style="yellow")
    unsaved = getattr(stats, "cache_unsaved", None)
    if unsaved:  # a full disk under the judge cache: the answers are in the results, not in the cache
        console.print(
            f"{unsaved} paid judge answers are not in the cache: {getattr(stats, 'cache_error', '')}",
            style="yellow",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    counts = outcome.summary.counts
    if counts.graded == 0 and counts.errors > 0:
        console.print(f"every one of the {counts.errors} trajectories is an input error: nothing was graded", style="red")
        raise typer.Exit(EXIT_INPUT_ERROR)
    return outcome.summary


PIPED_EVERY_S = 30.0  # when standard output is no terminal, a judging line at least this often


class JudgingLine:
    """What the run says while judges work: on a terminal, a live bar per escalation round
    (questions answered, calls, free answers, abstentions, cost so far, ETA); piped, a plain line at
    least every ``PIPED_EVERY_S`` and one when each round is decided."""

    def __init__(self, bar: Any, clock: Any = None) -> None:
        import time

        self.bar = bar
        self.clock = clock or time.monotonic
        self.tasks: dict[int, Any] = {}
        self.last_line = -float("inf")

    def __call__(self, p: Any) -> None:
        text = judging_text(p)
        if console.is_terminal:
            if p.round not in self.tasks:
                self.tasks[p.round] = self.bar.add_task(text, total=p.questions, judging=True)
            self.bar.update(self.tasks[p.round], description=text, completed=p.answered or 0)
            return
        now = self.clock()
        if p.done or now - self.last_line >= PIPED_EVERY_S:
            console.print(text, highlight=False, soft_wrap=True)
            self.last_line = now


def judging_text(p: Any) -> str:
    answered = "answers pending in the worker processes" if p.answered is None else f"{p.answered}/{p.questions} answered"
    eta = p.eta_s
    tail = "decided" if p.done else ("" if eta is None else f"ETA {_duration(eta)}")
    parts = [
        f"judges, round {p.round}: {answered}",
        f"{p.calls} calls, {p.cached} free, {p.abstained} abstained",
        f"${p.cost_usd:.4f} so far",
        f"{_duration(p.elapsed_s)} elapsed",
    ]
    return " · ".join(parts + ([tail] if tail else []))


def _duration(seconds: float) -> str:
    whole = round(seconds)
    return f"{whole // 60}m{whole % 60:02d}s" if whole >= 60 else f"{whole}s"


def print_waiting(out: Path, wait: BatchWait) -> None:
    """What a run waiting for provider batches says: which batches, and how to go on."""
    verb = f"submitted {wait.submitted} provider batch(es)" if wait.submitted else "provider batches still running"
    console.print(f"waiting for batch: escalation round {wait.round}, {verb}", style="yellow")
    for line in wait.batches:
        console.print(f"  {line}", highlight=False)
    console.print(
        f"everything decided deterministically is kept in {out}/.judge-run; when the batches have ended (providers allow up to 24 h), "
        f"finish with: judge resume {out}   (--wait polls until then; exit code {EXIT_WAITING} means still waiting)",
        highlight=False,
        soft_wrap=True,
    )


_SHOWN_ERRORS = 5


def _print_problems(summary: RunSummary) -> None:
    """Input errors of every scope (tasks, labels, trajectories) and each warning once per field."""
    for scope in ("task", "labels", "trajectory"):
        mine = [e for e in summary.errors if e.scope == scope]
        for e in mine[:_SHOWN_ERRORS]:
            where = e.file + (f":{e.line}" if e.line is not None else "")
            field = f" field {e.field}" if e.field else ""
            console.print(labelled(f"{scope} error", f"{where}:{field} {e.message} [{e.kind}]"), soft_wrap=True)  # one line each, piped or not
        if len(mine) > _SHOWN_ERRORS:
            console.print(f"... and {len(mine) - _SHOWN_ERRORS} more {scope} errors (all in summary.json)", style="red")
    for kind, fields in summary.input_warnings.items():
        for pattern, w in fields.items():
            console.print(labelled("warning", f"{kind} {pattern}: {w.message} ({w.count}x, first at {w.first})", "yellow"), soft_wrap=True)


def _print_summary(summary: RunSummary, out: Path) -> None:
    from rich.table import Table

    from judge import fmt_pct, fmt_pct_ci

    _print_problems(summary)
    c = summary.counts
    title = f"{c.graded} graded, {c.errors} trajectory input errors, {c.task_errors} task input errors"
    table = Table(title=title, show_header=True)
    table.add_column("verdict / stage")
    table.add_column("count", justify="right")
    for key, n in (("pass", c.passed), ("fail", c.fail), ("unresolved", c.unresolved)):
        table.add_row(key, str(n))
    for stage, n in summary.failure_stages.items():
        if n and stage != "none":
            table.add_row(f"  fail at {stage}", str(n))
    print_table(table)
    if summary.pass_rate is not None:
        ci = summary.pass_rate_ci95
        stdout.print(f"pass rate {fmt_pct(summary.pass_rate)}" + (f" (95% CI {fmt_pct_ci(ci)})" if ci else ""))
    if summary.leaderboard.score is not None:
        stdout.print(f"VAKRA leaderboard score {fmt_pct(summary.leaderboard.score)}")
    for source, ext in (summary.external_agreement or {}).items():
        kappa, agree = ext.cohen_kappa.value, ext.agreement
        stdout.print(
            f"agreement with {source}: {ext.both_decided} decided by both, "
            + (f"{fmt_pct(agree)} agree, kappa {kappa:.3f}" if agree is not None and kappa is not None else "no kappa")
            + f", {len(ext.disagreements)} disagreements, {ext.unresolved_by_us} unresolved by us"
        )
    from pipelines.run.folder import OUTPUTS, TABLES

    written = [name + ("/" if name == TABLES else "") for name in OUTPUTS if (out / name).exists()]  # what this run wrote, not a fixed list
    stdout.print(f"outputs in {out}/ : {' '.join(written)}")


def grade(
    trajectories: Annotated[
        Path,
        typer.Option(
            callback=usage.input_or_folder,
            help="Trajectories (native, OpenAI / Anthropic messages, VAKRA, BFCL results or a BFCL result folder, tau2 results, Inspect logs, OTel traces); "
            "- for standard input.",
        ),
    ],
    tasks: Annotated[
        Optional[Path],
        typer.Option(
            callback=usage.input_or_folder,
            help="Tasks (native JSONL, VAKRA input/ground truth, BFCL questions or BFCL's data folder); optional when the trajectory file carries them; "
            "- for standard input.",
        ),
    ] = None,
    reference: Annotated[
        Optional[Path],
        typer.Option(callback=usage.input_or_folder, help="Separate ground truth: VAKRA ground truth or BFCL possible answers (a file, or a folder of them)."),
    ] = None,
    format: Annotated[Optional[str], typer.Option("--format", help=f"Trajectory format (auto-detected by default): {names(TRAJECTORY_FORMAT_NAMES)}.")] = None,
    task_format: Annotated[Optional[str], typer.Option(help=f"Task format (auto-detected by default): {names(TASK_FORMAT_NAMES)}.")] = None,
    out: Annotated[Path, typer.Option(help="Output directory.")] = Path("runs/latest"),
    on_error: Annotated[OnError, typer.Option(help="skip: grade the rest and list bad items; fail: stop at the first.")] = OnError.skip,
    judge: JudgeOpt = None,
    config: JudgeConfigOpt = None,
    cache: CacheOpt = None,
    no_cache: NoCacheOpt = False,
    offline: OfflineOpt = False,
    max_cost: MaxCostOpt = None,
    vote: VoteOpt = None,
    weights: WeightsOpt = None,
    tie_breaker: TieOpt = None,
    min_votes: MinVotesOpt = None,
    judge_mode: JudgeModeOpt = "online",
    replay: ReplayOpt = True,
    turns: Annotated[
        Optional[str],
        typer.Option(help="auto (default): a one-goal task grades a dialogue as one episode; episode; per-message: each user message answers one task turn."),
    ] = None,
    policy_text: Annotated[
        Optional[str],
        typer.Option(
            help="context (default): a benchmark's domain-wide policy document (tau2's environment policy) is context for the judges; gate: the policy rubric audits it."
        ),
    ] = None,
    confirm_writes: Annotated[
        bool,
        typer.Option(
            "--confirm-writes",
            help="Apply the confirm_writes policy rule to every task: each successful write must follow an agent message describing it "
            "and a user message confirming it (config: [grading] confirm_writes).",
        ),
    ] = False,
    controls: Annotated[
        Optional[str],
        typer.Option(
            help="Control items among the judges' questions: gate (default: a judge below --control-threshold on a rubric has its votes there set aside), report, off."
        ),
    ] = None,
    control_threshold: Annotated[
        Optional[float], typer.Option(min=0.0, max=1.0, help="Control accuracy below which a judge is set aside (default 0.8).")
    ] = None,
    strict: Annotated[bool, typer.Option("--strict", help="Fields the schema does not know are errors instead of warnings.")] = False,
    task_key: Annotated[
        Optional[str],
        typer.Option(
            "--task-key",
            metavar="ATTRIBUTE",
            help="OTel traces: the span attribute, metadata key (metadata.KEY) or key:value tag that holds the task id "
            "(default: task.id / task_id attributes, then metadata or tags named task_id / task / example_id, then gen_ai.conversation.id / session.id).",
        ),
    ] = None,
    labels: Annotated[
        Optional[Path],
        typer.Option(
            callback=usage.input_or_folder,
            help="Verdicts of another tool (JSONL {trajectory_id|task_id, label}, or BFCL score files): report agreement with them.",
        ),
    ] = None,
    tool_specs: Annotated[
        Optional[Path], typer.Option(callback=usage.input_path, help="Tool specs (a task's tools shape) for formats whose files carry none.")
    ] = None,
    rubrics: RubricsOpt = None,
    workers: Annotated[Optional[int], typer.Option(min=1, help="Processes that grade (default: the machine's cores). Outputs do not depend on it.")] = None,
    ray: Annotated[
        Optional[str],
        typer.Option(
            "--ray",
            metavar="[ADDRESS]",
            help="Grade on a Ray cluster (pip install 'trajectory-judge\\[ray]'): alone or 'local' starts a local Ray; 'auto' or ray://host:port joins a cluster.",
        ),
    ] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace the run (or interrupted run) --out holds.")] = False,
    resume: Annotated[bool, typer.Option("--resume", help="Continue the interrupted run in --out: nothing decided is regraded, no judge asked again.")] = False,
    parquet: Annotated[
        Optional[bool],
        typer.Option("--parquet/--no-parquet", help="Write tables/*.parquet beside the CSV files (default: for a run of at least 200 trajectories)."),
    ] = None,
) -> None:
    """Grade trajectories against tasks; write results.jsonl, summary.json, report.md, report.html, tables/, manifest.json."""
    from pipelines.alignment import TURNS_MODES
    from pipelines.run import GradeOptions, default_workers

    usage.check_format_names(format, task_format)
    piped = [
        name
        for name, path in (("--trajectories", trajectories), ("--tasks", tasks), ("--reference", reference), ("--labels", labels), ("--tool-specs", tool_specs))
        if path is not None and str(path) == "-"
    ]
    if len(piped) > 1:
        console.print(f"standard input (-) can feed one input only, not {' and '.join(piped)}", style="red")
        raise typer.Exit(EXIT_USAGE)
    if judge_mode not in ("online", "batch"):
        usage.fail("--judge-mode", f"must be online or batch, not {judge_mode!r}")
    if judge_mode == "batch" and piped:
        usage.fail("--judge-mode", f"batch runs finish later (judge resume) and read their inputs again: {piped[0]} cannot come from standard input")
    grading = usage.load_grading_config(config)
    usage.check_out_dir(out)
    if turns is not None:
        if turns not in TURNS_MODES:
            console.print(f"--turns must be one of {', '.join(TURNS_MODES)}, not {turns!r}", style="red")
            raise typer.Exit(EXIT_USAGE)
        grading = grading.model_copy(update={"turns": turns})
    if policy_text is not None:
        if policy_text not in ("context", "gate"):
            usage.fail("--policy-text", f"must be context or gate, not {policy_text!r}")
        grading = grading.model_copy(update={"policy_text": policy_text})
    if controls is not None:
        if controls not in ("off", "report", "gate"):
            usage.fail("--controls", f"must be off, report or gate, not {controls!r}")
        grading = grading.model_copy(update={"controls": controls})
    if control_threshold is not None:
        grading = grading.model_copy(update={"control_threshold": control_threshold})
    if confirm_writes:
        grading = grading.model_copy(update={"confirm_writes": True})
    rubric_table = load_rubric_table(rubrics)
    settings = judge_settings(judge, config, cache, no_cache, offline, max_cost, vote, weights, tie_breaker, min_votes, judge_mode)
    opts = GradeOptions(
        tasks=tasks,
        trajectories=trajectories,
        reference=reference,
        task_format=task_format,
        trajectory_format=format,
        out=out,
        on_error=on_error.value,
        config=grading,
        escalator=None if settings is None else escalator_from(settings, rubric_table),
        rubrics=rubric_table,
        rubrics_dir=rubrics,
        judge_settings=settings,
        replayer=build_replayer(replay),
        command=["judge", *sys.argv[1:]],
        strict=strict,
        task_key=task_key,
        labels=labels,
        tool_specs=tool_specs,
        workers=workers or default_workers(),
        ray=ray is not None,
        ray_address=None if ray in (None, "local") else ray,
        overwrite=overwrite,
        resume=resume,
        parquet=parquet,
    )
    if trajectories.is_dir() or (tasks is not None and tasks.is_dir()) or (reference is not None and reference.is_dir()):
        _grade_folders(opts)
        return
    run_and_print(opts)  # an empty input is refused before --out is touched (pipelines.run.inputs.first_read)


def _grade_folders(opts: GradeOptions) -> None:
    """Folders as inputs: BFCL's result folder (every category, ``pipelines.run.bfcl_folder``), or BFCL's
    data folder as the tasks of one result file."""
    from pipelines.run.bfcl_folder import grade_folder

    trajectories, tasks, reference = opts.trajectories, opts.tasks, opts.reference
    if not trajectories.is_dir():
        if reference is not None and reference.is_dir() and not (tasks is not None and tasks.is_dir()):
            usage.fail("--reference", f"{reference} is a folder: give the possible-answer file of {tasks}, or BFCL's data folder as --tasks")
        run_and_print(opts)
        return

    def one(sub: GradeOptions) -> RunSummary | int:
        try:
            return run_and_print(sub)
        except typer.Exit as exc:
            return int(exc.exit_code)

    from pipelines.ingest import UsageError

    try:
        row = grade_folder(opts, one, announce=lambda line: console.print(line, style="bold", markup=False, highlight=False))
    except UsageError as exc:
        usage.fail(exc.option, str(exc))
    console.print(f"BFCL: {row.passed}/{row.entries} entries pass", end="")
    if row.agreement is not None:
        console.print(f"; agreement with BFCL's score files {row.agreeing}/{row.both_decided}", end="")
    console.print(f"\nper category: {opts.out / 'bfcl.md'} (and bfcl.json)", markup=False, highlight=False)
    if any(r.problem is not None for r in row.categories):
        for r in row.categories:
            if r.problem is not None:
                console.print(f"not graded: {r.name}: {r.problem}", style="red", markup=False, highlight=False)
        raise typer.Exit(EXIT_INPUT_ERROR)


DEMO_OUT = Path("runs/demo")  # the demo's own folder (make demo): each run of the demo replaces it


def demo(
    out: Annotated[Path, typer.Option(help="Output directory.")] = DEMO_OUT,
    judge: JudgeOpt = None,
    config: JudgeConfigOpt = None,
    cache: CacheOpt = None,
    no_cache: NoCacheOpt = False,
    offline: OfflineOpt = False,
    max_cost: MaxCostOpt = None,
    vote: VoteOpt = None,
    weights: WeightsOpt = None,
    tie_breaker: TieOpt = None,
    rubrics: RubricsOpt = None,
    min_votes: MinVotesOpt = None,
    overwrite: Annotated[
        bool,
        typer.Option(
            "--overwrite",
            help=f"Replace the run (or the files of one) --out holds; without it only an earlier demo run, or {DEMO_OUT}, is replaced.",
        ),
    ] = False,
) -> None:
    """Grade the bundled sample benchmark end to end (replay included) and print the breakdown."""
    from pipelines.resources import sample_dir
    from pipelines.run import GradeOptions, default_workers
    from pipelines.run.folder import demo_run

    sample = sample_dir()
    if not (sample / "tasks.jsonl").exists():
        console.print(f"the bundled sample is missing: {sample / 'tasks.jsonl'} (a broken installation)", style="red")
        raise typer.Exit(EXIT_USAGE)
    grading = usage.load_grading_config(config)
    usage.check_out_dir(out)
    rubric_table = load_rubric_table(rubrics)
    opts = GradeOptions(
        tasks=sample / "tasks.jsonl",
        trajectories=sample / "trajectories.jsonl",
        out=out,
        config=grading,
        escalator=build_escalator(judge, config, cache, no_cache, offline, max_cost, vote, weights, tie_breaker, rubric_table, min_votes=min_votes),
        rubrics=rubric_table,
        rubrics_dir=rubrics,
        replayer=build_replayer(True),
        command=["judge", *sys.argv[1:]] if sys.argv[1:2] == ["demo"] else ["judge", "demo", "--out", str(out)],  # "demo": what demo_run knows it by
        workers=default_workers(),
        # an earlier demo run is replaced; another run's files (judge grade's, a user's) only with --overwrite, as judge grade does
        overwrite=overwrite or out == DEMO_OUT or demo_run(out),
    )
    print_breakdowns(run_and_print(opts))


def print_breakdowns(summary: RunSummary) -> None:
    """The run by capability, hop count and hop pattern, a table each (none for a breakdown whose
    every trajectory is ``unknown``). Rows in reading order, numbers as numbers (hop count 2 before
    12: summary.json, which a run is reloaded from, keeps its keys sorted as text)."""
    from rich.table import Table

    from judge import fmt_pct
    from pipelines.grade import natural_order

    for key in ("capability", "hop_count", "hop_pattern"):
        groups = summary.by.get(key, {})
        if list(groups) == ["unknown"]:
            continue
        table = Table(title=f"by {key.replace('_', ' ')}")
        for col in (key, "n", "pass rate", "unresolved", "top failure stage"):
            table.add_column(col)
        for value, g in sorted(groups.items(), key=lambda kv: natural_order(kv[0])):
            top = max(((k, v) for k, v in g.failure_stages.items() if k != "none"), key=lambda kv: kv[1])
            table.add_row(value, str(g.n), fmt_pct(g.pass_rate or 0), str(g.unresolved), f"{top[0]} ({top[1]})" if top[1] else "-")
        print_table(table)
