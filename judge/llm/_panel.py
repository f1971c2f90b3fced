"""A panel of LLM judges that decides the checks the deterministic stages left inconclusive.

``Panel`` satisfies ``judge.Escalator``. For each request every judge votes (cache first, then a
live call under the concurrency limit, the provider's rate limit, the retry policy and the cost
budget); the votes are tallied by the configured rule (see ``_voting``); a tie goes to the
tie-breaker judge, else the decision is inconclusive and the case stays unresolved.

Invariants: decisions come back in request order; an abstention (error after retries, refusal,
unparseable output, timeout, budget, offline miss) is recorded with its reason and never counted
as a negative vote; every decision records the rubric version and each vote's model version.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from judge.core._escalation import JudgeRequest
from judge.core._stages import Outcome
from judge.core._verdict import PanelDecision, Vote
from judge.llm._cache import JudgeCache, cache_key
from judge.llm._limits import Budget, RateLimiter, RetryPolicy, cost_usd, price_for
from judge.llm._providers import Completion, JudgeCallError, JudgeClient, create_client
from judge.llm._rubric import Rubric, registered_rubrics, verdict_labels
from judge.llm._settings import ConfigFile, JudgeConfigError, JudgeSettings, PriceConfig, ProviderConfig, RetryConfig, load_config_file
from judge.llm._voting import agreement, tally
from judge.llm._weights import VoteWeights, load_weights

log = logging.getLogger("judge.panel")

# Final abstention reason for each failure kind after retries.
ABSTAIN_REASON = {"timeout": "timeout", "rate_limit": "error", "server": "error", "connection": "error"}


class JudgeUsage(BaseModel):
    calls: int = 0  # live judge calls launched (a call may take several attempts)
    attempts: int = 0  # requests sent, retries included (instructor's re-asks not counted)
    cache_hits: int = 0
    abstentions: dict[str, int] = Field(default_factory=dict)
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    price_known: bool = True


class PanelStats(BaseModel):
    """For the run manifest: what judging cost and how often it could not decide."""

    panel: str
    rule: str
    judges: list[str]
    tie_breaker: str | None = None
    requests: int = 0
    decided: int = 0
    inconclusive: int = 0
    calls: int = 0
    attempts: int = 0
    retries: int = 0
    retry_reasons: dict[str, int] = Field(default_factory=dict)  # rate_limit, server, timeout, connection
    cache_hits: int = 0
    abstentions: dict[str, int] = Field(default_factory=dict)
    per_judge: dict[str, JudgeUsage] = Field(default_factory=dict)
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    budget_exhausted: bool = False
    budget_message: str = ""
    notes: list[str] = Field(default_factory=list)

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)


class _LoopState:
    """asyncio primitives belong to one event loop; a panel reused in another loop gets new ones."""

    def __init__(self, concurrency: int, providers: dict[str, ProviderConfig]):
        self.global_sem = asyncio.Semaphore(concurrency)
        self.provider_sems: dict[str, asyncio.Semaphore] = {}
        self.limiters: dict[str, RateLimiter] = {}
        self.in_flight: dict[str, asyncio.Future] = {}  # cache key -> the vote being fetched
        for name, cfg in providers.items():
            if cfg.concurrency:
                self.provider_sems[name] = asyncio.Semaphore(cfg.concurrency)
            if cfg.rpm:
                self.limiters[name] = RateLimiter(cfg.rpm)


class Panel:
    def __init__(
        self,
        name: str,
        judges: Sequence[JudgeClient],
        *,
        rule: str = "majority",
        tie_breaker: JudgeClient | None = None,
        weights: VoteWeights | None = None,
        rubrics: Mapping[str, Rubric] | None = None,
        cache: JudgeCache | None = None,
        offline: bool = False,
        max_cost_usd: float | None = None,
        retry: RetryPolicy | None = None,
        concurrency: int = 32,
        providers: Mapping[str, ProviderConfig] | None = None,
        prices: Mapping[str, PriceConfig] | None = None,
        timeout_s: float = 60.0,
        min_votes: int = 1,
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
        self.name = name
        self.judges = list(judges)
        self.rule = rule
        self.tie_breaker = tie_breaker
        self.weights = weights
        self._rubrics = dict(rubrics) if rubrics is not None else None
        self.cache = cache
        self.offline = offline
        self.budget = Budget(max_cost_usd)
        self.retry = retry or RetryPolicy()
        self.concurrency = concurrency
        self.providers = dict(providers or {})
        self.prices = dict(prices or {})
        self.timeout_s = timeout_s
        self.min_votes = min_votes
        self._states: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopState] = weakref.WeakKeyDictionary()
        self._schemas: dict[tuple[str, str], dict[str, Any]] = {}
        for client in self._all_clients():
            if hasattr(client, "set_timeout"):
                client.set_timeout(self._timeout_for(client))
        self.stats = PanelStats(panel=name, rule=rule, judges=names, tie_breaker=tie_breaker.name if tie_breaker else None)
        for client in self._all_clients():
            usage = JudgeUsage(price_known=price_for(client.name, client.kind, self.prices) is not None)
            self.stats.per_judge[client.name] = usage
            if not usage.price_known:
                self.stats.note(f'no price known for {client.name}: its cost is counted as 0 (add [prices."{client.name}"] to the config)')
        if weights is not None:
            missing = [n for n in names if n not in weights.judges]
            if missing:
                self.stats.note(f"judges missing from the weights file count with weight 1 and no log-odds term: {', '.join(missing)}")
                log.warning("judges missing from the weights file: %s", ", ".join(missing))
        if offline and cache is None:
            self.stats.note("offline without a cache: every live judge call abstains with offline_miss")

    # --- public --------------------------------------------------------------------------------
    def rubric(self, name: str) -> Rubric:
        table = self._rubrics if self._rubrics is not None else registered_rubrics()
        if name not in table:
            raise JudgeConfigError(f"unknown rubric {name!r}; known: {', '.join(sorted(table)) or 'none (import rubrics)'}")
        return table[name]

    async def decide(self, requests: Sequence[JudgeRequest]) -> list[PanelDecision]:
        rubrics = [self.rubric(r.rubric) for r in requests]  # fail before any paid call
        self.stats.requests += len(requests)
        decisions = await asyncio.gather(*(self._decide_one(req, rub) for req, rub in zip(requests, rubrics, strict=True)))
        for d in decisions:
            if d.outcome == Outcome.INCONCLUSIVE:
                self.stats.inconclusive += 1
            else:
                self.stats.decided += 1
        self.stats.budget_exhausted = self.budget.exhausted
        self.stats.budget_message = self.budget.message
        return list(decisions)

    async def aclose(self) -> None:
        for client in self._all_clients():
            await client.aclose()
        if self.cache is not None:
            self.cache.close()

    # --- one request ---------------------------------------------------------------------------
    async def _decide_one(self, request: JudgeRequest, rubric: Rubric) -> PanelDecision:
        base = {"panel": self.name, "rule": self.rule, "rubric": rubric.name, "rubric_version": rubric.version}
        try:
            messages = rubric.render(request.material)
        except Exception as exc:
            return PanelDecision(**base, outcome=Outcome.INCONCLUSIVE, reason=f"rubric {rubric.name} could not render {request.key}: {exc}")
        schema_json = self._schema_json(rubric)
        if len(self.judges) == 1:  # no extra task hop for a one-judge panel
            votes = [await self._vote(self.judges[0], rubric, messages, schema_json)]
        else:
            votes = list(await asyncio.gather(*(self._vote(j, rubric, messages, schema_json) for j in self.judges)))
        labels = verdict_labels(rubric)
        result = tally(votes, labels, self.rule, rubric.name, self.weights, self.min_votes)
        label, reason = result.label, result.reason
        if label is None and len(result.tied) > 1:
            label, reason = await self._break_tie(votes, result.tied, rubric, messages, schema_json, reason)
        abstained = [f"{v.judge}: {v.abstain_reason}" for v in votes if v.abstained]
        if abstained:
            reason += "; abstained: " + ", ".join(abstained)
        if label is None:
            return PanelDecision(
                **base, label=None, outcome=Outcome.INCONCLUSIVE, votes=votes, agreement=None, reason=reason + "; unresolved, for human review"
            )
        return PanelDecision(**base, label=label, outcome=rubric.label_outcomes[label], votes=votes, agreement=agreement(votes, label), reason=reason)

    async def _break_tie(self, votes: list[Vote], tied: list[str], rubric: Rubric, messages, schema_json, reason: str) -> tuple[str | None, str]:
        if self.tie_breaker is None:
            return None, reason + "; no tie-breaker configured"
        breaker = next((v for v in votes if v.judge == self.tie_breaker.name), None)
        if breaker is None:
            breaker = await self._vote(self.tie_breaker, rubric, messages, schema_json)
            votes.append(breaker)
        if breaker.abstained:
            return None, reason + f"; tie-breaker {breaker.judge} abstained ({breaker.abstain_reason})"
        if breaker.label not in tied:
            return None, reason + f"; tie-breaker {breaker.judge} said {breaker.label!r}, not one of the tied labels"
        return breaker.label, reason + f"; tie broken by {breaker.judge}: {breaker.label}"

    # --- one vote ------------------------------------------------------------------------------
    async def _vote(self, judge: JudgeClient, rubric: Rubric, messages: list[dict[str, str]], schema_json: dict[str, Any]) -> Vote:
        usage = self.stats.per_judge[judge.name]
        key = cache_key(judge.identity(messages, schema_json))
        use_cache = self.cache is not None and judge.cacheable
        if use_cache:
            payload = self.cache.get(key)
            vote = self._vote_from_payload(judge, rubric, payload) if payload is not None else None
            if vote is not None:
                usage.cache_hits += 1
                self.stats.cache_hits += 1
                if vote.abstained:
                    self._count_abstention(usage, vote.abstain_reason)
                return vote
        if self.offline and judge.kind != "mock":
            return self._abstain(judge, usage, "offline_miss", "offline: no cached answer for this request")
        if not self.budget.can_launch():
            return self._abstain(judge, usage, "budget", self.budget.message)
        state = self._state()
        if use_cache:  # single flight: identical requests in one run share one paid call
            pending = state.in_flight.get(key)
            if pending is not None:
                shared = await asyncio.shield(pending)
                return self._shared_copy(shared, usage)
            pending = state.in_flight[key] = asyncio.get_running_loop().create_future()
        try:
            vote = await self._launch(judge, rubric, messages, key, use_cache, usage, state)
        except BaseException as exc:
            if use_cache:
                state.in_flight.pop(key, None)
                if not pending.done():
                    pending.set_exception(exc)
                    pending.exception()  # retrieved: no "never retrieved" warning if nobody waits
            raise
        if use_cache:
            state.in_flight.pop(key, None)
            pending.set_result(vote)
        return vote

    def _shared_copy(self, shared: Vote, usage: JudgeUsage) -> Vote:
        """Another request's answer to the same content: like a cache hit, it costs nothing."""
        if shared.abstained:
            self._count_abstention(usage, shared.abstain_reason)
        else:
            usage.cache_hits += 1
            self.stats.cache_hits += 1
        return shared.model_copy(update={"cached": not shared.abstained or shared.cached, "cost_usd": 0.0})

    async def _launch(self, judge, rubric, messages, key, use_cache, usage: JudgeUsage, state: _LoopState) -> Vote:
        provider_sem = state.provider_sems.get(judge.provider)
        async with state.global_sem:
            if provider_sem is not None:
                await provider_sem.acquire()
            try:
                return await self._call_with_retries(judge, rubric, messages, key, use_cache, usage, state)
            finally:
                if provider_sem is not None:
                    provider_sem.release()

    async def _call_with_retries(self, judge, rubric, messages, key, use_cache, usage: JudgeUsage, state: _LoopState) -> Vote:
        limiter = state.limiters.get(judge.provider)
        max_attempts = self.retry.config.max_attempts
        usage.calls += 1
        self.stats.calls += 1
        last: JudgeCallError | None = None
        for attempt in range(1, max_attempts + 1):
            if not self.budget.can_launch():  # spending may have crossed the limit while we waited
                return self._abstain(judge, usage, "budget", self.budget.message)
            if limiter is not None:
                await limiter.acquire()
            usage.attempts += 1
            self.stats.attempts += 1
            try:
                call = judge.complete(messages, rubric.verdict_schema)
                if judge.enforces_timeout:  # the SDK times out each request itself
                    completion = await call
                else:  # a guard costs an extra task hop per call, so only where needed
                    completion = await asyncio.wait_for(call, timeout=self._timeout_for(judge) * (judge.config.validation_retries + 1) + 1.0)
            except TimeoutError:
                last = JudgeCallError("timeout", f"no answer within the call deadline ({self._timeout_for(judge)} s per request)")
            except JudgeCallError as err:
                last = err
            else:
                return self._record_success(judge, rubric, completion, key, use_cache, usage)
            self._account(judge, usage, last.input_tokens, last.output_tokens)
            if last.retryable and attempt < max_attempts:
                self.stats.retries += 1
                self.stats.retry_reasons[last.reason] = self.stats.retry_reasons.get(last.reason, 0) + 1
                log.info("retrying %s after %s: %s", judge.name, last.reason, last.message)
                await self.retry.sleep(self.retry.delay(attempt, last.retry_after))
                continue
            break
        assert last is not None
        reason = ABSTAIN_REASON.get(last.reason, last.reason)
        message = last.message if attempt == 1 else f"after {attempt} attempts: {last.message}"
        if use_cache and last.cacheable:
            self.cache.put(key, judge.name, {"abstain": reason, "message": message, "input_tokens": last.input_tokens, "output_tokens": last.output_tokens})
        return self._abstain(judge, usage, reason, message, input_tokens=last.input_tokens, output_tokens=last.output_tokens)

    def _record_success(self, judge, rubric, completion: Completion, key, use_cache, usage: JudgeUsage) -> Vote:
        cost = self._account(judge, usage, completion.input_tokens, completion.output_tokens)
        verdict = completion.verdict.model_dump(mode="json")
        if use_cache:  # written the moment it arrives: an interrupted run never pays twice
            self.cache.put(
                key,
                judge.name,
                {
                    "verdict": verdict,
                    "model_version": completion.model_version,
                    "input_tokens": completion.input_tokens,
                    "output_tokens": completion.output_tokens,
                },
            )
        return self._vote_from_verdict(judge, rubric, verdict, completion.model_version, completion.input_tokens, completion.output_tokens, cost, cached=False)

    def _account(self, judge: JudgeClient, usage: JudgeUsage, input_tokens: int, output_tokens: int) -> float:
        cost = cost_usd(price_for(judge.name, judge.kind, self.prices), input_tokens, output_tokens)
        usage.input_tokens += input_tokens
        usage.output_tokens += output_tokens
        usage.cost_usd = round(usage.cost_usd + cost, 10)
        self.stats.input_tokens += input_tokens
        self.stats.output_tokens += output_tokens
        self.stats.cost_usd = round(self.stats.cost_usd + cost, 10)
        self.budget.add(cost)
        return cost

    def _vote_from_payload(self, judge: JudgeClient, rubric: Rubric, payload: dict[str, Any]) -> Vote | None:
        tokens = {"input_tokens": int(payload.get("input_tokens", 0)), "output_tokens": int(payload.get("output_tokens", 0))}
        if "abstain" in payload:
            return Vote(judge=judge.name, abstained=True, abstain_reason=payload["abstain"], rationale=payload.get("message", ""), cached=True, **tokens)
        try:
            verdict = rubric.verdict_schema.model_validate(payload["verdict"]).model_dump(mode="json")
        except (ValidationError, KeyError, TypeError):
            return None  # an entry this schema cannot read is a miss, not an answer
        return self._vote_from_verdict(judge, rubric, verdict, payload.get("model_version"), cost=0.0, cached=True, **tokens)

    def _vote_from_verdict(
        self, judge, rubric: Rubric, verdict: dict[str, Any], model_version, input_tokens=0, output_tokens=0, cost=0.0, *, cached: bool
    ) -> Vote:
        label = verdict["label"]
        return Vote(
            judge=judge.name,
            label=label,
            score=rubric.label_scores.get(label),
            rationale=verdict.get("rationale", ""),
            evidence=list(verdict.get("evidence") or []),
            confidence=verdict.get("confidence"),
            model_version=model_version,
            cached=cached,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cost_usd=cost,
        )

    def _abstain(self, judge: JudgeClient, usage: JudgeUsage, reason: str, message: str, input_tokens: int = 0, output_tokens: int = 0) -> Vote:
        self._count_abstention(usage, reason)
        if reason == "budget":
            self.stats.budget_exhausted = True
            self.stats.budget_message = message
        cost = cost_usd(price_for(judge.name, judge.kind, self.prices), input_tokens, output_tokens)
        return Vote(
            judge=judge.name, abstained=True, abstain_reason=reason, rationale=message, input_tokens=input_tokens, output_tokens=output_tokens, cost_usd=cost
        )

    def _count_abstention(self, usage: JudgeUsage, reason: str | None) -> None:
        key = reason or "error"
        usage.abstentions[key] = usage.abstentions.get(key, 0) + 1
        self.stats.abstentions[key] = self.stats.abstentions.get(key, 0) + 1

    # --- plumbing ------------------------------------------------------------------------------
    def _schema_json(self, rubric: Rubric) -> dict[str, Any]:
        key = (rubric.name, rubric.version)
        if key not in self._schemas:
            self._schemas[key] = rubric.verdict_schema.model_json_schema()
        return self._schemas[key]

    def _all_clients(self) -> list[JudgeClient]:
        extra = [self.tie_breaker] if self.tie_breaker is not None and self.tie_breaker.name not in {j.name for j in self.judges} else []
        return self.judges + extra

    def _timeout_for(self, judge: JudgeClient) -> float:
        return judge.config.timeout_s or self.timeout_s

    def _state(self) -> _LoopState:
        loop = asyncio.get_running_loop()
        state = self._states.get(loop)
        if state is None:
            state = self._states[loop] = _LoopState(self.concurrency, self.providers)
        return state


