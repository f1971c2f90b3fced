"""Which tools one request declares when a tool set is larger than the provider accepts.

Above the cap (OpenAI: 128 tools per request) each user turn gets its own shortlist: BM25 over
tool names and descriptions, the text the environments' ``shortlist_tools`` indexes, ranked by
the turn's query; the ``k`` best are declared, ties and unmatched tools in the listed order (so
a query that matches nothing still gets ``k`` tools, deterministically). The shortlist is
recorded on the trajectory (``metadata.tools_offered``) so grading knows what the agent saw.
"""

from __future__ import annotations

from collections import OrderedDict
from threading import Lock

from judge import ToolSpec
from pipelines.env import BM25Index

_INDEX_CACHE_SIZE = 64


def tool_document(spec: ToolSpec) -> str:
    """What BM25 sees of a tool (the same text as ``Environment.shortlist``)."""
    return f"{spec.name.replace('_', ' ')} {spec.description}"


class ToolMenu:
    """The tools of one task; ``offer(query)`` is what one request declares."""

    def __init__(self, tools: list[ToolSpec], cap: int | None, index: BM25Index | None = None):
        self.tools = tools
        self.names = frozenset(t.name for t in tools)
        self.cap = cap
        self._index = index

    @property
    def shortlisting(self) -> bool:
        return self.cap is not None and len(self.tools) > self.cap

    def offer(self, query: str) -> list[ToolSpec]:
        if not self.shortlisting:
            return self.tools
        assert self.cap is not None and self._index is not None
        hits = self._index.search(query, self.cap)
        chosen = [h.index for h in hits]
        if len(chosen) < self.cap:  # pad with the unmatched tools, in listed order
            taken = set(chosen)
            chosen += [i for i in range(len(self.tools)) if i not in taken][: self.cap - len(chosen)]
        return [self.tools[i] for i in chosen]


class MenuFactory:
    """Builds menus, indexing each distinct large tool set once (tasks of a domain share one)."""

    def __init__(self, cap: int | None):
        self.cap = cap
        self._indexes: OrderedDict[tuple[str, ...], BM25Index] = OrderedDict()
        self._lock = Lock()

    def menu(self, tools: list[ToolSpec]) -> ToolMenu:
        if self.cap is None or len(tools) <= self.cap:
            return ToolMenu(tools, self.cap)
        key = tuple(tool_document(t) for t in tools)
        with self._lock:
            index = self._indexes.get(key)
            if index is None:
                index = BM25Index(list(key))
                self._indexes[key] = index
                while len(self._indexes) > _INDEX_CACHE_SIZE:
                    self._indexes.popitem(last=False)
            else:
                self._indexes.move_to_end(key)
        return ToolMenu(tools, self.cap, index)
