"""One graded run as the report sees it: summary, per-trajectory results, optional calibration,
and (where the input was native JSONL) the trajectories' steps for the drill-down.

Why read ``results.jsonl`` at all: ``summary.json`` is aggregate-only, while the tool bottlenecks,
the crossed hop x policy tables, the per-agent radar, the judge votes, repeated-run estimators
and the drill-down need per-trajectory facts. Every line is validated as a ``TrajectoryResult``;
a bad line raises ``ReportInputError`` naming file, line and field path.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from judge import Trajectory, TrajectoryResult, field_path

SUMMARY, RESULTS, MANIFEST, CALIBRATION = "summary.json", "results.jsonl", "manifest.json", "calibration.json"


class ReportInputError(ValueError):
    """A run directory or one of its files cannot be read; the message names file, line, field."""


@dataclass
class RunData:
    name: str
    path: Path
    summary: dict[str, Any]
    results: list[TrajectoryResult]
    calibration: dict[str, Any] | None = None
    calibration_path: Path | None = None
    # trajectory steps by results index, only for rows picked for the drill-down
    trajectories: dict[int, Trajectory] = field(default_factory=dict)
    steps_note: str = ""

    @property
    def graded(self) -> list[TrajectoryResult]:
        return [r for r in self.results if r.verdict.value != "error"]


def load_run(run_dir: Path, summary: dict[str, Any] | None = None, calibration: Path | None = None, name: str | None = None) -> RunData:
    """Read one run directory. ``summary`` may be passed in (the grading run has it in memory)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ReportInputError(f"{run_dir}: not a run directory")
    if summary is None:
        summary = _read_json(run_dir / SUMMARY)
    for key in ("counts", "pass_rate", "failure_stages", "by", "leaderboard"):
        if key not in summary:
            raise ReportInputError(f"{run_dir / SUMMARY}: field {key!r} missing (is this a trajectory-judge summary.json?)")
    results = list(_read_results(run_dir / RESULTS))
    cal_path = calibration if calibration is not None else (run_dir / CALIBRATION if (run_dir / CALIBRATION).exists() else None)
    cal = _read_json(cal_path) if cal_path is not None else None
    return RunData(name=name or run_dir.name, path=run_dir, summary=summary, results=results, calibration=cal, calibration_path=cal_path)


def _read_json(path: Path) -> dict[str, Any]:
    if not path.exists():
        raise ReportInputError(f"{path}: file not found")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ReportInputError(f"{path}: not valid JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise ReportInputError(f"{path}: expected a JSON object at the top level")
    return data


def _read_results(path: Path):
    if not path.exists():
        raise ReportInputError(f"{path}: file not found")
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                yield TrajectoryResult.model_validate_json(line)
            except ValidationError as exc:
                err = exc.errors()[0]
                raise ReportInputError(f"{path}:{lineno}: field {field_path(err['loc']) or '<root>'}: {err['msg']}") from exc


def attach_trajectories(run: RunData, indices: list[int]) -> None:
    """Read the steps of the picked results from their source file when it is native JSONL.

    Each result carries ``source`` (file, line). A line that does not parse as a native
    ``Trajectory`` (another input format) leaves that row without steps; the report says how many.
    """
    wanted: dict[Path, dict[int, list[int]]] = {}
    for i in indices:
        src = run.results[i].source
        if src is None or src.line is None or src.file is None:
            continue
        path = _resolve(Path(src.file), run.path)
        if path is None:
            continue
        wanted.setdefault(path, {}).setdefault(src.line, []).append(i)
    found = 0
    for path, lines in sorted(wanted.items()):
        try:
            fh = open(path, "rb")  # bytes: a line that is not UTF-8 just has no steps here
        except OSError:
            continue
        with fh:
            for lineno, raw in enumerate(fh, 1):
                if lineno not in lines:
                    continue
                try:
                    traj = Trajectory.model_validate_json(raw)
                except (ValidationError, ValueError):
                    continue
                for i in lines[lineno]:
                    if traj.trajectory_id == run.results[i].trajectory_id:
                        run.trajectories[i] = traj
                        found += 1
    missing = len(indices) - found
    run.steps_note = (
        "" if not missing else
        f"{missing} of {len(indices)} shown trajectories have no steps here: their source file is missing or not native JSONL "
        "(evidence, verdicts, votes and scores are shown)."
    )


def _resolve(path: Path, run_dir: Path) -> Path | None:
    for candidate in (path, run_dir / path, run_dir.parent / path):
        if candidate.is_file():
            return candidate
    return None
