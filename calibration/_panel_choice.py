"""The cheapest judge or panel that is good enough: every subset of the calibrated judges under every
vote rule, scored on a held-out split, priced per 1,000 escalated cases.

Good enough = the lower end of the held-out kappa's 95% cluster-bootstrap CI meets the target, and
the panel decides at least ``min_coverage`` of the held-out items (a rule that leaves many ties
unresolved would look accurate on the few it decides). Weighted panels learn their log-odds weights
on the train split only, exactly as ``judge calibrate`` writes them for the panel. Among the
candidates that qualify the cheapest wins; equal costs go to the higher lower bound, then fewer
judges. A panel pays every judge on every escalated case, so its cost per case is the sum of its
judges' mean cost per call: measured tokens of this calibration's live calls at the configured
prices, or (recorded verdicts) the prompt length / 4 plus a typical verdict's output tokens,
flagged as estimated.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

import numpy as np
import tomli_w
from pydantic import BaseModel, Field

from calibration._agreement import Estimate, LabelCoder, Resampler, agreement
from calibration._gold import GoldSet
from calibration._panels import decode, encode_votes
from calibration._split import stratified_cluster_split
from calibration._votes import LogOddsPanel, plurality, unanimous

MIN_COVERAGE = 0.95
ESTIMATED_OUTPUT_TOKENS = 150
PANEL_NAME = "calibrated"


class JudgeCost(BaseModel):
    judge: str
    input_tokens_per_call: float | None
    output_tokens_per_call: float | None
    usd_per_call: float | None  # None: no price configured for this judge
    basis: str  # measured | estimated | no price


class PanelCandidate(BaseModel):
    judges: list[str]
    rule: str  # single | majority | unanimous | weighted
    coverage: float | None
    kappa: Estimate  # held-out, with cluster-bootstrap CI
    accuracy: Estimate
    usd_per_1000_cases: float | None
    meets_target: bool


class PanelChoice(BaseModel):
    target_kappa: float
    min_coverage: float
    seed: int
    n_train: int
    n_held_out: int
    costs: dict[str, JudgeCost]
    candidates: list[PanelCandidate]  # cheapest first (unknown cost last)
    chosen: PanelCandidate | None
    conclusion: str
    weights: dict | None = None  # the chosen weighted panel's weights file (train split)
    notes: list[str] = Field(default_factory=list)


def judge_cost(judge: str, price: tuple[float, float] | None, input_tokens: float | None, output_tokens: float | None, *, measured: bool) -> JudgeCost:
    if price is None:
        return JudgeCost(judge=judge, input_tokens_per_call=input_tokens, output_tokens_per_call=output_tokens, usd_per_call=None, basis="no price")
    usd = ((input_tokens or 0.0) * price[0] + (output_tokens or 0.0) * price[1]) / 1e6
    return JudgeCost(
        judge=judge,
        input_tokens_per_call=None if input_tokens is None else round(input_tokens, 2),
        output_tokens_per_call=None if output_tokens is None else round(output_tokens, 2),
        usd_per_call=round(usd, 8),
        basis="measured" if measured else "estimated",
    )


def choose_panel(
    gold: GoldSet,
    judges: Sequence[str],
    costs: Mapping[str, JudgeCost],
    *,
    target_kappa: float,
    seed: int = 0,
    n_boot: int = 1000,
    train_fraction: float = 0.5,
    max_size: int = 5,
    min_coverage: float = MIN_COVERAGE,
) -> PanelChoice:
    items = [it for it in gold.items if it.human_label is not None]
    coder = LabelCoder(gold.labels)
    truth = coder.encode([it.human_label for it in items])
    clusters = [it.cluster_key for it in items]
    verdicts = [it.judge_verdicts for it in items]
    votes = encode_votes(verdicts, list(judges), coder)
    positive = [bool(t == 0) for t in truth]
    train, held = stratified_cluster_split(clusters, positive, (train_fraction, 1 - train_fraction), seed)
    held_idx = np.flatnonzero(held)
    resampler = Resampler([clusters[i] for i in held_idx], n_boot, seed)
    held_truth = decode(truth[held_idx], coder)
    binary = len(coder.labels) == 2
    notes = []
    if not binary:
        notes.append(f"labels {coder.labels} are not binary: weighted panels were not considered")
    candidates: list[PanelCandidate] = []
    weights_of: dict[tuple[tuple[str, ...], str], dict] = {}
    k = len(coder.labels)
    for size in range(1, min(max_size, len(judges)) + 1):
        for subset in itertools.combinations(range(len(judges)), size):
            names = tuple(judges[j] for j in subset)
            sub = votes[:, list(subset)]
            rules: dict[str, np.ndarray] = {}
            if size == 1:
                rules["single"] = sub[:, 0]
            else:
                rules["majority"] = plurality(sub, k)
                rules["unanimous"] = unanimous(sub, k)
                if binary:
                    fit = train & (truth >= 0)
                    panel = LogOddsPanel(list(names)).fit(sub[fit], (truth[fit] == 0).astype(int))
                    rules["weighted"] = panel.predict(sub)
                    weights_of[(names, "weighted")] = panel.weights_file(gold.rubrics[0] if len(gold.rubrics) == 1 else None, coder.labels[0])
            price = [costs[n].usd_per_call if n in costs else None for n in names]
            total = None if any(p is None for p in price) else round(1000 * sum(p for p in price if p is not None), 6)
            for rule, pred in rules.items():
                stats = agreement(held_truth, decode(pred[held_idx], coder), coder, resampler)
                lo = stats.cohen_kappa.ci_low
                meets = lo is not None and lo >= target_kappa and (stats.coverage or 0.0) >= min_coverage
                candidates.append(
                    PanelCandidate(
                        judges=list(names),
                        rule=rule,
                        coverage=stats.coverage,
                        kappa=stats.cohen_kappa,
                        accuracy=stats.accuracy,
                        usd_per_1000_cases=total,
                        meets_target=bool(meets),
                    )
                )
    candidates.sort(key=lambda c: (c.usd_per_1000_cases is None, c.usd_per_1000_cases or 0.0, -(c.kappa.ci_low or -2.0), len(c.judges), c.rule))
    qualified = [c for c in candidates if c.meets_target and c.usd_per_1000_cases is not None]
    chosen = qualified[0] if qualified else None
    unpriced = sorted(n for n in judges if costs.get(n) is None or costs[n].usd_per_call is None)
    if unpriced:
        notes.append(f'no price for {", ".join(unpriced)}: panels with them have no cost and cannot be recommended (add [prices."<judge>"] to the config)')
    if chosen is None:
        best = max(candidates, key=lambda c: c.kappa.ci_low if c.kappa.ci_low is not None else -2.0, default=None)
        conclusion = f"no priced judge or panel reaches a held-out kappa lower bound of {target_kappa} with coverage >= {min_coverage}" + (
            f"; the best lower bound is {best.kappa.ci_low} ({' + '.join(best.judges)}, {best.rule})" if best is not None else ""
        )
    else:
        conclusion = (
            f"{' + '.join(chosen.judges)} ({chosen.rule}): held-out kappa {chosen.kappa.value} [{chosen.kappa.ci_low}, {chosen.kappa.ci_high}] "
            f">= {target_kappa}, coverage {chosen.coverage}, ${chosen.usd_per_1000_cases} per 1,000 escalated cases"
        )
    return PanelChoice(
        target_kappa=target_kappa,
        min_coverage=min_coverage,
        seed=seed,
        n_train=int(train.sum()),
        n_held_out=int(held.sum()),
        costs=dict(costs),
        candidates=candidates,
        chosen=chosen,
        conclusion=conclusion,
        weights=weights_of.get((tuple(chosen.judges), chosen.rule)) if chosen is not None else None,
        notes=notes,
    )


def panel_config_toml(choice: PanelChoice, *, weights_path: str | None = None, source: str = "") -> str | None:
    """A ready ``[panels]`` section (plus ``default_panel``) for the chosen panel, or None."""
    chosen = choice.chosen
    if chosen is None:
        return None
    panel: dict = {"judges": list(chosen.judges), "rule": "majority" if chosen.rule == "single" else chosen.rule}
    if chosen.rule == "weighted" and weights_path is not None:
        panel["weights_path"] = weights_path
    head = (
        f"# written by judge calibrate{f' on {source}' if source else ''}: {choice.conclusion}\n"
        f"# (held-out split seed {choice.seed}: {choice.n_held_out} items; target kappa lower bound {choice.target_kappa})\n"
    )
    return head + tomli_w.dumps({"default_panel": PANEL_NAME, "panels": {PANEL_NAME: panel}})
