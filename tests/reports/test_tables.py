"""Computed tables: tool bottlenecks from evidence, repeated-run estimators, judge and calibration
figures, comparison of runs, drill-down cap, and clear errors on bad input."""

from __future__ import annotations

import itertools
import json
import math
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from judge import TrajectoryResult
from reports import ReportInputError, analyse, build_report, load_run, pass_at_k, pass_hat_k
from tests.reports.conftest import JUDGES, PANEL, read_results, write_run


def test_pass_at_k_and_pass_hat_k_equal_brute_force_enumeration():
    for n in range(1, 7):
        for c in range(n + 1):
            outcomes = [True] * c + [False] * (n - c)
            for k in range(1, n + 1):
                draws = list(itertools.combinations(outcomes, k))
                assert math.isclose(pass_at_k(n, c, k), sum(any(d) for d in draws) / len(draws))
                assert math.isclose(pass_hat_k(n, c, k), sum(all(d) for d in draws) / len(draws))


def test_repeated_runs_table(graded_run: Path):
    rep = analyse(load_run(graded_run))
    pk = rep.tables["pass_at_k"].to_pandas()
    results = read_results(graded_run)
    per = Counter((r.agent, r.task_id) for r in results)
    agent = sorted({r.agent for r in results})[0]
    kmax = min(v for (a, _), v in per.items() if a == agent)
    sub = pk[pk["agent"] == agent]
    assert list(sub["k"]) == list(range(1, kmax + 1))
    # k = 1: both estimators are the plain pass rate over that agent's repeated tasks
    runs = [r for r in results if r.agent == agent]
    assert sub.iloc[0]["pass_at_k"] == pytest.approx(sum(r.verdict.value == "pass" for r in runs) / len(runs), abs=1e-6)
    assert sub.iloc[0]["pass_hat_k"] == sub.iloc[0]["pass_at_k"]
    assert list(sub["pass_at_k"]) == sorted(sub["pass_at_k"]) and list(sub["pass_hat_k"]) == sorted(sub["pass_hat_k"], reverse=True)


def test_tool_bottlenecks_count_reference_steps(graded_run: Path):
    tools = analyse(load_run(graded_run)).tables["tool_bottlenecks"].to_pandas()
    required: Counter = Counter()
    failed: Counter = Counter()
    for r in read_results(graded_run):
        for turn in r.turns:
            for ch in turn.checks:
                for e in ch.evidence:
                    if e.kind == "unsatisfied":
                        required[e.expected["name"]] += 1
                        failed[e.expected["name"]] += 1
                    elif e.kind.startswith("matched_"):
                        required[e.message.split()[0]] += 1
    assert dict(zip(tools["tool"], tools["required"])) == dict(required)
    for _, row in tools.iterrows():
        assert row["unsatisfied"] == failed[row["tool"]]
        assert row["failure_rate"] == pytest.approx(failed[row["tool"]] / required[row["tool"]], abs=1e-6)
    assert list(tools["failure_rate_incl_undecided"]) == sorted(tools["failure_rate_incl_undecided"], reverse=True)


def test_judge_votes_calibration_and_corrected_pass_rate(judged_run: Path, tmp_path: Path):
    build_report([judged_run], tmp_path)
    summary = json.loads((judged_run / "summary.json").read_text())
    results = read_results(judged_run)
    judged = [r for r in results if r.decided_by.startswith("judge:")]
    assert judged and summary["decided_by"][f"judge:{PANEL}"] == len(judged)

    votes = pd.read_csv(tmp_path / "tables" / "judge_votes.csv").set_index("judge")
    assert votes.loc[JUDGES[0], "votes"] == len(judged)
    abstained = sum(1 for r in results if r.decided_by.startswith("judge:") and results.index(r) % 4 == 0)
    assert votes.loc[JUDGES[2], "abstained"] == abstained
    assert votes.loc[JUDGES[2], "abstain_reasons"] == f"unparseable {abstained}"
    assert votes.loc[JUDGES[0], "agrees_with_panel"] == 1.0 and votes.loc[JUDGES[2], "agrees_with_panel"] == 0.0
    assert votes.loc[JUDGES[1], "cost_usd"] == pytest.approx(0.002 * len(judged))

    cal = json.loads((judged_run / "calibration.json").read_text())["panels"][PANEL]
    tpr, tnr = cal["tpr"]["value"], cal["tnr"]["value"]
    p = sum(r.verdict.value == "pass" for r in judged) / len(judged)
    det_pass = sum(1 for r in results if r.verdict.value == "pass" and not r.decided_by.startswith("judge:"))
    expected = (det_pass + min(1.0, max(0.0, (p + tnr - 1) / (tpr + tnr - 1))) * len(judged)) / summary["counts"]["graded"]
    md = (tmp_path / "report.md").read_text()
    assert f"Pass rate corrected for judge error: {100 * expected:.1f}%" in md
    assert f"with {PANEL}" in md
    html = (tmp_path / "report.html").read_text()
    assert f"{100 * expected:.1f}%" in html
    # the drill-down carries every vote's rationale for the judged trajectories shown
    i = results.index(judged[0])
    assert f"rationale {i} from claude-y" in html and "unparseable" in html
    calib = pd.read_csv(tmp_path / "tables" / "calibration.csv")
    assert set(calib["rater"]) == {*JUDGES[:2], PANEL}
    assert calib.set_index("rater")["used_in_run"].all()  # both calibrated judges and the panel voted here


