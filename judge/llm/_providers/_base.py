"""The judge-client contract, failure classification and the provider registry.

Why a classified error: the panel must tell a transient failure (retry with backoff) from a final
one (abstain with a reason), and must never turn either into a negative vote.
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from judge.llm._settings import JudgeConfigError, ProviderConfig

# Final abstention reasons a client can raise (the panel adds budget, offline_miss).
RETRYABLE = frozenset({"rate_limit", "server", "timeout", "connection"})


@dataclass
class Completion:
    verdict: BaseModel
    model_version: str | None
    input_tokens: int = 0
    output_tokens: int = 0


class JudgeCallError(Exception):
    """One failed judge call. ``reason``: rate_limit, server, timeout, connection (retryable) or
    refusal, unparseable, error (final). ``cacheable``: the provider answered and the answer
    itself is the failure (a refusal, a schema violation), so a rerun would get the same."""

    def __init__(
        self,
        reason: str,
        message: str,
        *,
        retry_after: float | None = None,
        cacheable: bool = False,
        input_tokens: int = 0,
        output_tokens: int = 0,
    ):
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.message = message
        self.retry_after = retry_after
        self.cacheable = cacheable
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens

    @property
    def retryable(self) -> bool:
        return self.reason in RETRYABLE


class JudgeClient:
    """A judge model behind some provider. Subclasses implement ``sampling`` and ``complete``."""

    kind: str = ""
    cacheable: bool = True  # False for free deterministic models (mock): nothing to save
    enforces_timeout: bool = True  # False: the panel wraps each call in its own deadline

    def __init__(self, provider: str, model: str, config: ProviderConfig):
        self.provider = provider
        self.model = model
        self.config = config

    @property
    def name(self) -> str:
        return f"{self.provider}:{self.model}"

    @property
    def base_url(self) -> str | None:
        return None

    def sampling(self) -> dict[str, Any]:
        """The sampling parameters sent with every call (part of the cache key)."""
        return {}

    def identity(self, messages: list[dict[str, str]], schema: dict[str, Any]) -> dict[str, Any]:
        """Everything that determines the answer, and nothing secret (no keys, no headers)."""
        return {
            "kind": self.kind,
            "model": self.model,
            "base_url": self.base_url,
            "messages": messages,
            "schema": schema,
            "sampling": self.sampling(),
        }

    def check_ready(self) -> None:
        """Raise ``JudgeConfigError`` when a live call could not work (missing key or package)."""

    async def complete(self, messages: list[dict[str, str]], response_model: type[BaseModel]) -> Completion:
        raise NotImplementedError

    async def aclose(self) -> None:
        return None


_FACTORIES: dict[str, Callable[[str, str, ProviderConfig], JudgeClient]] = {}


def register_provider(kind: str, factory: Callable[[str, str, ProviderConfig], JudgeClient]) -> None:
    _FACTORIES[kind] = factory


def provider_kinds() -> list[str]:
    _load_builtin()
    return sorted(_FACTORIES)


def parse_judge_name(name: str) -> tuple[str, str]:
    """``"openai:gpt-4.1-mini"`` -> ``("openai", "gpt-4.1-mini")``; the model may contain colons."""
    provider, sep, model = name.partition(":")
    if not sep or not provider or not model:
        raise JudgeConfigError(f"judge {name!r}: expected 'provider:model', e.g. 'openai:gpt-4.1-mini'")
    return provider, model


def create_client(name: str, providers: dict[str, ProviderConfig]) -> JudgeClient:
    """Build the client for ``provider:model``; the prefix is a kind or a configured alias."""
    _load_builtin()
    provider, model = parse_judge_name(name)
    config = providers.get(provider) or ProviderConfig()
    kind = config.kind or provider
    factory = _FACTORIES.get(kind)
    if factory is None:
        raise JudgeConfigError(
            f"judge {name!r}: unknown provider {provider!r}; known kinds: {', '.join(sorted(_FACTORIES))} "
            "(or define [providers.<alias>] kind = ... in the config file)"
        )
    return factory(provider, model, config)


def _load_builtin() -> None:
    if _FACTORIES:
        return
    from judge.llm._providers import anthropic, llamacpp, mock, openai  # noqa: F401  (register on import)


# --- failure classification shared by the SDK-backed providers ----------------------------------


def retry_after_seconds(headers: Any) -> float | None:
    """Seconds from ``retry-after-ms`` or ``Retry-After`` (delta-seconds or an HTTP date)."""
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        return max(0.0, when.timestamp() - time.time())


def classify_sdk_error(exc: BaseException, sdk: Any) -> JudgeCallError:
    """Map an openai/anthropic SDK (or instructor) failure to a ``JudgeCallError``.

    ``instructor`` wraps everything in ``InstructorRetryException``: the provider error is its
    ``__cause__``; validation failures keep the last completion so a refusal can be recognised.
    """
    tokens = _usage_tokens(getattr(exc, "total_usage", None))
    cause = exc.__cause__ if exc.__cause__ is not None and type(exc).__name__ == "InstructorRetryException" else exc
    last = getattr(exc, "last_completion", None)
    if isinstance(cause, sdk.APITimeoutError):
        return JudgeCallError("timeout", str(cause), **tokens)
    if isinstance(cause, sdk.APIConnectionError):
        return JudgeCallError("connection", str(cause), **tokens)
    if isinstance(cause, sdk.APIStatusError):
        status = cause.status_code
        retry_after = retry_after_seconds(getattr(cause.response, "headers", None))
        if status == 429:
            return JudgeCallError("rate_limit", str(cause), retry_after=retry_after, **tokens)
        if status >= 500 or status == 408:
            return JudgeCallError("server", str(cause), retry_after=retry_after, **tokens)
        return JudgeCallError("error", f"HTTP {status}: {cause}", **tokens)
    refusal = _refusal_text(last)
    if refusal is not None or (isinstance(cause, AssertionError) and "Unable to generate a response" in str(cause)):
        return JudgeCallError("refusal", refusal or str(cause), cacheable=True, **tokens)
    if isinstance(cause, json.JSONDecodeError) and last is None:
        # The HTTP body itself was not JSON: a transport fault, answered but not worth caching.
        return JudgeCallError("unparseable", f"response body is not JSON: {cause}", **tokens)
    if isinstance(cause, (ValidationError, json.JSONDecodeError)) or type(cause).__name__ in ("ResponseParsingError", "IncompleteOutputException"):
        return JudgeCallError("unparseable", _short(str(cause)), cacheable=True, **tokens)
    return JudgeCallError("error", f"{type(cause).__name__}: {_short(str(cause))}", **tokens)


def _refusal_text(completion: Any) -> str | None:
    """A provider-native refusal, or plain text where the verdict tool call should have been."""
    if completion is None:
        return None
    choices = getattr(completion, "choices", None)
    if choices:  # OpenAI wire
        message = choices[0].message
        if getattr(message, "refusal", None):
            return message.refusal
        if not getattr(message, "tool_calls", None) and (message.content or "").strip():
            return message.content.strip()
        return None
    content = getattr(completion, "content", None)  # Anthropic wire
    if isinstance(content, list):
        has_tool = any(getattr(block, "type", None) == "tool_use" for block in content)
        text = " ".join(getattr(block, "text", "") for block in content if getattr(block, "type", None) == "text").strip()
        if getattr(completion, "stop_reason", None) == "refusal" or (not has_tool and text):
            return text or "refused"
    return None


def usage_tokens(usage: Any) -> tuple[int, int]:
    d = _usage_tokens(usage)
    return d["input_tokens"], d["output_tokens"]


def _usage_tokens(usage: Any) -> dict[str, int]:
    if usage is None:
        return {"input_tokens": 0, "output_tokens": 0}
    inp = getattr(usage, "prompt_tokens", None)
    if inp is None:
        inp = getattr(usage, "input_tokens", 0)
    out = getattr(usage, "completion_tokens", None)
    if out is None:
        out = getattr(usage, "output_tokens", 0)
    return {"input_tokens": int(inp or 0), "output_tokens": int(out or 0)}


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def require_key(env_name: str, judge: str) -> str:
    import os

    value = os.environ.get(env_name)
    if not value:
        raise JudgeConfigError(f"judge {judge!r}: environment variable {env_name} is not set (set it, or point api_key_env at another variable)")
    return value
