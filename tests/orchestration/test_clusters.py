"""Failure modes: planted bugs in a synthetic run come out as separate clusters, deterministically."""

from __future__ import annotations

import json
import warnings
from collections import Counter
from typing import Any

import pytest

from judge import Task, Trajectory, TrajectoryResult
from pipelines.orchestration import FailureModes, clusters, failure_features
from tests.orchestration.helpers import TOOLS, graded

NAMES = ["Ann", "Bo", "Cy", "Dee", "Eli", "Fay", "Gus", "Hal", "Ivy", "Jo", "Kai", "Lu"]


def make_task(i: int) -> Task:
    aid, year, code = 100 + i, 2000 + 4 * (i % 5), ["KE", "NO", "JP", "BR"][i % 4]
    refs = [
        {"id": "a", "name": "get_athlete", "arguments": {"name": NAMES[i]}, "expected_output": {"athlete_id": aid}},
        {"id": "m", "name": "get_medals", "arguments": {"athlete_id": aid, "year": year}, "depends_on": ["a"], "expected_output": {"gold": i % 7 + 1}},
        {"id": "c", "name": "get_country", "arguments": {"code": code}, "expected_output": {"country": code.lower()}},
    ]
    return Task.model_validate(
        {
            "task_id": f"t{i}",
            "question": "q",
            "tools": TOOLS,
            "reference_calls": refs,
            "gold_answer": str(i % 7 + 1),
            "policy": {"text": "read only", "read_only": True},
        }
    )


def careful_steps(t: Task) -> list[dict[str, Any]]:
    return [{"name": c.name, "arguments": dict(c.arguments), "result": c.expected_output} for c in t.turns[0].reference_calls]


def planted(mode: str, t: Task) -> tuple[list[dict[str, Any]], str]:
    steps, gold = careful_steps(t), str(t.turns[0].gold_answers[0])
    if mode == "misnamed_athlete_id":  # get_medals called with 'athlete' instead of 'athlete_id': rejected, agent gives up
        steps[1] = {
            "name": "get_medals",
            "arguments": {"athlete": steps[1]["arguments"]["athlete_id"], "year": steps[1]["arguments"]["year"]},
            "status": "error",
            "error": "unknown argument 'athlete'",
        }
        return steps, "I could not find it."
    if mode == "wrong_year":  # get_medals asked for the next Games
        steps[1]["arguments"]["year"] += 4
        steps[1]["result"] = {"gold": 0}
        return steps, "0"
    if mode == "wrong_country_code":  # get_country with the wrong code
        steps[2]["arguments"]["code"] = "XX"
        steps[2]["result"] = {"country": "nowhere"}
        return steps, gold
    if mode == "wrong_tool":  # medal_count instead of get_medals
        steps[1] = {"name": "medal_count", "arguments": {"athlete": steps[1]["arguments"]["athlete_id"]}, "result": {"count": 99}}
        return steps, "99"
    if mode == "refund_under_read_only":
        steps.append({"name": "refund", "arguments": {"order": "A1"}, "result": {"ok": True}})
        return steps, gold
    if mode == "wrong_answer":
        return steps, str(int(gold) + 5)
    raise AssertionError(mode)


MODES = ["misnamed_athlete_id", "wrong_year", "wrong_country_code", "wrong_tool", "refund_under_read_only", "wrong_answer"]


def synthetic_run(per_mode: int = 10) -> tuple[list[TrajectoryResult], dict[str, str]]:
    results, truth = [], {}
    for i in range(per_mode):
        t = make_task(i)
        ok = graded(
            t,
            Trajectory.model_validate(
                {"task_id": t.task_id, "trajectory_id": f"ok-{i}", "agent": "good", "steps": careful_steps(t), "final_answer": t.turns[0].gold_answers[0]}
            ),
        )
        assert ok.verdict.value == "pass"
        results.append(ok)
        for m, mode in enumerate(MODES):
            steps, answer = planted(mode, t)
            tid = f"{mode}-{i}"
            agent = f"agent-{(i + m) % 3}"  # every agent has every bug: agents must not be what separates them
            results.append(
                graded(t, Trajectory.model_validate({"task_id": t.task_id, "trajectory_id": tid, "agent": agent, "steps": steps, "final_answer": answer}))
            )
            truth[tid] = mode
    return results, truth


