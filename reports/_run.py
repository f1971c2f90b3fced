"""One graded run as the report sees it: summary, per-trajectory results, optional calibration,
and the trajectories' steps for the drill-down (what grading kept: ``reports._steps``).

Why read ``results.jsonl`` at all: ``summary.json`` is aggregate-only, while the tool bottlenecks,
the crossed hop x policy tables, the per-agent radar, the judge votes, repeated-run estimators
and the drill-down need per-trajectory facts. Every line is validated as a ``TrajectoryResult``;
a bad line raises ``ReportInputError`` naming file, line and field path.

Memory: results stream once into compact ``Row`` facts (a few hundred bytes each); full
``TrajectoryResult`` objects are kept only for the rows picked for the drill-down (capped).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec
from pydantic import ValidationError

from judge import BadInputError, RunSummary, Scores, TrajectoryResult, field_path
from reports import _steps
from reports._shown import ShownTrajectory
from reports._steps import DRILL_EXTRA_FAILURES, DRILL_FIRST, drill_picks

__all__ = [
    "DRILL_EXTRA_FAILURES",
    "DRILL_FIRST",
    "ORCHESTRATION_COLUMNS",
    "SCORE_NAMES",
    "ReportInputError",
    "Row",
    "RunData",
    "load_run",
    "read_summary",
    "reference_tool",
    "to_row",
]
MATCHED_KINDS = ("matched_structural", "matched_response")

SUMMARY, RESULTS, CALIBRATION = "summary.json", "results.jsonl", "calibration.json"


class ReportInputError(BadInputError):
    """A run directory or one of its files cannot be read; the message names file, line, field."""


class VoteFacts(msgspec.Struct, frozen=True):
    judge: str
    label: str | None
    abstained: bool
    abstain_reason: str | None
    cost_usd: float
    cached: bool


class DecisionFacts(msgspec.Struct, frozen=True):
    outcome: str
    label: str | None
    agreement: float | None
    votes: tuple[VoteFacts, ...]


SCORE_NAMES: tuple[str, ...] = tuple(Scores.model_fields)
# per-trajectory orchestration facts in the trajectories table (None for error rows)
ORCHESTRATION_COLUMNS = (
    "tier",
    "failed_calls",
    "recovered_calls",
    "recovery_rate",
    "rounds_used",
    "rounds_minimum",
    "parallel_efficiency",
    "loop_repeats",
    "looping",
)


class Row(msgspec.Struct, frozen=True):
    """The per-trajectory facts every table needs (strings, not enums: cheap and picklable).

    Slots and a score tuple keep a row near 300 bytes: a 100k-trajectory run fits in ~30 MB.
    """

    task_id: str | None
    trajectory_id: str | None
    agent: str | None
    capability: str | None
    domain: str | None
    hop_count: int | None
    hop_pattern: str | None
    policy_condition: str | None
    verdict: str
    failure_stage: str | None
    decided_by: str
    unresolved_stages: tuple[str, ...]
    judge_calls: int
    judge_cost_usd: float
    score_values: tuple[float | None, ...]  # in SCORE_NAMES order
    tools: tuple[tuple[str, str], ...]  # (reference tool name, satisfied | unsatisfied | no_counterpart)
    unnamed_tool_evidence: int
    decisions: tuple[DecisionFacts, ...]
    orchestration: tuple[Any, ...] | None = None  # in ORCHESTRATION_COLUMNS order

    @property
    def scores(self) -> dict[str, float | None]:
        return dict(zip(SCORE_NAMES, self.score_values, strict=True))


def reference_tool(e: Any) -> str | None:
    """The reference tool an evidence item is about: its ``tool`` field (results written before
    the field existed: ``expected.name``)."""
    if e.tool is not None:
        return str(e.tool)
    exp = e.expected
    return exp["name"] if isinstance(exp, dict) and isinstance(exp.get("name"), str) else None


def to_row(r: TrajectoryResult, pool: dict[Any, Any] | None = None) -> Row:
    """``pool`` (one per run) keeps one object per distinct label, score tuple and tool list:
    100k rows repeat a few hundred of them, so a large run's rows stay small."""
    pool = {} if pool is None else pool

    def _shared(value: Any) -> Any:
        return pool.setdefault(value, value) if value is not None else None

    tools: list[tuple[str, str]] = []
    unnamed = 0
    decisions: list[DecisionFacts] = []
    for turn in r.turns:
        for check in turn.checks:
            if check.check.value == "calls":
                for e in check.evidence:
                    status = "satisfied" if e.kind in MATCHED_KINDS else e.kind if e.kind in ("unsatisfied", "no_counterpart") else None
                    if status is None:
                        continue
                    name = reference_tool(e)
                    if name is None:
                        unnamed += 1
                    else:
                        tools.append((name, status))
            d = check.decision
            if d is not None:
                votes = tuple(VoteFacts(v.judge, v.label, v.abstained, v.abstain_reason, v.cost_usd, v.cached) for v in d.votes)
                decisions.append(DecisionFacts(d.outcome.value, d.label, d.agreement, votes))
    return Row(
        task_id=_shared(r.task_id),
        trajectory_id=r.trajectory_id,
        agent=_shared(r.agent),
        capability=_shared(r.capability),
        domain=_shared(r.domain),
        hop_count=r.hop_count,
        hop_pattern=_shared(r.hop_pattern),
        policy_condition=_shared(r.policy_condition),
        verdict=r.verdict.value,
        failure_stage=r.failure_stage.value if r.failure_stage is not None else None,
        decided_by=_shared(r.decided_by),
        unresolved_stages=_shared(tuple(s.value for s in r.unresolved_stages)),
        judge_calls=r.judge_calls,
        judge_cost_usd=r.judge_cost_usd,
        score_values=_shared(tuple(getattr(r.scores, k) for k in SCORE_NAMES)),
        tools=_shared(tuple(_shared(t) for t in tools)),
        unnamed_tool_evidence=unnamed,
        decisions=tuple(decisions),
        orchestration=None if r.orchestration is None else _shared(tuple(getattr(r.orchestration, c) for c in ORCHESTRATION_COLUMNS)),
    )


