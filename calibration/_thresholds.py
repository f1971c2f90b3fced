"""Tuning the deterministic comparator's tolerances against human labels.

The answer comparator decides an item (label) or escalates it (None) to the judges. Looser settings
decide more items but risk wrong decisions. ``tune_thresholds`` sweeps a grid and keeps the setting
that escalates least while its agreement with the humans on the items it decided stays at or above
``target_agreement``. The comparator is a parameter because ``calibration`` may not import
``pipelines`` (layering); the caller passes ``pipelines.matching.answers.compare_answer``.

Ties (same escalation rate and agreement) go to the earliest grid point, so list each value range
from the strictest to the loosest setting. If no setting reaches the target, the choice is the one with the highest agreement and
``met_target`` is False: the caller sees that the target is out of reach instead of a silent pick.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from calibration._gold import GoldSet


class ThresholdItem(BaseModel):
    id: str
    gold_answers: list[Any]
    prediction: Any
    human_label: str


class GridPoint(BaseModel):
    thresholds: dict[str, Any]
    n_decided: int
    escalation_rate: float
    agreement_on_decided: float | None


class ThresholdChoice(BaseModel):
    thresholds: dict[str, Any]
    n_items: int
    n_decided: int
    escalation_rate: float
    agreement_on_decided: float | None
    target_agreement: float
    met_target: bool
    grid: list[GridPoint] = Field(default_factory=list)

    def config_section(self) -> dict[str, Any]:
        return {
            **self.thresholds,
            "tuned_target_agreement": self.target_agreement,
            "tuned_agreement_on_decided": self.agreement_on_decided,
            "tuned_escalation_rate": self.escalation_rate,
            "tuned_met_target": self.met_target,
            "tuned_n_items": self.n_items,
        }


def expand_grid(grid: Mapping[str, Sequence[Any]] | Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A dict of value lists becomes its Cartesian product (keys sorted); a list of dicts is kept."""
    if isinstance(grid, Mapping):
        keys = sorted(grid)
        return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*(list(grid[k]) for k in keys))]
    return [dict(g) for g in grid]


def tune_thresholds(
    items: Sequence[ThresholdItem],
    compare: Callable[[list[Any], Any, Any], str | None],
    grid: Mapping[str, Sequence[Any]] | Sequence[Mapping[str, Any]],
    target_agreement: float = 0.95,
    *,
    make_thresholds: Callable[..., Any] = dict,
) -> ThresholdChoice:
    """``compare(gold_answers, prediction, thresholds) -> label | None``; ``make_thresholds(**point)``
    builds the comparator's thresholds object (e.g. ``AnswerThresholds``) from a grid point."""
    if not items:
        raise ValueError("no items to tune on")
    points = expand_grid(grid)
    if not points:
        raise ValueError("empty grid")
    rows: list[GridPoint] = []
    for point in points:
        th = make_thresholds(**point)
        decided = agree = 0
        for it in items:
            label = compare(it.gold_answers, it.prediction, th)
            if label is not None:
                decided += 1
                agree += label == it.human_label
        rows.append(
            GridPoint(
                thresholds=point,
                n_decided=decided,
                escalation_rate=round(1 - decided / len(items), 6),
                agreement_on_decided=round(agree / decided, 6) if decided else None,
            )
        )
    ok = [i for i, r in enumerate(rows) if r.agreement_on_decided is not None and r.agreement_on_decided >= target_agreement]
    if ok:
        best = min(ok, key=lambda i: (rows[i].escalation_rate, -(rows[i].agreement_on_decided or 0), i))
    else:
        best = min(range(len(rows)), key=lambda i: (-(rows[i].agreement_on_decided or -1), rows[i].escalation_rate, i))
    r = rows[best]
    return ThresholdChoice(
        thresholds=r.thresholds,
        n_items=len(items),
        n_decided=r.n_decided,
        escalation_rate=r.escalation_rate,
        agreement_on_decided=r.agreement_on_decided,
        target_agreement=target_agreement,
        met_target=bool(ok),
        grid=rows,
    )


def threshold_items(gold: GoldSet) -> tuple[list[ThresholdItem], int]:
    """Items usable for tuning the answer comparator: inline material with gold answers, an answer
    and a human consensus. Returns (items, number left out) so the caller can report the rest."""
    out, left = [], 0
    for it in gold.items:
        m = it.material or {}
        if it.rubric != "answer_correctness" or m.get("answer") is None or not m.get("gold_answers") or it.human_label is None:
            left += 1
            continue
        out.append(ThresholdItem(id=it.id, gold_answers=list(m["gold_answers"]), prediction=m["answer"], human_label=it.human_label))
    return out, left


def write_threshold_config(choice: ThresholdChoice, path: Path) -> None:
    """Write the chosen thresholds where ``judge grade --config`` reads them: ``[grading.answer]``
    (TOML; how they were tuned goes in comments) or ``{"grading": {"answer": ...}, "tuning": ...}``
    (JSON). Deterministic."""
    path = Path(path)
    data = choice.config_section()
    thresholds = {k: v for k, v in data.items() if not k.startswith("tuned_")}
    tuning = {k.removeprefix("tuned_"): v for k, v in data.items() if k.startswith("tuned_")}
    if path.suffix.lower() == ".toml":
        lines = [f"# tuned on {tuning['n_items']} gold items: agreement on decided {tuning['agreement_on_decided']}, "
                 f"escalation rate {tuning['escalation_rate']}, target {tuning['target_agreement']} met: {tuning['met_target']}",
                 "[grading.answer]"]  # fmt: skip
        for key in sorted(thresholds):
            if thresholds[key] is None:  # TOML has no null: an unset value is left out (its default is None)
                continue
            lines.append(f"{key} = {_toml_value(thresholds[key])}")
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    else:
        path.write_text(json.dumps({"grading": {"answer": thresholds}, "tuning": tuning}, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(str(value))