@pytest.fixture(scope="module")
def run() -> tuple[list[TrajectoryResult], dict[str, str]]:
    return synthetic_run()


def modes_summary(results: list[TrajectoryResult], seed: int = 0) -> dict[str, Any]:
    fm = FailureModes()
    for r in results:
        fm.add(r)
    return fm.summary(seed)


def test_passing_trajectories_have_no_failure_features(run):
    results, _ = run
    assert all(failure_features(r) is None for r in results if r.verdict.value == "pass")
    assert all(failure_features(r) is not None for r in results if r.verdict.value in ("fail", "unresolved"))


def test_planted_failure_modes_come_out_as_separate_pure_clusters(run):
    results, truth = run
    got = assigned(results, truth)
    assert len(got) == len(MODES), got
    for mode_counts in got:
        assert len(mode_counts) == 1, got  # each cluster holds one planted bug ...
    assert sorted(next(iter(c)) for c in got) == sorted(MODES)  # ... and each bug is one cluster
    assert all(sum(c.values()) == 10 for c in got)


def test_large_runs_fit_on_a_sample_and_still_separate_the_modes(run, monkeypatch):
    monkeypatch.setattr(clusters, "FIT_SAMPLE", 25)
    monkeypatch.setattr(clusters, "SILHOUETTE_SAMPLE", 30)
    results, truth = run
    got = assigned(results, truth)
    assert len(got) == len(MODES) and all(len(c) == 1 for c in got), got


def assigned(results: list[TrajectoryResult], truth: dict[str, str]) -> list[Counter[str]]:
    """Each cluster's members, counted by planted mode."""
    fm = FailureModes()
    for r in results:
        fm.add(r)
    by_cluster: dict[int, Counter[str]] = {}
    for m, cluster in zip(fm.rows_and_members()[1], fm.assignments(0), strict=True):
        by_cluster.setdefault(cluster, Counter())[truth[m.trajectory_id or ""]] += 1
    sizes = {c["id"]: c["size"] for c in fm.summary(0)["clusters"]}
    assert {k: sum(v.values()) for k, v in by_cluster.items()} == sizes
    return [by_cluster[k] for k in sorted(by_cluster)]


def test_cluster_labels_read_like_the_bug(run):
    results, _ = run
    summary = modes_summary(results)
    labels = sorted(c["label"] for c in summary["clusters"])
    assert labels[0].startswith("answer_correctness")
    assert labels[1].startswith("argument_names at get_medals") and "athlete_id" in labels[1]
    assert labels[2].startswith("argument_values at get_country") and "code" in labels[2]
    assert labels[3].startswith("argument_values at get_medals") and "year" in labels[3]
    assert labels[4].startswith("policy") and "refund" in labels[4]
    assert labels[5].startswith("tool_selection at get_medals")
    for c in summary["clusters"]:
        assert c["size"] == 10 and c["share"] == pytest.approx(10 / 60, abs=1e-6)
        assert len(c["examples"]) == 3 and sorted(c["agents"]) == ["agent-0", "agent-1", "agent-2"]


def test_clustering_is_deterministic(run):
    results, _ = run
    first = json.dumps(modes_summary(results), sort_keys=True)
    assert json.dumps(modes_summary(results), sort_keys=True) == first
    assert json.dumps(modes_summary(list(results)), sort_keys=True) == first


def test_empty_and_single_mode_runs():
    assert FailureModes().summary()["clusters"] == []
    results, _ = synthetic_run(per_mode=3)
    only = [r for r in results if r.trajectory_id and r.trajectory_id.startswith("wrong_year")]
    summary = modes_summary(only)
    assert summary["k"] == 1 and summary["silhouette"] is None and summary["clusters"][0]["size"] == 3


def test_a_child_process_gives_the_same_clusters_as_in_process(run):
    results, _ = run
    fm = FailureModes()
    for r in results:
        fm.add(r)
    inside = fm.clustering(0, isolate=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a child that failed to run falls back with a warning: make that a failure here
        child = fm.clustering(0, isolate=True)
    assert json.dumps(child.summary, sort_keys=True) == json.dumps(inside.summary, sort_keys=True)
    assert child.member_clusters == inside.member_clusters
