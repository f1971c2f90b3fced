"""Agreement of one rater (a judge or a vote rule) with the human reference, with bootstrap CIs.

Labels arrive as strings (None = abstained / unresolved / no consensus); ``LabelCoder`` turns them
into indices with the positive label at 0. Pairs with a missing side are left out of the statistics
and counted in ``n_missing`` / ``coverage``, never counted as a 'no'.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import krippendorff
import numpy as np
from pydantic import BaseModel, Field
from sklearn.metrics import cohen_kappa_score

from calibration import _stats as bs
from calibration import _stats as st


class Estimate(BaseModel):
    value: float | None
    ci_low: float | None = None
    ci_high: float | None = None

    @classmethod
    def of(cls, value: float, draws: np.ndarray | None) -> Estimate:
        v = None if value is None or not np.isfinite(value) else round(float(value), 6)
        if draws is None:
            return cls(value=v)
        lo, hi = bs.percentile_ci(draws)
        return cls(value=v, ci_low=None if lo is None else round(lo, 6), ci_high=None if hi is None else round(hi, 6))


class LabelScores(BaseModel):
    precision: float
    recall: float
    f1: float
    support: int  # reference items with this label


class AgreementStats(BaseModel):
    n: int  # pairs with both labels present
    n_missing: int  # reference present, rater missing (abstained / unresolved)
    coverage: float | None
    accuracy: Estimate
    balanced_accuracy: Estimate
    cohen_kappa: Estimate
    scott_pi: Estimate
    gwet_ac1: Estimate
    tpr: Estimate
    tnr: Estimate
    reference_positive_rate: Estimate
    rated_positive_rate: Estimate
    leniency: Estimate  # rated positive rate minus reference positive rate
    per_label: dict[str, LabelScores]
    confusion: list[list[int]]  # rows: reference label, columns: rated label, in ``labels`` order
    labels: list[str]


class LabelCoder:
    """Label strings <-> indices; the positive label is index 0."""

    def __init__(self, labels: Sequence[str]):
        self.labels = list(labels)
        self.index = {lab: i for i, lab in enumerate(self.labels)}

    def encode(self, values: Sequence[str | None]) -> np.ndarray:
        out = np.full(len(values), -1, dtype=np.int64)
        for i, v in enumerate(values):
            if v is not None:
                if v not in self.index:
                    raise ValueError(f"label {v!r} is not one of {self.labels}")
                out[i] = self.index[v]
        return out


class Resampler:
    """One shared cluster-bootstrap draw matrix for a set of items (paired across raters)."""

    def __init__(self, clusters: Sequence[str], n_boot: int, seed: int):
        self.cluster, self.n_clusters = bs.cluster_index(clusters)
        self.n_boot = n_boot
        self.weights = bs.draw_weights(self.n_clusters, n_boot, seed) if n_boot > 0 else None

    def confusions(self, reference: np.ndarray, rated: np.ndarray, k: int) -> np.ndarray | None:
        if self.weights is None:
            return None
        per_cluster = bs.cluster_confusions(self.cluster, self.n_clusters, reference, rated, k)
        return bs.bootstrap_confusions(self.weights, per_cluster, k)


def agreement(
    reference: Sequence[str | None],
    rated: Sequence[str | None],
    coder: LabelCoder,
    resampler: Resampler | None = None,
) -> AgreementStats:
    ref = coder.encode(reference)
    rat = coder.encode(rated)
    k = len(coder.labels)
    both = (ref >= 0) & (rat >= 0)
    cm = st.confusion_matrix(ref[both], rat[both], k)
    draws = resampler.confusions(ref, rat, k) if resampler is not None else None
    n = int(both.sum())

    def est(fn) -> Estimate:
        return Estimate.of(float(fn(cm)), None if draws is None else fn(draws))

    kappa_point = _sklearn_kappa(ref[both], rat[both], k)
    kappa = Estimate.of(kappa_point, None if draws is None else st.cohen_kappa(draws))
    tpr, tnr = st.tpr_tnr(cm)
    ref_rate, rat_rate = st.positive_rates(cm)
    dtpr: np.ndarray | None = None
    dtnr: np.ndarray | None = None
    dref: np.ndarray | None = None
    drat: np.ndarray | None = None
    if draws is not None:
        dtpr, dtnr = st.tpr_tnr(draws)
        dref, drat = st.positive_rates(draws)
    prec, rec, f1 = st.precision_recall_f1(cm)
    support = cm.sum(axis=1)
    n_ref = int((ref >= 0).sum())
    return AgreementStats(
        n=n,
        n_missing=n_ref - n,
        coverage=round(n / n_ref, 6) if n_ref else None,
        accuracy=est(st.accuracy),
        balanced_accuracy=est(st.balanced_accuracy),
        cohen_kappa=kappa,
        scott_pi=est(st.scott_pi),
        gwet_ac1=est(st.gwet_ac1),
        tpr=Estimate.of(float(tpr), dtpr),
        tnr=Estimate.of(float(tnr), dtnr),
        reference_positive_rate=Estimate.of(float(ref_rate), dref),
        rated_positive_rate=Estimate.of(float(rat_rate), drat),
        leniency=Estimate.of(float(rat_rate - ref_rate), None if drat is None or dref is None else drat - dref),
        per_label={
            lab: LabelScores(precision=round(float(prec[i]), 6), recall=round(float(rec[i]), 6), f1=round(float(f1[i]), 6), support=int(support[i]))
            for i, lab in enumerate(coder.labels)
        },
        confusion=cm.astype(int).tolist(),
        labels=coder.labels,
    )


def _sklearn_kappa(ref: np.ndarray, rat: np.ndarray, k: int) -> float:
    if ref.size == 0:
        return float("nan")
    cm = st.confusion_matrix(ref, rat, k)
    if math.isnan(float(st.cohen_kappa(cm))):  # undefined (both raters constant): NaN, no sklearn warning
        return float("nan")
    return float(cohen_kappa_score(ref, rat, labels=list(range(k))))


def krippendorff_alpha(ratings: Sequence[Sequence[str | None]], coder: LabelCoder) -> float | None:
    """Nominal Krippendorff's alpha over several raters (rows) x items (columns); None = missing."""
    data = np.array([coder.encode(r) for r in ratings], dtype=float)
    data[data < 0] = np.nan
    usable = np.isfinite(data).sum(axis=0) >= 2
    if usable.sum() == 0 or len(np.unique(data[:, usable][np.isfinite(data[:, usable])])) < 2:
        return None
    return round(float(krippendorff.alpha(reliability_data=data[:, usable], level_of_measurement="nominal")), 6)


