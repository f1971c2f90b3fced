"""Provider batch APIs for judges (``--judge-mode batch``): one module per provider's batch API
(``openai``, ``anthropic``) behind a registry keyed by provider kind, and the flow that defers a
round's questions, submits them, polls, collects and hands the answers to the caller (``_flow``).

instructor's part is the one that must match the online call: each request body is built by its
TOOLS-mode request handler (``SDKJudge.batch_body``) and each answer read by its response parser
(``SDKJudge.answer_from_batch``), as a live call's are. Its ``BatchProcessor`` does not fit: it
writes a different request (OpenAI ``response_format`` JSON schema instead of the verdict tool),
numbers ``custom_id`` itself (ours is the judge-cache key), builds its own synchronous clients
from the environment (no provider aliases, base URLs or key variables of our config) and prints
to stdout. The batch endpoints themselves are driven through the official SDKs' async clients.
"""

from judge.llm._batches import anthropic, openai  # noqa: F401  (the built-in batch APIs register on import)
from judge.llm._batches._base import BatchAPI, BatchRecord, BatchStatus, batch_api, register_batch_api
from judge.llm._batches._flow import BatchFlow, BatchSubmitError, Collected

__all__ = ["BatchAPI", "BatchFlow", "BatchRecord", "BatchStatus", "BatchSubmitError", "Collected", "batch_api", "register_batch_api"]
