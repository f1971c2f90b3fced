"""Prompt versions compared on one gold set: per version agreement with CIs, paired tests, and how
many items would tell two versions apart.

A winner is named only when both paired tests agree: McNemar's exact p (Holm-adjusted over the
pairs compared for one judge) is below ``alpha`` *and* the paired cluster-bootstrap CI of the kappa
difference excludes 0, on the same side. Otherwise the versions are "indistinguishable on this gold
set", and the report gives the number of items a McNemar test would need to tell them apart at the
observed discordance (Connor 1987):

    n = (z_{1-alpha/2} * sqrt(psi) + z_{power} * sqrt(psi - delta^2))^2 / delta^2

with psi = (b + c) / n the share of discordant items and delta = (c - b) / n the difference of the
two discordant cells (b: only A right, c: only B right). It assumes independent items: clustered
items (several answers to one question) need more, by the design effect. With delta = 0 no number
of items separates the versions at the observed rates, and the report says so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from pydantic import BaseModel, Field
from scipy.stats import norm

from calibration._agreement import AgreementStats, Estimate, LabelCoder, Resampler, agreement
from calibration._compare import RaterComparison, compare_raters
from calibration._gold import GoldSet
from calibration._stats import percentile_ci

ALPHA = 0.05
POWER = 0.8


class VersionStats(BaseModel):
    version: str
    judge: str
    rubric_versions: dict[str, str]  # rubric name -> content hash used by this version
    stats: AgreementStats  # accuracy, kappa with CIs, confusion counts (rows: human label)
    confusion_rates: list[list[Estimate]]  # P(judge label | human label) with CIs, rows/cols in ``stats.labels`` order


class SampleSize(BaseModel):
    items_needed: int | None  # None: no difference observed, no sample size separates them
    discordant_share: float
    difference: float  # (only b right - only a right) / n
    alpha: float = ALPHA
    power: float = POWER
    method: str = "McNemar, Connor (1987), from the observed discordant cells; independent items assumed"


class VersionComparison(BaseModel):
    judge: str
    a: str
    b: str
    identical_prompts: bool  # every rubric the gold uses has the same version in both
    test: RaterComparison
    mcnemar_p_holm: float | None
    significant: bool
    winner: str | None
    conclusion: str
    sample_size: SampleSize | None = None


class PromptVersionReport(BaseModel):
    versions: list[str]
    judges: list[str]
    per_version: list[VersionStats]
    comparisons: list[VersionComparison]
    notes: list[str] = Field(default_factory=list)


def mcnemar_items_needed(only_a: int, only_b: int, n: int, *, alpha: float = ALPHA, power: float = POWER) -> SampleSize | None:
    if n <= 0:
        return None
    psi, delta = (only_a + only_b) / n, (only_b - only_a) / n
    if delta == 0:
        return SampleSize(items_needed=None, discordant_share=round(psi, 6), difference=0.0, alpha=alpha, power=power)
    za, zb = norm.ppf(1 - alpha / 2), norm.ppf(power)
    needed = (za * math.sqrt(psi) + zb * math.sqrt(max(psi - delta * delta, 0.0))) ** 2 / (delta * delta)
    return SampleSize(items_needed=math.ceil(needed), discordant_share=round(psi, 6), difference=round(delta, 6), alpha=alpha, power=power)


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm-Bonferroni adjusted p-values (None stays None and does not count as a test)."""
    present = sorted((p, i) for i, p in enumerate(pvalues) if p is not None)
    m = len(present)
    out: list[float | None] = [None] * len(pvalues)
    running = 0.0
    for rank, (p, i) in enumerate(present):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = round(running, 8)
    return out


def confusion_rates(reference: Sequence[str | None], rated: Sequence[str | None], coder: LabelCoder, resampler: Resampler | None) -> list[list[Estimate]]:
    ref, rat = coder.encode(reference), coder.encode(rated)
    k = len(coder.labels)
    ok = (ref >= 0) & (rat >= 0)
    cm = np.bincount(ref[ok] * k + rat[ok], minlength=k * k).reshape(k, k).astype(float)
    draws = resampler.confusions(ref, rat, k) if resampler is not None else None
    with np.errstate(divide="ignore", invalid="ignore"):
        point = cm / cm.sum(axis=1, keepdims=True)
        rates = None if draws is None else draws / draws.sum(axis=2, keepdims=True)
    out = []
    for i in range(k):
        row = []
        for j in range(k):
            value = None if not np.isfinite(point[i, j]) else round(float(point[i, j]), 6)
            lo, hi = (None, None) if rates is None else percentile_ci(rates[:, i, j])
            row.append(Estimate(value=value, ci_low=None if lo is None else round(lo, 6), ci_high=None if hi is None else round(hi, 6)))
        out.append(row)
    return out


