"""Judges backed by an official SDK, with structured output through instructor.

The SDK's own retries are off (``max_retries=0``): the caller's retry loop is the only one, so it
is testable and honours Retry-After. instructor keeps only its validation re-asks
(``validation_retries``: re-asks after the first answer, default 1, so a verdict is asked for at
most twice), after which a bad verdict becomes an ``unparseable`` abstention. What is re-asked is
only what the verdict schema rejects after reading the answer leniently (``judge.llm._reading``:
a confidence off the 0..1 scale, raw control characters in JSON strings are repaired, not
re-asked); the schema's ``model_validate_json`` is where instructor parses the tool-call
arguments, live and from a provider batch alike.

Per-call client work is kept small, because at hundreds of calls in flight it is what bounds
throughput (``bench/bench_judges.py``):
- the verdict schema is wrapped for instructor once per schema, not on every call;
- instructor re-scans the response model for async validators several times per call (~0.5 ms);
  a class's validators are fixed once it is defined, so a clean result is remembered per class
  (``_remember_clean_async_validator_scans``);
- requests go out over aiohttp (the SDKs' documented ``DefaultAioHttpClient``, "for improved
  concurrency performance"): httpx's pool polls every idle connection's socket on every request
  and every release, quadratic in the requests in flight; the connection limit is the caller's
  concurrency (httpx is the fallback where the SDK lacks its aiohttp bridge);
- a subclass may send the request itself (``send``) where the SDK's request building costs more
  than the call (the OpenAI SDK's parameter transform, ~1 ms per call).
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import functools
import logging
import os
import sys
import weakref
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, ClassVar

import msgspec
from pydantic import BaseModel

from judge.llm._providers._base import Completion, JudgeClient, NextAttempt, require_key
from judge.llm._providers._errors import JudgeCallError, classify_sdk_error, usage_tokens
from judge.llm._settings import HOSTED, LOCAL_SERVER, ProviderConfig, ProviderDefaults, check_base_url, is_local_url

# instructor logs every failed attempt at ERROR ("API call failed ...", "Max retries exceeded ...")
# and sets no handler, so logging's last resort printed each to stderr (over the progress bar,
# once per failed call); the caller reports every failure as the vote's abstention with its reason.
# With a NullHandler those records still reach whatever handlers an application sets up.
logging.getLogger("instructor").addHandler(logging.NullHandler())


@functools.lru_cache(maxsize=64)
def prepared_schema(response_model: type[BaseModel]) -> type[BaseModel]:
    """instructor wraps a plain model in a new ``ResponseSchema`` class on every call (about 1 ms);
    wrapping once per schema gives the same tool schema and parsed fields, without that cost."""
    from instructor.v2.core.response_model import prepare_response_model

    prepared = prepare_response_model(response_model)
    assert prepared is not None
    return prepared


def _remember_clean_async_validator_scans() -> None:
    """Make instructor's "no async validators here" check run once per class, not per call.

    The scan walks the model's whole annotation tree (~80 us) and instructor runs it up to seven
    times per call. Only a clean result is remembered (a class with async validators still
    raises every time), only for classes, and only for instructor's own references to the
    function; anything else goes to the original.
    """
    from instructor.v2.validation import async_validators

    original = async_validators.reject_async_validators
    if getattr(original, "_judge_remembers_clean", False):
        return
    clean: weakref.WeakSet[type] = weakref.WeakSet()

    def reject_async_validators(response_model: Any) -> None:
        if isinstance(response_model, type) and response_model in clean:
            return
        original(response_model)
        if isinstance(response_model, type):
            clean.add(response_model)

    reject_async_validators._judge_remembers_clean = True  # type: ignore[attr-defined]
    for name, module in list(sys.modules.items()):
        if name.startswith("instructor") and getattr(module, "reject_async_validators", None) is original:
            module.reject_async_validators = reject_async_validators  # type: ignore[attr-defined]


# What the first call of a process imports (the HTTP stack under the SDKs' clients, instructor's
# handler modules): ~35 ms, imported with the panel instead, so judge worker processes forked
# from a run (``judge.llm._sharded``) find them loaded. Each is optional (SDK versions differ).
_HTTP_STACK = ("httpcore2", "h11", "truststore", "anyio.abc", "anyio.streams", "instructor.core", "instructor.mode")


@functools.cache
def _preload_http_stack() -> None:
    import importlib

    for name in _HTTP_STACK:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)


class _NotAnswered(Exception):
    """instructor re-asks a question answered from a batch that holds no answer to the re-ask yet."""


class _LoopClient(msgspec.Struct):
    """The SDK client of one event loop (its connection pool belongs to that loop) and the
    instructor-patched create function that drives it."""

    client: Any
    create: Callable[..., Awaitable[Any]]


class SDKJudge(JudgeClient):
    """A judge backed by an official SDK through instructor. Subclasses name the SDK, its env
    vars, default URL and instructor provider, and build the SDK client; key handling, per-loop
    clients, the call and closing are the same for every SDK."""

    base_url_env: ClassVar[str] = ""
    default_base_url: ClassVar[str] = ""
    default_key_env: ClassVar[str] = ""
    instructor_provider: ClassVar[str] = ""  # instructor's Provider value: "openai", "anthropic"

    def __init__(self, provider: str, model: str, config: ProviderConfig):
        if config.base_url is None and os.environ.get(self.base_url_env):  # the config's own was checked when it was read
            check_base_url(os.environ[self.base_url_env], self.base_url_env)
        super().__init__(provider, model, config)
        self._loop_client: _LoopClient | None = None
        self._loop: Callable[[], Any] = lambda: None  # weak reference to the loop the client belongs to
        self.preload()
        _preload_http_stack()

    # --- what a subclass provides --------------------------------------------------------------
    def preload(self) -> None:
        """Import the SDK's lazily loaded resources (~0.7 s) at panel build time, not in the first call."""

    @abc.abstractmethod
    def sdk(self) -> Any:
        """The SDK module (its exception classes classify failures)."""

    @abc.abstractmethod
    def make_sdk_client(self, api_key: str, http_client: Any) -> Any:
        """The async SDK client on ``http_client``, SDK retries off (the caller retries)."""

    @abc.abstractmethod
    def send(self, sdk_client: Any) -> Callable[..., Awaitable[Any]]:
        """The create function instructor drives (request keyword arguments in, SDK response out)."""

    # --- shared ---------------------------------------------------------------------------------
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

    def defaults(self) -> ProviderDefaults:
        """A server on this machine (vLLM, Ollama, llama.cpp's) answers one or two calls at a time:
        it starts with a local server's limits, a hosted API with today's."""
        return LOCAL_SERVER if is_local_url(self.base_url) else HOSTED

    def _for_loop(self) -> _LoopClient:
        loop = asyncio.get_running_loop()
        if self._loop_client is None or self._loop() is not loop:
            self._loop = weakref.ref(loop)
            self._loop_client = self._make_loop_client()
        return self._loop_client

    def _make_loop_client(self) -> _LoopClient:
        import instructor
        from instructor.v2 import Provider

        _remember_clean_async_validator_scans()
        client = self.make_sdk_client(self._api_key(), self.http_client())
        create = instructor.patch(create=self.send(client), mode=instructor.Mode.TOOLS, provider=Provider(self.instructor_provider))
        return _LoopClient(client, create)

    def http_client(self) -> Any:
        """aiohttp under the SDK, as many connections as calls may be in flight (plus spares)."""
        sdk = self.sdk()
        size = self.max_connections + 8
        limits = type(sdk.DEFAULT_CONNECTION_LIMITS)(max_connections=size, max_keepalive_connections=size)
        try:
            return sdk.DefaultAioHttpClient(limits=limits, timeout=self.timeout_s)
        except RuntimeError:  # this SDK build lacks its aiohttp bridge
            return sdk.DefaultAsyncHttpxClient(limits=limits, timeout=self.timeout_s)

    async def complete(self, messages: list[dict[str, str]], response_model: type[BaseModel]) -> Completion:
        return await self._structured(self._for_loop().create, messages, response_model, self.config.validation_retries)

    # --- provider batches (judge.llm._batches) ---------------------------------------------------
    def batch_body(self, messages: list[dict[str, str]], response_model: type[BaseModel]) -> dict[str, Any]:
        """The request body ``complete`` would send for ``messages``, built by the same instructor
        handlers (tool schema, tool choice, message conversion), for a line of a provider batch."""
        from instructor import Mode
        from instructor.v2 import Provider
        from instructor.v2.core.registry import mode_registry

        handlers = mode_registry.get_handlers(Provider(self.instructor_provider), Mode.TOOLS)
        kwargs: dict[str, Any] = {"messages": [dict(m) for m in messages], "model": self.model, **self.sampling()}
        _, body = handlers.request_handler(response_model=prepared_schema(response_model), kwargs=kwargs)
        if handlers.message_converter and "messages" in body:
            body["messages"] = handlers.message_converter(body["messages"], autodetect_images=False)
        return dict(body)  # no templating step: online calls pass no template context either

    async def answer_from_batch(self, messages: list[dict[str, str]], response_model: type[BaseModel], responses: Sequence[Any]) -> Completion | NextAttempt:
        """The verdict in a provider's batch answers to ``messages`` (SDK response objects: the
        answer to the question, then the answer to each re-ask), read by instructor as
        ``complete`` reads live answers, validation re-asks included: an answer the schema
        rejects, with a re-ask left (``validation_retries``), makes instructor build the re-ask
        from it exactly as online; when no answer to that re-ask exists yet, its request body
        comes back (``NextAttempt``) to go out in the next batch. Usage adds up over the attempts,
        as online."""
        import instructor
        from instructor.v2 import Provider

        sent: list[dict[str, Any]] = []

        async def answered(**body: Any) -> Any:
            sent.append(body)
            if len(sent) > len(responses):
                raise _NotAnswered
            return responses[len(sent) - 1]

        create = instructor.patch(create=answered, mode=instructor.Mode.TOOLS, provider=Provider(self.instructor_provider))
        try:
            return await self._structured(create, messages, response_model, self.config.validation_retries)
        except JudgeCallError:
            if len(sent) > len(responses):
                from pydantic_core import to_jsonable_python

                return NextAttempt(body=to_jsonable_python(sent[-1]))  # plain JSON, as a batch line holds it
            raise

    def batch_client(self) -> Any:
        """An SDK client for the provider's batch endpoints (files, batches): the judge's base URL
        and key, the SDK's own retries on (batch management calls are few and idempotent to poll)."""
        sdk = self.sdk()
        return self.make_sdk_client(self._api_key(), sdk.DefaultAsyncHttpxClient()).with_options(max_retries=3, timeout=max(self.timeout_s, 300.0))

    async def _structured(
        self, create: Callable[..., Awaitable[Any]], messages: list[dict[str, str]], response_model: type[BaseModel], retries: int
    ) -> Completion:
        try:
            verdict = await create(
                response_model=prepared_schema(response_model),
                messages=[dict(m) for m in messages],
                max_retries=retries,
                model=self.model,
                **self.sampling(),
            )
        except JudgeCallError:
            raise
        except Exception as exc:
            raise classify_sdk_error(exc, self.sdk()) from exc
        raw = getattr(verdict, "_raw_response", None)
        inp, out = usage_tokens(getattr(verdict, "_total_usage", None) or getattr(raw, "usage", None))
        return Completion(verdict=verdict, model_version=getattr(raw, "model", None), input_tokens=inp, output_tokens=out)

    async def aclose(self) -> None:
        held, self._loop_client = self._loop_client, None
        if held is not None:
            with contextlib.suppress(RuntimeError):  # its event loop is already closed; nothing left to release
                await held.client.close()
