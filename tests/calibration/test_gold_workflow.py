"""Gold from your own runs, end to end: a graded run (the bundled sample, a mock judge panel) ->
``judge gold export`` (stratified, material inline) -> the labelling page in headless Chromium
(labels typed on the keyboard, a note, the export download) -> ``judge gold import`` of two
annotators -> ``judge calibrate`` on the result."""

from __future__ import annotations

import importlib.util
import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

import rubrics
from calibration import load_label_set
from pipelines.cli import app
from reports import find_chromium

runner = CliRunner()
SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample"
HAVE_BROWSER = find_chromium() is not None and importlib.util.find_spec("aiohttp") is not None


class _Res:
    def __init__(self, res):
        self.exit_code = res.exit_code
        self.output = res.output.replace("\n", "") if res.exit_code else res.output  # error messages wrap at the console width


def _invoke(*args: str, code: int = 0):
    res = runner.invoke(app, list(args))
    assert res.exit_code == code, res.output
    return _Res(res)


@pytest.fixture(scope="module")
def graded_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("gold-run") / "run"
    _invoke(
        "grade", "--tasks", str(SAMPLE / "tasks.jsonl"), "--trajectories", str(SAMPLE / "trajectories.jsonl"),
        "--judge", "mock:pick", "--judge", "mock:always-correct", "--no-cache", "--out", str(out),
        "--min-votes", "1",  # always-correct abstains on rubrics without that label: let mock:pick decide those
        "--controls", "report",  # keep always-correct's votes: the export is tested on what judges said
    )  # fmt: skip
    return out


def _rows(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]


def test_export_covers_every_stage_and_the_judge_decided_cases(graded_run: Path, tmp_path: Path):
    out = tmp_path / "set.jsonl"
    res = _invoke("gold", "export", str(graded_run), "--n", "60", "--out", str(out))
    items = load_label_set(out)
    assert len(items) == 60 and "60 cases drawn" in res.output
    stages_in_run = {r.get("failure_stage") or "unresolved" for r in _rows(graded_run) if r["verdict"] != "error"}
    assert {it.stratum.stage for it in items} == stages_in_run
    assert any(it.stratum.decided_by == "judge" for it in items)
    by_id = {f"{r['trajectory_id']}": r for r in _rows(graded_run)}
    for it in items:
        rubric = rubrics.RUBRICS[it.rubric]
        assert it.labels == rubric.labels and it.material and it.context["question"]
        assert it.stratum.sampled <= it.stratum.size
        row = by_id[it.trajectory_id]
        assert it.run["verdict"] == row["verdict"]
        if it.stratum.decided_by == "judge":
            # the material is the one the run's judges saw: same rubric version, and the votes are recorded columns
            assert it.run["rubric_version"] == rubric.version
            assert set(it.recorded) >= {"run:panel", "run:mock:pick", "run:mock:always-correct"}
            rubric.render(it.material)
        elif it.run["check_outcome"] != "inconclusive":
            assert "run:deterministic" in it.recorded or it.rubric != "answer_correctness"
    again = tmp_path / "again.jsonl"
    _invoke("gold", "export", str(graded_run), "--n", "60", "--out", str(again))
    assert again.read_text() == out.read_text()  # a seeded draw
    by_decided = tmp_path / "decided.jsonl"
    _invoke("gold", "export", str(graded_run), "--n", "30", "--stratify", "decided_by", "--out", str(by_decided))
    counts = Counter(it.stratum.decided_by for it in load_label_set(by_decided))
    assert counts["judge"] >= 10 and counts["deterministic"] >= 10  # equal shares, not the run's 5% of judged cases


def test_import_rejects_bad_label_files_with_file_and_line(graded_run: Path, tmp_path: Path):
    out = tmp_path / "set.jsonl"
    _invoke("gold", "export", str(graded_run), "--n", "4", "--out", str(out))
    items = load_label_set(out)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        json.dumps({"item_id": items[0].item_id, "label": items[0].labels[0], "annotator": "a"})
        + "\n"
        + json.dumps({"item_id": "nope", "label": "x", "annotator": "a"})
        + "\n"
    )
    res = _invoke("gold", "import", str(out), str(bad), "--out", str(tmp_path / "g.jsonl"), code=3)
    assert f"{bad}:2" in res.output and "item_id" in res.output
    bad.write_text(json.dumps({"item_id": items[0].item_id, "label": "great", "annotator": "a"}) + "\n")
    res = _invoke("gold", "import", str(out), str(bad), "--out", str(tmp_path / "g.jsonl"), code=3)
    assert f"{bad}:1" in res.output and "not one of" in res.output
    twice = tmp_path / "twice.jsonl"
    twice.write_text(json.dumps({"item_id": items[0].item_id, "label": items[0].labels[1], "annotator": "a"}) + "\n")
    ok = tmp_path / "ok.jsonl"
    ok.write_text(json.dumps({"item_id": items[0].item_id, "label": items[0].labels[0], "annotator": "a"}) + "\n")
    res = _invoke("gold", "import", str(out), str(ok), str(twice), "--out", str(tmp_path / "g.jsonl"), code=3)
    assert "labelled" in res.output and "twice differently" in res.output
    res = _invoke("gold", "import", str(out), str(ok), str(ok), "--out", str(tmp_path / "g.jsonl"))
    assert "1 of 4 items labelled" in res.output and "3 items carry no label" in res.output


