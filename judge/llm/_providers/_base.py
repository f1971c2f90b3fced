"""The judge-client contract and the provider registry.

A judge client is one model behind one provider, in the manner of inspect_ai's ``ModelAPI``: an
abstract ``complete`` that asks for one verdict, and a provider-owned ``should_retry`` that says
which failures are worth another attempt. Everything around a call (cache, single flight, limits,
retries, cost) belongs to the caller (``judge.llm._caller``), never to a client.
"""

from __future__ import annotations

import abc
import os
from collections.abc import Callable
from typing import Any, ClassVar

import msgspec
from pydantic import BaseModel

from judge.llm._providers._errors import JudgeCallError
from judge.llm._settings import HOSTED, JudgeConfigError, ProviderConfig, ProviderDefaults


class Completion(msgspec.Struct):
    """One verdict as the provider returned it, with what it cost."""

    verdict: BaseModel
    model_version: str | None
    input_tokens: int = 0
    output_tokens: int = 0


class NextAttempt(msgspec.Struct, frozen=True):
    """The request a judge would send next for a question answered from a provider batch: the
    answers so far failed the verdict schema and a validation re-ask is left, so instructor built
    the re-ask (``body``, the request as online it would go out). The batch flow sends it in the
    next batch; nothing is decided until it is answered."""

    body: dict[str, Any]


class JudgeClient(abc.ABC):
    """A judge model behind some provider. Subclasses implement ``complete``; they may refine
    ``should_retry``, ``sampling``, ``identity``, ``check_ready``, ``configure``, ``defaults``
    and ``aclose``."""

    kind: ClassVar[str] = ""
    cacheable: ClassVar[bool] = True  # False for free deterministic models (mock): nothing to save
    enforces_timeout: ClassVar[bool] = True  # False: the caller wraps each call in its own deadline

    def __init__(self, provider: str, model: str, config: ProviderConfig):
        self.provider = provider
        self.model = model
        self.config = config
        self.timeout_s = config.timeout_s or self.defaults().timeout_s
        self.max_connections = 32

    @property
    def name(self) -> str:
        return f"{self.provider}:{self.model}"

    @property
    def base_url(self) -> str | None:
        return None

    def sampling(self) -> dict[str, Any]:
        """The sampling parameters sent with every call (part of the cache key)."""
        return {}

    def defaults(self) -> ProviderDefaults:
        """The concurrency, timeout and retries this judge starts with where none is set
        (``judge.llm._settings``): a hosted API's, unless a client knows better."""
        return HOSTED

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

    def check_ready(self) -> None:  # noqa: B027  (optional hook: most clients need no check)
        """Raise ``JudgeConfigError`` when a live call could not work (missing key or package)."""

    def configure(self, *, timeout_s: float, max_connections: int) -> None:
        """Set by the caller before the first call: the per-request deadline, and how many
        requests it may have in flight at once (a client sizes its connection pools by it)."""
        self.timeout_s = timeout_s
        self.max_connections = max(1, max_connections)

    @abc.abstractmethod
    async def complete(self, messages: list[dict[str, str]], response_model: type[BaseModel]) -> Completion:
        """One verdict for ``messages`` in the shape of ``response_model``; raise ``JudgeCallError``."""

    def should_retry(self, error: JudgeCallError) -> bool:
        """Is another attempt worth it? Default: transient failures (rate limit, 5xx, timeout,
        connection) are, answers (refusal, unparseable) and client errors are not."""
        return error.retryable

    async def aclose(self) -> None:
        """Release connections; the client may be used again afterwards (it reconnects)."""
        return None


Factory = Callable[[str, str, ProviderConfig], JudgeClient]
_FACTORIES: dict[str, Factory] = {}


def register_provider(kind: str, factory: Factory) -> None:
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


def require_key(env_name: str, judge: str) -> str:
    value = os.environ.get(env_name)
    if not value:
        raise JudgeConfigError(f"judge {judge!r}: environment variable {env_name} is not set (set it, or point api_key_env at another variable)")
    return value
