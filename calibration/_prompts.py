"""Prompt calibration: compare rubric versions, and pick few-shot examples without leaking the test set.

- ``compare_versions``: two recorded verdict columns of one gold set (e.g. ``gpt-4o@v1`` and
  ``gpt-4o@v2``) compared with a paired bootstrap on the kappa difference and McNemar's exact test.
- ``few_shot_experiment``: split the gold by cluster into train / dev / test; run the judge
  zero-shot on train; draw few-shot examples only from train items where the judge disagreed with
  the humans; choose the number of examples on dev; report baseline vs chosen once on test.

The judge is a callable ``run_judge(items, examples) -> {item id: label | None}`` so this module
works with the ``judge`` panel (wrap it) or with recorded verdicts in tests.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from calibration._agreement import LabelCoder
from calibration._compare import RaterComparison, compare_raters
from calibration._gold import GoldItem, GoldSet
from calibration._split import stratified_cluster_split
from calibration._stats import cohen_kappa, confusion_matrix


class FewShotExample(BaseModel):
    item_id: str
    rubric: str
    material: dict[str, Any]
    label: str  # the human label: what the judge should have said
    judge_label: str  # what the judge said without the example


JudgeRun = Callable[[Sequence[GoldItem], Sequence[FewShotExample]], Awaitable[dict[str, str | None]]]


def compare_versions(gold: GoldSet, judge_a: str, judge_b: str, *, n_boot: int = 1000, seed: int = 0) -> RaterComparison:
    missing = [j for j in (judge_a, judge_b) if j not in gold.judges]
    if missing:
        raise ValueError(f"no recorded verdicts for {missing}; judges in the gold set: {gold.judges}")
    coder = LabelCoder(gold.labels)
    return compare_raters(
        [it.human_label for it in gold.items],
        [it.judge_verdicts.get(judge_a) for it in gold.items],
        [it.judge_verdicts.get(judge_b) for it in gold.items],
        [it.cluster_key for it in gold.items],
        coder,
        names=(judge_a, judge_b),
        n_boot=n_boot,
        seed=seed,
    )


def select_few_shot(items: Sequence[GoldItem], judge_labels: dict[str, str | None], k: int, *, labels: Sequence[str], seed: int = 0) -> list[FewShotExample]:
    """Up to ``k`` disagreement items with inline material, round-robin over the human labels (in
    ``labels`` order) so the examples are balanced, at most one per cluster, seeded order."""
    rng = np.random.default_rng(seed)
    pools: dict[str, list[GoldItem]] = {lab: [] for lab in labels}
    for it in items:
        h, j = it.human_label, judge_labels.get(it.id)
        if it.material is not None and h is not None and j is not None and h != j and h in pools:
            pools[h].append(it)
    for lab in pools:
        pools[lab] = [pools[lab][i] for i in rng.permutation(len(pools[lab]))]
    out: list[FewShotExample] = []
    used_clusters: set[str] = set()
    while len(out) < k and any(pools.values()):
        for lab in labels:
            while pools[lab] and pools[lab][0].cluster_key in used_clusters:
                pools[lab].pop(0)
            if pools[lab] and len(out) < k:
                it = pools[lab].pop(0)
                used_clusters.add(it.cluster_key)
                out.append(FewShotExample(item_id=it.id, rubric=it.rubric, material=dict(it.material or {}), label=lab, judge_label=str(judge_labels[it.id])))
    return out


class FewShotResult(BaseModel):
    n_train: int
    n_dev: int
    n_test: int
    n_disagreements_train: int
    dev_kappa: dict[int, float | None]  # number of examples -> kappa on dev
    chosen_k: int
    examples: list[str]  # item ids of the chosen examples (all from train)
    test: RaterComparison  # a = zero-shot, b = chosen few-shot; measured once
    chosen_examples: list[FewShotExample] = Field(default_factory=list)  # the examples themselves (to write the tuned rubric)
    k_values: list[int] = Field(default_factory=list)  # the numbers of examples tried on dev (0 = zero-shot)


async def few_shot_experiment(
    gold: GoldSet,
    run_judge: JudgeRun,
    *,
    k_values: Sequence[int] = (2, 4, 8),
    fractions: tuple[float, float, float] = (0.5, 0.25, 0.25),
    seed: int = 0,
    n_boot: int = 1000,
) -> FewShotResult:
    items = [it for it in gold.items if it.human_label is not None]
    coder = LabelCoder(gold.labels)
    positive = [it.human_label == gold.positive_label for it in items]
    train_m, dev_m, test_m = stratified_cluster_split([it.cluster_key for it in items], positive, fractions, seed)
    train = [it for it, m in zip(items, train_m, strict=True) if m]
    dev = [it for it, m in zip(items, dev_m, strict=True) if m]
    test = [it for it, m in zip(items, test_m, strict=True) if m]

    def kappa(subset: Sequence[GoldItem], labels: dict[str, str | None]) -> float | None:
        ref = coder.encode([it.human_label for it in subset])
        rat = coder.encode([labels.get(it.id) for it in subset])
        ok = (ref >= 0) & (rat >= 0)
        v = float(cohen_kappa(confusion_matrix(ref[ok], rat[ok], len(coder.labels))))
        return round(v, 6) if np.isfinite(v) else None

    zero_train = await run_judge(train, [])
    disagreements = sum(1 for it in train if zero_train.get(it.id) is not None and zero_train[it.id] != it.human_label)
    dev_kappa: dict[int, float | None] = {0: kappa(dev, await run_judge(dev, []))}
    chosen: dict[int, list[FewShotExample]] = {0: []}
    for k in sorted(set(k_values) - {0}):
        examples = select_few_shot(train, zero_train, k, labels=coder.labels, seed=seed)
        chosen[k] = examples
        dev_kappa[k] = kappa(dev, await run_judge(dev, examples))

    def rank(k: int) -> tuple[float, int]:
        value = dev_kappa[k]
        return (-(value if value is not None else -2.0), k)

    best_k = min(dev_kappa, key=rank)
    base_test = await run_judge(test, [])
    chosen_test = base_test if best_k == 0 else await run_judge(test, chosen[best_k])
    comparison = compare_raters(
        [it.human_label for it in test],
        [base_test.get(it.id) for it in test],
        [chosen_test.get(it.id) for it in test],
        [it.cluster_key for it in test],
        coder,
        names=("zero_shot", f"few_shot_{best_k}"),
        n_boot=n_boot,
        seed=seed,
    )
    return FewShotResult(
        n_train=len(train),
        n_dev=len(dev),
        n_test=len(test),
        n_disagreements_train=disagreements,
        dev_kappa=dev_kappa,
        chosen_k=best_k,
        examples=[e.item_id for e in chosen[best_k]],
        test=comparison,
        chosen_examples=chosen[best_k],
        k_values=sorted(dev_kappa),
    )


class FewShotReport(BaseModel):
    judge: str
    rubric: str
    version: str  # the prompt version tuned
    base_version: str  # content hash of the rubric before tuning
    tuned_version: str  # content hash of the written rubric (what `judge grade --rubrics` records)
    folder: str | None  # the rubric folder written (None when the rubric cannot be written as a file)
    result: FewShotResult
