"""Gold from your own runs: labelling sets (what humans label), label files (what they export), and
their merge into a gold set.

- A labelling set is JSONL, one ``LabelItem`` per line: the check to label, the rubric's labels,
  the material exactly as a judge sees it (so the gold can re-run judges), a human-readable
  context (question, steps, answer), what the run decided (with its evidence and votes) and the
  sampling stratum with its size, so estimates can be reweighted to the run.
- ``select_for_labelling`` draws ``n`` cases stratified by failure stage or by how the check was
  decided (deterministic / judge / unresolved), the other key nested inside: strata get equal
  shares (capped by their size, the rest redistributed), so rare stages and judge-decided cases
  are covered; inside a stratum the draw is seeded and spreads over tasks first.
- A label file is JSONL ``{"item_id", "label", "annotator", "note"}`` (the labelling page exports it).
- ``merge_labels`` turns a set plus label files into gold items: annotator ids are kept (so the
  human-human ceiling is measured), the run's own decisions become recorded verdicts (``run:...``
  columns: the deterministic checker, the panel and each judge), unlabelled items are counted.

Errors name file, line and field (``judge.InputError``).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from calibration._gold import GoldItem, GoldSet, HumanLabel, default_positive_label
from calibration._gold_io import read_jsonl
from judge import InputError

RUN_PREFIX = "run:"


class Stratum(BaseModel):
    stage: str  # failure stage of the trajectory, "none" for a pass, "unresolved"
    decided_by: str  # how the labelled check was decided: deterministic | judge | unresolved
    size: int = 0  # cases of this (stage, decided_by) in the run
    sampled: int = 0  # cases drawn from it


class LabelItem(BaseModel):
    """One case to label (a line of a labelling set)."""

    model_config = ConfigDict(extra="forbid")

    item_id: str = Field(min_length=1)
    rubric: str
    labels: list[str] = Field(min_length=2)
    positive_label: str | None = None
    check: str
    material: dict[str, Any]  # what a judge sees (the rubric's material)
    context: dict[str, Any] = Field(default_factory=dict)  # what a human reads: question, steps, answer, gold answers, policy
    run: dict[str, Any] = Field(default_factory=dict)  # verdict, failure_stage, check outcome/label, reason, evidence, votes
    recorded: dict[str, str | None] = Field(default_factory=dict)  # the run's decisions as verdict columns (run:...)
    task_id: str | None = None
    trajectory_id: str | None = None
    turn_id: str | None = None
    agent: str | None = None
    cluster: str | None = None
    stratum: Stratum
    source: dict[str, Any] = Field(default_factory=dict)


class Candidate(BaseModel):
    """A case the run offers for labelling, before the draw (material is built only for the drawn)."""

    key: str  # unique: trajectory_id/turn_id/check
    task_id: str | None
    stage: str
    decided_by: str
    row_index: int  # line of results.jsonl (0-based)
    turn_index: int
    check: str


class LabelRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    item_id: str = Field(min_length=1)
    label: str = Field(min_length=1)
    annotator: str = Field(min_length=1)
    note: str = ""


def _decided_kind(check: Mapping[str, Any]) -> str:
    if check.get("outcome") == "inconclusive":
        return "unresolved"
    return "judge" if str(check.get("decided_by", "")).startswith("judge:") else "deterministic"


def candidate_of(row: Mapping[str, Any], row_index: int) -> Candidate | None:
    """The check that decided a result row (None for error rows and rows with nothing to label):
    a fail's failing check, an unresolved row's first open check, a pass's first judge-decided
    check, else its last turn's answer check (else its calls check)."""
    verdict = row.get("verdict")
    turns = row.get("turns") or []
    pick: tuple[int, Mapping[str, Any]] | None = None
    if verdict == "fail":
        pick = next(((ti, c) for ti, t in enumerate(turns) if t.get("verdict") == "fail" for c in t.get("checks", []) if c.get("outcome") == "mismatch"), None)
    elif verdict == "unresolved":
        pick = next(((ti, c) for ti, t in enumerate(turns) for c in t.get("checks", []) if c.get("outcome") == "inconclusive"), None)
    elif verdict == "pass":
        pick = next(((ti, c) for ti, t in enumerate(turns) for c in t.get("checks", []) if _decided_kind(c) == "judge"), None)
        if pick is None and turns:
            last = len(turns) - 1
            by_check = {c.get("check"): c for c in turns[last].get("checks", []) if c.get("outcome") == "match"}
            chosen = by_check.get("answer") or by_check.get("calls")
            pick = (last, chosen) if chosen is not None else None
    if pick is None:
        return None
    ti, check = pick
    stage = "unresolved" if verdict == "unresolved" else str(row.get("failure_stage") or "none")
    turn_id = turns[ti].get("turn_id")
    return Candidate(
        key=f"{row.get('trajectory_id')}/{turn_id}/{check.get('check')}",
        task_id=row.get("task_id"),
        stage=stage,
        decided_by=_decided_kind(check),
        row_index=row_index,
        turn_index=ti,
        check=str(check.get("check")),
    )