def read_summary(path: Path) -> RunSummary:
    """``summary.json`` as the typed model; a file that is not one is an error naming the field."""
    data = _read_json(path)
    try:
        return RunSummary.model_validate(data)
    except ValidationError as err:
        first = err.errors(include_url=False)[0]
        where = field_path(tuple(first["loc"]))
        raise ReportInputError(f"{path}: field {where}: {first['msg']} (is this a trajectory-judge summary.json?)") from None


class RunData(msgspec.Struct):
    name: str
    path: Path
    summary: RunSummary
    rows: Sequence[Row]  # a list, or rows that hold only the graded ones (``graded``) and read the others back
    drill: list[int]  # indices (file order) of the rows in the drill-down
    drill_note: str
    full: dict[int, TrajectoryResult]  # the drill-down rows as full results
    calibration: dict[str, Any] | None = None
    calibration_path: Path | None = None
    trajectories: Mapping[int, ShownTrajectory] = msgspec.field(default_factory=dict)  # steps, drill-down rows only (reports._steps: read one at a time)
    steps_note: str = ""
    own_steps: bool = False  # drill_steps.jsonl was written by this process (the grading run): reports._steps.KeptSteps

    @property
    def graded(self) -> list[Row]:
        held = getattr(self.rows, "graded", None)  # the grading run's rows keep error rows on disk (pipelines.run)
        return list(held) if held is not None else [r for r in self.rows if r.verdict != "error"]


