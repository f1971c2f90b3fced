"""Agreement statistics computed from confusion matrices, vectorised over a leading batch axis.

Why from confusion matrices: every statistic here (accuracy, kappa, Scott's pi, Gwet's AC1, balanced
accuracy, TPR/TNR, positive rates) is a function of the K x K matrix, so a bootstrap is one matrix
product (draw weights x per-cluster counts) followed by these formulas on a (B, K, K) array.

Convention: rows are the reference (human) label, columns the rated (judge) label; label index 0 is
the positive label. Undefined values (0/0) are NaN, never a silent 0 -- except per-label precision,
recall and F1, which follow scikit-learn's ``zero_division=0`` so they can be compared with it.

The one home of the project's statistics: agreement statistics from confusion matrices, the cluster
bootstrap (a shared (B, C) draw matrix, paired across raters; and, for means, a multinomial over
distinct cluster profiles that stays O(B) at 100k trajectories), percentile intervals, Wilson
intervals, and the unbiased pass@k / pass^k estimators.

Why clusters: Thakur's eight answers to one question (or several turns of one task) are not
independent; resampling items would make the intervals too narrow. Same seed, same interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from calibration._exact import wilson as wilson  # its home before: calibration._stats.wilson still works


def confusion_matrix(reference: Sequence[int] | np.ndarray, rated: Sequence[int] | np.ndarray, k: int) -> np.ndarray:
    ref = np.asarray(reference, dtype=np.int64)
    rat = np.asarray(rated, dtype=np.int64)
    return np.bincount(ref * k + rat, minlength=k * k).reshape(k, k).astype(float)


def _div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b != 0, a / np.where(b != 0, b, 1), np.nan)


def accuracy(cm: np.ndarray) -> np.ndarray:
    n = cm.sum(axis=(-2, -1))
    return _div(np.trace(cm, axis1=-2, axis2=-1), n)


def _chance_corrected(cm: np.ndarray, pe: np.ndarray) -> np.ndarray:
    po = accuracy(cm)
    # pe == 1 (both raters constant on the same label): agreement beyond chance is undefined.
    return _div(po - pe, 1.0 - pe)


def _marginals(cm: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = cm.sum(axis=(-2, -1))[..., None]
    rows = _div(cm.sum(axis=-1), n)
    cols = _div(cm.sum(axis=-2), n)
    return rows, cols, n[..., 0]


def cohen_kappa(cm: np.ndarray) -> np.ndarray:
    rows, cols, _ = _marginals(cm)
    return _chance_corrected(cm, (rows * cols).sum(axis=-1))


def scott_pi(cm: np.ndarray) -> np.ndarray:
    rows, cols, _ = _marginals(cm)
    pooled = (rows + cols) / 2
    return _chance_corrected(cm, (pooled**2).sum(axis=-1))


def gwet_ac1(cm: np.ndarray) -> np.ndarray:
    """Gwet's AC1: chance agreement sum_k pi_k (1 - pi_k) / (K - 1); stable under skewed labels."""
    k = cm.shape[-1]
    rows, cols, _ = _marginals(cm)
    pooled = (rows + cols) / 2
    pe = (pooled * (1 - pooled)).sum(axis=-1) / max(k - 1, 1)
    return _chance_corrected(cm, pe)


def recall_per_label(cm: np.ndarray) -> np.ndarray:
    return _div(np.diagonal(cm, axis1=-2, axis2=-1), cm.sum(axis=-1))


def balanced_accuracy(cm: np.ndarray) -> np.ndarray:
    """Mean recall over labels present in the reference (as scikit-learn does)."""
    rec = recall_per_label(cm)
    present = cm.sum(axis=-1) > 0
    total = np.where(present, np.nan_to_num(rec), 0.0).sum(axis=-1)
    return _div(total, present.sum(axis=-1).astype(float))