def test_a_per_rubric_calibration_is_listed_per_rubric_and_corrects_nothing(judged_run: Path, tmp_path: Path):
    """``judge calibrate`` on a gold set of several rubrics writes one section per rubric; one judge's
    TPR/TNR differ per rubric, so no single correction applies, and the report says what to do."""
    import shutil

    run = tmp_path / "run"
    shutil.copytree(judged_run, run)
    flat = json.loads((run / "calibration.json").read_text())
    sectioned = {"rubric": None, "rubrics": {"answer_correctness": flat, "groundedness": {"judges": flat["judges"], "panels": {}}}}
    (run / "calibration.json").write_text(json.dumps(sectioned))
    build_report([run], tmp_path / "out")
    calib = pd.read_csv(tmp_path / "out" / "tables" / "calibration.csv")
    assert set(calib["rater"]) == {f"{j} ({r})" for j in JUDGES[:2] for r in ("answer_correctness", "groundedness")} | {f"{PANEL} (answer_correctness)"}
    assert calib["used_in_run"].all()
    md = (tmp_path / "out" / "report.md").read_text()
    assert "No corrected pass rate: calibration.json holds one section per rubric (answer_correctness, groundedness)" in md
    assert "--rubric NAME" in md and "Pass rate corrected for judge error" not in md


def test_no_calibration_degrades_gracefully(graded_run: Path, tmp_path: Path):
    build_report([graded_run], tmp_path)
    md = (tmp_path / "report.md").read_text()
    assert "no calibration.json for this run" in md and "corrected for judge error" not in md


def test_comparison_of_runs(graded_run: Path, judged_run: Path, tmp_path: Path):
    # a worse run: every passing trajectory of agent-0 on an even-numbered task now fails at answer_correctness
    worse = []
    for r in read_results(graded_run):
        if r.verdict.value == "pass" and r.agent == "agent-0" and int(r.task_id.split("-")[1]) % 2 == 0:
            r = TrajectoryResult.model_validate({**r.model_dump(), "verdict": "fail", "failure_stage": "answer_correctness"})
        worse.append(r)
    worse_dir = tmp_path / "runs" / "baseline"  # same directory name as the first run: names must be disambiguated
    write_run(worse_dir, worse)
    build_report([graded_run, worse_dir], tmp_path / "out")
    comp = pd.read_csv(tmp_path / "out" / "tables" / "comparison.csv")
    a, b = (json.loads((d / "summary.json").read_text()) for d in (graded_run, worse_dir))
    assert list(comp["run"]) == ["1-baseline", "2-baseline"]
    assert comp.loc[1, "delta_pass_rate"] == pytest.approx(b["pass_rate"] - a["pass_rate"], abs=1e-6)
    assert comp.loc[1, "delta_pass_rate"] < 0
    overlap = a["pass_rate_ci95"][0] <= b["pass_rate_ci95"][1] and b["pass_rate_ci95"][0] <= a["pass_rate_ci95"][1]
    assert bool(comp.loc[1, "ci_overlaps_first"]) == overlap
    assert comp.loc[1, "answer_correctness"] == b["failure_stages"]["answer_correctness"]
    assert (tmp_path / "out" / "tables" / "1-baseline" / "failure_stages.csv").is_file()
    md = (tmp_path / "out" / "report.md").read_text()
    assert "## Comparison of runs" in md and f"{100 * (b['pass_rate'] - a['pass_rate']):+.1f} pp" in md
    for cap, g in b["by"]["capability"].items():
        base = a["by"]["capability"][cap]
        apart = g["pass_rate_ci95"][1] < base["pass_rate_ci95"][0] or base["pass_rate_ci95"][1] < g["pass_rate_ci95"][0]
        row = f"| {cap} | {100 * base['pass_rate']:.1f}% (n={base['n']}) | {100 * g['pass_rate']:.1f}% (n={g['n']}) | {100 * (g['pass_rate'] - base['pass_rate']):+.1f} pp{' *' if apart else ''} |"
        assert row in md, row
    html = (tmp_path / "out" / "report.html").read_text()
    assert 'id="comparison"' in html and html.count('class="drill"') == 2


