"""Agreement statistics computed from confusion matrices, vectorised over a leading batch axis.

Why from confusion matrices: every statistic here (accuracy, kappa, Scott's pi, Gwet's AC1, balanced
accuracy, TPR/TNR, positive rates) is a function of the K x K matrix, so a bootstrap is one matrix
product (draw weights x per-cluster counts) followed by these formulas on a (B, K, K) array.

Convention: rows are the reference (human) label, columns the rated (judge) label; label index 0 is
the positive label. Undefined values (0/0) are NaN, never a silent 0 -- except per-label precision,
recall and F1, which follow scikit-learn's ``zero_division=0`` so they can be compared with it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


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