def _key(key: str) -> list[dict]:
    code = {"ArrowRight": "ArrowRight", "Escape": "Escape"}.get(key, f"Key{key.upper()}" if key.isalpha() else f"Digit{key}")
    params = {"key": key, "code": code}
    if len(key) == 1:
        params["text"] = key
    return [
        {"method": "Input.dispatchKeyEvent", "params": {"type": "keyDown", **params}},
        {"method": "Input.dispatchKeyEvent", "params": {"type": "keyUp", **params}},
    ]


@pytest.mark.skipif(not HAVE_BROWSER, reason="needs chromium and aiohttp (DevTools protocol)")
def test_label_in_the_browser_with_the_keyboard_then_import_and_calibrate(graded_run: Path, tmp_path: Path):
    from tests.reports._cdp import inspect_page

    label_set = tmp_path / "set.jsonl"
    _invoke("gold", "export", str(graded_run), "--n", "12", "--stratify", "decided_by", "--out", str(label_set))
    items = load_label_set(label_set)
    page = Path(_invoke("gold", "label", str(label_set)).output.strip())
    assert page.is_file() and page.suffix == ".html"
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    actions: list = [{"method": "Browser.setDownloadBehavior", "params": {"behavior": "allow", "downloadPath": str(downloads)}, "browser": True}]
    actions += ["document.getElementById('annotator').focus()", {"method": "Input.insertText", "params": {"text": "ann-1"}}, *_key("Escape")]
    # item 1: a note typed into the note field (digits typed there are text, not labels), then label 1
    actions += ["document.getElementById('note').focus()", {"method": "Input.insertText", "params": {"text": "hedged 12"}}, *_key("Escape"), *_key("1")]
    for _ in items[1:-1]:
        actions += _key("2")  # each label key labels the shown item and moves on
    actions += _key("x")  # the last item stays unlabelled: the export holds 11 lines
    expected = downloads / "labels-ann-1.jsonl"
    report = inspect_page(
        page,
        {
            "labelled": "document.body.getAttribute('data-labelled')",
            "exported": "document.body.getAttribute('data-exported')",
            "progress": "document.getElementById('progress').textContent",
        },
        actions=actions,
        until=lambda p: expected.is_file() and expected.stat().st_size > 0,
    )
    assert report.errors == [], report.errors
    assert [u for u in report.requests if not u.startswith(("file://", "data:", "about:"))] == []
    assert report.values["labelled"] == report.values["exported"] == str(len(items) - 1)
    assert f"labelled {len(items) - 1} / {len(items)}" in report.values["progress"]
    exported = [json.loads(line) for line in expected.read_text().splitlines()]
    assert [e["item_id"] for e in exported] == [it.item_id for it in items[:-1]]
    assert exported[0] == {"item_id": items[0].item_id, "label": items[0].labels[0], "annotator": "ann-1", "note": "hedged 12"}
    assert all(e["label"] == it.labels[1] for e, it in zip(exported[1:], items[1:-1], strict=True))
    # a second annotator agrees except on one item
    second = tmp_path / "labels-ann-2.jsonl"
    lines = [{**e, "annotator": "ann-2", "note": ""} for e in exported]
    flip = next(it for it in items if it.item_id == lines[1]["item_id"])
    lines[1]["label"] = flip.labels[0]
    second.write_text("".join(json.dumps(x) + "\n" for x in lines))
    gold = tmp_path / "gold.jsonl"
    res = _invoke("gold", "import", str(label_set), str(expected), str(second), "--out", str(gold))
    assert f"{len(items) - 1} of {len(items)} items labelled (ann-1 {len(items) - 1}, ann-2 {len(items) - 1})" in res.output
    records = [json.loads(line) for line in gold.read_text().splitlines()]
    assert all({h["annotator"] for h in r["human_labels"]} == {"ann-1", "ann-2"} for r in records)
    rubric = Counter(r["rubric"] for r in records).most_common(1)[0][0]
    out = tmp_path / "calibration"
    _invoke("calibrate", "--gold", str(gold), "--rubric", rubric, "--out", str(out))
    data = json.loads((out / "calibration.json").read_text())
    assert data["human"]["annotators"] == ["ann-1", "ann-2"]
    assert data["human"]["ceiling"]["n_items"] == sum(1 for r in records if r["rubric"] == rubric)
    assert any(name.startswith("run:") for name in data["judges"])  # the run's own decisions, measured against the humans


