"""What judge calls cost and how they went: per judge and in total, for the run manifest.

The caller (``_caller``) is the only writer of these counters; the panel adds its own (requests,
decisions) on top in ``PanelStats``.
"""

from __future__ import annotations

from pydantic import BaseModel, Field


class JudgeUsage(BaseModel):
    calls: int = 0  # live judge calls launched (a call may take several attempts)
    attempts: int = 0  # requests sent, retries included (instructor's re-asks not counted)
    cache_hits: int = 0
    abstentions: dict[str, int] = Field(default_factory=dict)
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    price_known: bool = True


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
