"""LLM judging: provider clients (one module per provider), structured output via instructor,
the cache, limits and retries, the panel that fans out and votes, and vote weights.

Import this only where judges are used: it loads the provider SDKs.
"""

from judge.llm._cache import JudgeCache, cache_key
from judge.llm._limits import Budget, RateLimiter, RetryPolicy, cost_usd, price_for
from judge.llm._panel import JudgeUsage, Panel, PanelStats, build_panel
from judge.llm._providers import Completion, JudgeCallError, JudgeClient, create_client, parse_judge_name, provider_kinds, register_provider
from judge.llm._rubric import JudgeVerdict, Rubric, register_rubric, registered_rubrics
from judge.llm._settings import ConfigFile, JudgeConfigError, JudgeSettings, PanelConfig, PriceConfig, ProviderConfig, RetryConfig
from judge.llm._voting import Tally, tally
from judge.llm._weights import JudgeWeight, VoteWeights, load_weights

__all__ = [
    "Budget",
    "Completion",
    "ConfigFile",
    "JudgeCache",
    "JudgeCallError",
    "JudgeClient",
    "JudgeConfigError",
    "JudgeSettings",
    "JudgeUsage",
    "JudgeVerdict",
    "JudgeWeight",
    "Panel",
    "PanelConfig",
    "PanelStats",
    "PriceConfig",
    "ProviderConfig",
    "RateLimiter",
    "RetryConfig",
    "RetryPolicy",
    "Rubric",
    "Tally",
    "VoteWeights",
    "build_panel",
    "cache_key",
    "cost_usd",
    "create_client",
    "load_weights",
    "parse_judge_name",
    "price_for",
    "provider_kinds",
    "register_provider",
    "register_rubric",
    "registered_rubrics",
    "tally",
]
