"""The bundled sample graded end to end: the orchestration facts agree with what each scripted
agent did by construction, every new summary/report section has non-trivial numbers, and reruns
are byte-identical."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from judge import RECOVERY_OUTCOMES, Trajectory, TrajectoryResult
from pipelines.config import GradingConfig
from pipelines.grade import Replayer
from pipelines.run import GradeOptions, run_grading
from reports import build_report, find_chromium

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample"
CONFIG = GradingConfig(bootstrap_samples=200)


def grade(out: Path) -> Path:
    run_grading(GradeOptions(tasks=SAMPLE / "tasks.jsonl", trajectories=SAMPLE / "trajectories.jsonl", out=out, replayer=Replayer(), config=CONFIG))
    return out


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    return grade(tmp_path_factory.mktemp("orch-sample") / "run")


@pytest.fixture(scope="module")
def results(run: Path) -> list[TrajectoryResult]:
    return [TrajectoryResult.model_validate_json(line) for line in (run / "results.jsonl").read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def trajectories() -> dict[str, Trajectory]:
    out = {}
    for line in (SAMPLE / "trajectories.jsonl").read_text(encoding="utf-8").splitlines():
        t = Trajectory.model_validate(json.loads(line))
        out[t.trajectory_id] = t
    return out


@pytest.fixture(scope="module")
def summary(run: Path) -> dict[str, Any]:
    return json.loads((run / "summary.json").read_text(encoding="utf-8"))


def test_orchestration_facts_follow_each_scripted_agent(results, trajectories):
    seen: Counter[str] = Counter()
    for r in results:
        o = r.orchestration
        assert o is not None
        profile = trajectories[r.trajectory_id or ""].metadata["profile"]
        seen[profile] += 1
        outcomes = [e.outcome for e in o.recovery]
        assert o.rounds_used is not None  # every scripted step records its round
        if profile == "switcher":
            assert outcomes == ["switched_tool"] and o.recovery[0].failure == "error" and o.recovery_rate == 1.0
        elif profile == "flaky":
            assert outcomes == ["repeated_unchanged"] and o.recovery[0].recovered and o.recovery[0].failure in {"error", "timeout", "empty", "malformed"}
        elif profile == "persistent":
            assert outcomes == ["recovered_later", "retried_fixed"] and o.recovery_rate == 1.0
        elif profile == "retrier":  # omitted argument -> same tool fixed; misspelt tool -> the right tool
            assert outcomes in (["retried_fixed"], ["switched_tool"]) and o.recovery[0].failure == "tool_error" and o.recovery_rate == 1.0
        elif profile == "misnamed_args":
            assert outcomes == ["gave_up"] and o.recovery_rate == 0.0
        elif profile == "stubborn":
            assert outcomes == ["repeated_unchanged", "repeated_unchanged", "gave_up"] and o.looping and o.recovery_rate == 0.0
        else:
            assert outcomes == [], (r.trajectory_id, outcomes)
        assert (o.tier == "recovery") == bool(outcomes)
        if profile == "looper":
            assert o.looping and o.loop_repeats >= 2
        elif profile != "stubborn":
            assert not o.looping
        if profile == "parallel":
            assert o.parallel_efficiency == 1.0 and o.serialised_pairs == 0 and o.independent_pairs and o.tier == "branching"
        if profile == "careful":
            assert o.serialised_pairs == o.independent_pairs  # one call per message
            assert o.parallel_efficiency == (1.0 if not o.independent_pairs else pytest.approx(o.rounds_minimum / o.rounds_used))
    assert seen["parallel"] >= 10 and seen["switcher"] >= 10 and seen["stubborn"] >= 10


def test_a_faulted_step_never_satisfies_a_reference_even_though_replay_runs_it(results, trajectories):
    checked = 0
    for r in results:
        traj = trajectories[r.trajectory_id or ""]
        faulted = {(t.turn_id, i) for t in traj.turns for i, s in enumerate(t.steps) if s.fault is not None}
        if not faulted:
            continue
        for turn in r.turns:
            for check in turn.checks:
                for e in check.evidence:
                    if e.kind.startswith("matched_"):
                        assert (turn.turn_id, e.step) not in faulted, r.trajectory_id
        checked += 1
    assert checked >= 30


def test_every_new_summary_section_has_non_trivial_numbers(summary):
    orch = summary["orchestration"]
    rec = orch["recovery"]
    assert all(rec["outcomes"][o] > 0 for o in RECOVERY_OUTCOMES if o not in ("cut_off", "retried_unrecorded")), rec["outcomes"]
    assert rec["outcomes"]["cut_off"] == 0  # every scripted run finished: none was stopped mid-recovery
    assert rec["outcomes"]["retried_unrecorded"] == 0  # the sample records every call's arguments
    assert 0 < rec["recovery_rate"] < 1
    assert {"tool_error", "error", "timeout", "empty", "malformed"} <= set(rec["by_fault"])
    assert rec["by_tool"] and set(rec["by_agent"]) == set(summary["by"]["agent"])
    rounds = orch["rounds"]
    by_agent = rounds["by_agent"]
    assert by_agent["scripted/parallel"]["parallel_efficiency_mean"] == 1.0 and by_agent["scripted/parallel"]["serialised_pairs"] == 0
    assert by_agent["scripted/careful"]["parallel_efficiency_mean"] < 1.0 and by_agent["scripted/careful"]["serialised_share"] == 1.0
    assert rounds["rounds_used_mean"] > rounds["rounds_minimum_mean"] > 0
    loops = orch["loops"]
    assert loops["by_agent"]["scripted/looper"]["looping_share"] == 1.0 and 0 < loops["looping_share"] < 1
    tiers = summary["by"]["tier"]
    assert set(tiers) == {"linear", "branching", "recovery"} and all(g["n"] >= 20 for g in tiers.values())
    assert orch["tiers"] == {t: tiers[t]["n"] for t in ("linear", "branching", "recovery")}
    assert tiers["recovery"]["failure_stages"]["argument_names"] > 0  # agents that never recovered


def test_failure_modes_separate_the_scripted_bugs(summary, results):
    modes = summary["orchestration"]["failure_modes"]
    failing = [r for r in results if r.verdict.value in ("fail", "unresolved")]
    assert modes["clustered"] == len(failing) and sum(c["size"] for c in modes["clusters"]) == len(failing)
    assert modes["k"] >= 6 and modes["silhouette"] > 0.3
    # each cluster is dominated by one kind of bug; misnamed arguments with and without a loop are the same bug
    same_bug = {"scripted/stubborn": "scripted/misnamed_args"}
    majority = 0
    for c in modes["clusters"]:
        assert len(c["examples"]) == min(3, c["size"])
        bugs: Counter[str] = Counter()
        for agent, n in c["agents"].items():
            bugs[same_bug.get(agent, agent)] += n
        majority += bugs.most_common(1)[0][1]
    assert majority / len(failing) >= 0.9
    surplus = [c for c in modes["clusters"] if "scripted/duplicate_writer" in c["agents"]]
    assert len(surplus) == 1 and list(surplus[0]["agents"]) == ["scripted/duplicate_writer"]  # a surplus write is its own bug


def test_reports_show_the_sections_and_link_examples_to_the_drill_down(run, summary):
    md = (run / "report.md").read_text(encoding="utf-8")
    for heading in ("## Orchestration: recovery, rounds, loops, tiers", "### Recovery after failed calls, by agent", "### Rounds used vs minimum",
                    "### Loops, by agent", "### Difficulty tiers", "## Failure modes"):  # fmt: skip
        assert heading in md, heading
    html = (run / "report.html").read_text(encoding="utf-8")
    for title in ("What agents did after a failed call", "Rounds used vs minimum per agent", "Outcomes by difficulty tier", "per failure mode"):
        assert title in html, title
    assert "recovery" in html[html.index('id="run1-metrics"') : html.index('id="run1-tools"')]  # the radar's new axis
    links = [e["trajectory_id"] for c in summary["orchestration"]["failure_modes"]["clusters"] for e in c["examples"]]
    for tid in links:
        anchor = html.index(f">{tid}</a>")
        target = html[html.rindex('href="#', 0, anchor) + 7 : html.index('"', html.rindex('href="#', 0, anchor) + 7)]
        item = html[html.index(f'id="{target}"') :]
        assert item.split("</summary>", 1)[0].count(tid) == 1, tid  # the link opens that very trajectory
    agents = pd.read_csv(run / "tables" / "recovery_by_agent.csv").set_index("agent")
    for agent, g in summary["orchestration"]["recovery"]["by_agent"].items():
        assert agents.loc[agent, "failed_calls"] == g["failed_calls"] and agents.loc[agent, "gave_up"] == g["outcomes"]["gave_up"]
    traj = pd.read_csv(run / "tables" / "trajectories.csv")
    assert traj["looping"].sum() == summary["orchestration"]["loops"]["looping_trajectories"]
    assert traj["failed_calls"].sum() == summary["orchestration"]["recovery"]["failed_calls"]


def test_a_rerun_is_byte_identical(run, tmp_path):
    again = grade(tmp_path / "again")
    for name in ("results.jsonl", "summary.json", "report.md"):
        assert (again / name).read_bytes() == (run / name).read_bytes(), name


def test_a_run_graded_before_these_metrics_still_renders(run, tmp_path):
    old = tmp_path / "old"
    old.mkdir()
    summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    del summary["orchestration"]
    del summary["by"]["tier"]
    (old / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    with open(run / "results.jsonl", encoding="utf-8") as src, open(old / "results.jsonl", "w", encoding="utf-8") as dst:
        for line in src:
            row = json.loads(line)
            row.pop("orchestration", None)
            dst.write(json.dumps(row) + "\n")
    build_report([old], tmp_path / "report")
    md = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    assert "no orchestration figures in this run's summary.json" in md


def test_a_run_graded_before_the_cut_off_outcome_still_renders(run, tmp_path):
    old = tmp_path / "old"
    shutil.copytree(run, old)
    summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    recovery = summary["orchestration"]["recovery"]
    for group in [recovery, *(g for key in ("by_agent", "by_tool", "by_fault") for g in recovery[key].values())]:
        del group["outcomes"]["cut_off"]
    (old / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    build_report([old], tmp_path / "report")
    md = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    assert "gave_up " in md and "cut_off 0" in md


@pytest.mark.skipif(find_chromium() is None, reason="no chromium binary on PATH")
def test_clicking_a_failure_mode_example_opens_its_trajectory(run, tmp_path):
    pytest.importorskip("aiohttp")
    from tests.reports._cdp import inspect_page

    page = tmp_path / "report.html"
    shutil.copy(run / "report.html", page)
    facts = {
        "hash": "location.hash",
        "open": "(function(){var t=document.getElementById(location.hash.slice(1));return !!(t&&t.open&&!t.hidden)})()",
        "first": "document.querySelector('ol.modes a').getAttribute('href')",
    }
    result = inspect_page(page, facts, actions=["document.querySelector('ol.modes a').click()", "void 0", "void 0"])  # hashchange fires asynchronously
    assert result.errors == [], result.errors
    assert result.values["hash"] == result.values["first"] and result.values["open"] is True


def test_worker_shards_merge_into_the_same_orchestration_summary(results):
    from tests.orchestration.test_tally_merge import check_merge

    check_merge(results)  # rounds, loops, injected faults, every recovery outcome, clusters
