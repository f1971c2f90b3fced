"""Vote rules, learned panels and the cluster split on synthetic data with known structure."""

from __future__ import annotations

import numpy as np
import pytest

from calibration import LogisticPanel, LogOddsPanel, dawid_skene, plurality, stratified_cluster_split, unanimous


def test_plurality_ties_are_unresolved_and_abstentions_do_not_count():
    votes = np.array([[0, 0, 1], [0, 1, -1], [-1, -1, -1], [1, 1, 1], [2, 1, 2], [0, 1, 2]])
    assert plurality(votes, 3).tolist() == [0, -1, -1, 1, 2, -1]
    assert unanimous(votes, 3).tolist() == [-1, -1, -1, 1, -1, -1]
    assert unanimous(np.array([[0, -1, 0]]), 2).tolist() == [0]


def _simulate(n: int, tprs, tnrs, prior: float, seed: int):
    rng = np.random.default_rng(seed)
    truth = (rng.random(n) < prior).astype(int)  # 1 = positive
    cols = []
    for tpr, tnr in zip(tprs, tnrs, strict=True):
        says_pos = np.where(truth == 1, rng.random(n) < tpr, rng.random(n) >= tnr)
        cols.append(np.where(says_pos, 0, 1))  # label index 0 = positive
    return np.stack(cols, axis=1), truth


def test_log_odds_panel_recovers_rates_and_beats_majority():
    tprs, tnrs = [0.95, 0.7, 0.65, 0.6, 0.6], [0.95, 0.6, 0.55, 0.6, 0.5]
    votes, truth = _simulate(4000, tprs, tnrs, 0.6, 0)
    panel = LogOddsPanel(["strong", "w1", "w2", "w3", "w4"]).fit(votes[:2000], truth[:2000])
    assert np.allclose(panel.tpr, tprs, atol=0.03) and np.allclose(panel.tnr, tnrs, atol=0.03)
    acc = lambda pred: ((pred == 0) == (truth[2000:] == 1)).mean()  # noqa: E731
    assert acc(panel.predict(votes[2000:])) > acc(plurality(votes[2000:], 2)) + 0.05
    w = panel.weights_file(None, "pass")["judges"]
    assert w["strong"]["weight"] > max(w[n]["weight"] for n in ("w1", "w2", "w3", "w4"))
    # an abstaining judge adds nothing
    masked = votes[2000:].copy()
    masked[:, 1:] = -1
    assert np.array_equal(panel.predict(masked), np.where(panel.prior_log_odds + np.where(masked[:, 0] == 0, panel.w_pos[0], panel.w_neg[0]) > 0, 0, 1))


def test_chance_judge_gets_zero_weight():
    votes, truth = _simulate(3000, [0.9, 0.5], [0.9, 0.5], 0.5, 1)
    w = LogOddsPanel(["good", "coin"]).fit(votes, truth).weights_file(None, "pass")["judges"]
    assert w["coin"]["weight"] < 0.15 and w["good"]["weight"] > 2


def test_logistic_panel_discounts_a_duplicated_judge():
    votes, truth = _simulate(3000, [0.8, 0.8], [0.8, 0.8], 0.5, 2)
    dup = np.concatenate([votes, votes[:, :1], votes[:, :1]], axis=1)  # judge 0 copied twice
    coef = LogisticPanel(["a", "b", "a2", "a3"]).fit(dup, truth).coefficients()
    nb = LogOddsPanel(["a", "b", "a2", "a3"]).fit(dup, truth)
    assert coef["a"] + coef["a2"] + coef["a3"] < 2 * coef["b"]  # stacking shares the copies' weight
    assert nb.w_pos[0] + nb.w_pos[2] + nb.w_pos[3] > 2 * nb.w_pos[1]  # naive Bayes triple-counts


def test_dawid_skene_learns_rates_without_labels():
    tprs, tnrs = [0.9, 0.8, 0.75, 0.7, 0.85], [0.85, 0.7, 0.8, 0.75, 0.9]
    votes, truth = _simulate(3000, tprs, tnrs, 0.4, 3)
    post = dawid_skene(votes, np.full(5, 0.7), np.full(5, 0.7), 0.5)
    assert ((post > 0.5) == (truth == 1)).mean() > 0.9


def test_stratified_cluster_split():
    clusters = [f"c{i // 4}" for i in range(400)]
    positive = [(i // 4) % 5 == 0 or i % 4 == 0 for i in range(400)]
    a, b = stratified_cluster_split(clusters, positive, (0.5, 0.5), seed=0)
    assert not np.any(a & b) and np.all(a | b)
    assert {clusters[i] for i in np.flatnonzero(a)}.isdisjoint({clusters[i] for i in np.flatnonzero(b)})
    assert a.sum() == 200
    pos = np.array(positive)
    assert abs(pos[a].mean() - pos[b].mean()) < 0.02  # strata balanced
    again = stratified_cluster_split(clusters, positive, (0.5, 0.5), seed=0)
    assert np.array_equal(a, again[0])
    assert not np.array_equal(a, stratified_cluster_split(clusters, positive, (0.5, 0.5), seed=1)[0])
    three = stratified_cluster_split(clusters, positive, (0.5, 0.25, 0.25), seed=0)
    assert [int(m.sum()) for m in three] == [200, 100, 100]
    with pytest.raises(ValueError):
        stratified_cluster_split(clusters, positive, (0.5, 0.6))
