"""The input format names the help lists.

They are the ingest registry's (``pipelines.ingest.TRAJECTORY_FORMATS`` / ``TASK_FORMATS``), written
out here because the help text is built when the CLI starts and the registry loads every reader
(pydantic and all: ``judge env list`` would pay for it). A test keeps the two lists equal, so a
format added to the registry fails the suite until its name is listed here too.
"""

from __future__ import annotations

TRAJECTORY_FORMAT_NAMES = ("native", "openai", "anthropic", "vakra", "bfcl", "responses", "langchain", "pydantic-ai", "tau2", "inspect", "otel", "agents-trace")
TASK_FORMAT_NAMES = ("native", "vakra", "bfcl")


def names(formats: tuple[str, ...]) -> str:
    """``a, b or c``: a list a narrow help column wraps between names instead of cutting."""
    return ", ".join(formats[:-1]) + f" or {formats[-1]}" if len(formats) > 1 else formats[0]