def precision_recall_f1(cm: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-label precision, recall, F1 with zero_division=0 (scikit-learn's default outcome)."""
    diag = np.diagonal(cm, axis1=-2, axis2=-1)
    prec = np.nan_to_num(_div(diag, cm.sum(axis=-2)))
    rec = np.nan_to_num(_div(diag, cm.sum(axis=-1)))
    f1 = np.nan_to_num(_div(2 * prec * rec, prec + rec))
    return prec, rec, f1


def positive_rates(cm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(reference positive rate, rated positive rate); label index 0 is the positive label."""
    rows, cols, _ = _marginals(cm)
    return rows[..., 0], cols[..., 0]


def tpr_tnr(cm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sensitivity and specificity for positive (index 0) vs every other label."""
    pos_row = cm[..., 0, :].sum(axis=-1)
    tp = cm[..., 0, 0]
    neg_rows = cm[..., 1:, :].sum(axis=(-2, -1))
    tn = cm[..., 1:, 1:].sum(axis=(-2, -1))
    return _div(tp, pos_row), _div(tn, neg_rows)


def corrected_pass_rate(p_obs: float | np.ndarray, tpr: float | np.ndarray, tnr: float | np.ndarray) -> float | np.ndarray:
    """Rogan-Gladen correction of an observed pass rate for judge error, clipped to [0, 1].

    theta = (p_obs + TNR - 1) / (TPR + TNR - 1). NaN where the judge is no better than chance
    (TPR + TNR <= 1): then no correction is possible.
    """
    p, a, b = (np.asarray(x, dtype=float) for x in (p_obs, tpr, tnr))
    denom = a + b - 1
    with np.errstate(divide="ignore", invalid="ignore"):
        theta = np.where(denom > 0, (p + b - 1) / np.where(denom > 0, denom, 1), np.nan)
    out = np.where(np.isnan(theta), np.nan, np.clip(theta, 0.0, 1.0))
    return float(out) if out.ndim == 0 else out


STATISTICS = {
    "accuracy": accuracy,
    "cohen_kappa": cohen_kappa,
    "scott_pi": scott_pi,
    "gwet_ac1": gwet_ac1,
    "balanced_accuracy": balanced_accuracy,
}


# ---------------------------------------------------------------- cluster bootstrap


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


def _profiles(sums: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (sum, size) rows in (sum, size) order, and how often each occurs: what
    ``np.unique(np.stack([sums, sizes], axis=1), axis=0, return_counts=True)`` gives, ~10x faster
    on a run's 100k tasks (each pair one complex number, whose sort is that order)."""
    pairs, counts = np.unique(sums + 1j * sizes, return_counts=True)
    return np.stack([pairs.real, pairs.imag], axis=1), counts


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
        clusters = np.asarray(clusters)
        if clusters.dtype.kind in "iu" and clusters.min() >= 0 and clusters.max() < 4 * clusters.size + 1024:
            # small integer codes (a run's task codes): count by code, keep the codes present, in
            # code order, as np.unique would order them, without sorting
            sums = np.bincount(clusters, weights=values)
            sizes = np.bincount(clusters).astype(float)
            present = sizes > 0
            sums, sizes = sums[present], sizes[present]
        else:
            _, inverse = np.unique(clusters, return_inverse=True)
            sums = np.bincount(inverse, weights=values)
            sizes = np.bincount(inverse).astype(float)
    k = sums.size
    rng = np.random.default_rng(seed)
    profiles, counts = _profiles(sums, sizes)
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


# ---------------------------------------------------------------- proportions and repeated runs


def _comb(n: int, k: int) -> int:
    return math.comb(n, k) if 0 <= k <= n else 0


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k (Chen et al. 2021): P(at least one of k draws without replacement passes)."""
    return 1.0 - _comb(n - c, k) / _comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k (tau-bench): P(all k draws without replacement pass)."""
    return _comb(c, k) / _comb(n, k)


def pass_curves(n: int, c: int, kmax: int) -> tuple[np.ndarray, np.ndarray]:
    """pass@k and pass^k for every k in 1..kmax at once, in O(kmax) (``pass_at_k`` for each k
    is quadratic in n through the binomials: 50,000 runs of one task never finished). Each ratio
    of binomials is a running product, C(m, k) / C(n, k) = prod_{i<k} (m - i) / (n - i), which
    reaches 0 exactly and never overflows."""
    i = np.arange(min(kmax, n), dtype=np.float64)
    denominators = n - i
    none_pass = np.cumprod(np.clip(n - c - i, 0, None) / denominators)
    all_pass = np.cumprod(np.clip(c - i, 0, None) / denominators)
    return 1.0 - none_pass, all_pass
