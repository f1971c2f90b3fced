"""All tables of one run, computed once and shared by the Markdown, HTML and table writers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from reports import _tables as T
from reports._run import RunData, attach_trajectories

DRILL_FIRST = 1000  # the first N trajectories of the file are always in the drill-down
DRILL_EXTRA_FAILURES = 1000  # plus up to this many later non-passing ones


@dataclass
class RunReport:
    run: RunData
    tables: dict[str, pd.DataFrame]
    vote_facts: dict[str, Any]
    calibration_facts: dict[str, Any] | None
    drill: list[int]
    drill_note: str
    notes: list[str] = field(default_factory=list)


def pick_drilldown(run: RunData, first: int = DRILL_FIRST, extra_failures: int = DRILL_EXTRA_FAILURES) -> tuple[list[int], str]:
    n = len(run.results)
    if n <= first:
        return list(range(n)), f"all {n} trajectories"
    later = [i for i in range(first, n) if run.results[i].verdict.value != "pass"]
    picked = list(range(first)) + later[:extra_failures]
    return picked, (
        f"{len(picked)} of {n} trajectories: the first {first} in file order, plus {min(len(later), extra_failures)} of the "
        f"{len(later)} later non-passing ones (cap {extra_failures}); every trajectory is in tables/trajectories.csv"
    )


def analyse(run: RunData, first: int = DRILL_FIRST, extra_failures: int = DRILL_EXTRA_FAILURES) -> RunReport:
    drill, drill_note = pick_drilldown(run, first, extra_failures)
    attach_trajectories(run, drill)
    votes, vote_facts = T.judge_votes(run)
    calib, calib_facts = T.calibration_tables(run)
    passk, pass_stats = T.repeated_runs(run)
    tools = T.tool_bottlenecks(run)
    tables = {
        "headline": T.headline(run),
        "capabilities": T.capabilities(run),
        "failure_stages": T.waterfall(run),
        "accuracy_by_hops": T.accuracy_by_hops(run),
        "scores": T.scores_table(run),
        "seed_metrics": T.seed_metrics(run),
        "tool_bottlenecks": tools,
        "decided_by": T.decisions(run),
        "judge_votes": votes,
        "calibration": calib,
        "pass_at_k": passk,
        "repeated_runs": pass_stats,
        "trajectories": T.trajectories(run),
    }
    notes = []
    if tools.attrs.get("unnamed"):
        notes.append(f"{tools.attrs['unnamed']} reference-step evidence items named no tool and are left out of the tool bottlenecks.")
    if run.steps_note:
        notes.append(run.steps_note)
    return RunReport(run=run, tables=tables, vote_facts=vote_facts, calibration_facts=calib_facts, drill=drill, drill_note=drill_note, notes=notes)
