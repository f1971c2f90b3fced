"""Cluster bootstrap, vectorised: one (B, C) matrix of cluster draw counts shared by every statistic.

Why clusters: Thakur's eight answers to one question (or several turns of one task) are not
independent; resampling items would make the intervals too narrow. Sharing one draw matrix across
judges makes differences between judges paired (same resampled items), which the prompt comparison
relies on. Fixed seed -> identical intervals on every run.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def cluster_index(keys: Sequence[str]) -> tuple[np.ndarray, int]:
    """Map cluster keys to 0..C-1 in first-seen order (deterministic)."""
    order: dict[str, int] = {}
    idx = np.fromiter((order.setdefault(k, len(order)) for k in keys), dtype=np.int64, count=len(keys))
    return idx, len(order)


def draw_weights(n_clusters: int, n_boot: int, seed: int) -> np.ndarray:
    """(n_boot, n_clusters) counts: how often each cluster appears in each bootstrap draw."""
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, n_clusters, size=(n_boot, n_clusters))
    offsets = (np.arange(n_boot)[:, None] * n_clusters + picks).ravel()
    return np.bincount(offsets, minlength=n_boot * n_clusters).reshape(n_boot, n_clusters).astype(float)


def cluster_confusions(cluster: np.ndarray, n_clusters: int, reference: np.ndarray, rated: np.ndarray, k: int) -> np.ndarray:
    """(C, K*K) per-cluster confusion counts; rows with a missing label (-1) are left out."""
    ok = (reference >= 0) & (rated >= 0)
    code = reference[ok] * k + rated[ok]
    flat = cluster[ok] * (k * k) + code
    return np.bincount(flat, minlength=n_clusters * k * k).reshape(n_clusters, k * k).astype(float)


def bootstrap_confusions(weights: np.ndarray, per_cluster: np.ndarray, k: int) -> np.ndarray:
    """(B, K, K) confusion matrices of the bootstrap draws."""
    return (weights @ per_cluster).reshape(-1, k, k)


def percentile_ci(draws: np.ndarray, level: float = 0.95) -> tuple[float | None, float | None]:
    """Percentile interval over the finite draws; (None, None) if fewer than 2 are finite."""
    vals = np.asarray(draws, dtype=float)
    vals = vals[np.isfinite(vals)]
    if vals.size < 2:
        return None, None
    lo, hi = np.quantile(vals, [(1 - level) / 2, 1 - (1 - level) / 2])
    return float(lo), float(hi)
