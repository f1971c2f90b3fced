"""The grading run: ingest -> deterministic checks (with replay) -> escalation rounds -> results.

Guarantees:
- every input trajectory yields exactly one line of ``results.jsonl``, in input order, graded or
  with its error (file, line, field); errors in the tasks file are listed in ``summary.json``;
- memory stays flat: decided results stream to disk; only cases waiting for a judge are held;
- the same inputs and config give byte-identical ``results.jsonl`` / ``summary.json`` /
  ``report.md`` (timestamps live in ``manifest.json`` only).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import platform
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

import rubrics
from judge import BadInputError, ConfigurationError, DecidedBy, Escalator, InputError, InputErrorInfo, TrajectoryResult, VerdictLabel
from pipelines.aggregate import Aggregator
from pipelines.alignment import TurnAlignmentError
from pipelines.config import GradingConfig
from pipelines.grade_case import GradedCase, grade_case
from pipelines.ingest import Limits, Loaded, TaskSet, check_task, load_tasks, load_tool_specs, read_trajectories, with_tool_specs
from pipelines.labels import load_labels

RESULTS, SUMMARY, REPORT_MD, MANIFEST = "results.jsonl", "summary.json", "report.md", "manifest.json"
_PENDING = "__pending__"


class NoTasks(ConfigurationError):
    """Neither ``--tasks`` nor the trajectory file provides tasks."""


class InputErrorsFound(BadInputError):
    """Raised with ``--on-error fail`` at the first bad input item."""

    def __init__(self, info: InputErrorInfo):
        super().__init__(info.render())
        self.info = info


@dataclass
class GradeOptions:
    tasks: Path | None  # None: the trajectory file carries its tasks (tau2 results, Inspect logs)
    trajectories: Path
    out: Path
    reference: Path | None = None
    task_format: str | None = None
    trajectory_format: str | None = None
    on_error: Literal["skip", "fail"] = "skip"
    config: GradingConfig = field(default_factory=GradingConfig)
    escalator: Escalator | None = None
    replayer: Any = None  # pipelines.replay.Replayer
    limits: Limits = field(default_factory=Limits)
    command: list[str] = field(default_factory=list)
    strict: bool = False  # unknown fields are errors, not warnings
    labels: Path | None = None  # external labels (--labels) to report agreement with
    tool_specs: Path | None = None  # tool specs for tasks whose source carries none (--tool-specs)
    rubrics: Any = None  # the rubric table the panel uses (--rubrics); None: the built-ins


@dataclass
class RunOutcome:
    summary: dict[str, Any]
    out: Path
    files: list[Path]


def run_grading(opts: GradeOptions, progress: Callable[[int], None] | None = None) -> RunOutcome:
    started = datetime.now(UTC)
    bundle = read_trajectories(opts.trajectories, opts.trajectory_format, opts.limits, strict=opts.strict)
    if opts.tasks is not None:  # given tasks win over tasks the trajectory file carries
        taskset = load_tasks(opts.tasks, opts.task_format, opts.reference, opts.limits, strict=opts.strict)
    elif bundle.tasks is not None:
        taskset = bundle.tasks
    else:
        raise NoTasks(f"{opts.trajectories} carries no tasks: pass them with --tasks")
    if opts.tool_specs is not None:
        taskset = with_tool_specs(taskset, load_tool_specs(opts.tool_specs, opts.limits))
    labels = load_labels(opts.labels, opts.limits) if opts.labels is not None else None
    if opts.on_error == "fail" and (taskset.errors or (labels is not None and labels.errors)):
        raise InputErrorsFound((taskset.errors or (labels.errors if labels else []))[0])
    opts.out.mkdir(parents=True, exist_ok=True)
    agg = Aggregator(opts.config)
    for info in taskset.errors:
        agg.add_task_error(info)
    for info in labels.errors if labels is not None else ():
        agg.add_task_error(info, scope="labels")
    agg.add_warnings(taskset.warnings)

    partial = opts.out / (RESULTS + ".partial")
    pending: list[GradedCase] = []
    with open(partial, "w", encoding="utf-8") as fh:
        for count, loaded in enumerate(bundle.items, 1):
            agg.add_warnings(loaded.warnings)
            if labels is not None and loaded.trajectory is not None:
                loaded.trajectory = labels.apply(loaded.trajectory)
            outcome = _grade_loaded(loaded, taskset, opts)
            if isinstance(outcome, GradedCase):
                if opts.escalator is not None and outcome.next_escalation() is not None:
                    fh.write(json.dumps({_PENDING: len(pending)}) + "\n")
                    pending.append(outcome)
                    continue
                outcome = outcome.result()
            if opts.on_error == "fail" and outcome.error is not None:
                raise InputErrorsFound(outcome.error)
            fh.write(outcome.model_dump_json(exclude_none=True) + "\n")
            agg.add(outcome)
            if progress is not None:
                progress(count)

    if labels is not None and opts.labels is not None:
        agg.add_warnings(labels.unused(str(opts.labels)))
    judged = _escalate(pending, opts.escalator) if pending else []
    for result in judged:
        agg.add(result)
    _merge(partial, opts.out / RESULTS, judged)
    del pending, judged

    text = json.dumps(agg.summary(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    del agg  # the report reads results.jsonl itself: let it reuse the grading run's memory
    (opts.out / SUMMARY).write_text(text, encoding="utf-8")
    summary = json.loads(text)  # reports see exactly what summary.json holds, whoever renders them
    manifest = _manifest(opts, taskset, summary, started)
    (opts.out / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    del taskset
    files = [opts.out / RESULTS, opts.out / SUMMARY, opts.out / MANIFEST]
    files += _write_reports(summary, opts.out)
    return RunOutcome(summary=summary, out=opts.out, files=files)


def _grade_loaded(loaded: Loaded, taskset: TaskSet, opts: GradeOptions) -> GradedCase | TrajectoryResult:
    if loaded.error is not None:
        return _error_row(loaded, loaded.error)
    problem = check_task(loaded, taskset)
    if problem is not None:
        return _error_row(loaded, problem)
    task = taskset.tasks[loaded.trajectory.task_id]
    try:
        replay = None
        if opts.replayer is not None and task.environment is not None:
            replay = opts.replayer.replay(task, loaded.trajectory, opts.config.turns)
        return grade_case(task, loaded.trajectory, opts.config, source=loaded.source, replay=replay)
    except InputError as exc:
        return _error_row(loaded, exc.info)
    except TurnAlignmentError as exc:
        return _error_row(loaded, InputErrorInfo(kind="unknown_turn", message=str(exc), file=loaded.source.file, line=loaded.source.line, field="turns"))
    except Exception as exc:  # an environment or replay failure must not sink the run
        info = InputErrorInfo(kind="grading_error", message=f"{type(exc).__name__}: {exc}", file=loaded.source.file, line=loaded.source.line)
        return _error_row(loaded, info)


def _error_row(loaded: Loaded, info: InputErrorInfo) -> TrajectoryResult:
    return TrajectoryResult(
        task_id=loaded.task_id,
        trajectory_id=loaded.trajectory_id,
        agent=loaded.trajectory.agent if loaded.trajectory is not None else None,
        verdict=VerdictLabel.ERROR,
        decided_by=DecidedBy.ERROR,
        source=loaded.source,
        error=info,
    )


def _escalate(cases: list[GradedCase], escalator: Escalator) -> list[TrajectoryResult]:
    """Rounds in one event loop: each round asks every waiting case its next question, all in
    one concurrent batch, so the panel's clients and rate limiters live across rounds."""

    async def rounds() -> None:
        try:
            while True:
                asks = [(case, *nxt) for case in cases if (nxt := case.next_escalation()) is not None]
                if not asks:
                    return
                requests = [case.request_for(ti, check) for case, ti, check in asks]
                decisions = await escalator.decide(requests)
                for (case, ti, check), decision in zip(asks, decisions, strict=True):
                    case.apply_decision(ti, check, decision, escalator.name)
        finally:
            close = getattr(escalator, "aclose", None)
            if close is not None:
                await close()

    asyncio.run(rounds())
    return [case.result() for case in cases]


