"""On the bundled sample, deterministic verdicts agree with the gold built into the data.

The gold (``metadata.expected_verdict`` / ``expected_failure_stage``) is set by construction by
the scripted agent profiles (see data/README.md); the grader never reads it.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from pipelines.grade import Replayer
from pipelines.run import GradeOptions, run_grading

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample"


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> tuple[list[dict], dict[str, dict]]:
    out = tmp_path_factory.mktemp("sample")
    run_grading(GradeOptions(tasks=SAMPLE / "tasks.jsonl", trajectories=SAMPLE / "trajectories.jsonl", out=out, replayer=Replayer()))
    results = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    gold = {}
    for line in (SAMPLE / "trajectories.jsonl").read_text().splitlines():
        t = json.loads(line)
        gold[t["trajectory_id"]] = t["metadata"]
    return results, gold


def test_every_sample_trajectory_is_graded(graded):
    results, gold = graded
    assert len(results) == len(gold) >= 300
    assert all(r["verdict"] != "error" for r in results)


def test_decided_verdicts_agree_with_constructed_gold(graded):
    results, gold = graded
    decided = [r for r in results if r["verdict"] in ("pass", "fail")]
    wrong = [
        (r["trajectory_id"], r["verdict"], r["failure_stage"], gold[r["trajectory_id"]]["expected_failure_stage"])
        for r in decided
        if (r["verdict"], r["failure_stage"]) != (gold[r["trajectory_id"]]["expected_verdict"], gold[r["trajectory_id"]]["expected_failure_stage"])
    ]
    assert len(wrong) <= 0.01 * len(decided), wrong[:10]


def test_inconclusive_share_is_within_target(graded):
    results, _ = graded
    share = sum(r["verdict"] == "unresolved" for r in results) / len(results)
    assert share <= 0.20


def test_every_profile_is_decided_somewhere_and_policy_failures_are_caught(graded):
    results, _gold = graded
    stages = Counter(r["failure_stage"] for r in results if r["verdict"] == "fail")
    for stage in ("policy", "tool_selection", "argument_names", "argument_values", "answer_correctness"):
        assert stages[stage] > 0, stages
