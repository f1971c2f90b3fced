"""Threshold tuning with a small comparator of our own (the real one lives in pipelines)."""

from __future__ import annotations

import difflib
import json
import tomllib
from dataclasses import dataclass

import pytest

from calibration import ThresholdItem, load_gold, threshold_items, tune_thresholds, write_threshold_config

from .conftest import FIXTURES


@dataclass(frozen=True)
class Thresholds:
    accept_similarity: float
    reject_similarity: float


def compare(gold_answers, prediction, th: Thresholds):
    """correct above accept, incorrect below reject, None (escalate) in between."""
    sim = max(difflib.SequenceMatcher(None, g.lower(), str(prediction).lower()).ratio() for g in gold_answers)
    if sim >= th.accept_similarity:
        return "correct"
    if sim <= th.reject_similarity:
        return "incorrect"
    return None


ITEMS = [
    ThresholdItem(id="1", gold_answers=["Canberra"], prediction="Canberra", human_label="correct"),
    ThresholdItem(id="2", gold_answers=["Canberra"], prediction="canberra.", human_label="correct"),
    ThresholdItem(id="3", gold_answers=["Hemingway"], prediction="Ernest Hemingway", human_label="correct"),
    ThresholdItem(id="4", gold_answers=["Iron"], prediction="Irony", human_label="incorrect"),
    ThresholdItem(id="5", gold_answers=["1989"], prediction="1991", human_label="incorrect"),
    ThresholdItem(id="6", gold_answers=["Canberra"], prediction="Sydney", human_label="incorrect"),
    ThresholdItem(id="7", gold_answers=["Mars"], prediction="Jupiter", human_label="incorrect"),
    ThresholdItem(id="8", gold_answers=["two"], prediction="two moons", human_label="correct"),
]
GRID = {"accept_similarity": [0.6, 0.75, 0.9, 1.0], "reject_similarity": [0.2, 0.4, 0.5]}


def _sims():
    return {it.id: max(difflib.SequenceMatcher(None, g.lower(), it.prediction.lower()).ratio() for g in it.gold_answers) for it in ITEMS}


def test_choice_minimises_escalations_under_the_target():
    choice = tune_thresholds(ITEMS, compare, GRID, target_agreement=1.0, make_thresholds=Thresholds)
    assert choice.met_target and choice.agreement_on_decided == 1.0
    assert len(choice.grid) == 12
    feasible = [g for g in choice.grid if g.agreement_on_decided == 1.0]
    assert choice.escalation_rate == min(g.escalation_rate for g in feasible)
    # brute force with the comparator itself agrees on the best escalation rate
    sims = _sims()
    best = min(
        sum(r < sims[i] < a for i in sims) / len(ITEMS)
        for a in GRID["accept_similarity"]
        for r in GRID["reject_similarity"]
        if all((sims[it.id] >= a) == (it.human_label == "correct") for it in ITEMS if sims[it.id] >= a or sims[it.id] <= r)
    )
    assert choice.escalation_rate == pytest.approx(best)


def test_lower_target_escalates_less():
    strict = tune_thresholds(ITEMS, compare, GRID, target_agreement=1.0, make_thresholds=Thresholds)
    loose = tune_thresholds(ITEMS, compare, GRID, target_agreement=0.8, make_thresholds=Thresholds)
    assert loose.escalation_rate <= strict.escalation_rate and loose.agreement_on_decided >= 0.8


def test_unreachable_target_is_reported():
    always_wrong = lambda gold, pred, th: "incorrect" if pred in gold or pred.lower() in [g.lower() for g in gold] else "correct"  # noqa: E731
    choice = tune_thresholds(ITEMS, always_wrong, [{"x": 1}], target_agreement=0.95)
    assert not choice.met_target and choice.agreement_on_decided < 0.95


def test_config_written_as_toml_and_json(tmp_path):
    choice = tune_thresholds(ITEMS, compare, GRID, target_agreement=1.0, make_thresholds=Thresholds)
    write_threshold_config(choice, tmp_path / "t.toml")
    text = (tmp_path / "t.toml").read_text()
    section = tomllib.loads(text)["grading"]["answer"]
    assert section["accept_similarity"] == choice.thresholds["accept_similarity"] and "met: True" in text
    write_threshold_config(choice, tmp_path / "t.json")
    data = json.loads((tmp_path / "t.json").read_text())
    assert data["grading"]["answer"]["reject_similarity"] == choice.thresholds["reject_similarity"] and data["tuning"]["met_target"] is True


def test_items_from_gold_and_errors():
    items, left = threshold_items(load_gold(FIXTURES / "gold_small.jsonl"))
    assert len(items) == 11 and left == 1  # the item without human consensus is left out, and counted
    with pytest.raises(ValueError):
        tune_thresholds([], compare, GRID)
    with pytest.raises(ValueError):
        tune_thresholds(ITEMS, compare, [])


def test_with_the_real_answer_comparator(tmp_path):
    """The pipelines comparator plugs in as the callable (calibration itself never imports pipelines)."""
    answers = pytest.importorskip("pipelines.matching.answers")
    items, _ = threshold_items(load_gold(FIXTURES / "gold_small.jsonl"))

    def compare_real(gold, prediction, th):
        label = answers.compare_answer(gold, prediction, thresholds=th).label
        return None if label is None else str(label.value if hasattr(label, "value") else label)

    grid = {"accept_similarity": [1.0, 0.8], "reject_similarity": [None, 0.2]}
    choice = tune_thresholds(items, compare_real, grid, target_agreement=0.95, make_thresholds=answers.AnswerThresholds)
    default = next(g for g in choice.grid if g.thresholds == {"accept_similarity": 1.0, "reject_similarity": None})
    assert choice.met_target and choice.agreement_on_decided >= 0.95
    assert choice.escalation_rate <= default.escalation_rate
    write_threshold_config(choice, tmp_path / "answers.toml")
    section = tomllib.loads((tmp_path / "answers.toml").read_text())["grading"]["answer"]
    assert answers.AnswerThresholds(**section) == answers.AnswerThresholds(**choice.thresholds)
    # the written file is a working `judge grade --config`
    config = pytest.importorskip("pipelines.config").GradingConfig.load(tmp_path / "answers.toml")
    assert config.answer.accept_similarity == choice.thresholds["accept_similarity"]
