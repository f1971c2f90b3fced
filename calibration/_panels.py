"""Panel evaluation: fixed vote rules on all items, learned panels trained on one split, scored on the other.

The held-out comparison is the product's argument: a plain majority of unequal judges is worse than
the best single judge; a calibration-weighted panel earns its weights on train questions and is
scored on questions it never saw. Nothing is tuned on the held-out split; the split-to-split spread
(other seeds) is reported beside the headline so one lucky split cannot carry the claim.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel

from calibration._agreement import AgreementStats, Estimate, LabelCoder, Resampler, agreement
from calibration._compare import RaterComparison, compare_raters
from calibration._split import stratified_cluster_split
from calibration._stats import cohen_kappa, confusion_matrix, corrected_pass_rate, positive_rates, tpr_tnr
from calibration._votes import LogisticPanel, LogOddsPanel, dawid_skene, plurality, unanimous

FIXED_RULES = ("majority", "unanimous")
LEARNED_RULES = ("weighted_log_odds", "logistic_stacking", "dawid_skene")


class SplitSpread(BaseModel):
    seeds: list[int]
    kappa_mean: dict[str, float]
    kappa_min: dict[str, float]
    kappa_max: dict[str, float]


class CorrectedPassRate(BaseModel):
    """A judge's held-out pass rate corrected with TPR/TNR measured on the train split only.

    On the items a judge was calibrated on, the correction returns the human rate by construction;
    only on unseen items does it show whether correcting a judge's pass rate works.
    """

    observed: float | None  # judge positive rate on held-out items
    corrected: Estimate  # CI: held-out draws of the rate x train draws of TPR/TNR
    human: float | None  # human positive rate on the same held-out items
    tpr_train: float | None
    tnr_train: float | None


class HeldOutEvaluation(BaseModel):
    seed: int
    train_fraction: float
    n_train: int
    n_held_out: int
    clusters_train: int
    clusters_held_out: int
    best_single_judge: str  # chosen by kappa on the train split
    rules: dict[str, AgreementStats]  # scored on the held-out split only
    logistic_coefficients: dict[str, float]
    weights: dict  # the weights file (log-odds, learned on train)
    comparisons: list[RaterComparison]  # paired, held-out: weighted panel (b) vs other rules (a)
    corrected_pass_rates: dict[str, CorrectedPassRate]
    spread: SplitSpread | None = None


def encode_votes(verdicts: Sequence[dict[str, str | None]], judges: Sequence[str], coder: LabelCoder) -> np.ndarray:
    return np.stack([coder.encode([v.get(j) for v in verdicts]) for j in judges], axis=1) if judges else np.zeros((len(verdicts), 0), dtype=np.int64)


def decode(pred: np.ndarray, coder: LabelCoder) -> list[str | None]:
    return [None if p < 0 else coder.labels[p] for p in pred]


def fixed_rule(name: str, votes: np.ndarray, k: int) -> np.ndarray:
    return {"majority": plurality, "unanimous": unanimous}[name](votes, k)


def _kappa(truth: np.ndarray, pred: np.ndarray, k: int) -> float:
    ok = (truth >= 0) & (pred >= 0)
    return float(cohen_kappa(confusion_matrix(truth[ok], pred[ok], k)))


def _learned_predictions(
    votes: np.ndarray, truth: np.ndarray, train: np.ndarray, judges: Sequence[str], k: int
) -> tuple[dict[str, np.ndarray], LogOddsPanel, LogisticPanel, int]:
    """Fit on ``train`` items with a reference label; predict every item."""
    fit_rows = train & (truth >= 0)
    binary_truth = (truth[fit_rows] == 0).astype(int)
    nb = LogOddsPanel(judges).fit(votes[fit_rows], binary_truth)
    lr = LogisticPanel(judges).fit(votes[fit_rows], binary_truth)
    post = dawid_skene(votes, nb.tpr, nb.tnr, float(1 / (1 + np.exp(-nb.prior_log_odds))))
    ds = np.where(post > 0.5, 0, np.where(post < 0.5, 1, -1))
    train_kappas = [_kappa(truth[fit_rows], votes[fit_rows, j], k) for j in range(len(judges))]
    best = int(np.nanargmax(train_kappas))
    preds = {
        "weighted_log_odds": nb.predict(votes),
        "logistic_stacking": lr.predict(votes),
        "dawid_skene": ds,
        "majority": plurality(votes, k),
        "unanimous": unanimous(votes, k),
        f"best_single:{judges[best]}": votes[:, best],
    }
    return preds, nb, lr, best


def held_out_evaluation(
    truth_labels: Sequence[str | None],
    verdicts: Sequence[dict[str, str | None]],
    clusters: Sequence[str],
    judges: Sequence[str],
    coder: LabelCoder,
    *,
    rubric: str | None,
    seed: int = 0,
    train_fraction: float = 0.5,
    n_boot: int = 1000,
    spread_seeds: int = 20,
) -> HeldOutEvaluation:
    if len(coder.labels) != 2:
        raise ValueError(f"learned panels are binary; labels are {coder.labels}")
    truth = coder.encode(truth_labels)
    votes = encode_votes(verdicts, judges, coder)
    positive = [None if t < 0 else bool(t == 0) for t in truth]
    train, held = stratified_cluster_split(clusters, positive, (train_fraction, 1 - train_fraction), seed)
    preds, nb, lr, best = _learned_predictions(votes, truth, train, judges, 2)
    held_idx = np.flatnonzero(held)
    resampler = Resampler([clusters[int(i)] for i in held_idx], n_boot, seed)
    held_truth = decode(truth[held_idx], coder)
    rules = {name: agreement(held_truth, decode(p[held_idx], coder), coder, resampler) for name, p in preds.items()}
    held_clusters = [clusters[int(i)] for i in held_idx]
    weighted = decode(preds["weighted_log_odds"][held_idx], coder)
    comparisons = [
        compare_raters(
            held_truth, decode(preds[other][held_idx], coder), weighted, held_clusters, coder, names=(other, "weighted_log_odds"), n_boot=n_boot, seed=seed
        )
        for other in (f"best_single:{judges[best]}", "majority", "logistic_stacking")
    ]
    corrected = _corrected_pass_rates(truth, votes, clusters, judges, train, held, n_boot=n_boot, seed=seed)
    spread = None
    if spread_seeds > 0:
        seeds = [seed + 1 + i for i in range(spread_seeds)]
        kappas: dict[str, list[float]] = {}
        for s in seeds:
            tr, ho = stratified_cluster_split(clusters, positive, (train_fraction, 1 - train_fraction), s)
            p, _, _, _ = _learned_predictions(votes, truth, tr, judges, 2)
            for name, pred in p.items():
                key = "best_single" if name.startswith("best_single:") else name
                kappas.setdefault(key, []).append(_kappa(truth[ho], pred[ho], 2))
        spread = SplitSpread(
            seeds=seeds,
            kappa_mean={k: round(float(np.mean(v)), 6) for k, v in kappas.items()},
            kappa_min={k: round(float(np.min(v)), 6) for k, v in kappas.items()},
            kappa_max={k: round(float(np.max(v)), 6) for k, v in kappas.items()},
        )
    return HeldOutEvaluation(
        seed=seed,
        train_fraction=train_fraction,
        n_train=int(train.sum()),
        n_held_out=int(held.sum()),
        clusters_train=len({clusters[int(i)] for i in np.flatnonzero(train)}),
        clusters_held_out=len({clusters[int(i)] for i in held_idx}),
        best_single_judge=judges[best],
        rules=rules,
        logistic_coefficients=lr.coefficients(),
        weights=nb.weights_file(rubric, coder.labels[0]),
        comparisons=comparisons,
        corrected_pass_rates=corrected,
        spread=spread,
    )


def _corrected_pass_rates(
    truth: np.ndarray, votes: np.ndarray, clusters: Sequence[str], judges: Sequence[str], train: np.ndarray, held: np.ndarray, *, n_boot: int, seed: int
) -> dict[str, CorrectedPassRate]:
    tr_idx, ho_idx = np.flatnonzero(train), np.flatnonzero(held)
    tr_res = Resampler([clusters[int(i)] for i in tr_idx], n_boot, seed + 1)  # independent of the held-out draws
    ho_res = Resampler([clusters[int(i)] for i in ho_idx], n_boot, seed)
    out = {}
    for j, name in enumerate(judges):
        cm_tr = confusion_matrix(*_both(truth[tr_idx], votes[tr_idx, j]), 2)
        cm_ho = confusion_matrix(*_both(truth[ho_idx], votes[ho_idx, j]), 2)
        tpr, tnr = (float(x) for x in tpr_tnr(cm_tr))
        human, observed = (float(x) for x in positive_rates(cm_ho))
        draws: np.ndarray | None = None
        if n_boot > 0:
            c_tr, c_ho = tr_res.confusions(truth[tr_idx], votes[tr_idx, j], 2), ho_res.confusions(truth[ho_idx], votes[ho_idx, j], 2)
            assert c_tr is not None and c_ho is not None  # n_boot > 0
            d_tpr, d_tnr = tpr_tnr(c_tr)
            _, d_obs = positive_rates(c_ho)
            draws = np.asarray(corrected_pass_rate(d_obs, d_tpr, d_tnr))
        out[name] = CorrectedPassRate(
            observed=_r(observed),
            corrected=Estimate.of(float(corrected_pass_rate(observed, tpr, tnr)), draws),
            human=_r(human),
            tpr_train=_r(tpr),
            tnr_train=_r(tnr),
        )
    return out


def _both(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    ok = (a >= 0) & (b >= 0)
    return a[ok], b[ok]


def _r(x: float) -> float | None:
    return round(x, 6) if np.isfinite(x) else None
