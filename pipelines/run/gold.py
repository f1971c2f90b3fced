"""A labelling set from a graded run: which cases to label (``calibration.select_for_labelling``)
and, for each, the material exactly as a judge would see it, rebuilt from the run's inputs.

Why rebuild: ``results.jsonl`` keeps verdicts and evidence, not the trajectories. The manifest
names the inputs (with their hashes) and the grading config; the drawn trajectories are graded
again deterministically (with replay when the run replayed) and ``GradedCase.request_for`` gives
the rubric and material of the check to label, the same function that built the run's judge
requests. Inputs that changed since the run are refused (their hash no longer matches).
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from calibration import RUN_PREFIX, Candidate, LabelItem, Stratum, candidate_of, select_for_labelling
from judge import Check, InputError, Outcome, json_lines
from pipelines.grade import grade_case
from pipelines.ingest import check_task, iter_trajectories, load_tasks
from pipelines.run.folder import MANIFEST, RESULTS
from pipelines.run.records import ManifestInput, RecordError, read_manifest

CONTEXT_TEXT = 2000  # characters of one tool result shown to a human


class ExportSummary(BaseModel):
    rows: int
    candidates: int
    error_rows: int  # input errors: nothing to label
    nothing_to_label: int  # graded rows without a check that could be labelled
    chosen: int
    strata: dict[str, dict[str, int]] = Field(default_factory=dict)  # "stage/decided_by" -> {size, sampled}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _clip(value: Any) -> Any:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= CONTEXT_TEXT else text[:CONTEXT_TEXT] + f"... [{len(text) - CONTEXT_TEXT} more characters]"


def _recorded(rubric: Any, check: dict[str, Any]) -> dict[str, str | None]:
    """The run's decision on this check as verdict columns: ``run:deterministic`` (when the checker's
    outcome names one label of the rubric), ``run:panel`` and one ``run:<judge>`` per vote."""
    out: dict[str, str | None] = {}
    decision = check.get("decision")
    if decision:
        out[f"{RUN_PREFIX}panel"] = decision.get("label")
        for vote in decision.get("votes") or []:
            out[f"{RUN_PREFIX}{vote.get('judge')}"] = None if vote.get("abstained") else vote.get("label")
        return out
    labels = list(rubric.label_outcomes)
    label = check.get("label")
    if check.get("outcome") in ("match", "mismatch"):
        if label not in labels:
            wanted = Outcome(check["outcome"])
            fitting = [lab for lab, out_ in rubric.label_outcomes.items() if out_ == wanted]
            label = fitting[0] if len(fitting) == 1 or wanted == Outcome.MATCH else None
        if label is not None:
            out[f"{RUN_PREFIX}deterministic"] = label
    return out


def export_label_set(
    run_dir: Path, n: int, *, stratify: str = "stage", seed: int = 0, rubric_table: dict[str, Any] | None = None
) -> tuple[list[LabelItem], ExportSummary]:
    import rubrics as builtin_rubrics

    run_dir = Path(run_dir)
    for name in (RESULTS, MANIFEST):
        if not (run_dir / name).is_file():
            raise InputError.at("not_found", f"not a graded run: {name} is missing", str(run_dir / name))
    try:
        manifest = read_manifest(run_dir / MANIFEST)
    except RecordError as exc:
        raise InputError.at("invalid_field", str(exc), str(run_dir / MANIFEST)) from None
    inputs = {i.role: i for i in manifest.inputs}
    for role in ("tasks", "trajectories"):
        if role not in inputs or inputs[role].path is None:
            raise InputError.at("invalid_field", f"the manifest names no {role} input", str(run_dir / MANIFEST), None, "inputs")
    for spec in inputs.values():
        if spec.path is None:
            continue
        path = Path(spec.path)
        if not path.is_file():
            raise InputError.at("not_found", f"input of the run is gone: {path}", str(run_dir / MANIFEST), None, f"inputs[{spec.role}].path")
        if spec.sha256 and _sha256(path) != spec.sha256:
            raise InputError.at("changed", f"{path} changed since the run (sha256 differs): grade it again first", str(run_dir / MANIFEST), None, "inputs")
    rows = [json.loads(line) for line in json_lines((run_dir / RESULTS).read_text(encoding="utf-8")) if line.strip()]
    candidates: list[Candidate] = []
    errors = nothing = 0
    for i, row in enumerate(rows):
        if row.get("verdict") == "error":
            errors += 1
            continue
        cand = candidate_of(row, i)
        if cand is None:
            nothing += 1
        else:
            candidates.append(cand)
    chosen = select_for_labelling(candidates, n, stratify=stratify, seed=seed)
    wanted: dict[int, list[tuple[Candidate, Stratum]]] = defaultdict(list)
    for cand, stratum in chosen:
        wanted[cand.row_index].append((cand, stratum))

    table = rubric_table or builtin_rubrics.RUBRICS
    config = manifest.config
    reference = inputs.get("reference")
    taskset = load_tasks(str(inputs["tasks"].path), _fmt(inputs["tasks"]), None if reference is None else reference.path)
    replayer = None
    if manifest.replay:
        from pipelines.grade import Replayer

        replayer = Replayer()
    items: dict[str, LabelItem] = {}
    for index, loaded in enumerate(iter_trajectories(str(inputs["trajectories"].path), _fmt(inputs["trajectories"]), tasks=taskset)):
        if index not in wanted:
            continue
        row = rows[index]
        traj = loaded.trajectory
        if traj is None or check_task(loaded, taskset) is not None or traj.trajectory_id != row.get("trajectory_id"):
            raise InputError.at("changed", f"line {index + 1} of {RESULTS} does not match the run's inputs", str(run_dir / RESULTS), index + 1)
        task = taskset.tasks[traj.task_id]
        replay = replayer.replay(task, traj) if replayer is not None and task.environment is not None else None
        case = grade_case(task, traj, config, source=loaded.source, replay=replay)
        for cand, stratum in wanted[index]:
            items[cand.key] = _item(case, row, cand, stratum, table, index)
    missing = [c.key for c, _ in chosen if c.key not in items]
    if missing:
        raise InputError.at("changed", f"{len(missing)} chosen rows were not found in the inputs (first: {missing[0]})", str(run_dir / RESULTS))
    summary = ExportSummary(
        rows=len(rows),
        candidates=len(candidates),
        error_rows=errors,
        nothing_to_label=nothing,
        chosen=len(chosen),
        strata={f"{s.stage}/{s.decided_by}": {"size": s.size, "sampled": s.sampled} for _, s in sorted(chosen, key=lambda x: (x[1].stage, x[1].decided_by))},
    )
    return [items[c.key] for c, _ in chosen], summary


def _fmt(spec: ManifestInput) -> str | None:
    fmt = spec.format
    return None if fmt in (None, "auto") else fmt


def _item(case: Any, row: dict[str, Any], cand: Candidate, stratum: Stratum, table: dict[str, Any], index: int) -> LabelItem:
    check = Check(cand.check)
    request = case.request_for(cand.turn_index, check)
    rubric = table[request.rubric]
    ts = case.turns[cand.turn_index]
    ctx = ts.ctx
    turn = ctx.turn
    answer = ctx.traj_turn.final_answer if ctx.traj_turn is not None else None
    context: dict[str, Any] = {
        "question": turn.query,
        "gold_answers": turn.gold_answers,
        "steps": [
            {"step": v.index, "name": v.step.name, "arguments": v.step.arguments, "status": "ok" if v.ok else "error", "result": _clip(v.result)}
            for v in ctx.steps
        ],
        "answer": answer,
    }
    if turn.criteria:
        context["criteria"] = turn.criteria
    if ctx.task.policy is not None and ctx.task.policy.text:
        context["policy"] = ctx.task.policy.text
    row_check = next(c for c in row["turns"][cand.turn_index]["checks"] if c.get("check") == cand.check)
    decision = row_check.get("decision") or {}
    run = {
        "verdict": row.get("verdict"),
        "failure_stage": row.get("failure_stage"),
        "decided_by": row_check.get("decided_by"),
        "check_outcome": row_check.get("outcome"),
        "check_label": row_check.get("label"),
        "reason": row_check.get("reason", ""),
        "evidence": [{k: e.get(k) for k in ("kind", "message")} for e in row_check.get("evidence") or []],
        "votes": [{k: v.get(k) for k in ("judge", "label", "abstained", "rationale")} for v in decision.get("votes") or []],
        "rubric_version": decision.get("rubric_version"),
    }
    return LabelItem(
        item_id=cand.key,
        rubric=request.rubric,
        labels=list(rubric.label_outcomes),
        positive_label=getattr(rubric, "positive_label", None),
        check=cand.check,
        material=request.material,
        context=context,
        run=run,
        recorded=_recorded(rubric, row_check),
        task_id=row.get("task_id"),
        trajectory_id=row.get("trajectory_id"),
        turn_id=turn.turn_id,
        agent=row.get("agent"),
        cluster=f"task:{row.get('task_id')}",
        stratum=stratum,
        source={"results_line": index + 1},
    )
