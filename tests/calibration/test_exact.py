"""``calibration._exact``: numpy's sum, mean and rounding, and the cluster bootstrap's interval, in pure
Python and bit for bit (a small run's summary imports no numpy; issue 27)."""

from __future__ import annotations

import random

import numpy as np

from calibration._exact import bootstrap_ci, np_mean, np_round, np_sum, wilson
from calibration._stats import cluster_bootstrap_ci


def test_sums_and_means_are_numpys_to_the_last_bit():
    """Pairwise summation: below 8 values, inside one block of 128, and split blocks above it."""
    rnd = random.Random(1)
    for n in [*range(140), 255, 256, 257, 1000, 1023, 1025, 4097, 10_001]:
        for _ in range(2):
            a = [rnd.random() * rnd.choice([1, 1e-3, 1e6]) * rnd.choice([1, -1]) for _ in range(n)]
            assert np_sum(a) == float(np.asarray(a, dtype=float).sum()), n
            if n:
                assert np_mean(a) == float(np.asarray(a, dtype=float).mean()), n


def test_rounding_is_numpys_not_pythons():
    rnd = random.Random(2)
    halves = [(i + 0.5) / 1e6 for i in range(0, 100_000, 7)]  # where the two roundings may part
    for x in halves + [rnd.random() * rnd.choice([1, 10, 1e-3, 1e5]) for _ in range(20_000)]:
        assert np_round(x, 6) == float(round(np.float64(x), 6)), repr(x)
    assert any(np_round(x, 6) != round(x, 6) for x in halves)  # Python's round differs: the emulation matters


def test_the_interval_is_the_cluster_bootstraps():
    """One profile (every cluster the same sum and size): computed here; more: the bootstrap itself."""
    rnd = random.Random(3)
    one_profile = 0
    for _ in range(600):
        n = rnd.randint(1, 12)
        values = [1.0] * n if rnd.random() < 0.3 else [rnd.choice([0.0, 1.0, 0.5, rnd.random()]) for _ in range(n)]
        clusters = [rnd.randint(0, 3) for _ in range(n)] if rnd.random() < 0.7 else None
        want = cluster_bootstrap_ci(np.asarray(values), None if clusters is None else np.asarray(clusters), samples=200, seed=5)
        assert bootstrap_ci(values, clusters, samples=200, seed=5) == want, (values, clusters)
        one_profile += want is not None and want[0] == want[1]
    assert one_profile > 100 and bootstrap_ci([]) is None


def test_wilson_is_where_it_was():
    from calibration import _stats

    assert _stats.wilson is wilson and wilson(3, 6) == (0.187616, 0.812384) and wilson(0, 0) == (None, None)
