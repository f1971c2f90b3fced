"""Calibrating on part of a gold set: ``--limit N`` (the first N items, in file order) or
``--sample N`` (a seeded random sample of N items).

Why: a live judge that takes seconds per call needs hours for thousands of items; a first look at
a few hundred tells whether the rest is worth it.

The sample is stratified by rubric and by the human (consensus) label, with proportional shares
(largest remainder), so it keeps each rubric's label mix; when N is at least the number of strata,
every stratum keeps at least one item, so a small sample of a skewed set still holds both classes
(without that, agreement statistics such as kappa or TPR / TNR cannot be computed). Items whose
annotators tie form a stratum of their own. Within a stratum items are drawn with
``numpy.random.default_rng(seed)``, strata in sorted order: the same gold file, N and seed give
the same items. Either way the chosen items keep their file order.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from typing import Literal

import numpy as np
from pydantic import BaseModel

from calibration._gold import GoldItem, GoldSet

NO_CONSENSUS = "(no consensus)"


class SubsetStratum(BaseModel):
    rubric: str
    human_label: str  # the consensus label, or NO_CONSENSUS when the annotators tie
    available: int
    chosen: int


class GoldSubset(BaseModel):
    """Which items of the gold set the calibration used (recorded in calibration.json / .md)."""

    how: Literal["limit", "sample"]
    requested: int  # N of --limit N / --sample N
    seed: int | None  # the sample's seed; None for --limit
    stratified_by: list[str]  # what the sample's strata are ([] for --limit)
    n_available: int  # items of the gold set (after --rubric)
    n_items: int  # items chosen
    strata: list[SubsetStratum]  # per (rubric, human label): available and chosen
    item_ids: list[str]  # the chosen items, in file order

    def describe(self) -> str:
        if self.how == "limit":
            what = f"the first {self.n_items} of {self.n_available} items in file order (--limit {self.requested})"
        else:
            what = f"a random sample of {self.n_items} of {self.n_available} items (--sample {self.requested} --seed {self.seed}, stratified by rubric and human label)"
        if self.requested > self.n_available:
            what += f"; {self.requested} asked for, the gold set holds {self.n_available}"
        return what


def _stratum(item: GoldItem) -> tuple[str, str]:
    label = item.human_label
    return item.rubric, NO_CONSENSUS if label is None else label


def proportional_allocation(sizes: Mapping[tuple[str, str], int], n: int) -> dict[tuple[str, str], int]:
    """``n`` items over strata in proportion to their sizes (largest remainder, ties in key order),
    capped by each size; with ``n`` at least the number of non-empty strata, each keeps one."""
    keys = sorted(k for k, s in sizes.items() if s > 0)
    total = sum(sizes[k] for k in keys)
    if n >= total:
        return {k: sizes[k] for k in keys}
    quota = {k: n * sizes[k] / total for k in keys}
    out = {k: math.floor(quota[k]) for k in keys}
    if n >= len(keys):
        for k in keys:
            out[k] = max(out[k], 1)
    while sum(out.values()) > n:  # the minimum of one overshot: take back where it costs least
        k = max((k for k in keys if out[k] > 1), key=lambda k: (out[k] - quota[k], -keys.index(k)))
        out[k] -= 1
    while sum(out.values()) < n:
        k = max((k for k in keys if out[k] < sizes[k]), key=lambda k: (quota[k] - out[k], -keys.index(k)))
        out[k] += 1
    return out


def select_subset(gold: GoldSet, *, limit: int | None = None, sample: int | None = None, seed: int = 0) -> tuple[GoldSet, GoldSubset | None]:
    """The gold set cut to ``limit`` or ``sample`` items (at most one of them), and what was chosen."""
    if limit is not None and sample is not None:
        raise ValueError("give either --limit N or --sample N, not both")
    if limit is None and sample is None:
        return gold, None
    n = limit if limit is not None else sample
    assert n is not None
    if n < 1:
        raise ValueError(f"{'--limit' if limit is not None else '--sample'} wants N >= 1, got {n}")
    items = gold.items
    members: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, it in enumerate(items):
        members[_stratum(it)].append(i)
    if limit is not None:
        keep = set(range(min(limit, len(items))))
    else:
        alloc = proportional_allocation({k: len(v) for k, v in members.items()}, n)
        rng = np.random.default_rng(seed)
        keep = set()
        for key in sorted(members):
            pool = members[key]
            keep.update(pool[j] for j in rng.choice(len(pool), size=alloc[key], replace=False))
    chosen = [it for i, it in enumerate(items) if i in keep]
    strata = [SubsetStratum(rubric=k[0], human_label=k[1], available=len(v), chosen=sum(1 for i in v if i in keep)) for k, v in sorted(members.items())]
    subset = GoldSubset(
        how="limit" if limit is not None else "sample",
        requested=n,
        seed=None if limit is not None else seed,
        stratified_by=[] if limit is not None else ["rubric", "human label"],
        n_available=len(items),
        n_items=len(chosen),
        strata=strata,
        item_ids=[it.id for it in chosen],
    )
    return gold.model_copy(update={"items": chosen}), subset


__all__ = ["NO_CONSENSUS", "GoldSubset", "SubsetStratum", "proportional_allocation", "select_subset"]