def test_drilldown_is_capped_and_says_so(graded_run: Path, tmp_path: Path):
    build_report([graded_run], tmp_path, drill_first=50, drill_extra_failures=20)
    html = (tmp_path / "report.html").read_text()
    later_failures = sum(1 for r in read_results(graded_run)[50:] if r.verdict.value != "pass")
    assert html.count('<details class="traj"') == 50 + min(20, later_failures)
    assert f"{50 + min(20, later_failures)} of 360 trajectories" in html
    assert len(pd.read_csv(tmp_path / "tables" / "trajectories.csv")) == 360


def test_drilldown_shows_steps_from_native_trajectories(graded_run: Path, bench_inputs, tmp_path: Path):
    build_report([graded_run], tmp_path)
    html = (tmp_path / "report.html").read_text()
    first = json.loads(bench_inputs[1].read_text().splitlines()[0])
    assert first["steps"][0]["name"] in html
    assert json.dumps(first["steps"][0]["arguments"], sort_keys=True).replace('"', "&quot;") in html
    assert "have no steps here" not in html


def test_drilldown_shows_steps_of_pretty_printed_items(graded_run: Path, bench_inputs, tmp_path: Path):
    """A native file with each item pretty-printed over many lines (``jq .``): the drill-down
    reads each item from the line it starts on."""
    items = [line for line in bench_inputs[1].read_text().splitlines() if line.strip()]
    pretty, starts, line = tmp_path / "pretty.jsonl", {}, 1
    with open(pretty, "w") as fh:
        for number, text in enumerate(items, 1):
            starts[number] = line
            block = json.dumps(json.loads(text), indent=2) + "\n"
            fh.write(block)
            line += block.count("\n")
    moved = [
        r.model_copy(update={"source": r.source.model_copy(update={"file": str(pretty), "line": starts[r.source.line]})}) for r in read_results(graded_run)
    ]
    run = tmp_path / "run"
    write_run(run, moved)
    build_report([run], tmp_path / "out")
    html = (tmp_path / "out" / "report.html").read_text()
    first = json.loads(items[0])
    assert first["steps"][0]["name"] in html and "have no steps here" not in html


def test_an_item_spanning_lines_is_read_on_to_its_end_and_no_further(tmp_path: Path, monkeypatch):
    from reports import _run
    from reports._steps import _spanning_item

    read: list[int] = []

    class Counted:  # the file, counting the bytes _spanning_item reads from it
        def __init__(self, *args):
            self.fh = open(*args)  # noqa: SIM115 (closed by __exit__)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

        def seek(self, offset):
            return self.fh.seek(offset)

        def read(self, size=-1):
            data = self.fh.read(size)
            read.append(len(data))
            return data

    monkeypatch.setattr(_run, "open", Counted, raising=False)

    traj = {"task_id": "t", "trajectory_id": "r", "steps": [{"name": "f", "arguments": {"x": "y" * 100_000}, "result": "z" * 70_000}], "final_answer": "a"}
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(traj, indent=2) + "\n" + json.dumps(traj) + "\n")  # strings across the first 64 KB read
    item = _spanning_item(path, 0)
    assert item is not None and item.steps[0].arguments["x"] == "y" * 100_000
    path.write_text(json.dumps(traj, indent=2)[:-3])  # cut short at the end of the file
    assert _spanning_item(path, 0) is None
    path.write_bytes(b'{"bad": [1, 2 x\n' + b'{"a": 1}\n' * 20_000)  # an error more text cannot mend: no reading on
    read.clear()
    assert _spanning_item(path, 0) is None and sum(read) <= 64 << 10
    for hostile in (b'{"n": ' + b"9" * 5000 + b"}\n", b"[" * 100_000 + b"\n"):  # past the digit limit, past the stack
        path.write_bytes(hostile)
        assert _spanning_item(path, 0) is None


