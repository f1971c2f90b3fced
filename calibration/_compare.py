"""Paired comparison of two raters on the same gold items (two rubric versions, or panel vs judge).

Why paired: both raters judged the same items, so the kappa difference is bootstrapped with the
same cluster draws for both (its CI is much tighter than two independent CIs suggest), and the
item-level question "which one agrees with the human more often" is McNemar's exact test on the
discordant items.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel
from scipy.stats import binomtest

from calibration._agreement import Estimate, LabelCoder, Resampler
from calibration._stats import cohen_kappa, confusion_matrix


class RaterComparison(BaseModel):
    a: str
    b: str
    n: int  # items where the reference and both raters have a label
    n_excluded: int  # items left out because one side abstained / was unresolved
    kappa_a: float | None
    kappa_b: float | None
    kappa_diff: Estimate  # kappa_b - kappa_a, paired cluster-bootstrap CI
    only_a_right: int  # McNemar discordant cells
    only_b_right: int
    mcnemar_p: float | None  # exact two-sided binomial test on the discordant items


def compare_raters(
    reference: Sequence[str | None],
    rated_a: Sequence[str | None],
    rated_b: Sequence[str | None],
    clusters: Sequence[str],
    coder: LabelCoder,
    *,
    names: tuple[str, str] = ("a", "b"),
    n_boot: int = 1000,
    seed: int = 0,
) -> RaterComparison:
    ref, a, b = coder.encode(reference), coder.encode(rated_a), coder.encode(rated_b)
    keep = (ref >= 0) & (a >= 0) & (b >= 0)
    k = len(coder.labels)
    idx = np.flatnonzero(keep)
    ref, a, b = ref[idx], a[idx], b[idx]
    ka = float(cohen_kappa(confusion_matrix(ref, a, k)))
    kb = float(cohen_kappa(confusion_matrix(ref, b, k)))
    draws = None
    if n_boot > 0 and idx.size:
        res = Resampler([clusters[int(i)] for i in idx], n_boot, seed)
        cb, ca = res.confusions(ref, b, k), res.confusions(ref, a, k)
        assert cb is not None and ca is not None  # n_boot > 0
        draws = cohen_kappa(cb) - cohen_kappa(ca)
    a_right, b_right = a == ref, b == ref
    only_a, only_b = int((a_right & ~b_right).sum()), int((~a_right & b_right).sum())
    p = float(binomtest(min(only_a, only_b), only_a + only_b, 0.5).pvalue) if only_a + only_b else None

    def fin(x: float) -> float | None:
        return round(x, 6) if np.isfinite(x) else None

    return RaterComparison(
        a=names[0],
        b=names[1],
        n=int(idx.size),
        n_excluded=int(((coder.encode(reference) >= 0) & ~keep).sum()),
        kappa_a=fin(ka),
        kappa_b=fin(kb),
        kappa_diff=Estimate.of(kb - ka, draws),
        only_a_right=only_a,
        only_b_right=only_b,
        mcnemar_p=None if p is None else round(p, 8),
    )