def compare_prompt_versions(
    gold: GoldSet,
    labels: Mapping[str, Mapping[str, Mapping[str, str | None]]],
    rubric_versions: Mapping[str, Mapping[str, str]],
    *,
    n_boot: int = 1000,
    seed: int = 0,
    alpha: float = ALPHA,
    power: float = POWER,
) -> PromptVersionReport:
    """``labels[version][judge][item id]``: each judge's label under each prompt version (None: abstained).
    ``rubric_versions[version][rubric]``: the content hash each version used. Every pair of versions
    is compared per judge (paired on the same items)."""
    versions = list(labels)
    judges = sorted({j for v in labels.values() for j in v})
    items = gold.items
    coder = LabelCoder(gold.labels)
    truth = [it.human_label for it in items]
    clusters = [it.cluster_key for it in items]
    resampler = Resampler(clusters, n_boot, seed)
    used = set(gold.rubrics)
    per_version = []
    for v in versions:
        for j in judges:
            rated = [labels[v].get(j, {}).get(it.id) for it in items]
            per_version.append(
                VersionStats(
                    version=v,
                    judge=j,
                    rubric_versions={r: h for r, h in rubric_versions[v].items() if r in used},
                    stats=agreement(truth, rated, coder, resampler),
                    confusion_rates=confusion_rates(truth, rated, coder, resampler),
                )
            )
    comparisons = []
    for j in judges:
        pairs = [(a, b) for i, a in enumerate(versions) for b in versions[i + 1 :]]
        tests = [
            compare_raters(
                truth,
                [labels[a].get(j, {}).get(it.id) for it in items],
                [labels[b].get(j, {}).get(it.id) for it in items],
                clusters,
                coder,
                names=(a, b),
                n_boot=n_boot,
                seed=seed,
            )
            for a, b in pairs
        ]
        adjusted = holm([t.mcnemar_p for t in tests])
        for (a, b), test, p_adj in zip(pairs, tests, adjusted, strict=True):
            identical = all(rubric_versions[a].get(r) == rubric_versions[b].get(r) for r in used)
            comparisons.append(_conclude(j, a, b, identical, test, p_adj, alpha, power))
    notes = []
    if any(c.identical_prompts for c in comparisons):
        notes.append("versions with identical prompts (same content hash for every rubric this gold set uses) are compared too, as a control")
    return PromptVersionReport(versions=versions, judges=judges, per_version=per_version, comparisons=comparisons, notes=notes)


def _conclude(judge: str, a: str, b: str, identical: bool, test: RaterComparison, p_adj: float | None, alpha: float, power: float) -> VersionComparison:
    d = test.kappa_diff
    ci_excludes_zero = d.ci_low is not None and d.ci_high is not None and (d.ci_low > 0 or d.ci_high < 0)
    direction_ok = d.value is not None and ((d.value > 0) == (test.only_b_right > test.only_a_right))
    significant = p_adj is not None and p_adj < alpha and ci_excludes_zero and direction_ok
    winner = (b if (d.value or 0) > 0 else a) if significant else None
    size = None
    if significant:
        conclusion = (
            f"{winner} agrees with the humans better (kappa {test.kappa_a} -> {test.kappa_b}, difference {d.value} "
            f"[{d.ci_low}, {d.ci_high}]; McNemar exact p {p_adj} after Holm, {test.only_a_right} vs {test.only_b_right} discordant items)"
        )
    else:
        size = mcnemar_items_needed(test.only_a_right, test.only_b_right, test.n, alpha=alpha, power=power)
        if test.only_a_right + test.only_b_right == 0:
            tail = "the two versions gave the same verdict on every item"
        elif size is None or size.items_needed is None:
            tail = "both versions were right on as many items as the other: no number of items separates them at these rates"
        else:
            tail = f"about {size.items_needed} items would be needed to tell them apart (McNemar, alpha {alpha}, power {power}, at the observed discordance)"
        conclusion = f"indistinguishable on this gold set ({test.n} items): {tail}"
    return VersionComparison(
        judge=judge,
        a=a,
        b=b,
        identical_prompts=identical,
        test=test,
        mcnemar_p_holm=p_adj,
        significant=significant,
        winner=winner,
        conclusion=conclusion,
        sample_size=size,
    )