def allocate(sizes: Mapping[str, int], n: int) -> dict[str, int]:
    """Equal shares of ``n`` over the strata, capped by each stratum's size; what a small stratum
    cannot take goes to the others (water filling). Deterministic: ties go in key order."""
    out = dict.fromkeys(sizes, 0)
    left = min(n, sum(sizes.values()))
    open_keys = sorted(k for k, s in sizes.items() if s > 0)
    while left > 0 and open_keys:
        share = max(left // len(open_keys), 1)
        for k in list(open_keys):
            if left == 0:
                break
            take = min(share, sizes[k] - out[k], left)
            out[k] += take
            left -= take
            if out[k] >= sizes[k]:
                open_keys.remove(k)
    return out


def _spread_over_tasks(cands: list[Candidate], rng: np.random.Generator) -> list[Candidate]:
    """A seeded order that takes one case per task before a second from any task."""
    order = [cands[i] for i in rng.permutation(len(cands))]
    seen: dict[str | None, int] = defaultdict(int)
    ranked: list[tuple[int, int, Candidate]] = []
    for c in order:
        ranked.append((seen[c.task_id], len(ranked), c))
        seen[c.task_id] += 1
    return [c for _, _, c in sorted(ranked, key=lambda x: (x[0], x[1]))]


def select_for_labelling(candidates: Sequence[Candidate], n: int, *, stratify: str = "stage", seed: int = 0) -> list[tuple[Candidate, Stratum]]:
    """``n`` candidates (all if fewer), stratified by ``stage`` or ``decided_by`` with the other key
    nested; returned in a seeded, stratum-interleaved order (no block of one stage first)."""
    if stratify not in ("stage", "decided_by"):
        raise ValueError(f"--stratify must be stage or decided_by, got {stratify!r}")
    inner = "decided_by" if stratify == "stage" else "stage"
    groups: dict[str, dict[str, list[Candidate]]] = defaultdict(lambda: defaultdict(list))
    for c in candidates:
        groups[getattr(c, stratify)][getattr(c, inner)].append(c)
    rng = np.random.default_rng(seed)
    outer_alloc = allocate({k: sum(len(v) for v in g.values()) for k, g in groups.items()}, n)
    chosen: list[tuple[Candidate, Stratum]] = []
    for outer in sorted(groups):
        inner_alloc = allocate({k: len(v) for k, v in groups[outer].items()}, outer_alloc[outer])
        for key in sorted(groups[outer]):
            pool = _spread_over_tasks(groups[outer][key], rng)
            take = inner_alloc[key]
            stage, decided = (outer, key) if stratify == "stage" else (key, outer)
            stratum = Stratum(stage=stage, decided_by=decided, size=len(pool), sampled=take)
            chosen += [(c, stratum) for c in pool[:take]]
    return [chosen[i] for i in rng.permutation(len(chosen))]


def write_label_set(items: Iterable[LabelItem], path: Path) -> int:
    lines = [json.dumps(it.model_dump(mode="json", exclude_none=True), sort_keys=True, ensure_ascii=False) for it in items]
    Path(path).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return len(lines)


def load_label_set(path: Path) -> list[LabelItem]:
    items = read_jsonl(path, LabelItem.model_validate)
    first: dict[str, int] = {}
    for line, it in items:
        if it.item_id in first:
            raise InputError.at("duplicate_id", f"item id {it.item_id!r} already used on line {first[it.item_id]}", str(path), line, "item_id")
        first[it.item_id] = line
    if not items:
        raise InputError.at("empty", "the labelling set holds no items", str(path))
    return [it for _, it in items]


class MergeSummary(BaseModel):
    items: int
    labelled: int
    unlabelled: list[str]  # item ids no annotator labelled (left out of the gold, listed here)
    annotators: dict[str, int]  # annotator -> labels given
    multi_annotated: int  # items with two or more annotators (the human-human ceiling is measured on them)
    duplicates_ignored: int  # identical label lines seen twice (same item, annotator, label, note)


def merge_labels(label_set: Path, label_files: Sequence[Path]) -> tuple[GoldSet, MergeSummary]:
    """A gold set from a labelling set and the label files of one or more annotators."""
    items = load_label_set(label_set)
    by_id = {it.item_id: it for it in items}
    labels: dict[str, dict[str, tuple[LabelRecord, str]]] = defaultdict(dict)  # item -> annotator -> (record, where)
    duplicates = 0
    for path in label_files:
        for line, rec in read_jsonl(path, LabelRecord.model_validate):
            where = f"{path}:{line}"
            item = by_id.get(rec.item_id)
            if item is None:
                raise InputError.at("unknown_item", f"item {rec.item_id!r} is not in {label_set}", str(path), line, "item_id")
            if rec.label not in item.labels:
                raise InputError.at("invalid_field", f"label {rec.label!r} is not one of {item.labels}", str(path), line, "label")
            previous = labels[rec.item_id].get(rec.annotator)
            if previous is not None:
                if previous[0] == rec:
                    duplicates += 1
                    continue
                raise InputError.at(
                    "conflict",
                    f"annotator {rec.annotator!r} labelled {rec.item_id!r} twice differently (first at {previous[1]})",
                    str(path),
                    line,
                    "label",
                )
            labels[rec.item_id][rec.annotator] = (rec, where)
    gold_items = []
    for it in items:
        given = labels.get(it.item_id)
        if not given:
            continue
        gold_items.append(
            GoldItem(
                id=it.item_id,
                rubric=it.rubric,
                material=it.material,
                human_labels=[HumanLabel(annotator=a, label=r.label, note=r.note) for a, (r, _) in sorted(given.items())],
                judge_verdicts=dict(it.recorded),
                cluster=it.cluster or (f"task:{it.task_id}" if it.task_id else None),
                agent=it.agent,
                metadata={
                    "check": it.check,
                    "task_id": it.task_id,
                    "trajectory_id": it.trajectory_id,
                    "turn_id": it.turn_id,
                    "stratum": it.stratum.model_dump(mode="json"),
                    **({"positive_label": it.positive_label} if it.positive_label else {}),
                    "run": {k: it.run.get(k) for k in ("verdict", "failure_stage", "decided_by", "check_outcome", "check_label")},
                },
            )
        )
    if not gold_items:
        raise InputError.at("empty", f"no item of {label_set} carries a label in {', '.join(str(p) for p in label_files)}", str(label_set))
    counts: dict[str, int] = defaultdict(int)
    for given in labels.values():
        for a in given:
            counts[a] += 1
    rubrics = {it.rubric for it in gold_items}
    seen_labels = {h.label for it in gold_items for h in it.human_labels}
    positive = next((it.positive_label for it in items if it.positive_label in seen_labels), None)
    positive = positive or default_positive_label(next(iter(rubrics)) if len(rubrics) == 1 else None, seen_labels) or sorted(seen_labels)[0]
    gold = GoldSet(source=str(label_set), format="jsonl", items=gold_items, positive_label=positive)
    summary = MergeSummary(
        items=len(items),
        labelled=len(gold_items),
        unlabelled=[it.item_id for it in items if it.item_id not in labels],
        annotators=dict(sorted(counts.items())),
        multi_annotated=sum(1 for g in gold_items if len(g.human_labels) >= 2),
        duplicates_ignored=duplicates,
    )
    return gold, summary
