"""The agent-model contract, failure classification and the provider registry.

An agent model turns a neutral ``Conversation`` into its provider's wire payload (``request``),
sends it (``send``, returning the response as plain JSON) and reads a ``ModelReply`` back
(``parse``). Splitting the three is what makes the cache exact: the key is the wire payload
itself, and a cached response is parsed by the very code that parses a live one.
"""

from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
from typing import Any, ClassVar

import msgspec

from judge import MAX_DEPTH, ConfigurationError, ExternalCallError, ToolSpec, loads_json, nesting_error
from judge.llm import ProviderConfig, classify_sdk_error
from pipelines.runner._conversation import Conversation, ModelReply, ToolCall

RETRYABLE = frozenset({"rate_limit", "server", "timeout", "connection"})
PLACEHOLDER_KEY = "not-needed"  # local OpenAI-compatible servers usually take any key


class AgentConfigError(ConfigurationError):
    """An agent that cannot run (unknown provider, missing key); the message says what to set."""


class AgentCallError(ExternalCallError):
    """One failed model call. ``reason``: rate_limit, server, timeout, connection (retried) or
    error, offline (final: the trajectory cannot be collected and is reported, never graded)."""

    def __init__(self, reason: str, message: str, retry_after: float | None = None):
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.message = message
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        return self.reason in RETRYABLE


class Sampling(msgspec.Struct, frozen=True):
    """What the run decides about sampling; ``None`` leaves the provider's default (and sends nothing)."""

    temperature: float | None = None
    max_tokens: int | None = None
    timeout_s: float = 120.0


class AgentModel(ABC):
    """A model behind some provider, driven with native tool calling."""

    kind: ClassVar[str] = ""
    base_url_env: ClassVar[str] = ""
    default_base_url: ClassVar[str] = ""
    default_key_env: ClassVar[str] = ""
    max_tools: ClassVar[int | None] = None  # the most tools one request may declare (None: no known cap)

    def __init__(self, provider: str, model: str, config: ProviderConfig, sampling: Sampling):
        self.provider = provider
        self.model = model
        self.config = config
        self.sampling = sampling
        self._client: Any = None

    @property
    def name(self) -> str:
        return f"{self.provider}:{self.model}"

    @property
    def base_url(self) -> str:
        return self.config.base_url or os.environ.get(self.base_url_env) or self.default_base_url

    @property
    def timeout_s(self) -> float:
        return self.config.timeout_s or self.sampling.timeout_s

    def api_key(self) -> str:
        env_name = self.config.api_key_env or self.default_key_env
        value = os.environ.get(env_name)
        if value:
            return value
        if self.base_url.rstrip("/") != self.default_base_url.rstrip("/"):
            return PLACEHOLDER_KEY
        raise AgentConfigError(f"agent {self.name!r}: environment variable {env_name} is not set (set it, or point api_key_env at another variable)")

    def preload(self) -> None:  # noqa: B027 (optional hook: most providers have nothing to load)
        """Import the SDK before the run starts, so the first call's latency is the model's alone."""

    def check_ready(self) -> None:
        """Raise ``AgentConfigError`` when a live call could not work."""
        self.api_key()

    def identity(self, payload: dict[str, Any], seed: int) -> dict[str, Any]:
        """Everything that determines the answer and nothing secret: the cache key's content.
        The seed is part of it even where the provider takes none, so trials never share answers."""
        return {"purpose": "agent", "kind": self.kind, "base_url": self.base_url, "payload": payload, "seed": seed}

    @abstractmethod
    def request(self, conversation: Conversation, tools: list[ToolSpec], seed: int) -> dict[str, Any]:
        """The wire payload for the next model message (deterministic in its inputs)."""

    @abstractmethod
    async def send(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Send ``payload``; the response as plain JSON. Raises ``AgentCallError``."""

    @abstractmethod
    def parse(self, response: dict[str, Any]) -> ModelReply:
        """Read a response (live or cached) into a ``ModelReply``."""

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None


def parse_arguments(raw: Any) -> tuple[dict[str, Any] | None, str | None]:
    """Arguments as a dict, or the reason they are not one (the agent's error, never ours).
    Held to the input readers' bounds: nesting past ``MAX_DEPTH`` is an error, not a crash later."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}, None
    if isinstance(raw, str):
        try:
            value = loads_json(raw)
        except json.JSONDecodeError as exc:
            return None, f"not valid JSON ({exc.msg} at position {exc.pos})"
        except ValueError as exc:  # nested too deep, an unpaired surrogate escape, an integer past Python's limit
            return None, f"not usable JSON ({exc})"
    else:
        value = raw
        if nesting_error(value) is not None:  # text was bounded as it was read
            return None, f"nested deeper than {MAX_DEPTH} levels"
    if not isinstance(value, dict):
        return None, f"a JSON {type(value).__name__}, not an object"
    return value, None


def tool_call(call_id: Any, name: Any, raw: Any, fallback_id: str) -> ToolCall:
    """One requested call, whatever the shapes of its parts: a missing or odd id gets ``fallback_id``,
    a name that is not text is kept as its JSON text (an unknown tool the model is told about)."""
    arguments, error = parse_arguments(raw)
    text = raw if isinstance(raw, str) else _json_text(raw)
    if isinstance(call_id, bool) or not isinstance(call_id, (str, int)) or call_id == "":
        call_id = fallback_id
    return ToolCall(id=str(call_id), name=name if isinstance(name, str) else _json_text(name), raw_arguments=text, arguments=arguments, parse_error=error)


def reply_text(value: Any) -> str | None:
    """A message's text from what a server sent: a string, a list of content parts (their text
    parts joined; OpenAI-compatible servers send both forms), or anything else as its JSON text
    (recorded as the model said it). Empty: None."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        texts = [p if isinstance(p, str) else p["text"] for p in value if isinstance(p, str) or (isinstance(p, dict) and isinstance(p.get("text"), str))]
        return "".join(texts) or None
    return _json_text(value)


def as_object(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one (a part of a reply that is not)."""
    return value if isinstance(value, dict) else {}


def label_text(value: Any) -> str | None:
    """A short label a server sends (stop reason, model version): text, else its JSON text."""
    return None if value is None else value if isinstance(value, str) else _json_text(value)


def token_count(value: Any) -> int:
    """A usage count as sent, or 0 when it is not a count."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0 or value == float("inf"):
        return 0
    return int(value)


def _json_text(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError, RecursionError):
        return repr(value)


def classify(exc: BaseException, sdk: Any) -> AgentCallError:
    """Map an openai / anthropic SDK failure to an ``AgentCallError``: the judges' classification
    (``judge.llm.classify_sdk_error``: status, Retry-After, timeouts), where a body that is not
    JSON counts as a transport fault worth a retry (an agent call has no schema to fail)."""
    judged = classify_sdk_error(exc, sdk)
    if judged.reason in RETRYABLE:
        return AgentCallError(judged.reason, judged.message, judged.retry_after)
    if isinstance(exc, ValueError):  # a 200 whose body is not JSON
        return AgentCallError("server", f"unreadable response: {type(exc).__name__}: {exc}")
    return AgentCallError("error", judged.message if judged.reason == "error" else f"{type(exc).__name__}: {exc}")
