"""Train / held-out splits that keep clusters whole and balance the clusters' human positive share.

Why: learning panel weights on half of the questions and reporting on the other half is only honest
if no question appears on both sides (its eight answers are correlated) and both halves see the same
mix of easy (all right / all wrong) and mixed questions. Deterministic for a seed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np


def stratified_cluster_split(
    clusters: Sequence[str],
    positive: Sequence[bool | None],
    fractions: Sequence[float] = (0.5, 0.5),
    seed: int = 0,
) -> list[np.ndarray]:
    """Boolean masks over items, one per fraction; every cluster lands in exactly one part.

    Clusters are grouped into strata by their share of human positives (rounded to tenths), shuffled
    within a stratum with ``seed``, and dealt out by cumulative fractions, so each stratum is split
    in (nearly) the requested proportions.
    """
    if not fractions or any(f <= 0 for f in fractions) or abs(sum(fractions) - 1.0) > 1e-9:
        raise ValueError(f"fractions must be positive and sum to 1, got {list(fractions)}")
    members: dict[str, list[int]] = defaultdict(list)
    for i, c in enumerate(clusters):
        members[c].append(i)
    share: dict[str, float] = {}
    for c, idx in members.items():
        vals = [bool(p) for i in idx if (p := positive[i]) is not None]
        share[c] = round(sum(vals) / len(vals), 1) if vals else -1.0
    rng = np.random.default_rng(seed)
    bounds = np.cumsum(fractions)
    part_of: dict[str, int] = {}
    for stratum in sorted(set(share.values())):
        names = sorted(c for c in members if share[c] == stratum)
        names = [names[j] for j in rng.permutation(len(names))]
        # Position j of m goes to the part holding quantile (j + offset) / m: each stratum is split in
        # proportion, and the random offset decides where the remainder (e.g. a lone cluster) goes.
        offset = rng.random()
        for j, c in enumerate(names):
            u = ((j + offset) / len(names)) % 1.0
            part_of[c] = min(int(np.searchsorted(bounds, u, side="right")), len(fractions) - 1)
    masks = [np.zeros(len(clusters), dtype=bool) for _ in fractions]
    for c, idx in members.items():
        masks[part_of[c]][idx] = True
    return masks
