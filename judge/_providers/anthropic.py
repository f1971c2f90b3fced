"""Anthropic Messages judges (``tool_use`` blocks via instructor's TOOLS mode).

Base URL: the provider config's ``base_url``, else ``ANTHROPIC_BASE_URL``, else api.anthropic.com.
The anthropic 2.x SDK exposes no sampling parameters (no temperature, no seed) on
``messages.create``; nothing is sent for them and determinism across reruns comes from the cache.
"""

from __future__ import annotations

import asyncio
import os
import weakref
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from judge._providers._base import Completion, JudgeClient, register_provider, require_key
from judge._providers._instructor import instructor_complete

DEFAULT_BASE_URL = "https://api.anthropic.com"


class AnthropicJudge(JudgeClient):
    kind = "anthropic"

    def __init__(self, provider, model, config):
        super().__init__(provider, model, config)
        self._client: Any = None
        self._timeout_s = 60.0
        self._loop: Callable[[], Any] = lambda: None  # weak reference to the loop the client belongs to
        # The SDKs import their resources lazily (~0.7 s): do it at panel build time, not in the first call.
        import anthropic.resources.messages  # noqa: F401
        import instructor.v2.providers.anthropic.client  # noqa: F401

    @property
    def base_url(self) -> str:
        return (self.config.base_url or os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")

    @property
    def key_env(self) -> str:
        return self.config.api_key_env or "ANTHROPIC_API_KEY"

    def sampling(self) -> dict[str, Any]:
        return {"max_tokens": self.config.max_tokens}

    def _api_key(self) -> str:
        if os.environ.get(self.key_env):
            return os.environ[self.key_env]
        if self.base_url != DEFAULT_BASE_URL:
            return "not-needed"
        return require_key(self.key_env, self.name)

    def check_ready(self) -> None:
        self._api_key()

    def set_timeout(self, timeout_s: float) -> None:
        self._timeout_s = timeout_s

    def _instructor(self) -> Any:
        # An SDK client's connection pool belongs to one event loop: a new loop gets a new client.
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop() is not loop:
            self._loop = weakref.ref(loop)
            import anthropic
            import instructor

            sdk_client = anthropic.AsyncAnthropic(api_key=self._api_key(), base_url=self.base_url, max_retries=0, timeout=self._timeout_s)
            self._client = instructor.from_anthropic(sdk_client, mode=instructor.Mode.TOOLS)
        return self._client

    async def complete(self, messages: list[dict[str, str]], response_model: type[BaseModel]) -> Completion:
        import anthropic

        return await instructor_complete(
            self._instructor(), anthropic, messages, response_model, self.config.validation_retries, model=self.model, **self.sampling()
        )

    async def aclose(self) -> None:
        if self._client is not None:
            try:
                await self._client.client.close()
            except RuntimeError:  # its event loop is already closed; nothing left to release
                pass
            self._client = None


register_provider("anthropic", AnthropicJudge)
