"""LLM judging: provider clients (one module per provider), structured output via instructor,
one caller for every judge call (cache, single flight across tasks and runs, limits, retries,
cost), the panel that fans out, votes and breaks ties, vote weights, provider batch APIs
(``--judge-mode batch``: questions deferred, submitted, polled and collected by a ``BatchFlow``),
and large rounds sharded over worker processes (``ShardedPanel``, ``--workers N``).

Import this only where judges are used: it loads the provider SDKs.
"""

from judge.llm._batches import BatchFlow, BatchRecord, BatchStatus, BatchSubmitError, Collected
from judge.llm._cache import Claim, JudgeCache, cache_key
from judge.llm._caller import BatchPort, JudgeCall, JudgeCaller, Transport, complete_online
from judge.llm._limits import BATCH_DISCOUNT, Budget, RateLimiter, RetryPolicy, batch_price, cost_usd, price_for
from judge.llm._panel import Panel, PanelStats, build_panel, majority_of
from judge.llm._providers import (
    Completion,
    JudgeCallError,
    JudgeClient,
    classify_sdk_error,
    create_client,
    parse_judge_name,
    provider_kinds,
    register_provider,
    retry_after_seconds,
)
from judge.llm._rubric import AnswerVerdict, JudgeVerdict, Quote, Rubric, evidence_rule_of, register_rubric, registered_rubrics
from judge.llm._settings import (
    ConfigFile,
    JudgeConfigError,
    JudgeSettings,
    PanelConfig,
    PriceConfig,
    ProviderConfig,
    ProviderDefaults,
    RetryConfig,
    is_local_url,
    load_config_file,
)
from judge.llm._sharded import SHARD_MIN_REQUESTS, ShardedPanel, shard_panel
from judge.llm._spend import SpendLog
from judge.llm._usage import CallStats, JudgeUsage
from judge.llm._voting import Tally, tally
from judge.llm._weights import JudgeWeight, RubricWeights, VoteWeights, load_weights

__all__ = [
    "BATCH_DISCOUNT",
    "SHARD_MIN_REQUESTS",
    "AnswerVerdict",
    "BatchFlow",
    "BatchPort",
    "BatchRecord",
    "BatchStatus",
    "BatchSubmitError",
    "Budget",
    "CallStats",
    "Claim",
    "Collected",
    "Completion",
    "ConfigFile",
    "JudgeCache",
    "JudgeCall",
    "JudgeCallError",
    "JudgeCaller",
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
    "ProviderDefaults",
    "Quote",
    "RateLimiter",
    "RetryConfig",
    "RetryPolicy",
    "Rubric",
    "RubricWeights",
    "ShardedPanel",
    "SpendLog",
    "Tally",
    "Transport",
    "VoteWeights",
    "batch_price",
    "build_panel",
    "cache_key",
    "classify_sdk_error",
    "complete_online",
    "cost_usd",
    "create_client",
    "evidence_rule_of",
    "is_local_url",
    "load_config_file",
    "load_weights",
    "majority_of",
    "parse_judge_name",
    "price_for",
    "provider_kinds",
    "register_provider",
    "register_rubric",
    "registered_rubrics",
    "retry_after_seconds",
    "shard_panel",
    "tally",
]
