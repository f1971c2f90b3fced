"""OpenAI Chat Completions judges, and any OpenAI-compatible server (vLLM, Ollama, llama.cpp server).

Base URL: the provider config's ``base_url``, else ``OPENAI_BASE_URL``, else api.openai.com.
Key: the env var named by ``api_key_env`` (default ``OPENAI_API_KEY``); a non-default base URL
without a key gets a placeholder, since local servers usually need none.

The request goes out through the SDK's documented ``post`` for custom requests rather than
``chat.completions.create``: ``create`` first walks every parameter against its typed-dict
annotations (tool JSON schema included) to rename aliased keys and encode files and dates, about
1 ms of CPU per call and the largest single cost with hundreds of calls in flight. Our request
holds only JSON values (strings, numbers, the schema dict), for which that walk is the identity.
The body goes as the JSON bytes orjson writes (``post``'s documented ``content``; the SDK's own
encoder takes ~8 us more), to the absolute URL (the SDK takes one as given; a path is merged with
the base URL by re-parsing it, ~8 us per call). The answer is read into ``ChatCompletion`` by
pydantic's validator (~30 us) rather than the SDK's lenient field-by-field builder (~200 us); an
answer that does not validate (an OpenAI-compatible server's variant) still goes through the
lenient builder. Authentication, headers, HTTP errors and the response types are the SDK's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from judge.llm._providers._base import register_provider
from judge.llm._providers._errors import JudgeCallError
from judge.llm._providers._instructor import SDKJudge

DEFAULT_BASE_URL = "https://api.openai.com/v1"

# 429s that are not about pace: waiting will not help, so they are final.
NOT_RATE_LIMITS = frozenset({"insufficient_quota", "billing_hard_limit_reached", "billing_not_active"})


class OpenAIJudge(SDKJudge):
    kind = "openai"
    base_url_env = "OPENAI_BASE_URL"
    default_base_url = DEFAULT_BASE_URL
    default_key_env = "OPENAI_API_KEY"
    instructor_provider = "openai"

    def preload(self) -> None:
        import instructor.v2.providers.openai.client  # noqa: F401
        import openai.types.chat  # noqa: F401

    def sdk(self) -> Any:
        import openai

        return openai

    def sampling(self) -> dict[str, Any]:
        params: dict[str, Any] = {"temperature": 0, "max_tokens": self.config.max_tokens}
        if self.config.seed is not None:
            params["seed"] = self.config.seed
        return params

    def make_sdk_client(self, api_key: str, http_client: Any) -> Any:
        import openai

        return openai.AsyncOpenAI(api_key=api_key, base_url=self.base_url, max_retries=0, timeout=self.timeout_s, http_client=http_client)

    def send(self, sdk_client: Any) -> Callable[..., Awaitable[Any]]:
        import orjson
        from openai.types.chat import ChatCompletion
        from pydantic import ValidationError

        options: Any = {"security": {"bearer_auth": True}}  # what create() asks for: the Authorization header
        url = str(sdk_client.base_url).rstrip("/") + "/chat/completions"  # absolute: taken as is, not merged with the base URL per call

        async def create(**body: Any) -> Any:
            text = await sdk_client.post(url, content=orjson.dumps(body), cast_to=str, options=options)
            data = orjson.loads(text)  # not JSON: orjson.JSONDecodeError, a json.JSONDecodeError like the SDK's
            try:
                return ChatCompletion.model_validate(data)
            except ValidationError:
                return ChatCompletion.model_construct(**data)

        return create

    def should_retry(self, error: JudgeCallError) -> bool:
        """OpenAI's own signals first: ``x-should-retry`` when the server sends it, and a 429
        for an exhausted quota or billing limit is final (no amount of waiting fixes it)."""
        if error.server_retry is not None:
            return error.server_retry
        if error.reason == "rate_limit" and error.code in NOT_RATE_LIMITS:
            return False
        return error.retryable


register_provider("openai", OpenAIJudge)
