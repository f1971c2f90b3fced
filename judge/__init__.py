"""trajectory-judge's vocabulary and its LLM judges.

``judge.core`` holds the data model every layer speaks (tasks, trajectories, verdicts, failure
stages, input errors, the escalation protocol) and is re-exported here. ``judge.llm`` holds the
judge machinery (providers, cache, limits, panel); import it explicitly where judges are used,
so commands that need no judge never load an LLM SDK.
"""

from judge.core import *  # noqa: F403  (the curated public vocabulary)
from judge.core import __all__ as _core_all

__all__ = list(_core_all)
