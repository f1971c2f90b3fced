"""The real Thakur et al. TriviaQA data: import, per-judge figures of SOURCE.md, panels, weights file."""

from __future__ import annotations

import json
from collections import Counter
from decimal import ROUND_HALF_UP, Decimal

import numpy as np
import pytest

from calibration import THAKUR_JUDGES, LabelCoder, agreement, calibrate, detect_gold_format, held_out_evaluation, load_gold, run_calibration
from calibration._panels import encode_votes
from calibration._split import stratified_cluster_split
from calibration._votes import LogOddsPanel
from judge import InputError, Vote
from judge.llm import load_weights, tally


def _half_up(x: float, places: int) -> Decimal:
    return Decimal(repr(x)).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)


def _as_in_source(kappa: float) -> float:
    """SOURCE.md's three-decimal kappas are the four-decimal values rounded half up once more
    (Llama3-70B: 0.876475 -> 0.8765 -> 0.877); reproduce that rounding, nothing else."""
    return float(_half_up(float(_half_up(kappa, 4)), 3))


@pytest.fixture(scope="module")
def thakur_report(thakur_gold):
    report, _ = calibrate(thakur_gold, n_boot=200, spread_seeds=0)
    return report


def test_import_counts_and_clusters(thakur_gold, thakur_csv):
    assert detect_gold_format(thakur_csv) == "thakur_csv"
    assert len(thakur_gold.items) == 3200
    assert thakur_gold.skipped == {"no_human_verdict": 400}
    assert thakur_gold.judges == list(THAKUR_JUDGES)
    assert thakur_gold.labels == ["correct", "incorrect"]
    assert thakur_gold.rubrics == ["answer_correctness"]
    sizes = Counter(it.cluster_key for it in thakur_gold.items)
    assert len(sizes) == 400 and set(sizes.values()) == {8}  # eight models answered each question
    assert len({it.id for it in thakur_gold.items}) == 3200
    first = thakur_gold.items[0]
    assert first.material["gold_answers"][0] == "Tin Tin" and first.material["answer"] is None


def test_per_judge_figures_match_source(thakur_report, source_figures):
    judges = [j for j in source_figures if j in THAKUR_JUDGES]
    assert sorted(judges) == sorted(THAKUR_JUDGES)
    for name in judges:
        pct, kappa = source_figures[name]
        s = thakur_report.judges[name]
        assert s.n == 3200 and s.n_missing == 0
        assert round(100 * s.accuracy.value, 2) == pytest.approx(pct, abs=1e-9), name
        assert _as_in_source(s.cohen_kappa.value) == pytest.approx(kappa, abs=1e-9), name
        assert abs(s.cohen_kappa.value - kappa) < 6e-4, name
        assert s.cohen_kappa.ci_low < s.cohen_kappa.value < s.cohen_kappa.ci_high


def test_plain_majority_of_nine_matches_source(thakur_report, source_figures):
    pct, kappa = source_figures["plain majority of all nine"]
    maj = thakur_report.panels["majority"]
    assert maj.coverage == 1.0  # nine judges, no abstentions: no ties
    assert round(100 * maj.accuracy.value, 2) == pytest.approx(pct)
    assert _as_in_source(maj.cohen_kappa.value) == pytest.approx(kappa)
    best = max(s.cohen_kappa.value for s in thakur_report.judges.values())
    assert maj.cohen_kappa.value < best  # the point SOURCE.md makes


def test_weighted_panel_on_held_out(thakur_report):
    h = thakur_report.held_out
    assert h.n_train + h.n_held_out == 3200 and h.clusters_train + h.clusters_held_out == 400
    weighted = h.rules["weighted_log_odds"].cohen_kappa.value
    assert weighted >= 0.88
    assert weighted > h.rules["majority"].cohen_kappa.value + 0.05
    assert h.rules["logistic_stacking"].cohen_kappa.value >= 0.88
    assert h.best_single_judge == "GPT-4"


def test_learned_panel_sees_no_held_out_labels(thakur_gold):
    """Scrambling the held-out human labels must not change what the panel learned. (Labels are
    rotated within each held-out question, so the strata of the split stay as they were.)"""
    items = thakur_gold.items
    coder = LabelCoder(thakur_gold.labels)
    truth = [it.human_label for it in items]
    clusters = [it.cluster_key for it in items]
    _, held = stratified_cluster_split(clusters, [t == "correct" for t in truth], (0.5, 0.5), 0)
    flipped = list(truth)
    by_cluster: dict[str, list[int]] = {}
    for i, c in enumerate(clusters):
        if held[i]:
            by_cluster.setdefault(c, []).append(i)
    for idx in by_cluster.values():
        for a, b in zip(idx, idx[1:] + idx[:1], strict=True):
            flipped[a] = truth[b]
    assert flipped != truth
    args = {"rubric": "answer_correctness", "seed": 0, "n_boot": 0, "spread_seeds": 0}
    a = held_out_evaluation(truth, [it.judge_verdicts for it in items], clusters, list(THAKUR_JUDGES), coder, **args)
    b = held_out_evaluation(flipped, [it.judge_verdicts for it in items], clusters, list(THAKUR_JUDGES), coder, **args)
    assert a.weights == b.weights and a.logistic_coefficients == b.logistic_coefficients


