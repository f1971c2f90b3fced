"""``judge calibrate --limit N`` / ``--sample N --seed S``: part of a gold set, chosen the same way
every time, stratified by human label (a small sample keeps both classes), recorded in the outputs.
Measured on the real Thakur et al. TriviaQA file (recorded human and judge labels; no live judge)."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from typer.testing import CliRunner

from calibration import GoldItem, GoldSet, HumanLabel, calibrate, proportional_allocation, run_calibration, select_subset
from pipelines.cli import app

runner = CliRunner()


def _calibrate(*args: str, code: int = 0) -> str:
    res = runner.invoke(app, ["calibrate", *args])
    assert res.exit_code == code, res.output
    return res.output.replace("\n", "") if code else res.output  # error messages wrap at the console width


def test_limit_takes_the_first_items_in_file_order(thakur_csv, thakur_gold, tmp_path):
    out = tmp_path / "limit"
    report = run_calibration(thakur_csv, out, limit=120, n_boot=50, spread_seeds=0)
    first = thakur_gold.items[:120]
    assert report.n_items == 120 and report.subset is not None
    assert report.subset.item_ids == [it.id for it in first]
    assert (report.subset.how, report.subset.requested, report.subset.seed, report.subset.n_available) == ("limit", 120, None, 3200)
    # the figures are those of the first 120 items, and only of them
    alone, _ = calibrate(thakur_gold.model_copy(update={"items": first}), n_boot=50, spread_seeds=0)
    assert report.judges["GPT-4"] == alone.judges["GPT-4"]
    data = json.loads((out / "calibration.json").read_text())
    assert data["subset"]["how"] == "limit" and data["subset"]["n_items"] == 120 and data["n_items"] == 120
    assert sum(s["chosen"] for s in data["subset"]["strata"]) == 120
    assert "Subset: the first 120 of 3200 items in file order (--limit 120)." in (out / "calibration.md").read_text()
    assert {json.loads(line)["id"] for line in (out / "disagreements.jsonl").read_text().splitlines()} <= {it.id for it in first}


def test_sample_is_seeded_stratified_and_recorded(thakur_csv, thakur_gold, tmp_path):
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    _calibrate("--gold", str(thakur_csv), "--sample", "200", "--seed", "7", "--out", str(a))
    _calibrate("--gold", str(thakur_csv), "--sample", "200", "--seed", "7", "--out", str(b))
    output = _calibrate("--gold", str(thakur_csv), "--sample", "200", "--seed", "8", "--out", str(c))
    assert "subset: a random sample of 200 of 3200 items (--sample 200 --seed 8" in output
    for name in ("calibration.json", "calibration.md", "weights.json", "disagreements.jsonl"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name  # same seed, same items, same figures
    sub_a = json.loads((a / "calibration.json").read_text())["subset"]
    sub_c = json.loads((c / "calibration.json").read_text())["subset"]
    assert sub_a["seed"] == 7 and sub_a["how"] == "sample" and sub_a["stratified_by"] == ["rubric", "human label"]
    assert len(sub_a["item_ids"]) == len(set(sub_a["item_ids"])) == 200
    assert sub_a["item_ids"] != sub_c["item_ids"]  # another seed, another sample
    order = {it.id: i for i, it in enumerate(thakur_gold.items)}
    assert [order[i] for i in sub_a["item_ids"]] == sorted(order[i] for i in sub_a["item_ids"])  # kept in file order
    # stratified: the sample's label counts are the population's shares of 200, rounded (largest remainder)
    population = Counter(it.human_label for it in thakur_gold.items)
    chosen = Counter(thakur_gold.items[order[i]].human_label for i in sub_a["item_ids"])
    for label, size in population.items():
        assert abs(chosen[label] - 200 * size / 3200) < 1, label
    strata = {s["human_label"]: (s["available"], s["chosen"]) for s in sub_a["strata"]}
    assert strata == {label: (population[label], chosen[label]) for label in population}


def _skewed(n_pos: int, n_neg: int) -> GoldSet:
    items = [
        GoldItem(
            id=f"i{k:03d}",
            rubric="answer_correctness",
            material={"question": "q", "gold_answers": ["a"], "answer": "a"},
            human_labels=[HumanLabel(annotator="h", label="correct" if k < n_pos else "incorrect")],
            judge_verdicts={"j": "correct"},
        )
        for k in range(n_pos + n_neg)
    ]
    return GoldSet(source="skewed", format="jsonl", items=items, positive_label="correct")


def test_a_small_sample_of_a_skewed_set_keeps_both_classes():
    gold = _skewed(98, 2)
    for seed in range(10):  # an unstratified draw of 5 of these 100 misses both negatives 9 times in 10
        part, subset = select_subset(gold, sample=5, seed=seed)
        assert Counter(it.human_label for it in part.items) == {"correct": 4, "incorrect": 1}, seed
        assert subset is not None and subset.n_items == 5
        report, _ = calibrate(part, n_boot=0, spread_seeds=0)
        assert report.judges["j"].tnr.value == 0.0  # measurable only because a negative is in the sample
    assert select_subset(gold, sample=5, seed=3)[1] == select_subset(gold, sample=5, seed=3)[1]


def test_proportional_allocation():
    assert proportional_allocation({("r", "a"): 98, ("r", "b"): 2}, 5) == {("r", "a"): 4, ("r", "b"): 1}
    assert proportional_allocation({("r", "a"): 50, ("r", "b"): 30, ("r", "c"): 20}, 10) == {("r", "a"): 5, ("r", "b"): 3, ("r", "c"): 2}
    assert proportional_allocation({("r", "a"): 3, ("r", "b"): 1}, 10) == {("r", "a"): 3, ("r", "b"): 1}  # more asked than held: all
    assert sum(proportional_allocation({("r", "a"): 7, ("r", "b"): 7, ("r", "c"): 7}, 1).values()) == 1  # fewer than strata


def test_subset_options_are_checked(thakur_csv, tmp_path):
    both = _calibrate("--gold", str(thakur_csv), "--limit", "5", "--sample", "5", "--out", str(tmp_path), code=2)
    assert "--limit" in both and "--sample" in both and "not both" in both
    assert "--limit" in _calibrate("--gold", str(thakur_csv), "--limit", "0", "--out", str(tmp_path), code=2)
    with pytest.raises(ValueError, match="--sample wants N >= 1"):
        select_subset(_skewed(2, 2), sample=0)
    over, subset = select_subset(_skewed(2, 2), limit=10)
    assert len(over.items) == 4 and subset is not None and "10 asked for, the gold set holds 4" in subset.describe()