def test_missing_trajectory_file_is_reported_not_hidden(graded_run: Path, tmp_path: Path):
    moved = []
    for r in read_results(graded_run):
        moved.append(r.model_copy(update={"source": r.source.model_copy(update={"file": str(tmp_path / "gone.jsonl")})}))
    run = tmp_path / "run"
    write_run(run, moved)
    build_report([run], tmp_path / "out")
    assert "360 of 360 shown trajectories have no steps here" in (tmp_path / "out" / "report.md").read_text()


def test_bad_results_line_names_file_line_and_field(graded_run: Path, tmp_path: Path):
    run = tmp_path / "bad"
    run.mkdir()
    (run / "summary.json").write_text((graded_run / "summary.json").read_text())
    lines = (graded_run / "results.jsonl").read_text().splitlines()
    broken = json.loads(lines[2])
    broken["verdict"] = "maybe"
    lines[2] = json.dumps(broken)
    (run / "results.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(ReportInputError, match=r"results\.jsonl:3: field verdict"):
        build_report([run], tmp_path / "out")
    with pytest.raises(ReportInputError, match=r"summary\.json: file not found"):
        build_report([tmp_path], tmp_path / "out2")


def test_hop_type_is_the_set_of_sources():
    from reports._tables import hop_type

    assert hop_type("API-RAG-API-API") == "API-RAG"
    assert hop_type("RAG-API") == "API-RAG"
    assert hop_type("API-API") == "API"
    assert hop_type("RAG") == "RAG"
    assert hop_type(None) == "unknown"


def test_run_with_only_input_errors_still_renders(bench_inputs, tmp_path: Path):
    from pipelines.run import GradeOptions, run_grading
    from tests.reports.conftest import CONFIG

    trajs = tmp_path / "trajectories.jsonl"
    trajs.write_text('{"task_id": "no-such-task", "trajectory_id": "x", "steps": [], "final_answer": "1"}\nnot json\n')
    run_grading(GradeOptions(tasks=bench_inputs[0], trajectories=trajs, out=tmp_path / "run", config=CONFIG))
    md = (tmp_path / "run" / "report.md").read_text()
    assert "**0** trajectories graded (2 input errors)" in md and "## Input errors (listed, not graded)" in md
    html = (tmp_path / "run" / "report.html").read_text()
    assert html.count('<details class="traj" data-verdict="error"') == 2 and "input error:" in html


def test_a_summary_that_is_not_ours_is_refused_naming_the_field(tmp_path):
    from reports import load_run

    run = tmp_path / "run"
    run.mkdir()
    (run / "results.jsonl").write_text("")
    (run / "summary.json").write_text('{"counts": {"graded": 1}, "pass_rate": 2.0}')
    with pytest.raises(ReportInputError, match=r"summary\.json: field n: Field required \(is this a trajectory-judge summary\.json\?\)"):
        load_run(run)


def test_pass_curves_equal_the_binomial_estimators_for_every_k():
    from calibration import pass_curves

    for n in range(1, 30):
        for c in range(n + 1):
            at, hat = pass_curves(n, c, n)
            assert len(at) == len(hat) == n
            for k in range(1, n + 1):
                assert math.isclose(at[k - 1], pass_at_k(n, c, k), abs_tol=1e-12)
                assert math.isclose(hat[k - 1], pass_hat_k(n, c, k), abs_tol=1e-12)


def test_fifty_thousand_runs_of_one_task_give_every_k(tmp_path: Path):
    """Hostile sweep 8: 50,000 runs of one task (math.comb for every k <= n: killed at 10
    minutes). The whole curve comes back, exact where it is known in closed form."""
    from reports._tables import pass_at_k_shown, repeated_runs

    n, c = 50_000, 20_000
    passed, failed = {"verdict": "pass", "failure_stage": "none"}, {"verdict": "fail", "failure_stage": "answer_correctness"}
    rows = [
        TrajectoryResult.model_validate({"task_id": "t1", "trajectory_id": f"r{i}", "agent": "a", "decided_by": "deterministic", **outcome})
        for i, outcome in enumerate([passed] * c + [failed] * (n - c))
    ]
    write_run(tmp_path / "run", rows)
    table, stats_table = repeated_runs(load_run(tmp_path / "run"))
    passk, stats = table.to_pandas(), stats_table.to_pandas()
    assert list(passk["k"]) == list(range(1, n + 1)) and set(passk["tasks"]) == {1}
    assert passk["pass_at_k"].iloc[0] == pytest.approx(c / n) and passk["pass_hat_k"].iloc[0] == pytest.approx(c / n)
    assert passk["pass_at_k"].iloc[n - c] == 1.0 and passk["pass_hat_k"].iloc[c] == 0.0  # k = n - c + 1 always draws a pass; k = c + 1 never draws only passes
    assert passk["pass_at_k"].iloc[1] == pytest.approx(1 - (n - c) * (n - c - 1) / (n * (n - 1)), abs=1e-6)
    assert (stats["runs"].iloc[0], stats["mean_pass_rate"].iloc[0]) == (n, pytest.approx(c / n))
    shown, note = pass_at_k_shown(table)  # what report.md and report.html show of the 50,000 rows
    assert list(shown["k"]) == [*range(1, 11), *(2**j for j in range(4, 16)), n] and "every k in tables/pass_at_k.csv" in note
    few, nothing_left_out = pass_at_k_shown(table.where(lambda r: r["k"] <= 10))
    assert len(few) == 10 and nothing_left_out is None


def test_the_report_rows_give_the_summary_figures_through_the_one_metrics_function(graded_run: Path):
    """The aggregator and the reports share ``calibration.group_metrics``: applied to the report's
    rows of a breakdown group (task codes as the aggregator makes them), it gives exactly the
    group summary.json holds, interval included; the hop cells without a summary figure are its
    Wilson figures."""
    import numpy as np

    from calibration import group_metrics
    from reports._run import SCORE_NAMES
    from reports._tables import accuracy_by_hops, hop_type
    from tests.reports.conftest import CONFIG

    run = load_run(graded_run)
    rows = run.graded
    verdicts = np.array([r.verdict for r in rows], dtype=object)
    codes = np.unique(np.array([r.task_id for r in rows], dtype=object), return_inverse=True)[1].reshape(-1)
    crag = np.array([np.nan if r.scores["crag"] is None else r.scores["crag"] for r in rows], dtype=float)
    stages = np.array([r.failure_stage for r in rows], dtype=object)
    assert "crag" in SCORE_NAMES
    checked = 0
    for key in ("capability", "domain", "hop_count"):
        values = np.array(["unknown" if getattr(r, key) is None else str(getattr(r, key)) for r in rows], dtype=object)
        for value, group in run.summary.by[key].items():
            mask = values == value
            mine = group_metrics(verdicts[mask], stages=stages[mask], clusters=codes[mask], crag=crag[mask], samples=CONFIG.bootstrap_samples, seed=CONFIG.seed)
            assert mine == group.model_dump(by_alias=True, mode="json") | {"pass_rate_ci95": mine["pass_rate_ci95"]}
            assert mine["pass_rate_ci95"] == (None if group.pass_rate_ci95 is None else tuple(group.pass_rate_ci95))
            checked += 1
    assert checked > 3
    hops = accuracy_by_hops(run).to_pandas()
    wilson_rows = hops[hops["ci_method"] == "Wilson"]
    assert len(wilson_rows) > 0
    for _, cell in wilson_rows[wilson_rows["policy_condition"] == "all"].iterrows():
        assert cell["dimension"] == "hop_type"
        cell_verdicts = [r.verdict for r in rows if hop_type(r.hop_pattern) == cell["value"]]
        m = group_metrics(cell_verdicts, ci="wilson")
        assert (cell["n"], cell["pass"], cell["pass_rate"], cell["ci_low"], cell["ci_high"]) == (m["n"], m["pass"], m["pass_rate"], *m["pass_rate_ci95"])
