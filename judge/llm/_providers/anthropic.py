"""Anthropic Messages judges (``tool_use`` blocks via instructor's TOOLS mode).

Base URL: the provider config's ``base_url``, else ``ANTHROPIC_BASE_URL``, else api.anthropic.com.
The anthropic 2.x SDK exposes no sampling parameters (no temperature, no seed) on
``messages.create``; nothing is sent for them and determinism across reruns comes from the cache.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, cast

from judge.llm._providers._base import register_provider
from judge.llm._providers._errors import JudgeCallError
from judge.llm._providers._instructor import SDKJudge

DEFAULT_BASE_URL = "https://api.anthropic.com"


class AnthropicJudge(SDKJudge):
    kind = "anthropic"
    base_url_env = "ANTHROPIC_BASE_URL"
    default_base_url = DEFAULT_BASE_URL
    default_key_env = "ANTHROPIC_API_KEY"
    instructor_provider = "anthropic"

    def preload(self) -> None:
        import anthropic.resources.messages  # noqa: F401
        import instructor.v2.providers.anthropic.client  # noqa: F401

    def sdk(self) -> Any:
        import anthropic

        return anthropic

    def sampling(self) -> dict[str, Any]:
        return {"max_tokens": self.config.max_tokens}

    def make_sdk_client(self, api_key: str, http_client: Any) -> Any:
        import anthropic

        return anthropic.AsyncAnthropic(api_key=api_key, base_url=self.base_url, max_retries=0, timeout=self.timeout_s, http_client=http_client)

    def send(self, sdk_client: Any) -> Callable[..., Awaitable[Any]]:
        return cast(Callable[..., Awaitable[Any]], sdk_client.messages.create)

    def should_retry(self, error: JudgeCallError) -> bool:
        """Anthropic's ``x-should-retry`` header when sent; 529 (overloaded) is a 5xx and retried."""
        if error.server_retry is not None:
            return error.server_retry
        return error.retryable


register_provider("anthropic", AnthropicJudge)
