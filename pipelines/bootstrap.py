"""Percentile bootstrap CIs that stay fast at 100k trajectories.

Resampling clusters (tasks) with replacement is the same as drawing, for each distinct cluster
profile (sum, size), how many times it is picked: a multinomial over the distinct profiles.
For binary outcomes and single-trajectory tasks there are at most two profiles, so a CI costs
O(B) however large n is; with many distinct profiles it falls back to B x n index resampling in
chunks. Same seed, same CI.
"""

from __future__ import annotations

import numpy as np


def cluster_bootstrap_ci(
    values: np.ndarray,
    clusters: np.ndarray | None = None,
    *,
    samples: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float] | None:
    """CI of the mean of ``values`` resampling ``clusters`` (default: each value its own cluster)."""
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return None
    if clusters is None:
        sums, sizes = values, np.ones_like(values)
    else:
        _, inverse = np.unique(clusters, return_inverse=True)
        sums = np.bincount(inverse, weights=values)
        sizes = np.bincount(inverse).astype(float)
    k = sums.size
    rng = np.random.default_rng(seed)
    profiles, counts = np.unique(np.stack([sums, sizes], axis=1), axis=0, return_counts=True)
    if len(profiles) <= 4096:
        draws = rng.multinomial(k, counts / k, size=samples)  # samples x profiles
        means = (draws @ profiles[:, 0]) / (draws @ profiles[:, 1])
    else:
        means = np.empty(samples)
        chunk = max(1, 2_000_000 // k)
        for start in range(0, samples, chunk):
            idx = rng.integers(0, k, size=(min(chunk, samples - start), k))
            means[start : start + idx.shape[0]] = sums[idx].sum(axis=1) / sizes[idx].sum(axis=1)
    alpha = (1 - level) / 2
    lo, hi = np.quantile(means, [alpha, 1 - alpha])
    return float(round(lo, 6)), float(round(hi, 6))
