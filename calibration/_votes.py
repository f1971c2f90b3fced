"""Vote rules over a panel's recorded verdicts, and the learned (calibration-weighted) panels.

Votes are an (items, judges) int matrix: label index, or -1 for an abstention. Every rule returns a
label index per item, or -1 for *unresolved* (a tie, no votes, a split panel under unanimity): an
unresolved item is reported through coverage, never counted as a 'no'.

Learned panels are binary (positive label vs the rest) and fitted on a train split only:
- ``LogOddsPanel``: naive Bayes from each judge's TPR/TNR (Laplace-smoothed, then clipped to
  [0.01, 0.99] exactly as the judge panel reads them, so a perfect train record is not infinite). Score = prior log-odds + sum over voting
  judges of log(TPR / (1 - TNR)) for a positive vote or log((1 - TPR) / TNR) for a negative one.
- ``LogisticPanel``: logistic regression over votes coded +1 / -1 / 0 (abstain): stacking weights
  that account for correlated judges, which naive Bayes double-counts.
- ``dawid_skene``: unsupervised EM over all items (no human labels), initialised from the train
  split's TPR/TNR; for comparison.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression

from judge.llm import JudgeWeight

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
    """Naive-Bayes log-odds weights from TPR/TNR measured on labelled (train) items.

    The per-vote terms come from ``judge.JudgeWeight.log_odds`` -- the very function the judge panel
    applies to a weights file (rates clipped to [0.01, 0.99]) -- so what calibration scores on the
    held-out split is what the panel will decide.
    """

    method = "log_odds"

    def __init__(self, judges: Sequence[str], smoothing: float = 1.0):
        self.judges = list(judges)
        self.smoothing = smoothing

    def fit(self, votes: np.ndarray, truth: np.ndarray) -> LogOddsPanel:
        """``truth``: 1 positive, 0 negative; items without truth must be removed beforehand."""
        a = self.smoothing
        pos, neg = truth == 1, truth == 0
        cols = range(votes.shape[1])
        self.tpr = np.array([((votes[pos, j] == 0).sum() + a) / ((votes[pos, j] >= 0).sum() + 2 * a) for j in cols])
        self.tnr = np.array([((votes[neg, j] > 0).sum() + a) / ((votes[neg, j] >= 0).sum() + 2 * a) for j in cols])
        self.n = np.array([(votes[:, j] >= 0).sum() for j in cols])
        prior = (pos.sum() + a) / (pos.sum() + neg.sum() + 2 * a)
        self.prior_log_odds = float(np.log(prior / (1 - prior)))
        entries = [JudgeWeight(tpr=float(t), tnr=float(n)) for t, n in zip(self.tpr, self.tnr, strict=True)]
        self.w_pos = np.array([e.log_odds(True) for e in entries])
        self.w_neg = np.array([e.log_odds(False) for e in entries])
        return self

    def score(self, votes: np.ndarray) -> np.ndarray:
        s = signed_votes(votes)
        contrib = np.where(s > 0, self.w_pos, np.where(s < 0, self.w_neg, 0.0))
        return self.prior_log_odds + contrib.sum(axis=1)

    def predict(self, votes: np.ndarray, negative: int = 1) -> np.ndarray:
        return _decide(self.score(votes), negative)

    def weights_file(self, rubric: str | None, positive_label: str) -> dict:
        """The panel's weights file (read by ``judge.llm.load_weights``).

        Semantics (``judge.llm._voting``): score = prior_log_odds + sum over voting judges of
        log(tpr/(1-tnr)) for a positive vote, log((1-tpr)/tnr) otherwise; positive iff > 0.
        ``weight`` = the judge's log diagnostic odds ratio (>= 0; 0 for a judge no better than
        chance): its evidence strength, which the panel uses to rank negative labels.
        """
        dor = np.maximum(self.w_pos - self.w_neg, 0.0)
        return {
            "version": WEIGHTS_VERSION,
            "method": self.method,
            "rubric": rubric,
            "positive_label": positive_label,
            "prior_log_odds": round(self.prior_log_odds, 6),
            "judges": {
                name: {"weight": round(float(dor[j]), 6), "tpr": round(float(self.tpr[j]), 6), "tnr": round(float(self.tnr[j]), 6), "n": int(self.n[j])}
                for j, name in enumerate(self.judges)
            },
        }


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


def per_rubric_weights(files: Mapping[str, dict]) -> dict:
    """One weights file for a gold set calibrated per rubric: each rubric's ``weights_file`` as its
    entry under ``rubrics`` (read by ``judge.llm.VoteWeights.for_rubric``)."""
    methods = {w["method"] for w in files.values()}
    if len(methods) != 1:
        raise ValueError(f"per-rubric weights of one method only, got {sorted(methods)}")
    return {
        "version": WEIGHTS_VERSION,
        "method": methods.pop(),
        "rubric": None,
        "positive_label": None,
        "prior_log_odds": 0.0,
        "judges": {},
        "rubrics": {name: {k: w[k] for k in ("positive_label", "prior_log_odds", "judges")} for name, w in sorted(files.items())},
    }


def write_weights(weights: dict, path: Path) -> None:
    Path(path).write_text(json.dumps(weights, indent=2, sort_keys=True) + "\n", encoding="utf-8")
