"""A panel of LLM judges that decides the checks the deterministic stages left inconclusive.

``Panel`` satisfies ``judge.Escalator``. For each request it renders the rubric, asks every judge
through its caller (``_caller``: cache, single flight, limits, retries, cost), tallies the votes
by the configured rule (``_voting``), and sends a tie to the tie-breaker judge; anything it
cannot settle stays inconclusive and the case unresolved, with the reason.

Invariants: decisions come back in request order; an abstention is recorded with its reason and
never counted as a negative vote; fewer counted votes than ``min_votes`` (default: a majority of
the panel) decide nothing, so a panel whose other judges all failed never lets one judge decide;
every decision records the rubric version and each vote's model version; a decision that waits
for a vote still in a provider batch (``pending``) decides nothing and asks no tie-breaker (the
run decides it again once the batch has answered).
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import Field

from judge.core import AbstainReason, CaseEvidence, Comparisons, registered_comparisons, verify_pass
from judge.core._escalation import JudgeRequest
from judge.core._heap import frozen_heap
from judge.core._stages import Outcome
from judge.core._verdict import PanelDecision, Vote
from judge.llm._batches import BatchFlow
from judge.llm._cache import JudgeCache
from judge.llm._caller import JudgeCaller
from judge.llm._limits import BATCH_DISCOUNT, RetryPolicy, price_for
from judge.llm._providers import JudgeClient, create_client
from judge.llm._rubric import Rubric, evidence_rule_of, registered_rubrics, verdict_labels
from judge.llm._settings import DEFAULT_CONCURRENCY, ConfigFile, JudgeConfigError, JudgeSettings, ProviderConfig, load_config_file
from judge.llm._usage import CallStats
from judge.llm._voting import agreement, tally
from judge.llm._weights import VoteWeights, load_weights

log = logging.getLogger("judge.panel")
MAX_FLAGS = 5  # verdict-like spans named on one decision


class PanelStats(CallStats):
    """For the run manifest: what judging cost and how often it could not decide."""

    panel: str
    rule: str
    judges: list[str]
    tie_breaker: str | None = None
    min_votes: int = 1
    mode: str = "online"  # online | batch (--judge-mode)
    prices: dict[str, Any] = Field(default_factory=dict)  # judge -> the USD per 1M tokens its answers are charged at (None: unknown)
    requests: int = 0
    decided: int = 0
    inconclusive: int = 0


def majority_of(n_judges: int) -> int:
    """The default ``min_votes``: more than half of the panel."""
    return n_judges // 2 + 1


class Panel:
    """Judges voting on requests. ``caller`` asks them (and owns the clients and the cache);
    ``min_votes``: counted votes needed to decide (None: a majority of ``judges``)."""

    def __init__(
        self,
        name: str,
        judges: Sequence[JudgeClient],
        *,
        caller: JudgeCaller | None = None,
        rule: str = "majority",
        tie_breaker: JudgeClient | None = None,
        weights: VoteWeights | None = None,
        rubrics: Mapping[str, Rubric] | None = None,
        min_votes: int | None = None,
    ):
        if not judges:
            raise JudgeConfigError("a panel needs at least one judge")
        names = [j.name for j in judges]
        if len(set(names)) != len(names):
            raise JudgeConfigError(f"judges listed twice in the panel: {sorted({n for n in names if names.count(n) > 1})}")
        if rule not in ("majority", "unanimous", "weighted"):
            raise JudgeConfigError(f"unknown vote rule {rule!r}: majority, unanimous or weighted")
        if rule == "weighted" and weights is None:
            raise JudgeConfigError("vote rule 'weighted' needs a weights file (weights_path)")
        min_votes = majority_of(len(judges)) if min_votes is None else min_votes
        if not 1 <= min_votes <= len(judges):
            raise JudgeConfigError(f"min_votes {min_votes}: must be between 1 and the panel's {len(judges)} judge(s), or no case could ever be decided")
        self.name = name
        self.judges = list(judges)
        self.rule = rule
        self.tie_breaker = tie_breaker
        self.weights = weights
        self.min_votes = min_votes
        self._rubrics = dict(rubrics) if rubrics is not None else None
        self.caller = caller if caller is not None else JudgeCaller(self._all_clients())
        # The panel's stats extend its caller's: the caller keeps counting calls and cost into them.
        self.stats = PanelStats(
            panel=name,
            rule=rule,
            judges=names,
            tie_breaker=tie_breaker.name if tie_breaker else None,
            min_votes=min_votes,
            **self.caller.stats.model_dump(),
        )
        self.caller.stats = self.stats
        self.answered = 0  # requests decided so far, live (a run's progress line reads it)
        batch = self.caller.batch is not None
        self.stats.mode = "batch" if batch else "online"
        for client in self._all_clients():
            price = price_for(client.name, client.kind, self.caller.prices, batch=batch and self.caller.batch.takes(client))  # type: ignore[union-attr]
            self.stats.prices[client.name] = None if price is None else price.model_dump()
        if batch:
            self.stats.note(f"batch prices: a judge's batch_input_per_1m / batch_output_per_1m, else its online price less {BATCH_DISCOUNT:.0%}")
        if weights is not None:
            for rubric_name, table in weights.tables().items():
                missing = [n for n in names if n not in table]
                where = "" if rubric_name is None else f" for rubric {rubric_name}"
                if missing:
                    self.stats.note(f"judges missing from the weights file{where} count with weight 1 and no log-odds term: {', '.join(missing)}")
                    log.warning("judges missing from the weights file%s: %s", where, ", ".join(missing))

    # --- public ---------------------------------------------------------------------------------
    @property
    def cache(self) -> JudgeCache | None:
        return self.caller.cache

    @property
    def batch(self) -> BatchFlow | None:
        """The provider batch flow (``--judge-mode batch``), or None for live calls."""
        return self.caller.batch  # type: ignore[return-value]

    def rubric(self, name: str) -> Rubric:
        table = self._rubrics if self._rubrics is not None else registered_rubrics()
        if name not in table:
            raise JudgeConfigError(f"unknown rubric {name!r}; known: {', '.join(sorted(table)) or 'none (import rubrics)'}")
        return table[name]

    async def decide(self, requests: Sequence[JudgeRequest]) -> list[PanelDecision]:
        rubrics = [self.rubric(r.rubric) for r in requests]  # fail before any paid call
        self.stats.requests += len(requests)
        with frozen_heap():  # the collector walks what the round allocates, not the whole heap
            decisions = await asyncio.gather(*(self._decide_counted(req, rub) for req, rub in zip(requests, rubrics, strict=True)))
        for d in decisions:
            if d.outcome == Outcome.INCONCLUSIVE:
                self.stats.inconclusive += 1
            else:
                self.stats.decided += 1
        self.stats.budget_exhausted = self.caller.budget.exhausted
        self.stats.budget_message = self.caller.budget.message
        return list(decisions)

    def count_spent(self, usd: float) -> None:
        """Count what earlier sessions of this run spent (a resumed run's journaled rounds, and
        what its spend log says the rounds it was stopped in paid) against ``max_cost_usd``: a
        budget is the run's, not each resume's."""
        self.caller.budget.add(usd)

    def log_spend(self, log: Any) -> None:
        """Write every live call to the run's spend log (``judge.llm._spend.SpendLog``), and take
        the answers it says this run paid for as the paid votes they were."""
        self.caller.budget.log = log

    async def aclose(self) -> None:
        await self.caller.aclose()

    # --- one request ----------------------------------------------------------------------------
    async def _decide_counted(self, request: JudgeRequest, rubric: Rubric) -> PanelDecision:
        decision = await self._decide_one(request, rubric)
        self.answered += 1
        return decision

    async def _decide_one(self, request: JudgeRequest, rubric: Rubric) -> PanelDecision:
        try:
            messages = rubric.render(request.material)
        except Exception as exc:
            return self._decision(rubric, outcome=Outcome.INCONCLUSIVE, reason=f"rubric {rubric.name} could not render {request.key}: {exc}")
        case = CaseEvidence.of(request.material, evidence_rule_of(rubric))
        if len(self.judges) == 1:  # no extra task hop for a one-judge panel
            votes = [await self._vote(self.judges[0], rubric, messages, case)]
        else:
            votes = list(await asyncio.gather(*(self._vote(j, rubric, messages, case) for j in self.judges)))
        flags = sorted({f.describe() for f in case.flags})[:MAX_FLAGS]
        waiting = [v.judge for v in votes if v.abstain_reason == AbstainReason.PENDING]
        if waiting:
            return self._decision(
                rubric, outcome=Outcome.INCONCLUSIVE, votes=votes, reason=f"waiting for provider batch answers of {', '.join(waiting)}", flags=flags
            )
        result = tally(votes, verdict_labels(rubric), self.rule, rubric.name, self.weights, self.min_votes)
        label, reason = result.label, result.reason
        if label is None and len(result.tied) > 1:
            label, reason = await self._break_tie(votes, result.tied, rubric, messages, reason, case)
        abstained = [f"{v.judge}: {v.abstain_reason}" for v in votes if v.abstained]
        if abstained:
            reason += "; abstained: " + ", ".join(abstained)
        if label is None:
            return self._decision(rubric, outcome=Outcome.INCONCLUSIVE, votes=votes, reason=reason + "; unresolved, for human review", flags=flags)
        return self._decision(
            rubric, label=label, outcome=rubric.label_outcomes[label], votes=votes, agreement=agreement(votes, label), reason=reason, flags=flags
        )

    def _decision(
        self,
        rubric: Rubric,
        *,
        outcome: Outcome,
        reason: str,
        label: str | None = None,
        votes: list[Vote] | None = None,
        agreement: float | None = None,
        flags: list[str] | None = None,
    ) -> PanelDecision:
        return PanelDecision(
            panel=self.name,
            rule=self.rule,
            rubric=rubric.name,
            rubric_version=rubric.version,
            label=label,
            outcome=outcome,
            votes=votes or [],
            agreement=agreement,
            reason=reason,
            decisive_step=_decisive_step(votes or [], label),
            flags=flags or [],
        )

    async def _break_tie(
        self, votes: list[Vote], tied: list[str], rubric: Rubric, messages: list[dict[str, str]], reason: str, case: CaseEvidence
    ) -> tuple[str | None, str]:
        if self.tie_breaker is None:
            return None, reason + "; no tie-breaker configured"
        breaker = next((v for v in votes if v.judge == self.tie_breaker.name), None)
        if breaker is None:
            breaker = await self._vote(self.tie_breaker, rubric, messages, case)
            votes.append(breaker)
        if breaker.abstained:
            return None, reason + f"; tie-breaker {breaker.judge} abstained ({breaker.abstain_reason})"
        if breaker.label not in tied:
            return None, reason + f"; tie-breaker {breaker.judge} said {breaker.label!r}, not one of the tied labels"
        return breaker.label, reason + f"; tie broken by {breaker.judge}: {breaker.label}"

    def redecide(self, decision: PanelDecision, set_aside: Mapping[str, str]) -> PanelDecision:
        """``decision`` tallied again with the votes of the judges in ``set_aside`` (judge -> why)
        counted as abstentions (``control_failed``), by the rule ``decide`` uses; no judge is asked
        again, so a tie only a new tie-breaker vote could settle stays undecided."""
        if decision.rubric is None or not any(v.judge in set_aside and not v.abstained for v in decision.votes):
            return decision
        rubric = self.rubric(decision.rubric)
        votes = [
            v.model_copy(update={"abstained": True, "abstain_reason": AbstainReason.CONTROL_FAILED, "rationale": f"{set_aside[v.judge]}; said {v.label!r}"})
            if v.judge in set_aside and not v.abstained
            else v
            for v in decision.votes
        ]
        members = {j.name for j in self.judges}
        result = tally([v for v in votes if v.judge in members], verdict_labels(rubric), self.rule, rubric.name, self.weights, self.min_votes)
        label, reason = result.label, result.reason
        if label is None and len(result.tied) > 1:
            breaker = next((v for v in votes if self.tie_breaker is not None and v.judge == self.tie_breaker.name and not v.abstained), None)
            if breaker is not None and breaker.label in result.tied:
                label, reason = breaker.label, reason + f"; tie broken by {breaker.judge}: {breaker.label}"
            else:
                reason += "; the tie stays (no tie-breaker vote is asked again)"
        reason += "; set aside (control items failed): " + ", ".join(sorted(j for j in set_aside if any(v.judge == j for v in decision.votes)))
        if label is None:
            return self._decision(rubric, outcome=Outcome.INCONCLUSIVE, votes=votes, reason=reason + "; unresolved, for human review", flags=decision.flags)
        return self._decision(
            rubric, label=label, outcome=rubric.label_outcomes[label], votes=votes, agreement=agreement(votes, label), reason=reason, flags=decision.flags
        )

    async def _vote(self, judge: JudgeClient, rubric: Rubric, messages: list[dict[str, str]], case: CaseEvidence) -> Vote:
        return verified_vote(await self.caller.vote(self.caller.call(judge, rubric, messages)), rubric, case)

    def _all_clients(self) -> list[JudgeClient]:
        extra = [self.tie_breaker] if self.tie_breaker is not None and self.tie_breaker.name not in {j.name for j in self.judges} else []
        return self.judges + extra


def build_panel(
    settings: JudgeSettings,
    rubrics: Mapping[str, Rubric] | None = None,
    *,
    retry: RetryPolicy | None = None,
    share: tuple[int, int] | None = None,
) -> Panel | None:
    """The panel the settings describe, or None when no judge is configured.

    ``rubrics``: name -> rubric; default: the rubrics registered by importing ``rubrics``.
    ``retry``: override the retry policy (tests inject a recording ``sleep``).
    ``share``: (index, of): this panel is one of ``of`` processes judging for one run
    (``_sharded``), so its limits are its share of the run's: concurrency, and each provider's
    concurrency and request rate.
    """
    config = load_config_file(settings.config_path) if settings.config_path else ConfigFile()
    panel_name = settings.panel or config.default_panel
    if panel_name is not None and panel_name not in config.panels:
        where = settings.config_path or "<no config file>"
        raise JudgeConfigError(f"{where}: field panels.{panel_name}: no such panel (known: {', '.join(sorted(config.panels)) or 'none'})")
    panel_cfg = config.panels.get(panel_name) if panel_name else None
    judge_names = list(settings.judges) or (list(panel_cfg.judges) if panel_cfg else [])
    if not judge_names:
        return None
    rule = settings.rule or (panel_cfg.rule if panel_cfg else None) or "majority"
    tie_name = settings.tie_breaker or (panel_cfg.tie_breaker if panel_cfg else None)
    weights_path = settings.weights_path or (panel_cfg.weights_path if panel_cfg else None)
    weights = load_weights(weights_path) if weights_path else None
    min_votes = settings.min_votes or (panel_cfg.min_votes if panel_cfg else None)
    judges = [create_client(n, config.providers) for n in judge_names]
    tie_breaker = next((j for j in judges if j.name == tie_name), None) if tie_name else None
    if tie_name and tie_breaker is None:
        tie_breaker = create_client(tie_name, config.providers)
    clients = judges + ([tie_breaker] if tie_breaker is not None and tie_breaker not in judges else [])
    if settings.mode == "batch" and settings.offline:
        raise JudgeConfigError("--judge-mode batch sends questions to providers: it cannot run --offline")
    if not settings.offline:
        for client in clients:
            client.check_ready()
    run_retry = settings.retry or (config.retry if "retry" in config.model_fields_set else None)  # set: every judge's
    run_concurrency = settings.concurrency or config.concurrency
    concurrency = run_concurrency or DEFAULT_CONCURRENCY
    providers = config.providers if run_concurrency else with_default_limits(config.providers, clients)
    if share is not None:
        index, of = share
        concurrency = _part(concurrency, index, of)
        providers = {
            name: cfg.model_copy(update={"concurrency": cfg.concurrency and _part(cfg.concurrency, index, of), "rpm": cfg.rpm and cfg.rpm / of})
            for name, cfg in providers.items()
        }
    caller = JudgeCaller(
        clients,
        cache=None if settings.no_cache else JudgeCache(settings.resolved_cache_path()),
        offline=settings.offline,
        max_cost_usd=settings.max_cost_usd,
        retry=retry or (RetryPolicy(run_retry) if run_retry is not None else None),
        concurrency=concurrency,
        providers=providers,
        prices=config.prices,
        timeout_s=settings.timeout_s or config.timeout_s,
        batch=BatchFlow(clients) if settings.mode == "batch" else None,
    )
    try:
        return Panel(
            panel_name or "panel",
            judges,
            caller=caller,
            rule=rule,
            tie_breaker=tie_breaker,
            weights=weights,
            rubrics=rubrics,
            min_votes=min_votes,
        )
    except JudgeConfigError as exc:
        if caller.cache is not None:
            caller.cache.close()
        from_config = settings.min_votes is None and panel_cfg is not None and panel_cfg.min_votes is not None
        if from_config and "min_votes" in str(exc):
            raise JudgeConfigError(f"{settings.config_path}: field panels.{panel_name}.min_votes: {exc}") from None
        raise


def with_default_limits(providers: Mapping[str, ProviderConfig], clients: Sequence[JudgeClient]) -> dict[str, ProviderConfig]:
    """``providers`` with the concurrency each judge's provider starts with where its section sets
    none (``JudgeClient.defaults``: 2 for a local server, 1 in-process; hosted: none but the run's).
    Only where the run sets no concurrency of its own: an explicit setting always wins."""
    limits = dict(providers)
    for client in clients:
        default = client.defaults().concurrency
        configured = providers.get(client.provider)
        if default is None or (configured is not None and configured.concurrency is not None):
            continue  # no default for this kind of provider, or the provider sets its own
        held = limits.get(client.provider) or ProviderConfig()
        limits[client.provider] = held.model_copy(update={"concurrency": min(default, held.concurrency or default)})
    return limits


def _part(total: int, index: int, of: int) -> int:
    """Share ``index`` of ``total`` split over ``of`` as evenly as integers allow (they sum to ``total``)."""
    return total // of + (1 if index < total % of else 0)


def verified_vote(vote: Vote, rubric: Rubric, case: CaseEvidence, comparisons: Comparisons | None = None) -> Vote:
    """``vote`` with a passing label checked against the trusted material (``judge.core._evidence``):
    an ``unverified`` abstention when the evidence does not check out (the label it gave kept in
    the rationale), the code's label where it compared the candidate answer itself. Other votes
    (abstentions, labels that fail the check) are returned as they are: no injection asks for those."""
    if vote.abstained or vote.label is None or rubric.label_outcomes.get(vote.label) != Outcome.MATCH:
        return vote
    checked = verify_pass(case, vote.quotes or [], vote.candidate_answer, comparisons or registered_comparisons(), rubric.label_outcomes)
    if not checked.ok:
        return vote.model_copy(
            update={
                "abstained": True,
                "abstain_reason": AbstainReason.UNVERIFIED,
                "verification": checked.why,
                "said": vote.label,
                "rationale": f"said {vote.label!r}, unverified: {checked.why}; {vote.rationale}"[:1000],
            }
        )
    if checked.label is not None and checked.label != vote.label:
        return vote.model_copy(
            update={
                "label": checked.label,
                "score": rubric.label_scores.get(checked.label),
                "verification": f"said {vote.label!r}; {checked.why}",
                "said": vote.label,
            }
        )
    return vote.model_copy(update={"verification": checked.why or "evidence found in the trusted material"})


def _decisive_step(votes: list[Vote], label: str | None) -> int | None:
    """The step most of the votes for the decided label name as decisive (ties: the earliest)."""
    named = Counter(v.decisive_step for v in votes if label is not None and v.label == label and not v.abstained and v.decisive_step is not None)
    if not named:
        return None
    top = max(named.values())
    return min(step for step, n in named.items() if n == top)
