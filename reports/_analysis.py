"""All tables of one run, computed once and shared by the Markdown, HTML and table writers."""

from __future__ import annotations

from typing import Any

import msgspec

from reports import _orchestration as O
from reports import _tables as T
from reports._frame import Table
from reports._run import RunData
from reports._steps import attach_trajectories


class RunReport(msgspec.Struct):
    run: RunData
    tables: dict[str, Table]
    vote_facts: dict[str, Any]
    calibration_facts: dict[str, Any] | None
    notes: list[str] = msgspec.field(default_factory=list)
    control_facts: dict[str, Any] = msgspec.field(default_factory=dict)


def analyse(run: RunData) -> RunReport:
    attach_trajectories(run)
    votes, vote_facts = T.judge_votes(run)
    calib, calib_facts = T.calibration_tables(run)
    controls, control_facts = T.judge_controls(run)
    passk, pass_stats = T.repeated_runs(run)
    tools = T.tool_bottlenecks(run)
    agreement, disagreements = T.external_agreement(run)
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
        "judge_controls": controls,
        "pass_at_k": passk,
        "repeated_runs": pass_stats,
        "external_agreement": agreement,
        "external_disagreements": disagreements,
        **O.tables(run),
    }
    notes = []
    unnamed = sum(r.unnamed_tool_evidence for r in run.rows)
    if unnamed:
        notes.append(f"{unnamed} reference-step evidence items named no tool and are left out of the tool bottlenecks.")
    if run.steps_note:
        notes.append(run.steps_note)
    return RunReport(run=run, tables=tables, vote_facts=vote_facts, calibration_facts=calib_facts, notes=notes, control_facts=control_facts)
