"""Vote rules over a panel's recorded verdicts, and the learned (calibration-weighted) panels.

Votes are an (items, judges) int matrix: label index, or -1 for an abstention. Every rule returns a
label index per item, or -1 for *unresolved* (a tie, no votes, a split panel under unanimity): an
unresolved item is reported through coverage, never counted as a 'no'.

Learned panels are binary (positive label vs the rest) and fitted on a train split only:
- ``LogOddsPanel``: naive Bayes from each judge's TPR/TNR (Laplace-smoothed so a perfect judge on the
  train split gets a large finite weight, not infinity). Score = prior log-odds + sum over voting
  judges of log(TPR / (1 - TNR)) for a positive vote or log((1 - TPR) / TNR) for a negative one.
- ``LogisticPanel``: logistic regression over votes coded +1 / -1 / 0 (abstain): stacking weights
  that account for correlated judges, which naive Bayes double-counts.
- ``dawid_skene``: unsupervised EM over all items (no human labels), initialised from the train
  split's TPR/TNR; for comparison.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression

WEIGHTS_VERSION = 1


def plurality(votes: np.ndarray, k: int) -> np.ndarray:
    """Plain majority (plurality) vote; a tie for first place, or no votes, is unresolved (-1)."""
    counts = np.stack([(votes == lab).sum(axis=1) for lab in range(k)], axis=1)
    top = counts.max(axis=1)
    winners = (counts == top[:, None]).sum(axis=1)
    out = counts.argmax(axis=1)
    out[(winners > 1) | (top == 0)] = -1
    return out


def unanimous(votes: np.ndarray, k: int) -> np.ndarray:
    """Decided only when every non-abstaining judge gives the same label (and at least one votes)."""
    present = votes >= 0
    out = plurality(votes, k)
    agree = np.all((votes == out[:, None]) | ~present, axis=1) & present.any(axis=1)
    out[~agree] = -1
    return out


def signed_votes(votes: np.ndarray, positive: int = 0) -> np.ndarray:
    """+1 positive vote, -1 any other label, 0 abstention."""
    return np.where(votes < 0, 0, np.where(votes == positive, 1, -1)).astype(float)


def _decide(score: np.ndarray, negative: int) -> np.ndarray:
    return np.where(score > 0, 0, np.where(score < 0, negative, -1))


class LogOddsPanel:
    """Naive-Bayes log-odds weights from TPR/TNR measured on labelled (train) items."""

    method = "log_odds"

    def __init__(self, judges: Sequence[str], smoothing: float = 1.0):
        self.judges = list(judges)
        self.smoothing = smoothing

    def fit(self, votes: np.ndarray, truth: np.ndarray) -> LogOddsPanel:
        """``truth``: 1 positive, 0 negative; items without truth must be removed beforehand."""
        a = self.smoothing
        pos, neg = truth == 1, truth == 0
        self.tpr = np.array([((votes[pos, j] == 0).sum() + a) / ((votes[pos, j] >= 0).sum() + 2 * a) for j in range(votes.shape[1])])
        self.tnr = np.array([(((votes[neg, j] > 0)).sum() + a) / ((votes[neg, j] >= 0).sum() + 2 * a) for j in range(votes.shape[1])])
        self.n = np.array([(votes[:, j] >= 0).sum() for j in range(votes.shape[1])])
        prior = (pos.sum() + a) / (pos.sum() + neg.sum() + 2 * a)
        self.prior_log_odds = float(np.log(prior / (1 - prior)))
        self.w_pos = np.log(self.tpr / (1 - self.tnr))
        self.w_neg = np.log((1 - self.tpr) / self.tnr)
        return self

    def score(self, votes: np.ndarray) -> np.ndarray:
        s = signed_votes(votes)
        contrib = np.where(s > 0, self.w_pos, np.where(s < 0, self.w_neg, 0.0))
        return self.prior_log_odds + contrib.sum(axis=1)

    def predict(self, votes: np.ndarray, negative: int = 1) -> np.ndarray:
        return _decide(self.score(votes), negative)

    def weights_file(self, rubric: str | None, positive_label: str) -> dict:
        """The panel's weights file. Semantics: score = prior_log_odds + sum_j weight_j * s_j with
        s_j = +1 (positive vote) / -1 (other label) / 0 (abstained); positive iff score > 0.

        ``weight`` is half the judge's log diagnostic odds ratio, (w_pos - w_neg) / 2; the symmetric
        rest, (w_pos + w_neg) / 2 per judge, is folded into ``prior_log_odds``. That is exactly naive
        Bayes when every judge votes; a panel that loses a judge can subtract that judge's
        (w_pos + w_neg) / 2, computed from its ``tpr``/``tnr``, to stay exact.
        """
        half_dor = (self.w_pos - self.w_neg) / 2
        offset = (self.w_pos + self.w_neg) / 2
        return {
            "version": WEIGHTS_VERSION,
            "method": self.method,
            "rubric": rubric,
            "positive_label": positive_label,
            "prior_log_odds": round(self.prior_log_odds + float(offset.sum()), 6),
            "judges": {
                name: {"weight": round(float(half_dor[j]), 6), "tpr": round(float(self.tpr[j]), 6), "tnr": round(float(self.tnr[j]), 6), "n": int(self.n[j])}
                for j, name in enumerate(self.judges)
            },
        }


def score_with_weights_file(weights: dict, judges: Sequence[str], votes: np.ndarray) -> np.ndarray:
    """Apply a weights file the way a panel reads it (used to test that the file is faithful)."""
    w = np.array([weights["judges"][name]["weight"] for name in judges])
    return weights["prior_log_odds"] + signed_votes(votes) @ w


class LogisticPanel:
    """Stacking: L2-regularised logistic regression over signed votes (fixed solver, deterministic)."""

    method = "logistic"

    def __init__(self, judges: Sequence[str], c: float = 1.0):
        self.judges = list(judges)
        self.c = c

    def fit(self, votes: np.ndarray, truth: np.ndarray) -> LogisticPanel:
        self.model = LogisticRegression(C=self.c, solver="lbfgs", max_iter=1000).fit(signed_votes(votes), truth)
        return self

    def score(self, votes: np.ndarray) -> np.ndarray:
        return self.model.decision_function(signed_votes(votes))

    def predict(self, votes: np.ndarray, negative: int = 1) -> np.ndarray:
        return _decide(self.score(votes), negative)

    def coefficients(self) -> dict[str, float]:
        out = {name: round(float(c), 6) for name, c in zip(self.judges, self.model.coef_[0], strict=True)}
        out["(intercept)"] = round(float(self.model.intercept_[0]), 6)
        return out


def dawid_skene(votes: np.ndarray, init_tpr: np.ndarray, init_tnr: np.ndarray, init_prior: float, iters: int = 100, tol: float = 1e-8) -> np.ndarray:
    """Binary Dawid-Skene EM over all items (no labels used). Returns P(positive) per item."""
    s = signed_votes(votes)
    tpr, tnr, prior = init_tpr.copy(), init_tnr.copy(), init_prior
    eps = 1e-6
    post = np.full(len(votes), prior)
    for _ in range(iters):
        tpr, tnr = np.clip(tpr, eps, 1 - eps), np.clip(tnr, eps, 1 - eps)
        lp = np.log(prior) + np.where(s > 0, np.log(tpr), np.where(s < 0, np.log(1 - tpr), 0.0)).sum(axis=1)
        ln = np.log(1 - prior) + np.where(s > 0, np.log(1 - tnr), np.where(s < 0, np.log(tnr), 0.0)).sum(axis=1)
        new = 1 / (1 + np.exp(ln - lp))
        voted = s != 0
        tpr = ((s > 0) * new[:, None]).sum(axis=0) / np.maximum((voted * new[:, None]).sum(axis=0), eps)
        tnr = ((s < 0) * (1 - new)[:, None]).sum(axis=0) / np.maximum((voted * (1 - new)[:, None]).sum(axis=0), eps)
        prior = float(np.clip(new.mean(), eps, 1 - eps))
        done = np.max(np.abs(new - post)) < tol
        post = new
        if done:
            break
    return post


def write_weights(weights: dict, path: Path) -> None:
    Path(path).write_text(json.dumps(weights, indent=2, sort_keys=True) + "\n", encoding="utf-8")