@pytest.fixture(scope="module")
def mixed_gold(graded_run: Path, tmp_path_factory) -> tuple[Path, str]:
    """A gold set exported from the graded run: several rubrics, two annotators, both labels of each rubric."""
    where = tmp_path_factory.mktemp("mixed-gold")
    label_set = where / "set.jsonl"
    _invoke("gold", "export", str(graded_run), "--n", "40", "--out", str(label_set))
    lines = []
    for i, it in enumerate(load_label_set(label_set)):
        for annotator in ("ann-1", "ann-2"):
            lines.append(json.dumps({"item_id": it.item_id, "label": it.labels[i % 2], "annotator": annotator}))
    labels = where / "labels.jsonl"
    labels.write_text("\n".join(lines) + "\n")
    gold = where / "gold.jsonl"
    res = _invoke("gold", "import", str(label_set), str(labels), "--out", str(gold))
    return gold, res.output


def test_a_gold_set_of_several_rubrics_is_calibrated_per_rubric(mixed_gold, tmp_path: Path):
    from judge.llm import load_weights

    gold, imported = mixed_gold
    assert "judge calibrate reports each in its own section (--rubric NAME keeps one)" in imported
    records = [json.loads(line) for line in gold.read_text().splitlines()]
    names = sorted({r["rubric"] for r in records})
    assert len(names) >= 3
    out = tmp_path / "all"
    _invoke("calibrate", "--gold", str(gold), "--out", str(out))
    data = json.loads((out / "calibration.json").read_text())
    assert data["rubric"] is None and sorted(data["rubrics"]) == names
    assert sum(s["n_items"] for s in data["rubrics"].values()) == data["n_items"] == len(records)
    md = (out / "calibration.md").read_text()
    assert all(f"\n## Rubric {name}\n" in md for name in names)
    assert {json.loads(line)["rubric"] for line in (out / "disagreements.jsonl").read_text().splitlines()} <= set(names)
    # each section holds what --rubric NAME measures alone: no figure pooled over rubrics
    for name in names:
        _invoke("calibrate", "--gold", str(gold), "--rubric", name, "--out", str(tmp_path / name))
        alone = json.loads((tmp_path / name / "calibration.json").read_text())
        section = data["rubrics"][name]
        assert alone["rubric"] == name and alone["n_items"] == section["n_items"] == sum(r["rubric"] == name for r in records)
        for key in ("judges", "panels", "held_out", "positive_label", "labels"):
            assert section[key] == alone[key], (name, key)
    # weights.json: per rubric and judge, each entry what that rubric's held-out panel learned
    learned = {name: s["held_out"]["weights"] for name, s in data["rubrics"].items() if s["held_out"] is not None}
    assert learned
    weights = load_weights(out / "weights.json")
    assert weights.rubric is None and weights.judges == {} and sorted(weights.rubrics or {}) == sorted(learned)
    for name, learned_file in learned.items():
        entry = weights.for_rubric(name)
        assert (entry.rubric, entry.positive_label, entry.prior_log_odds) == (name, learned_file["positive_label"], learned_file["prior_log_odds"])
        assert {j: w.model_dump() for j, w in entry.judges.items()} == learned_file["judges"]
        assert load_weights(tmp_path / name / "weights.json").judges == entry.judges  # the file --rubric NAME writes
    # one panel or one tuned prompt is for one rubric: refused before any judge is asked, naming the option
    res = _invoke("calibrate", "--gold", str(gold), "--judge", "run:deterministic", "--target-kappa", "0.5", "--out", str(tmp_path / "x"), code=3)
    assert "--target-kappa" in res.output and "--rubric NAME" in res.output and "rubric=" not in res.output


def test_live_judging_of_rubrics_without_an_answer_does_not_claim_they_cannot_be_rejudged(mixed_gold, tmp_path: Path):
    """Found by trying it: after a live judge had judged every policy item, the notes said "no item
    carries the judged answer (material.answer is null): items cannot be re-judged" -- policy,
    sufficiency and step materials have no answer key at all. Only a source that lacks the judged
    answer (answer_available: false) makes items impossible to re-judge."""
    gold, _ = mixed_gold
    records = [json.loads(line) for line in gold.read_text().splitlines()]
    no_answer_key = sorted({r["rubric"] for r in records if "answer" not in r["material"]})
    assert no_answer_key
    for name in no_answer_key:
        out = tmp_path / name
        _invoke("calibrate", "--gold", str(gold), "--rubric", name, "--judge", "mock:pick", "--no-cache", "--out", str(out))
        data = json.loads((out / "calibration.json").read_text())
        assert data["judges"]["mock:pick"]["n"] > 0  # it was judged live
        assert not [n for n in data["notes"] if "re-judged" in n or "no live judge" in n or "judged answer" in n], data["notes"]