class HumanCeiling(BaseModel):
    """How well humans agree with each other: the ceiling a judge can be expected to reach."""

    n_items: int  # items with >= 2 human labels
    pairwise_cohen_kappa: float | None  # mean over annotator pairs with >= 10 shared items
    pairwise_percent_agreement: float | None
    krippendorff_alpha: float | None
    annotator_pairs: int = 0
    per_pair: dict[str, float | None] = Field(default_factory=dict)


def human_ceiling(label_sets: Sequence[dict[str, str]], coder: LabelCoder, min_shared: int = 10) -> HumanCeiling | None:
    """``label_sets``: per item, {annotator: label}. None when no item has two annotators."""
    multi = [ls for ls in label_sets if len(ls) >= 2]
    if not multi:
        return None
    annotators = sorted({a for ls in multi for a in ls})
    ratings = [[ls.get(a) for ls in multi] for a in annotators]
    alpha = krippendorff_alpha(ratings, coder)
    kappas: dict[str, float | None] = {}
    agree_num = agree_den = 0
    for i, a in enumerate(annotators):
        for b in annotators[i + 1 :]:
            pairs = [(ls[a], ls[b]) for ls in multi if a in ls and b in ls]
            agree_num += sum(x == y for x, y in pairs)
            agree_den += len(pairs)
            if len(pairs) >= min_shared:
                x = coder.encode([p[0] for p in pairs])
                y = coder.encode([p[1] for p in pairs])
                kv = _sklearn_kappa(x, y, len(coder.labels))
                kappas[f"{a}|{b}"] = None if not np.isfinite(kv) else round(kv, 6)
    finite = [v for v in kappas.values() if v is not None]
    return HumanCeiling(
        n_items=len(multi),
        pairwise_cohen_kappa=round(float(np.mean(finite)), 6) if finite else None,
        pairwise_percent_agreement=round(agree_num / agree_den, 6) if agree_den else None,
        krippendorff_alpha=alpha,
        annotator_pairs=len(kappas),
        per_pair=kappas,
    )
