"""One structured call through instructor, shared by the SDK-backed providers.

The SDK's own retries are off (``max_retries=0`` on the client): the panel's retry loop is the only
one, so it is testable and honours Retry-After. instructor keeps only its validation re-asks
(``validation_retries``, low), after which a bad verdict becomes an ``unparseable`` abstention.
"""

from __future__ import annotations

import functools
from typing import Any

from pydantic import BaseModel

from judge._providers._base import Completion, JudgeCallError, classify_sdk_error, usage_tokens


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
    except Exception as exc:  # noqa: BLE001 - every failure is classified, none escapes as a crash
        raise classify_sdk_error(exc, sdk) from exc
    total = getattr(verdict, "_total_usage", None) or getattr(raw, "usage", None)
    inp, out = usage_tokens(total)
    return Completion(verdict=verdict, model_version=getattr(raw, "model", None), input_tokens=inp, output_tokens=out)
