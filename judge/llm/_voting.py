"""How a panel turns votes into one label. Pure functions: no I/O, deterministic.

Rules (abstentions never count, for or against):
- ``majority``: the label with the most votes; equal top counts are a tie.
- ``unanimous``: every counted vote names the same label, else inconclusive (no tie-breaker:
  a tie-breaker would defeat the point of unanimity).
- ``weighted`` with a weights file that applies to the rubric and names a ``positive_label`` the
  rubric has: binary log-odds. Each vote adds log(tpr/(1-tnr)) if positive else
  log((1-tpr)/tnr) (rates clipped to [0.01, 0.99]) to ``prior_log_odds``; > 0 decides the
  positive label, < 0 the weighted plurality of the negative labels, 0 is a tie. Judges missing
  from the file add no term (and are reported). Otherwise: plurality weighted by ``weight``
  (missing judges weigh 1).
Ties are broken by the panel's tie-breaker judge, never by list order.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from judge.core._verdict import Vote
from judge.llm._weights import VoteWeights


class Tally(msgspec.Struct):
    label: str | None
    tied: list[str] = msgspec.field(default_factory=list)  # >1 labels: a tie the tie-breaker may settle
    reason: str = ""
    missing_weights: list[str] = msgspec.field(default_factory=list)


def counted(votes: Sequence[Vote]) -> list[Vote]:
    return [v for v in votes if not v.abstained and v.label is not None]


def _ballots(votes: Sequence[Vote]) -> list[tuple[str, str]]:
    """(judge, label) of every counted vote."""
    return [(v.judge, v.label) for v in votes if not v.abstained and v.label is not None]


def agreement(votes: Sequence[Vote], label: str | None) -> float | None:
    live = counted(votes)
    if label is None or not live:
        return None
    return round(sum(1 for v in live if v.label == label) / len(live), 6)


def tally(
    votes: Sequence[Vote],
    labels: Sequence[str],
    rule: str,
    rubric: str,
    weights: VoteWeights | None = None,
    min_votes: int = 1,
) -> Tally:
    live = _ballots(votes)
    if len(live) < min_votes:
        return Tally(None, reason=f"{len(live)} counted vote(s), {min_votes} needed (min_votes): too few judges answered to decide")
    order = {label: i for i, label in enumerate(labels)}
    if rule == "unanimous":
        names = sorted({label for _, label in live}, key=lambda x: order.get(x, len(order)))
        if len(names) == 1:
            return Tally(names[0], reason=f"unanimous: {len(live)} vote(s) for {names[0]}")
        return Tally(None, reason="not unanimous: " + _counts_text({n: float(sum(label == n for _, label in live)) for n in names}))
    scores: dict[str, float] = {}
    if rule == "weighted" and weights is not None:
        weights = weights.for_rubric(rubric)
        missing = sorted({judge for judge, _ in live if judge not in weights.judges})
        positive = weights.positive_label
        if weights.applies_to(rubric) and positive is not None and positive in order and weights.method == "log_odds":
            result = _log_odds(live, weights, positive, order)
        else:
            for judge, label in live:
                w = weights.judges[judge].weight if judge in weights.judges else 1.0
                scores[label] = scores.get(label, 0.0) + w
            result = _plurality(scores, order, "weighted plurality")
        result.missing_weights = missing
        return result
    for _, label in live:
        scores[label] = scores.get(label, 0.0) + 1.0
    return _plurality(scores, order, "majority")


def _plurality(scores: dict[str, float], order: dict[str, int], what: str) -> Tally:
    top = max(scores.values())
    best = sorted((label for label, s in scores.items() if abs(s - top) < 1e-12), key=lambda x: order.get(x, len(order)))
    text = _counts_text(scores)
    if len(best) == 1:
        return Tally(best[0], reason=f"{what}: {text}")
    return Tally(None, tied=best, reason=f"tie ({what}): {text}")


def _log_odds(live: list[tuple[str, str]], weights: VoteWeights, positive: str, order: dict[str, int]) -> Tally:
    total = weights.prior_log_odds
    negatives: dict[str, float] = {}
    for judge, label in live:
        entry = weights.judges.get(judge)
        is_pos = label == positive
        if not is_pos:
            negatives[label] = negatives.get(label, 0.0) + (entry.weight if entry else 1.0)
        term = entry.log_odds(is_pos) if entry else None
        if term is not None:
            total += term
    text = f"log-odds {total:+.4f} for {positive!r}"
    neg = _plurality(negatives, order, "weighted plurality of negative labels") if negatives else None
    if total > 1e-12:
        return Tally(positive, reason=text)
    if total < -1e-12:
        if neg is None:
            return Tally(None, reason=text + "; no judge named a negative label")
        if neg.label is None:
            return Tally(None, tied=neg.tied, reason=text + "; " + neg.reason)
        return Tally(neg.label, reason=text + f"; negative label {neg.label!r}")
    tied = [positive] + ([neg.label] if neg is not None and neg.label is not None else (neg.tied if neg else []))
    return Tally(None, tied=tied, reason=text + " (tie)")


def _counts_text(scores: dict[str, float]) -> str:
    def fmt(x: float) -> str:
        return str(int(x)) if float(x).is_integer() else f"{x:.3f}"

    return ", ".join(f"{label}={fmt(s)}" for label, s in sorted(scores.items()))
