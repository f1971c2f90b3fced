"""Self-preference from recorded verdicts: is a judge more lenient towards its own model family?

Leniency on an item set = judge positive rate - human positive rate. The probe compares leniency on
items produced by the judge's own family with leniency on the other items; the difference gets a
paired cluster-bootstrap CI. Flagged when the whole CI lies above zero. Family = the first run of
letters of the model name after any ``provider:`` or ``org/`` prefix (``Llama3-70B`` and
``llama2-13b-chat`` are both ``llama``; ``openai:gpt-4o`` and ``gpt-4t`` are both ``gpt``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel

from calibration._agreement import Estimate
from calibration._stats import cluster_index, draw_weights


def model_family(name: str) -> str | None:
    tail = re.split(r"[:/]", name.strip())[-1].lower()
    m = re.match(r"[a-z]+", tail)
    return m.group(0) if m else None


class SelfPreference(BaseModel):
    judge: str
    family: str | None
    n_same: int
    n_other: int
    leniency_same: float | None
    leniency_other: float | None
    difference: Estimate  # leniency_same - leniency_other
    flagged: bool


def self_preference(
    judge: str,
    judge_positive: Sequence[bool | None],
    human_positive: Sequence[bool | None],
    agents: Sequence[str | None],
    clusters: Sequence[str],
    *,
    n_boot: int = 1000,
    seed: int = 0,
) -> SelfPreference | None:
    """None when the judge's family cannot be told or no item comes from that family."""
    fam = model_family(judge)
    if fam is None:
        return None
    ok = np.array([j is not None and h is not None and a is not None for j, h, a in zip(judge_positive, human_positive, agents, strict=True)])
    same = ok & np.array([a is not None and model_family(a) == fam for a in agents])
    other = ok & ~same
    if not same.any() or not other.any():
        return None
    jp = np.array([bool(j) for j in judge_positive], dtype=float)
    hp = np.array([bool(h) for h in human_positive], dtype=float)
    cl, n_cl = cluster_index(clusters)

    def sums(mask: np.ndarray) -> np.ndarray:
        # per cluster: [count, judge positives, human positives]
        out = np.zeros((n_cl, 3))
        np.add.at(out, cl[mask], np.stack([np.ones(mask.sum()), jp[mask], hp[mask]], axis=1))
        return out

    s_same, s_other = sums(same), sums(other)

    def lenient(tot: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return (tot[..., 1] - tot[..., 2]) / tot[..., 0]

    point_same, point_other = float(lenient(s_same.sum(axis=0))), float(lenient(s_other.sum(axis=0)))
    draws = None
    if n_boot > 0:
        w = draw_weights(n_cl, n_boot, seed)
        draws = lenient(w @ s_same) - lenient(w @ s_other)
    diff = Estimate.of(point_same - point_other, draws)
    flagged = diff.ci_low is not None and diff.ci_low > 0
    return SelfPreference(
        judge=judge,
        family=fam,
        n_same=int(same.sum()),
        n_other=int(other.sum()),
        leniency_same=round(point_same, 6),
        leniency_other=round(point_other, 6),
        difference=diff,
        flagged=bool(flagged),
    )
