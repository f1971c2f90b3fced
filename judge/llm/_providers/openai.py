"""OpenAI Chat Completions judges, and any OpenAI-compatible server (vLLM, Ollama, llama.cpp server).

Base URL: the provider config's ``base_url``, else ``OPENAI_BASE_URL``, else api.openai.com.
Key: the env var named by ``api_key_env`` (default ``OPENAI_API_KEY``); a non-default base URL
without a key gets a placeholder, since local servers usually need none.
"""

from __future__ import annotations

from typing import Any

from judge.llm._providers._base import register_provider
from judge.llm._providers._instructor import SDKJudge

DEFAULT_BASE_URL = "https://api.openai.com/v1"


class OpenAIJudge(SDKJudge):
    kind = "openai"
    base_url_env = "OPENAI_BASE_URL"
    default_base_url = DEFAULT_BASE_URL
    default_key_env = "OPENAI_API_KEY"

    def preload(self) -> None:
        import instructor.v2.providers.openai.client  # noqa: F401
        import openai.resources.chat.completions  # noqa: F401

    def sdk(self) -> Any:
        import openai

        return openai

    def sampling(self) -> dict[str, Any]:
        params: dict[str, Any] = {"temperature": 0, "max_tokens": self.config.max_tokens}
        if self.config.seed is not None:
            params["seed"] = self.config.seed
        return params

    def make_client(self, api_key: str) -> Any:
        import instructor
        import openai

        sdk_client = openai.AsyncOpenAI(api_key=api_key, base_url=self.base_url, max_retries=0, timeout=self._timeout_s)
        return instructor.from_openai(sdk_client, mode=instructor.Mode.TOOLS)


register_provider("openai", OpenAIJudge)
