"""Failure classification: every way a judge call can fail, mapped to one ``JudgeCallError``.

Why a classified error: the caller must tell a transient failure (retry with backoff) from a final
one (abstain with a reason), and must never turn either into a negative vote. The provider decides
what is worth retrying (``JudgeClient.should_retry``); this module only records what happened.
"""

from __future__ import annotations

import email.utils
import json
import time
from typing import Any

from pydantic import ValidationError

from judge.core import AbstainReason, ExternalCallError

# Failure reasons that are transient by nature; a provider may still refuse to retry one
# (e.g. an OpenAI 429 for an exhausted quota). The caller adds budget, offline_miss.
RETRYABLE = frozenset({"rate_limit", "server", "timeout", "connection"})


class JudgeCallError(ExternalCallError):
    """One failed judge call.

    ``reason``: rate_limit, server, timeout, connection (transient) or refusal, unparseable,
    error (final). ``cacheable``: the provider answered and the answer itself is the failure (a
    refusal, a schema violation), so a rerun would get the same. ``status``, ``code`` and
    ``server_retry`` carry what the provider said (HTTP status, its error code, its
    ``x-should-retry`` header) so the provider's ``should_retry`` can decide.
    """

    def __init__(
        self,
        reason: str,  # an AbstainReason value (checked)
        message: str,
        *,
        retry_after: float | None = None,
        cacheable: bool = False,
        input_tokens: int = 0,
        output_tokens: int = 0,
        status: int | None = None,
        code: str | None = None,
        server_retry: bool | None = None,
    ):
        super().__init__(f"{reason}: {message}")
        self.reason = AbstainReason(reason)
        self.message = message
        self.retry_after = retry_after
        self.cacheable = cacheable
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens
        self.status = status
        self.code = code
        self.server_retry = server_retry

    @property
    def retryable(self) -> bool:
        """Transient by its reason (the provider's ``should_retry`` has the last word)."""
        return self.reason in RETRYABLE


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
    inp, out = usage_tokens(getattr(exc, "total_usage", None))
    cause = exc.__cause__ if exc.__cause__ is not None and type(exc).__name__ == "InstructorRetryException" else exc
    last = getattr(exc, "last_completion", None)
    if isinstance(cause, sdk.APITimeoutError):
        return JudgeCallError("timeout", str(cause), input_tokens=inp, output_tokens=out)
    if isinstance(cause, sdk.APIConnectionError):
        return JudgeCallError("connection", str(cause), input_tokens=inp, output_tokens=out)
    if isinstance(cause, sdk.APIStatusError):
        status = cause.status_code
        headers = getattr(cause.response, "headers", None)
        said = (headers.get("x-should-retry") if headers is not None else None) or ""
        facts: dict[str, Any] = {
            "status": status,
            "code": _error_code(cause),
            "server_retry": {"true": True, "false": False}.get(said.lower()),
            "input_tokens": inp,
            "output_tokens": out,
        }
        retry_after = retry_after_seconds(headers)
        if status == 429:
            return JudgeCallError("rate_limit", str(cause), retry_after=retry_after, **facts)
        if status >= 500 or status == 408:
            return JudgeCallError("server", str(cause), retry_after=retry_after, **facts)
        return JudgeCallError("error", f"HTTP {status}: {cause}", **facts)
    refusal = _refusal_text(last)
    if refusal is not None or (isinstance(cause, AssertionError) and "Unable to generate a response" in str(cause)):
        return JudgeCallError("refusal", refusal or str(cause), cacheable=True, input_tokens=inp, output_tokens=out)
    if isinstance(cause, json.JSONDecodeError) and last is None:
        # The HTTP body itself was not JSON: a transport fault, answered but not worth caching.
        return JudgeCallError("unparseable", f"response body is not JSON: {cause}", input_tokens=inp, output_tokens=out)
    if isinstance(cause, (ValidationError, json.JSONDecodeError)) or type(cause).__name__ in ("ResponseParsingError", "IncompleteOutputException"):
        return JudgeCallError("unparseable", _short(str(cause)), cacheable=True, input_tokens=inp, output_tokens=out)
    return JudgeCallError("error", f"{type(cause).__name__}: {_short(str(cause))}", input_tokens=inp, output_tokens=out)


def _error_code(error: Any) -> str | None:
    """The provider's machine-readable error code (OpenAI ``error.code``, Anthropic ``error.type``)."""
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            code = inner.get("code") or inner.get("type")
            return str(code) if code else None
    code = getattr(error, "code", None)
    return str(code) if code else None


def _refusal_text(completion: Any) -> str | None:
    """A provider-native refusal, or plain text where the verdict tool call should have been."""
    if completion is None:
        return None
    choices = getattr(completion, "choices", None)
    if choices:  # OpenAI wire
        message = choices[0].message
        if getattr(message, "refusal", None):
            return str(message.refusal)
        content = (message.content or "").strip()
        if not getattr(message, "tool_calls", None) and content:
            return str(content)
        return None
    content = getattr(completion, "content", None)  # Anthropic wire
    if isinstance(content, list):
        has_tool = any(getattr(block, "type", None) == "tool_use" for block in content)
        text = " ".join(getattr(block, "text", "") for block in content if getattr(block, "type", None) == "text").strip()
        if getattr(completion, "stop_reason", None) == "refusal" or (not has_tool and text):
            return text or "refused"
    return None


def usage_tokens(usage: Any) -> tuple[int, int]:
    """(input, output) tokens from an OpenAI-style or Anthropic-style usage object."""
    if usage is None:
        return 0, 0
    inp = getattr(usage, "prompt_tokens", None)
    if inp is None:
        inp = getattr(usage, "input_tokens", 0)
    out = getattr(usage, "completion_tokens", None)
    if out is None:
        out = getattr(usage, "output_tokens", 0)
    return int(inp or 0), int(out or 0)


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
