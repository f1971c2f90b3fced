"""Statistics: hand-computed cases, property tests against scikit-learn / krippendorff, CI coverage."""

from __future__ import annotations

import math

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import accuracy_score, balanced_accuracy_score, cohen_kappa_score, precision_recall_fscore_support

from calibration import LabelCoder, Resampler, agreement, corrected_pass_rate, human_ceiling, krippendorff_alpha
from calibration import _stats as S
from calibration._stats import draw_weights, percentile_ci

# rows: human (correct, incorrect); columns: judge
CM = np.array([[20.0, 5.0], [10.0, 15.0]])


def test_hand_computed_two_by_two():
    # po = 35/50; pe(Cohen) = .5*.6 + .5*.4 = .5 -> kappa = .4
    assert S.accuracy(CM) == pytest.approx(0.7)
    assert S.cohen_kappa(CM) == pytest.approx(0.4)
    # pooled marginals .55/.45: pe(Scott) = .55^2 + .45^2 = .505; pe(Gwet) = 2 * .55 * .45 = .495
    assert S.scott_pi(CM) == pytest.approx((0.7 - 0.505) / 0.495)
    assert S.gwet_ac1(CM) == pytest.approx((0.7 - 0.495) / 0.505)
    assert S.balanced_accuracy(CM) == pytest.approx((0.8 + 0.6) / 2)
    tpr, tnr = S.tpr_tnr(CM)
    assert (tpr, tnr) == (pytest.approx(0.8), pytest.approx(0.6))
    ref_rate, judge_rate = S.positive_rates(CM)
    assert (ref_rate, judge_rate) == (pytest.approx(0.5), pytest.approx(0.6))


def test_batched_equals_single():
    batch = np.stack([CM, CM.T, CM * 3])
    for fn in (S.accuracy, S.cohen_kappa, S.scott_pi, S.gwet_ac1, S.balanced_accuracy):
        assert np.allclose(fn(batch), [fn(CM), fn(CM.T), fn(CM * 3)])


def test_undefined_values_are_nan_not_zero():
    constant = np.array([[10.0, 0.0], [0.0, 0.0]])  # both raters always 'correct'
    assert math.isnan(S.cohen_kappa(constant)) and S.accuracy(constant) == 1.0
    assert math.isnan(S.accuracy(np.zeros((2, 2))))
    _, tnr = S.tpr_tnr(constant)
    assert math.isnan(tnr)


def test_corrected_pass_rate():
    assert corrected_pass_rate(0.6, 0.9, 0.8) == pytest.approx((0.6 + 0.8 - 1) / (0.9 + 0.8 - 1))
    assert corrected_pass_rate(0.05, 0.9, 0.8) == 0.0  # clipped
    assert corrected_pass_rate(0.99, 0.9, 0.99) == 1.0
    assert math.isnan(corrected_pass_rate(0.5, 0.5, 0.5))  # a chance-level judge cannot be corrected
    arr = corrected_pass_rate(np.array([0.6, 0.7]), np.array([0.9, 0.9]), np.array([0.8, 0.8]))
    assert arr.shape == (2,)
    # a perfect judge needs no correction; the correction inverts p_obs = tpr*theta + (1-tnr)*(1-theta)
    assert corrected_pass_rate(0.42, 1.0, 1.0) == pytest.approx(0.42)
    theta, tpr, tnr = 0.3, 0.85, 0.7
    assert corrected_pass_rate(tpr * theta + (1 - tnr) * (1 - theta), tpr, tnr) == pytest.approx(theta)


labels_strategy = st.integers(min_value=2, max_value=4).flatmap(
    lambda k: st.integers(min_value=2, max_value=120).flatmap(
        lambda n: st.tuples(st.just(k), st.lists(st.integers(0, k - 1), min_size=n, max_size=n), st.lists(st.integers(0, k - 1), min_size=n, max_size=n))
    )
)


@settings(max_examples=150, deadline=None)
@given(labels_strategy)
def test_matches_scikit_learn(data):
    k, ref, rat = data
    cm = S.confusion_matrix(ref, rat, k)
    labs = list(range(k))
    assert S.accuracy(cm) == pytest.approx(accuracy_score(ref, rat))
    kappa = S.cohen_kappa(cm)
    if np.isfinite(kappa):
        assert kappa == pytest.approx(cohen_kappa_score(ref, rat, labels=labs), abs=1e-9)
    p, r, f, support = precision_recall_fscore_support(ref, rat, labels=labs, zero_division=0)
    prec, rec, f1 = S.precision_recall_f1(cm)
    assert np.allclose(prec, p) and np.allclose(rec, r) and np.allclose(f1, f)
    assert np.array_equal(cm.sum(axis=1), support)
    if len(set(ref)) >= 1:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = balanced_accuracy_score(ref, rat)
        assert S.balanced_accuracy(cm) == pytest.approx(expected)


