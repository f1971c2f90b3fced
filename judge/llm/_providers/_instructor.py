"""One structured call through instructor, shared by the SDK-backed providers.

The SDK's own retries are off (``max_retries=0`` on the client): the panel's retry loop is the only
one, so it is testable and honours Retry-After. instructor keeps only its validation re-asks
(``validation_retries``, low), after which a bad verdict becomes an ``unparseable`` abstention.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import weakref
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from judge.llm._providers._base import Completion, JudgeCallError, JudgeClient, classify_sdk_error, require_key, usage_tokens


@functools.lru_cache(maxsize=64)
def prepared_schema(response_model: type[BaseModel]) -> type[BaseModel]:
    """instructor wraps a plain model in a new ``ResponseSchema`` class on every call (about 1 ms);
    wrapping once per schema gives the same tool schema and parsed fields, without that cost."""
    from instructor.v2.core.response_model import prepare_response_model

    return prepare_response_model(response_model)


async def instructor_complete(
    client: Any,
    sdk: Any,
    messages: list[dict[str, str]],
    response_model: type[BaseModel],
    validation_retries: int,
    **kwargs: Any,
) -> Completion:
    try:
        verdict, raw = await client.create_with_completion(
            messages=[dict(m) for m in messages],
            response_model=prepared_schema(response_model),
            max_retries=validation_retries,
            **kwargs,
        )
    except JudgeCallError:
        raise
    except Exception as exc:
        raise classify_sdk_error(exc, sdk) from exc
    total = getattr(verdict, "_total_usage", None) or getattr(raw, "usage", None)
    inp, out = usage_tokens(total)
    return Completion(verdict=verdict, model_version=getattr(raw, "model", None), input_tokens=inp, output_tokens=out)


class SDKJudge(JudgeClient):
    """A judge backed by an official SDK through instructor. Subclasses name the SDK, its env
    vars and default URL, and build the SDK client; key handling, per-loop clients, the call and
    closing are the same for every SDK."""

    base_url_env: str = ""
    default_base_url: str = ""
    default_key_env: str = ""

    def __init__(self, provider, model, config):
        super().__init__(provider, model, config)
        self._client: Any = None
        self._timeout_s = 60.0
        self._loop: Callable[[], Any] = lambda: None  # weak reference to the loop the client belongs to
        self.preload()

    def preload(self) -> None:
        """Import the SDK's lazily loaded resources (~0.7 s) at panel build time, not in the first call."""

    def sdk(self) -> Any:
        raise NotImplementedError

    def make_client(self, api_key: str) -> Any:
        """The instructor-patched async SDK client (SDK retries off; the panel retries)."""
        raise NotImplementedError

    @property
    def base_url(self) -> str:
        return (self.config.base_url or os.environ.get(self.base_url_env) or self.default_base_url).rstrip("/")

    @property
    def key_env(self) -> str:
        return self.config.api_key_env or self.default_key_env

    def _api_key(self) -> str:
        if os.environ.get(self.key_env):
            return os.environ[self.key_env]
        if self.base_url != self.default_base_url:
            return "not-needed"  # local OpenAI-compatible servers usually need no key
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
            self._client = self.make_client(self._api_key())
        return self._client

    async def complete(self, messages: list[dict[str, str]], response_model: type[BaseModel]) -> Completion:
        return await instructor_complete(
            self._instructor(), self.sdk(), messages, response_model, self.config.validation_retries, model=self.model, **self.sampling()
        )

    async def aclose(self) -> None:
        if self._client is not None:
            with contextlib.suppress(RuntimeError):  # its event loop is already closed; nothing left to release
                await self._client.client.close()
            self._client = None
