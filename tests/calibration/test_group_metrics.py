"""``calibration.group_metrics``: the one function the aggregator (summary.json) and the reports
call for a group's outcome figures."""

from __future__ import annotations

import math

import numpy as np

from calibration import cluster_bootstrap_ci, group_metrics, wilson
from judge import FAILURE_STAGE_ORDER


def test_counts_rates_and_stages_by_hand():
    verdicts = ["pass", "fail", "unresolved", "pass", "fail"]
    stages = ["none", "tool_selection", None, "none", "answer_correctness"]
    m = group_metrics(verdicts, stages=stages, ci=None)
    assert (m["n"], m["pass"], m["fail"], m["unresolved"]) == (5, 2, 2, 1)
    assert m["pass_rate"] == 0.4  # unresolved counted as not passed
    assert m["pass_rate_if_unresolved_pass"] == 0.6  # the other bound
    assert "pass_rate_ci95" not in m
    assert m["failure_stages"]["none"] == 2
    assert m["failure_stages"]["tool_selection"] == 1
    assert m["failure_stages"]["answer_correctness"] == 1
    assert sum(m["failure_stages"].values()) == 4  # an unresolved row has no stage
    assert list(m["failure_stages"]) == [s.value for s in FAILURE_STAGE_ORDER]  # every stage listed, in stage order


def test_the_interval_is_the_one_asked_for():
    verdicts = np.array(["pass", "pass", "fail", "pass", "unresolved", "fail"], dtype=object)
    clusters = np.array([0, 0, 1, 1, 2, 2])
    boot = group_metrics(verdicts, clusters=clusters, samples=300, seed=3)
    assert boot["pass_rate_ci95"] == cluster_bootstrap_ci((verdicts == "pass").astype(float), clusters, samples=300, seed=3)
    assert group_metrics(verdicts, ci="wilson")["pass_rate_ci95"] == wilson(3, 6)


def test_an_empty_group_has_no_rates():
    m = group_metrics([], stages=[], crag=np.array([]), scores={"x": np.array([])})
    assert (m["n"], m["pass"], m["pass_rate"], m["pass_rate_ci95"], m["pass_rate_if_unresolved_pass"]) == (0, 0, None, None, None)
    assert m["crag_score"] is None
    assert m["scores"] == {"x": {"mean": None, "ci95": None, "n": 0}}


def test_scores_and_crag_leave_out_what_does_not_apply():
    nan = math.nan
    m = group_metrics(
        ["pass", "fail", "pass", "fail"],
        clusters=np.array([0, 1, 2, 3]),
        crag=np.array([1.0, -1.0, nan, 0.0]),
        scores={"a": np.array([1.0, nan, 0.5, 0.0]), "b": np.array([nan, nan, nan, nan])},
        samples=200,
    )
    assert m["crag_score"] == 0.0
    assert m["scores"]["a"]["mean"] == 0.5 and m["scores"]["a"]["n"] == 3
    assert m["scores"]["a"]["ci95"] == cluster_bootstrap_ci(np.array([1.0, 0.5, 0.0]), np.array([0, 2, 3]), samples=200, seed=0)
    assert m["scores"]["b"] == {"mean": None, "ci95": None, "n": 0}
    assert group_metrics(["pass"], scores={"a": np.array([0.25])}, ci=None)["scores"]["a"] == {"mean": 0.25, "ci95": None, "n": 1}
