"""Tool names as function-calling APIs accept them, and the way back to the tool a name means.

OpenAI, Anthropic, Mistral and Google accept tool names matching ``^[a-zA-Z0-9_-]{1,64}$``, so an
agent framework declares ``math.factorial`` as ``math_factorial`` and the model calls it by that
name (BFCL's API handlers do this; BFCL's checker compares such a model's calls against the
reference name with ``.`` -> ``_``). ``sanitise_tool_name`` is that rewrite, in its general form
(every character outside the set becomes ``_``, at most 64 characters), which covers BFCL's.

Reading a call's name back (``ToolNames.resolve``), invariants:
- a known tool name always means itself, even when another tool sanitises to it;
- any other name means the one known tool whose sanitised name equals it; when two known tools
  sanitise alike (``a.b`` and ``a/b``) the name is ambiguous and, like a name no known tool
  sanitises to, stays as written (an unknown tool: the normal mismatch).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from judge.core._trajectory import Step

__all__ = ["MAX_TOOL_NAME", "ToolNames", "sanitise_tool_name"]

MAX_TOOL_NAME = 64
_OUTSIDE = re.compile(r"[^a-zA-Z0-9_-]")


def sanitise_tool_name(name: str) -> str:
    """``name`` as the function-calling APIs accept it: each character outside ``[a-zA-Z0-9_-]``
    becomes ``_``, cut to 64 characters (an empty name becomes ``_``: the APIs want one)."""
    return _OUTSIDE.sub("_", name)[:MAX_TOOL_NAME] or "_"


@functools.lru_cache(maxsize=1024)
def _rewrites(known: frozenset[str]) -> dict[str, str]:
    """Sanitised name -> the one known tool it means; only unambiguous rewrites (a name that is
    already its own sanitised form needs no entry). Cached per set of names: tasks of one benchmark
    declare the same tools, and each task would otherwise sanitise them all again. Read only."""
    by_sanitised: dict[str, set[str]] = {}
    for name in known:
        by_sanitised.setdefault(sanitise_tool_name(name), set()).add(name)
    return {s: next(iter(names)) for s, names in by_sanitised.items() if len(names) == 1 and s not in names}


class ToolNames:
    """The known tool names of a task, and what a called name means among them."""

    def __init__(self, known: Iterable[str]):
        self.known = frozenset(known)
        self._unique = _rewrites(self.known)

    def resolve(self, name: str) -> str:
        """The known tool ``name`` means: itself when known, else the one known tool that
        sanitises to it, else ``name`` unchanged (unknown, or ambiguous)."""
        if name in self.known:
            return name
        return self._unique.get(name, name)

    def resolve_step(self, step: Step) -> Step:
        """``step`` under the name it means: the step itself when that is its name, else a copy
        (a recorded trajectory is never changed)."""
        name = self.resolve(step.name)
        return step if name == step.name else step.model_copy(update={"name": name})