def test_weights_file_is_what_the_judge_panel_decides(thakur_gold, tmp_path):
    items = thakur_gold.items
    coder = LabelCoder(thakur_gold.labels)
    votes = encode_votes([it.judge_verdicts for it in items], list(THAKUR_JUDGES), coder)
    truth = (coder.encode([it.human_label for it in items]) == 0).astype(int)
    panel = LogOddsPanel(list(THAKUR_JUDGES)).fit(votes[::2], truth[::2])
    w = panel.weights_file("answer_correctness", "correct")
    assert set(w) == {"version", "method", "rubric", "positive_label", "prior_log_odds", "judges"}
    assert (w["version"], w["method"], w["positive_label"]) == (1, "log_odds", "correct")
    for entry in w["judges"].values():
        assert set(entry) == {"weight", "tpr", "tnr", "n"} and entry["weight"] >= 0 and isinstance(entry["n"], int)
    (tmp_path / "weights.json").write_text(json.dumps(w), encoding="utf-8")
    loaded = load_weights(tmp_path / "weights.json")
    ours = panel.predict(votes[1::2][:400])
    for row, mine in zip(votes[1::2][:400], ours, strict=True):
        vs = [Vote(judge=j, label=coder.labels[v]) for j, v in zip(THAKUR_JUDGES, row, strict=True)]
        t = tally(vs, coder.labels, "weighted", "answer_correctness", loaded)
        assert t.label == coder.labels[mine]


def test_run_calibration_writes_files(thakur_csv, tmp_path):
    out1, out2 = tmp_path / "a", tmp_path / "b"
    report = run_calibration(thakur_csv, out1, n_boot=100, spread_seeds=2)
    run_calibration(thakur_csv, out2, n_boot=100, spread_seeds=2)
    for name in ("calibration.json", "calibration.md", "calibration_section.html", "weights.json", "disagreements.jsonl"):
        assert (out1 / name).read_bytes() == (out2 / name).read_bytes(), name  # deterministic
    data = json.loads((out1 / "calibration.json").read_text())
    for judge in THAKUR_JUDGES:
        assert isinstance(data["judges"][judge]["cohen_kappa"]["value"], float)
    for rule in ("majority", "unanimous"):
        assert isinstance(data["panels"][rule]["cohen_kappa"]["value"], float)
    for rule in ("weighted_log_odds", "logistic_stacking", "dawid_skene", "majority", "best_single:GPT-4"):
        assert isinstance(data["held_out"]["rules"][rule]["cohen_kappa"]["value"], float)
    assert report.judges["GPT-4"].cohen_kappa.value == data["judges"]["GPT-4"]["cohen_kappa"]["value"]
    html = (out1 / "calibration_section.html").read_text()
    assert html.startswith('<section class="calibration">') and "<html" not in html
    assert "GPT-4" in (out1 / "calibration.md").read_text()
    lines = (out1 / "disagreements.jsonl").read_text().splitlines()
    assert len(lines) == sum(data["disagreement_counts"].values())
    first = json.loads(lines[0])
    assert first["human"] != first["rated"] and "question" in first["material"]
    assert load_weights(out1 / "weights.json").rubric == "answer_correctness"


def test_judge_subset_and_errors(thakur_csv, thakur_gold, tmp_path):
    report, _ = calibrate(thakur_gold, judges=["GPT-4", "Llama3-70B", "Mistral-7B"], n_boot=0, spread_seeds=0)
    assert list(report.judges) == ["GPT-4", "Llama3-70B", "Mistral-7B"]
    with pytest.raises(ValueError, match="no recorded verdicts"):
        calibrate(thakur_gold, judges=["GPT-5"], n_boot=0)
    lines = thakur_csv.read_text(encoding="utf-8").split("\n")
    header = lines[0]
    bad = tmp_path / "bad_header.csv"
    bad.write_text(header.replace("GPT-4", "GPT4") + "\n", encoding="utf-8")
    with pytest.raises(InputError) as exc:
        load_gold(bad)
    assert exc.value.info.line == 1 and "GPT-4" in exc.value.info.message


