"""Provider batch APIs for judges (``--judge-mode batch``): one module per provider's batch API
(``openai``, ``anthropic``) behind a registry keyed by provider kind, and the flow that defers a
round's questions, submits them, polls, collects and hands the answers to the caller (``_flow``)."""

from judge.llm._batches import anthropic, openai  # noqa: F401  (the built-in batch APIs register on import)
from judge.llm._batches._base import BatchAPI, BatchRecord, BatchStatus, batch_api, register_batch_api
from judge.llm._batches._flow import BatchFlow, BatchSubmitError, Collected

__all__ = ["BatchAPI", "BatchFlow", "BatchRecord", "BatchStatus", "BatchSubmitError", "Collected", "batch_api", "register_batch_api"]
