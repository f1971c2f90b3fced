"""Anthropic Messages judges (``tool_use`` blocks via instructor's TOOLS mode).

Base URL: the provider config's ``base_url``, else ``ANTHROPIC_BASE_URL``, else api.anthropic.com.
The anthropic 2.x SDK exposes no sampling parameters (no temperature, no seed) on
``messages.create``; nothing is sent for them and determinism across reruns comes from the cache.
"""

from __future__ import annotations

from typing import Any

from judge.llm._providers._base import register_provider
from judge.llm._providers._instructor import SDKJudge

DEFAULT_BASE_URL = "https://api.anthropic.com"


class AnthropicJudge(SDKJudge):
    kind = "anthropic"
    base_url_env = "ANTHROPIC_BASE_URL"
    default_base_url = DEFAULT_BASE_URL
    default_key_env = "ANTHROPIC_API_KEY"

    def preload(self) -> None:
        import anthropic.resources.messages  # noqa: F401
        import instructor.v2.providers.anthropic.client  # noqa: F401

    def sdk(self) -> Any:
        import anthropic

        return anthropic

    def sampling(self) -> dict[str, Any]:
        return {"max_tokens": self.config.max_tokens}

    def make_client(self, api_key: str) -> Any:
        import anthropic
        import instructor

        sdk_client = anthropic.AsyncAnthropic(api_key=api_key, base_url=self.base_url, max_retries=0, timeout=self._timeout_s)
        return instructor.from_anthropic(sdk_client, mode=instructor.Mode.TOOLS)


register_provider("anthropic", AnthropicJudge)