def test_bad_judge_value_names_line_and_field(thakur_csv, tmp_path):
    import csv

    with thakur_csv.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    header = rows[0]
    keep = rows[1:4]
    keep[2][header.index("Llama-7B")] = "maybe"
    path = tmp_path / "three_rows.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([header, *keep])
    # the line the third record starts on: one past the last physical line of the second record
    reader = csv.reader(path.read_text(encoding="utf-8").splitlines(keepends=True))
    for _ in range(3):  # header, record 1, record 2
        next(reader)
    expected_line = reader.line_num + 1
    assert expected_line > 4  # the references field spans lines: line != record number
    with pytest.raises(InputError) as exc:
        load_gold(path)
    assert exc.value.info.field == "Llama-7B" and exc.value.info.line == expected_line
    assert str(path) in str(exc.value)


def test_self_preference_is_measured_for_family_judges(thakur_report):
    fams = {s.judge: s.family for s in thakur_report.self_preference}
    assert fams["GPT-4"] == "gpt" and fams["Llama3-70B"] == "llama" and fams["Mistral-7B"] == "mistral"
    assert "JudgeLM" not in fams and "Gemma-2B" not in fams  # no items from those families
    gpt = next(s for s in thakur_report.self_preference if s.judge == "GPT-4")
    assert gpt.n_same == 400 and gpt.n_other == 2800


def test_agreement_counts_abstentions_apart(thakur_gold):
    coder = LabelCoder(thakur_gold.labels)
    truth = [it.human_label for it in thakur_gold.items]
    rated = [it.judge_verdicts["GPT-4"] for it in thakur_gold.items]
    rated_missing = [None if i % 10 == 0 else r for i, r in enumerate(rated)]
    s = agreement(truth, rated_missing, coder)
    assert s.n == 2880 and s.n_missing == 320 and s.coverage == pytest.approx(0.9)
    kept = [i for i in range(3200) if i % 10]
    ref = agreement([truth[i] for i in kept], [rated[i] for i in kept], coder)
    assert s.cohen_kappa.value == ref.cohen_kappa.value  # abstentions left out, not counted as 'no'
    assert np.isclose(s.tpr.value + 0, ref.tpr.value)


@pytest.mark.parametrize("change", ["short", "long", "bad_bytes"])
def test_a_record_of_the_wrong_width_or_bytes_is_an_input_error(thakur_csv, tmp_path, change):
    """Found by mutating the real CSV: a record shorter than the header crashed calibrate
    (``None.strip()``); a longer one was read with its columns silently misaligned."""
    import csv

    with thakur_csv.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    header, keep = rows[0], rows[1:4]
    if change == "short":
        keep[1] = keep[1][:3]
    elif change == "long":
        keep[1] = [*keep[1], "stray"]
    path = tmp_path / "three_rows.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([header, *keep])
    if change == "bad_bytes":
        path.write_bytes(path.read_bytes() + b"x,\xff\xfe\n")
    with pytest.raises(InputError) as exc:
        load_gold(path)
    info = exc.value.info
    assert info.file == str(path)
    if change == "bad_bytes":
        assert info.kind == "encoding" and "not UTF-8" in info.message
    else:
        assert info.kind == "invalid_field" and info.line is not None and info.line > 2
        assert f"a record of {3 if change == 'short' else len(header) + 1} fields where the header names {len(header)}" in info.message


def test_a_per_rubric_weights_file_decides_each_rubric_as_its_own_panel(thakur_gold, tmp_path):
    """Two panels learned on different halves (standing for two rubrics of one gold set) in one
    per-rubric weights file: the judge panel decides each rubric's votes exactly as that rubric's panel."""
    from calibration import per_rubric_weights

    items = thakur_gold.items
    coder = LabelCoder(thakur_gold.labels)
    votes = encode_votes([it.judge_verdicts for it in items], list(THAKUR_JUDGES), coder)
    truth = (coder.encode([it.human_label for it in items]) == 0).astype(int)
    first = LogOddsPanel(list(THAKUR_JUDGES)).fit(votes[:1600], truth[:1600])
    second = LogOddsPanel(list(THAKUR_JUDGES[:5])).fit(votes[1600:, :5], truth[1600:])
    files = {"answer_correctness": first.weights_file("answer_correctness", "correct"), "open_ended": second.weights_file("open_ended", "correct")}
    (tmp_path / "weights.json").write_text(json.dumps(per_rubric_weights(files)), encoding="utf-8")
    loaded = load_weights(tmp_path / "weights.json")
    assert sorted(loaded.rubrics or {}) == ["answer_correctness", "open_ended"] and loaded.judges == {}
    rows = votes[::8]
    for rubric, panel, width in (("answer_correctness", first, 9), ("open_ended", second, 5)):
        expected = panel.predict(rows[:, :width])
        for row, mine in zip(rows, expected, strict=True):
            vs = [Vote(judge=j, label=coder.labels[v]) for j, v in zip(THAKUR_JUDGES[:width], row[:width], strict=True)]
            assert tally(vs, coder.labels, "weighted", rubric, loaded).label == coder.labels[mine], rubric
    assert first.predict(rows).tolist() != second.predict(rows[:, :5]).tolist()  # the two entries do differ