def build_panel(settings: JudgeSettings, rubrics: Mapping[str, Rubric] | None = None, *, retry: RetryPolicy | None = None) -> Panel | None:
    """The panel the settings describe, or None when no judge is configured.

    ``rubrics``: name -> rubric; default: the rubrics registered by importing ``rubrics``.
    ``retry``: override the retry policy (tests inject a recording ``sleep``).
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
    judges = [create_client(n, config.providers) for n in judge_names]
    tie_breaker = next((j for j in judges if j.name == tie_name), None) if tie_name else None
    if tie_name and tie_breaker is None:
        tie_breaker = create_client(tie_name, config.providers)
    if not settings.offline:
        for client in judges + ([tie_breaker] if tie_breaker else []):
            client.check_ready()
    retry_config: RetryConfig = settings.retry or config.retry
    if retry is None:
        retry = RetryPolicy(retry_config)
    cache = None if settings.no_cache else JudgeCache(settings.resolved_cache_path())
    return Panel(
        panel_name or "panel",
        judges,
        rule=rule,
        tie_breaker=tie_breaker,
        weights=weights,
        rubrics=rubrics,
        cache=cache,
        offline=settings.offline,
        max_cost_usd=settings.max_cost_usd,
        retry=retry,
        concurrency=settings.concurrency or config.concurrency or 32,
        providers=config.providers,
        prices=config.prices,
        timeout_s=settings.timeout_s or config.timeout_s or 60.0,
        min_votes=settings.min_votes,
    )
