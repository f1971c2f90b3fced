"""Judge clients, one module per provider, behind a registry keyed by the ``provider:`` prefix.

A judge is named ``provider:model`` (``openai:gpt-4.1-mini``, ``anthropic:claude-haiku-4-5``,
``mock:always-correct``, ``llamacpp:/models/x.gguf``). The prefix is a provider *kind* or an alias
defined in the config file (``[providers.vllm] kind = "openai"``), so several OpenAI-compatible
servers can sit side by side.
"""

from judge.llm._providers._base import (
    Completion,
    JudgeClient,
    NextAttempt,
    create_client,
    parse_judge_name,
    provider_kinds,
    register_provider,
)
from judge.llm._providers._errors import JudgeCallError, classify_sdk_error, retry_after_seconds

__all__ = [
    "Completion",
    "JudgeCallError",
    "JudgeClient",
    "NextAttempt",
    "classify_sdk_error",
    "create_client",
    "parse_judge_name",
    "provider_kinds",
    "register_provider",
    "retry_after_seconds",
]
