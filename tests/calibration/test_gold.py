"""Native gold format: schema export, JSONL loading, errors that name file, line and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from calibration import GoldItem, detect_gold_format, gold_item_json_schema, load_gold, run_calibration, write_gold_jsonl
from judge import InputError

from .conftest import FIXTURES

REPO = Path(__file__).resolve().parents[2]
SMALL = FIXTURES / "gold_small.jsonl"


def test_schema_file_is_exported_from_the_model():
    on_disk = json.loads((REPO / "docs" / "schemas" / "gold.schema.json").read_text(encoding="utf-8"))
    assert on_disk == gold_item_json_schema()
    assert set(on_disk["required"]) == {"id", "rubric", "human_labels"}


def test_load_small_fixture_and_round_trip(tmp_path):
    gold = load_gold(SMALL)
    assert detect_gold_format(SMALL) == "jsonl" and gold.format == "jsonl"
    assert len(gold.items) == 12 and gold.positive_label == "correct"
    assert gold.judges == ["gpt-4o", "llama-3-8b"]
    by_id = {it.id: it for it in gold.items}
    assert by_id["item-08"].human_label is None  # 1-1 tie between annotators: no consensus
    assert by_id["item-09"].judge_verdicts["llama-3-8b"] is None
    out = tmp_path / "copy.jsonl"
    write_gold_jsonl(gold, out)
    assert load_gold(out).items == gold.items


def test_material_ref_and_clusters():
    item = GoldItem.model_validate(
        {"id": "x", "rubric": "groundedness", "ref": {"task_id": "t1", "trajectory_id": "r1"}, "human_labels": [{"annotator": "a", "label": "yes"}]}
    )
    assert item.cluster_key == "task:t1" and item.material_summary() == {"ref": {"task_id": "t1", "trajectory_id": "r1"}}
    assert GoldItem.model_validate({**item.model_dump(), "ref": None, "material": {"q": 1}}).cluster_key == "item:x"


@pytest.mark.parametrize(
    ("line", "kind", "field"),
    [
        ("{not json", "malformed_json", None),
        ('{"id": "b", "rubric": "r", "human_labels": [{"annotator": "a", "label": "pass"}]}', "invalid_field", None),
        ('{"id": "b", "rubric": "r", "material": {}, "human_labels": [{"annotator": "a"}]}', "invalid_field", "human_labels[0].label"),
        ('{"id": "b", "rubric": "r", "material": {}, "human_labels": [{"annotator": "a", "label": "pass"}], "extra": 1}', "invalid_field", "extra"),
        ('{"id": "a", "rubric": "r", "material": {}, "human_labels": [{"annotator": "a", "label": "pass"}]}', "duplicate_id", "id"),
        (
            '{"id": "b", "rubric": "r", "material": {}, "human_labels": [{"annotator": "a", "label": "x"}, {"annotator": "a", "label": "y"}]}',
            "invalid_field",
            None,
        ),
        # held to the trajectory reader's rules (a 300-deep value once crashed writing the gold set)
        ('{"id": "b", "rubric": "r", "rubric": "s", "material": {}, "human_labels": [{"annotator": "a", "label": "pass"}]}', "malformed_json", None),
        ('{"id": "b", "rubric": "r", "material": {"x": ' + "[" * 300 + "]" * 300 + '}, "human_labels": []}', "too_deep", None),
        ('{"id": "b", "rubric": "r", "material": {"x": "\\ud800"}, "human_labels": [{"annotator": "a", "label": "pass"}]}', "encoding", None),
    ],
)
def test_errors_name_file_line_and_field(tmp_path, line, kind, field):
    path = tmp_path / "gold.jsonl"
    first = '{"id": "a", "rubric": "r", "material": {}, "human_labels": [{"annotator": "a", "label": "pass"}]}'
    path.write_text(first + "\n\n" + line + "\n", encoding="utf-8")
    with pytest.raises(InputError) as exc:
        load_gold(path)
    info = exc.value.info
    assert (info.file, info.line, info.kind) == (str(path), 3, kind)
    if field is not None:
        assert info.field == field


def test_unknown_formats_and_positive_label(tmp_path):
    yaml = tmp_path / "x.yaml"
    yaml.write_text("a: 1\n")
    with pytest.raises(InputError, match="suffix"):
        load_gold(yaml)
    csv = tmp_path / "other.csv"
    csv.write_text("a,b\n1,2\n")
    with pytest.raises(InputError, match="Thakur columns"):
        load_gold(csv)
    odd = tmp_path / "odd.jsonl"
    odd.write_text('{"id": "a", "rubric": "r", "material": {}, "human_labels": [{"annotator": "a", "label": "good"}]}\n')
    with pytest.raises(InputError, match="positive label"):
        load_gold(odd)
    assert load_gold(odd, positive_label="good").positive_label == "good"
    with pytest.raises(InputError, match="does not exist"):
        load_gold(tmp_path / "missing.jsonl")


def test_run_calibration_on_native_jsonl(tmp_path):
    report = run_calibration(SMALL, tmp_path, n_boot=50, spread_seeds=0)
    assert report.n_items == 12 and report.n_no_consensus == 1
    ceiling = report.human.ceiling
    assert ceiling is not None and ceiling.n_items == 12 and ceiling.pairwise_percent_agreement == pytest.approx(11 / 12)
    assert report.judges["llama-3-8b"].n_missing == 1  # the abstention, not a 'no'
    assert report.judges["gpt-4o"].n == 11
    assert (tmp_path / "weights.json").is_file()
    data = json.loads((tmp_path / "calibration.json").read_text())
    assert set(data["judges"]) == {"gpt-4o", "llama-3-8b"}
    assert "cohen_kappa" in data["panels"]["majority"]


def _item(i: int, rubric: str, human: str, judge: str) -> str:
    return json.dumps(
        {
            "id": f"{rubric}-{i}",
            "rubric": rubric,
            "material": {"answer": str(i)},
            "human_labels": [{"annotator": "h", "label": human}],
            "judge_verdicts": {"j1": judge, "j2": human},
        }
    )


def test_mixed_rubrics_are_calibrated_per_rubric_and_three_labels_skip_learned_panels(tmp_path):
    path = tmp_path / "mixed.jsonl"
    labels = ["correct", "incorrect", "missing"]
    lines = [_item(i, "answer_correctness", labels[i % 3], labels[(i + i // 3) % 3]) for i in range(30)]
    lines += [_item(i, "groundedness", "yes" if i % 2 else "no", "yes") for i in range(10)]
    path.write_text("\n".join(lines) + "\n")
    from calibration import PerRubricReport, calibrate
    from judge.llm import load_weights

    both = run_calibration(path, tmp_path / "out", n_boot=50, spread_seeds=0)
    assert isinstance(both, PerRubricReport) and list(both.rubrics) == ["answer_correctness", "groundedness"]
    assert (both.rubrics["answer_correctness"].n_items, both.rubrics["groundedness"].n_items, both.n_items) == (30, 10, 40)
    assert both.rubrics["groundedness"].positive_label == "yes" and both.rubrics["answer_correctness"].positive_label == "correct"
    weights = load_weights(tmp_path / "out" / "weights.json")  # learned panels only where the labels are binary
    assert weights.rubric is None and weights.judges == {} and list(weights.rubrics or {}) == ["groundedness"]
    gold = load_gold(path)
    with pytest.raises(ValueError, match="mixes rubrics") as exc:
        calibrate(gold)  # the one-rubric function: its message names the option that picks one
    assert "--rubric NAME" in str(exc.value) and "rubric=" not in str(exc.value)
    grounded, _ = calibrate(gold, rubric="groundedness", n_boot=0, spread_seeds=0)
    assert grounded.positive_label == "yes" and grounded.n_items == 10
    report, _ = calibrate(gold, rubric="answer_correctness", n_boot=50, spread_seeds=0)
    assert report.n_items == 30 and report.labels == ["correct", "incorrect", "missing"]
    assert report.held_out is None and any("not binary" in n for n in report.notes)
    assert report.judges["j2"].cohen_kappa.value == 1.0
    assert len(report.judges["j1"].confusion) == 3