def _alpha_two_coders(a: list[int], b: list[int]) -> float:
    """Krippendorff's alpha, nominal, two coders, no missing values, written out by hand."""
    n = 2 * len(a)
    counts = np.bincount(a + b)
    d_o = sum(x != y for x, y in zip(a, b, strict=True)) / len(a)
    d_e = (n * n - (counts**2).sum()) / (n * (n - 1))
    return 1 - d_o / d_e


@settings(max_examples=100, deadline=None)
@given(labels_strategy)
def test_krippendorff_alpha_two_raters(data):
    k, a, b = data
    coder = LabelCoder([f"l{i}" for i in range(k)])
    if len(set(a) | set(b)) < 2:
        assert krippendorff_alpha([[f"l{x}" for x in a], [f"l{x}" for x in b]], coder) is None
        return
    got = krippendorff_alpha([[f"l{x}" for x in a], [f"l{x}" for x in b]], coder)
    assert got == pytest.approx(_alpha_two_coders(a, b), abs=2e-6)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.one_of(st.none(), st.integers(0, 2)), min_size=3, max_size=3), min_size=3, max_size=40))
def test_krippendorff_alpha_several_raters_with_missing(columns):
    coder = LabelCoder(["a", "b", "c"])
    ratings = [[None if col[r] is None else "abc"[col[r]] for col in columns] for r in range(3)]
    data = np.array([[np.nan if col[r] is None else col[r] for col in columns] for r in range(3)], dtype=float)
    usable = np.isfinite(data).sum(axis=0) >= 2
    got = krippendorff_alpha(ratings, coder)
    values = data[:, usable][np.isfinite(data[:, usable])]
    if usable.sum() == 0 or len(np.unique(values)) < 2:
        assert got is None
    else:
        assert got == pytest.approx(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"), abs=2e-6)


def test_agreement_model_against_sklearn_and_ci():
    rng = np.random.default_rng(1)
    ref = rng.integers(0, 2, 300)
    rat = np.where(rng.random(300) < 0.8, ref, 1 - ref)
    coder = LabelCoder(["correct", "incorrect"])
    to = lambda xs: [coder.labels[x] for x in xs]  # noqa: E731
    s = agreement(to(ref), to(rat), coder, Resampler([str(i // 3) for i in range(300)], 500, 0))
    assert s.cohen_kappa.value == pytest.approx(cohen_kappa_score(ref, rat), abs=1e-6)
    assert s.cohen_kappa.ci_low < s.cohen_kappa.value < s.cohen_kappa.ci_high
    assert s.confusion == S.confusion_matrix(ref, rat, 2).astype(int).tolist()
    assert s.per_label["correct"].support == int((ref == 0).sum())
    assert s.leniency.value == pytest.approx(s.rated_positive_rate.value - s.reference_positive_rate.value, abs=2e-6)
    with pytest.raises(ValueError, match="not one of"):
        agreement(["correct", "maybe"], ["correct", "correct"], coder)


def test_bootstrap_weights_resample_whole_clusters():
    w = draw_weights(7, 50, seed=3)
    assert w.shape == (50, 7) and np.all(w.sum(axis=1) == 7)
    assert np.array_equal(w, draw_weights(7, 50, seed=3)) and not np.array_equal(w, draw_weights(7, 50, seed=4))
    assert percentile_ci(np.array([np.nan, 1.0])) == (None, None)


def test_bootstrap_ci_covers_true_kappa():
    """200 simulated datasets with population kappa 0.6: the 95% interval covers it >= 90% of the time.

    Judge copies the human label with probability q and otherwise draws from the same marginal, so
    the population kappa is exactly q.
    """
    q, p, n, n_sets, n_boot = 0.6, 0.6, 150, 200, 300
    rng = np.random.default_rng(2026)
    weights = draw_weights(n, n_boot, seed=7)  # one draw matrix over item positions, reused
    covered = 0
    for _ in range(n_sets):
        human = (rng.random(n) >= p).astype(int)  # 0 = positive with probability p
        noise = (rng.random(n) >= p).astype(int)
        judge = np.where(rng.random(n) < q, human, noise)
        per_item = np.zeros((n, 4))
        per_item[np.arange(n), human * 2 + judge] = 1
        draws = S.cohen_kappa((weights @ per_item).reshape(-1, 2, 2))
        lo, hi = percentile_ci(draws)
        covered += lo <= q <= hi
    assert covered / n_sets >= 0.90


def test_human_ceiling():
    coder = LabelCoder(["pass", "fail"])
    sets = [{"ann1": "pass", "ann2": "pass"}] * 8 + [{"ann1": "fail", "ann2": "fail"}] * 8 + [{"ann1": "pass", "ann2": "fail"}] * 4 + [{"ann1": "pass"}]
    c = human_ceiling(sets, coder)
    assert c.n_items == 20 and c.pairwise_percent_agreement == pytest.approx(0.8)
    # 2x2 [[8, 4], [0, 8]]: po .8, pe = .6*.4 + .4*.6 = .48 -> kappa = .32/.52
    assert c.pairwise_cohen_kappa == pytest.approx(0.32 / 0.52, abs=1e-6)
    assert c.krippendorff_alpha is not None
    assert human_ceiling([{"ann1": "pass"}], coder) is None


# -- the one statistics module: fast paths against naive resampling -------------------------------


def _naive_cluster_ci(values, clusters, samples, seed):
    rng = np.random.default_rng(seed)
    keys = sorted(set(clusters))
    groups = [np.array([v for v, c in zip(values, clusters, strict=True) if c == k]) for k in keys]
    means = []
    for _ in range(samples):
        picked = [groups[i] for i in rng.integers(0, len(groups), len(groups))]
        means.append(np.concatenate(picked).mean())
    return np.quantile(means, [0.025, 0.975])


@pytest.mark.parametrize("profiles", ["few", "many"])
def test_cluster_bootstrap_ci_agrees_with_naive_cluster_resampling(profiles):
    from calibration import cluster_bootstrap_ci

    rng = np.random.default_rng(5)
    n_clusters = 60
    sizes = rng.integers(1, 4, n_clusters) if profiles == "few" else rng.integers(1, 9, n_clusters)
    clusters = [f"t{i}" for i, s in enumerate(sizes) for _ in range(s)]
    base = rng.random(n_clusters)
    values = np.array([float(rng.random() < base[int(c[1:])]) if profiles == "few" else base[int(c[1:])] + rng.normal(0, 0.1) for c in clusters])
    fast = cluster_bootstrap_ci(values, np.array(clusters), samples=4000, seed=1)
    naive = _naive_cluster_ci(values, clusters, 4000, seed=2)
    assert fast is not None
    assert abs(fast[0] - naive[0]) < 0.03 and abs(fast[1] - naive[1]) < 0.03


def test_wilson_interval_matches_the_textbook_values():
    from calibration import wilson

    assert wilson(3, 10) == pytest.approx((0.107791, 0.603222), abs=1e-6)
    assert wilson(0, 20)[0] == 0.0 and wilson(20, 20)[1] == 1.0
    assert wilson(0, 0) == (None, None)


def test_cluster_bootstrap_ci_counts_small_integer_codes_as_unique_would_sort_them():
    """Small non-negative integer codes (a run's task codes) are counted by code instead of sorted;
    the interval is the one the sorting path gives for the same clusters (here forced by shifting
    the codes out of the counting range), for any gaps among the codes."""
    from calibration import cluster_bootstrap_ci

    rng = np.random.default_rng(11)
    for _ in range(50):
        n = int(rng.integers(1, 200))
        codes = rng.integers(0, int(rng.integers(1, 40)), n) * int(rng.integers(1, 4))  # gaps between codes
        values = (rng.random(n) < 0.6).astype(float)
        counted = cluster_bootstrap_ci(values, codes, samples=500, seed=3)
        sorted_ = cluster_bootstrap_ci(values, codes + 10**9, samples=500, seed=3)
        assert counted == sorted_


def test_bootstrap_profiles_are_the_distinct_rows_in_row_order():
    """The resampled profiles come in the order (and with the counts) of ``np.unique`` over rows,
    so the multinomial draws, and with them the intervals, are the same as with that call."""
    from calibration._stats import _profiles

    rng = np.random.default_rng(2)
    for _ in range(100):
        n = int(rng.integers(1, 500))
        sums = np.round(rng.random(n) * int(rng.integers(1, 5)), int(rng.integers(0, 3)))
        sizes = rng.integers(1, 4, n).astype(float)
        rows, counts = np.unique(np.stack([sums, sizes], axis=1), axis=0, return_counts=True)
        got_rows, got_counts = _profiles(sums, sizes)
        assert np.array_equal(got_rows, rows) and np.array_equal(got_counts, counts)
