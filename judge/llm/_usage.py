"""What judge calls cost and how they went: per judge and in total, for the run manifest.

The caller (``_caller``) is the only writer of these counters; the panel adds its own (requests,
decisions) on top in ``PanelStats``. Judge worker processes (``_sharded``) each count their share
and send back what a round added (``since``); the run adds it up (``merge``), so the totals are
those one process would have counted.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from judge.llm._reading import repair_kind

# The counters (everything else is configuration or a flag): added by ``merge``, subtracted by ``since``.
_USAGE_COUNTS = ("calls", "attempts", "cache_hits", "repaired", "input_tokens", "output_tokens")
_TOTAL_COUNTS = ("calls", "attempts", "retries", "cache_hits", "shared_with_other_runs", "cache_unsaved", "input_tokens", "output_tokens")


def _tally_plus(into: dict[str, int], part: dict[str, int], sign: int = 1) -> None:
    """``into`` += sign * ``part`` per key; a key whose count comes to 0 is dropped (one process
    never records a zero count, so neither may a sum of several)."""
    for key, n in part.items():
        total = into.get(key, 0) + sign * n
        if total:
            into[key] = total
        else:
            into.pop(key, None)


class JudgeUsage(BaseModel):
    calls: int = 0  # live judge calls launched (a call may take several attempts)
    attempts: int = 0  # requests sent, retries included (instructor's re-asks not counted)
    cache_hits: int = 0
    abstentions: dict[str, int] = Field(default_factory=dict)
    # Votes whose verdict was read only after a repair (judge.llm._reading), live, cached or shared
    # alike, and the repairs by kind (confidence, control_characters; one verdict may need both):
    # votes with a verdict less ``repaired`` is how many verdicts were valid as the judge sent them.
    repaired: int = 0
    repairs: dict[str, int] = Field(default_factory=dict)
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    price_known: bool = True

    def merge(self, part: JudgeUsage, sign: int = 1) -> None:
        for name in _USAGE_COUNTS:
            setattr(self, name, getattr(self, name) + sign * getattr(part, name))
        _tally_plus(self.abstentions, part.abstentions, sign)
        _tally_plus(self.repairs, part.repairs, sign)
        self.cost_usd = round(self.cost_usd + sign * part.cost_usd, 10)

    def is_zero(self) -> bool:
        return not (any(getattr(self, name) for name in _USAGE_COUNTS) or self.abstentions or self.repairs or self.cost_usd)


class CallStats(BaseModel):
    """Totals over every judge, and ``per_judge``. ``cache_hits`` counts every answer that cost
    nothing (cache, a question shared in this run, or another run's answer waited for);
    ``shared_with_other_runs`` counts the last kind."""

    calls: int = 0
    attempts: int = 0
    retries: int = 0
    retry_reasons: dict[str, int] = Field(default_factory=dict)  # rate_limit, server, timeout, connection
    cache_hits: int = 0
    shared_with_other_runs: int = 0
    cache_unsaved: int = 0  # answers the judge cache could not write (a full disk): kept in memory and in the results
    cache_error: str = ""  # why, naming the cache and the way out
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

    def judge(self, name: str) -> JudgeUsage:
        usage = self.per_judge.get(name)
        if usage is None:
            usage = self.per_judge[name] = JudgeUsage()
        return usage

    def count_call(self, judge: str) -> None:
        self.judge(judge).calls += 1
        self.calls += 1

    def count_attempt(self, judge: str) -> None:
        self.judge(judge).attempts += 1
        self.attempts += 1

    def count_retry(self, reason: str) -> None:
        self.retries += 1
        self.retry_reasons[reason] = self.retry_reasons.get(reason, 0) + 1

    def count_cache_hit(self, judge: str) -> None:
        self.judge(judge).cache_hits += 1
        self.cache_hits += 1

    def count_repairs(self, judge: str, repairs: list[str] | None) -> None:
        """One vote of ``judge`` whose verdict took ``repairs`` to read (nothing when none)."""
        if not repairs:
            return
        usage = self.judge(judge)
        usage.repaired += 1
        for kind in sorted({repair_kind(note) for note in repairs}):
            usage.repairs[kind] = usage.repairs.get(kind, 0) + 1

    def count_abstention(self, judge: str, reason: str | None) -> None:
        key = reason or "error"
        usage = self.judge(judge)
        usage.abstentions[key] = usage.abstentions.get(key, 0) + 1
        self.abstentions[key] = self.abstentions.get(key, 0) + 1

    def add_cost(self, judge: str, input_tokens: int, output_tokens: int, cost: float) -> None:
        usage = self.judge(judge)
        usage.input_tokens += input_tokens
        usage.output_tokens += output_tokens
        usage.cost_usd = round(usage.cost_usd + cost, 10)
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        self.cost_usd = round(self.cost_usd + cost, 10)

    def merge(self, part: CallStats) -> None:
        """Add ``part``, the counts of another process judging for the same run (``since`` of
        its stats). Costs are sums of values rounded to 1e-10, rounded again: the same total
        whatever the order. A budget found exhausted anywhere is exhausted; notes are joined."""
        for name in _TOTAL_COUNTS:
            setattr(self, name, getattr(self, name) + getattr(part, name))
        _tally_plus(self.retry_reasons, part.retry_reasons)
        _tally_plus(self.abstentions, part.abstentions)
        for judge, usage in part.per_judge.items():
            self.judge(judge).merge(usage)
        self.cost_usd = round(self.cost_usd + part.cost_usd, 10)
        if part.budget_exhausted:
            self.budget_exhausted = True
            self.budget_message = part.budget_message
        self.cache_error = self.cache_error or part.cache_error
        for text in part.notes:
            self.note(text)

    def since(self, before: CallStats) -> CallStats:
        """What was counted after ``before`` (an earlier deep copy of these stats): the counts
        of one round, for ``merge`` elsewhere. Flags and notes are as they are now."""
        delta = CallStats(
            retry_reasons=dict(self.retry_reasons),
            abstentions=dict(self.abstentions),
            budget_exhausted=self.budget_exhausted,
            budget_message=self.budget_message,
            cache_error=self.cache_error,
            notes=list(self.notes),
        )
        for name in _TOTAL_COUNTS:
            setattr(delta, name, getattr(self, name) - getattr(before, name))
        _tally_plus(delta.retry_reasons, before.retry_reasons, -1)
        _tally_plus(delta.abstentions, before.abstentions, -1)
        for judge, usage in self.per_judge.items():
            part = usage.model_copy(deep=True)
            if judge in before.per_judge:
                part.merge(before.per_judge[judge], -1)
            if not part.is_zero():
                delta.per_judge[judge] = part
        delta.cost_usd = round(self.cost_usd - before.cost_usd, 10)
        return delta