def load_run(
    run_dir: Path,
    summary: RunSummary | None = None,
    calibration: Path | None = None,
    name: str | None = None,
    drill_first: int | None = None,
    drill_extra_failures: int | None = None,
    rows: Sequence[Row] | None = None,
    own_steps: bool = False,
    picks: tuple[list[int], int] | None = None,
) -> RunData:
    """Read one run directory. ``summary`` may be passed in (the grading run has it in memory).

    Drill-down: the first ``drill_first`` results in file order, plus up to ``drill_extra_failures``
    later non-passing ones (default: ``DRILL_FIRST`` and ``DRILL_EXTRA_FAILURES``, the rule the
    grading run keeps steps for); the note says how many were left out.
    ``rows`` (``to_row`` of every result, in file order) may be passed in too: the grading run's
    workers make them as they grade, and only the drill-down's results are then read back.
    ``own_steps``: the run's ``drill_steps.jsonl`` was written by this process from validated
    trajectories (the grading run), so the report reads it as plain JSON. ``picks``: with
    ``rows``, ``drill_picks`` of their verdicts under the default rule when the caller has them
    (the grading run, which picked the steps it kept with them).
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ReportInputError(f"{run_dir}: not a run directory")
    drill_first = _steps.DRILL_FIRST if drill_first is None else drill_first
    drill_extra_failures = _steps.DRILL_EXTRA_FAILURES if drill_extra_failures is None else drill_extra_failures
    read_summary_here = summary is None  # the grading run passes the summary of the rows it passes
    if summary is None:
        summary = read_summary(run_dir / SUMMARY)
    full: dict[int, TrajectoryResult] = {}
    later_failures = 0
    if rows is None:  # every result read once: its row, and the full result when it is picked (the rule of drill_picks)
        rows = built = []
        pool: dict[Any, Any] = {}
        for i, r in enumerate(_read_results(run_dir / RESULTS)):
            built.append(to_row(r, pool))
            if i < drill_first:
                full[i] = r
            elif r.verdict.value != "pass":
                later_failures += 1
                if later_failures <= drill_extra_failures:
                    full[i] = r
    else:
        picked, later_failures = (
            picks
            if picks is not None and (drill_first, drill_extra_failures) == (_steps.DRILL_FIRST, _steps.DRILL_EXTRA_FAILURES)
            else drill_picks((row.verdict for row in rows), drill_first, drill_extra_failures)
        )
        full = dict(_read_results(run_dir / RESULTS, set(picked)))
    if read_summary_here:
        check_counts(run_dir, summary, rows)
    n = len(rows)
    if n <= drill_first:
        note = f"all {n} trajectories"
    else:
        note = (
            f"{len(full)} of {n} trajectories: the first {drill_first} in file order, plus {min(later_failures, drill_extra_failures)} of the "
            f"{later_failures} later non-passing ones (cap {drill_extra_failures}); every trajectory is in tables/trajectories.csv"
        )
    cal_path = calibration if calibration is not None else (run_dir / CALIBRATION if (run_dir / CALIBRATION).exists() else None)
    cal = _read_json(cal_path) if cal_path is not None else None
    return RunData(
        name=name or run_dir.name,
        path=run_dir,
        summary=summary,
        rows=rows,
        drill=sorted(full),
        drill_note=note,
        full=full,
        calibration=cal,
        calibration_path=cal_path,
        own_steps=own_steps,
    )


def _read_json(path: Path) -> dict[str, Any]:
    if not path.exists():
        raise ReportInputError(f"{path}: file not found")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ReportInputError(f"{path}: cannot be read ({exc.strerror or exc})") from exc
    except ValueError as exc:  # not JSON, or not UTF-8 text
        raise ReportInputError(f"{path}: not valid JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise ReportInputError(f"{path}: expected a JSON object at the top level")
    return data


def _read_results(path: Path, only: set[int] | None = None):
    """Every result of ``path`` in order; with ``only``, (index, result) of those indices."""
    if not path.exists():
        raise ReportInputError(f"{path}: file not found")
    if path.is_dir():
        raise ReportInputError(f"{path}: a folder, not a results file")
    with open(path, encoding="utf-8") as fh:
        index = -1
        for lineno, line in _lines_of(fh, path):
            if not line.strip():
                continue
            index += 1
            if only is not None and index not in only:
                continue
            try:
                result = TrajectoryResult.model_validate_json(line)
                yield result if only is None else (index, result)
            except ValidationError as exc:
                err = exc.errors()[0]
                raise ReportInputError(f"{path}:{lineno}: field {field_path(err['loc']) or '<root>'}: {err['msg']}") from exc


def _lines_of(fh: Any, path: Path) -> Any:
    """The numbered lines of a results file; bytes that are not UTF-8 are a ``ReportInputError``."""
    lineno = 0
    while True:
        try:
            line = fh.readline()
        except UnicodeDecodeError as exc:
            # decoded in chunks: the line is not known
            raise ReportInputError(f"{path}: not UTF-8 text ({exc.reason}); is this a trajectory-judge results.jsonl?") from None
        if not line:
            return
        lineno += 1
        yield lineno, line


def check_counts(run_dir: Path, summary: RunSummary, rows: Sequence[Row]) -> None:
    """The rows of ``results.jsonl`` are the run ``summary.json`` counts: as many, verdict for
    verdict. A folder where they differ (results.jsonl cut short or edited, a summary of another
    run) would give a report whose totals are not its tables'."""
    c = summary.counts
    found = {"pass": 0, "fail": 0, "unresolved": 0, "error": 0}
    for row in rows:
        found[row.verdict] = found.get(row.verdict, 0) + 1
    expected = {"pass": c.passed, "fail": c.fail, "unresolved": c.unresolved, "error": c.errors}
    if len(rows) != c.trajectories or found != expected:
        differ = ", ".join(f"{k} {found.get(k, 0)} vs {v}" for k, v in expected.items() if found.get(k, 0) != v)
        raise ReportInputError(
            f"{run_dir / RESULTS} holds {len(rows)} results, {run_dir / SUMMARY} counts {c.trajectories} trajectories"
            + (f" ({differ})" if differ else "")
            + ": the run folder is damaged (a file cut short, edited, or of another run); grade the run again"
        )