def _merge(partial: Path, final: Path, judged: list[TrajectoryResult]) -> None:
    with open(partial, encoding="utf-8") as src, open(final, "w", encoding="utf-8") as dst:
        for line in src:
            if line.startswith('{"' + _PENDING):
                dst.write(judged[json.loads(line)[_PENDING]].model_dump_json(exclude_none=True) + "\n")
            else:
                dst.write(line)
    partial.unlink()


def _write_reports(summary: dict[str, Any], out: Path) -> list[Path]:
    from reports import write_reports

    return write_reports(summary, out)


def _sha256(path: Path | None) -> str | None:
    """Content hash of an input file, or of a folder (BFCL score files): its files' relative paths
    and contents, in sorted order."""
    if path is None:
        return None
    digest = hashlib.sha256()
    files = sorted(p for p in Path(path).rglob("*") if p.is_file()) if Path(path).is_dir() else [Path(path)]
    for file in files:
        if file != Path(path):
            digest.update(file.relative_to(path).as_posix().encode() + b"\0")
        with open(file, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def _versions() -> dict[str, str]:
    out = {}
    for name in ("trajectory-judge", "pydantic", "instructor", "openai", "anthropic", "numpy", "pandas", "scikit-learn"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def _manifest(opts: GradeOptions, taskset: TaskSet, summary: dict[str, Any], started: datetime) -> dict[str, Any]:
    inputs = [
        {"role": "tasks", "path": str(opts.tasks) if opts.tasks else None, "format": opts.task_format or "auto", "sha256": _sha256(opts.tasks)},
        {"role": "trajectories", "path": str(opts.trajectories), "format": opts.trajectory_format or "auto", "sha256": _sha256(opts.trajectories)},
    ]
    for role, path in (("reference", opts.reference), ("labels", opts.labels), ("tool_specs", opts.tool_specs)):
        if path is not None:
            inputs.append({"role": role, "path": str(path), "sha256": _sha256(path)})
    escalator = opts.escalator
    return {
        "tool": "trajectory-judge",
        "versions": _versions(),
        "python": platform.python_version(),
        "command": opts.command or sys.argv,
        "inputs": inputs,
        "tasks_loaded": len(taskset.tasks),
        "config": opts.config.model_dump(mode="json"),
        "on_error": opts.on_error,
        "strict": opts.strict,
        "judges": None if escalator is None else _describe(escalator, opts.rubrics),
        "replay": None if opts.replayer is None else _describe(opts.replayer),
        "counts": summary["counts"],
        "started_at": started.isoformat(timespec="seconds"),
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def _describe(component: Any, rubric_table: Any = None) -> Any:
    """What the manifest records of a panel or replayer: its stats and, for judges, rubric versions
    (and where each rubric came from: built in, or a --rubrics file)."""
    describe = getattr(component, "describe", None)
    if callable(describe):
        return describe()
    out: dict[str, Any] = {"name": getattr(component, "name", type(component).__name__)}
    stats = getattr(component, "stats", None)
    if hasattr(stats, "model_dump"):
        out["stats"] = stats.model_dump(mode="json")
        table = rubric_table or rubrics.RUBRICS
        out["rubrics"] = {name: rubric.version for name, rubric in sorted(table.items())}
        out["rubric_sources"] = {
            name: str(getattr(r, "source_path", None)) if r is not rubrics.RUBRICS.get(name) else "builtin" for name, r in sorted(table.items())
        }
    return out
