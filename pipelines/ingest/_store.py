"""Where a TaskSet keeps its tasks: compact enough for a task line per trajectory.

Converted logs carry one task line per trajectory. A live ``Task`` model costs ~12 KB (nested
pydantic models), so 100k of them would take ~1.2 GB; the grader needs one at a time. The store
keeps each task as a zlib-compressed pickle in which the shared ``ToolSpec`` objects are
references (their index in the store, or a digest of their raw spec text for tasks packed by a
worker), so a task costs what is particular to it (~1 KB); a few tasks stay live (see
``TaskStore``). Unpickling restores an equal ``Task`` without validating it again (it was
validated once, when read), and its tools are the very shared objects.

``SourceIndex`` keeps the (file, line, item) of each task as a tuple instead of a model.
"""

from __future__ import annotations

import pickle
import zlib
from collections import OrderedDict
from collections.abc import Iterator, MutableMapping
from typing import Any, cast

from judge import SourceRef, Task, ToolSpec

__all__ = ["SourceIndex", "TaskStore", "pack_task"]


def _pickled(task: Task, refs: list[Any]) -> bytes:
    """The pickle of ``task`` with its tools replaced by ``refs`` (what stands for each tool).

    Tools are the one place a task holds shared ``ToolSpec`` objects (``Task.tools``), so they are
    swapped out of the instance for the dump and back after it: the C pickler then runs without a
    Python callback per object (a ``persistent_id`` hook is called for every string and number)."""
    state = task.__dict__
    tools, index = state["tools"], state.pop("tool_index", None)  # tool_index: a cache, rebuilt on first use
    state["tools"] = refs
    try:
        return pickle.dumps(task, protocol=pickle.HIGHEST_PROTOCOL)
    finally:
        state["tools"] = tools
        if index is not None:
            state["tool_index"] = index


# Packed tasks are zlib streams primed with a dictionary: the pickle of one task of the same file.
# Tasks of one file repeat their field names, class names, policy text and metadata; with that
# shared context a task packs to a fraction of what it packs to alone. The first byte says which.
_PRIMED, _PLAIN = b"D", b"P"


def _compress(data: bytes, zdict: bytes | None) -> bytes:
    if zdict is None:
        return _PLAIN + zlib.compress(data, 1)
    packer = zlib.compressobj(1, zdict=zdict)
    return _PRIMED + packer.compress(data) + packer.flush()


def _decompress(blob: bytes, zdict: bytes | None) -> bytes:
    if blob[:1] == _PLAIN:
        return zlib.decompress(blob[1:])
    unpacker = zlib.decompressobj(zdict=zdict or b"")
    return unpacker.decompress(blob[1:]) + unpacker.flush()


class TaskStore(MutableMapping[str, Task]):
    """Tasks by id in insertion order, packed; ``store[tid]`` gives an equal ``Task`` each time.

    Below ``pack_from`` tasks nothing is packed: every task stays as it was stored (packing pays
    in memory, and only at scale). From then on, tasks are packed, and live tasks: while the tasks are stored, the first ``live`` stay live (trajectories mostly come
    in the order of their tasks, so those are asked first; a run with fewer tasks never unpacks
    one); after that, the most recently asked for. Storing a task never evicts one: eviction
    only frees what the grader is done with.

    Invariant: a task is either packed (``_packed[tid]`` its bytes) or not yet (``_packed[tid]``
    None, the task in ``_unpacked``), never both; every tool of every packed task is in ``_tools``
    (referenced by index from the packed tasks); the live cache holds at most ``live`` tasks. Picklable (to ship to worker
    processes): the packed tasks and the tools travel, the live cache does not.
    """

    # How many tasks stay live. Fewer was faster in every paired run (256 -> 32: ~4% less CPU on
    # realistic conversations, ~8% on the generated bench, though its 1,000 shared tasks then hit
    # the live set 1 time in 30 instead of 1 in 4): holding many live task trees costs more than
    # unpacking (~20 us). 32 still covers a task's trials graded side by side.
    LIVE = 32
    # Packing pays in memory only: below this many tasks they are all kept live (a task costs
    # ~12 KB live, so at most ~60 MB), and neither pickling nor unpickling is paid (~5% of the CPU
    # of a run with a task line per trajectory). The store packs them all when it reaches it.
    PACK_FROM = 5000

    def __init__(self, live: int | None = None, pack_from: int | None = None):
        self.zdict: bytes | None = None  # primes the compression of every task (set by the first one)
        self._packed: dict[str, bytes | None] = {}  # None: not packed yet, the task is in _unpacked
        self._unpacked: dict[str, Task] = {}
        self._pack_from = self.PACK_FROM if pack_from is None else pack_from
        self._tools: list[ToolSpec] = []
        self._tool_index: dict[int, int] = {}  # id(tool) -> position in _tools
        self._keyed: dict[bytes, ToolSpec] = {}  # key (digest of a raw spec text) -> shared spec, for tasks packed elsewhere
        self._live: OrderedDict[str, Task] = OrderedDict()
        self._live_max = self.LIVE if live is None else live

    def _tool_ref(self, tool: ToolSpec) -> int:
        ref = self._tool_index.get(id(tool))
        if ref is None:
            ref = self._tool_index[id(tool)] = len(self._tools)
            self._tools.append(tool)
        return ref

    def __setitem__(self, tid: str, task: Task) -> None:
        if self._unpacked or not self._packed:  # still below PACK_FROM: kept as it is
            self._packed[tid] = None
            self._unpacked[tid] = task
            self._live.pop(tid, None)
            if len(self._packed) >= self._pack_from:
                self._pack_all()
            return
        self._pack(tid, task)

    def _pack_all(self) -> None:
        """Pack the tasks kept as they are (the first ``live`` of them stay live)."""
        unpacked, self._unpacked = self._unpacked, {}
        for tid, task in unpacked.items():
            self._pack(tid, task)

    def _pack(self, tid: str, task: Task) -> None:
        data = _pickled(task, [self._tool_ref(tool) for tool in task.tools])
        if self.zdict is None:
            self.zdict = data[-32768:]
        self._packed[tid] = _compress(data, self.zdict)
        if tid in self._live or len(self._live) < self._live_max:
            self._remember(tid, task)  # the first tasks stored stay live (see the class docstring)

    def prime(self, task: Task, keys: dict[int, bytes]) -> bytes:
        """Set the compression dictionary from ``task`` (packed elsewhere with ``keys``), unless set;
        return it (workers that pack for this store need it: ``pack_task(..., zdict)``)."""
        if self.zdict is None:
            self.zdict = _pickled(task, _key_refs(task, keys))[-32768:]
        return self.zdict

    def __getitem__(self, tid: str) -> Task:
        task = self._unpacked.get(tid)
        if task is not None:
            return task
        task = self._live.get(tid)
        if task is not None:
            self._live.move_to_end(tid)
            return task
        packed = self._packed[tid]
        assert packed is not None  # a task not packed is in _unpacked
        task = self.unpack(packed)
        self._remember(tid, task)
        return task

    def unpack(self, packed: bytes) -> Task:
        """The task of a packed form (this store's, or ``pack_task``'s whose keys are registered)."""
        task = pickle.loads(_decompress(packed, self.zdict))
        task.__dict__["tools"] = [self._resolve(ref) for ref in task.__dict__["tools"]]
        return task

    def _resolve(self, ref: int | bytes | ToolSpec) -> ToolSpec:
        if type(ref) is int:
            return self._tools[ref]
        if type(ref) is bytes:
            return self._keyed[ref]  # packed by a worker (see pack_task)
        return cast(ToolSpec, ref)  # a tool without a key travels inline

    def register_key(self, key: bytes, tool: ToolSpec) -> None:
        """``tool`` is the spec tasks packed by ``pack_task`` refer to by ``key``."""
        self._keyed.setdefault(key, tool)

    def known_key(self, key: bytes) -> bool:
        return key in self._keyed

    def put_packed(self, tid: str, packed: bytes) -> None:
        """Store a task packed by ``pack_task`` (its tool keys registered first)."""
        self._unpacked.pop(tid, None)
        self._packed[tid] = packed

    def _remember(self, tid: str, task: Task) -> None:
        self._live[tid] = task
        self._live.move_to_end(tid)
        if len(self._live) > self._live_max:
            self._live.popitem(last=False)

    def __delitem__(self, tid: str) -> None:
        del self._packed[tid]
        self._unpacked.pop(tid, None)
        self._live.pop(tid, None)

    def __contains__(self, tid: object) -> bool:
        return tid in self._packed

    def __iter__(self) -> Iterator[str]:
        return iter(self._packed)

    def __len__(self) -> int:
        return len(self._packed)

    def __repr__(self) -> str:
        return f"TaskStore({len(self)} tasks, {len(self._tools)} distinct tools)"

    def __getstate__(self) -> dict[str, Any]:
        self._pack_all()  # what travels is packed
        return {
            "packed": self._packed,
            "tools": self._tools,
            "keyed": self._keyed,
            "live": self._live_max,
            "pack_from": self._pack_from,
            "zdict": self.zdict,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["live"], state["pack_from"])  # type: ignore[misc]
        self._packed = state["packed"]
        self._tools = state["tools"]
        self._keyed = state["keyed"]
        self.zdict = state["zdict"]
        self._tool_index = {id(t): i for i, t in enumerate(self._tools)}


def _key_refs(task: Task, keys: dict[int, bytes]) -> list[bytes | ToolSpec]:
    return [keys.get(id(tool), tool) for tool in task.tools]


def pack_task(task: Task, keys: dict[int, bytes], zdict: bytes | None = None) -> bytes:
    """A task packed where its tools are known by a key (``keys``: id(tool) -> key, a digest of
    its raw spec text), for a ``TaskStore`` elsewhere that registers the same keys and has the
    same ``zdict`` (a worker loading a shard of a tasks file packs; the run's store stores and
    unpacks). Tools without a key travel inline."""
    return _compress(_pickled(task, _key_refs(task, keys)), zdict)


class SourceIndex(MutableMapping[str, SourceRef]):
    """Task id -> where it was read; a tuple per task instead of a model (~70 B vs ~500 B)."""

    def __init__(self) -> None:
        self._where: dict[str, tuple[str, int | None, int | None]] = {}

    def __setitem__(self, tid: str, source: SourceRef) -> None:
        self._where[tid] = (source.file, source.line, source.item)

    def __getitem__(self, tid: str) -> SourceRef:
        file, line, item = self._where[tid]
        return SourceRef(file=file, line=line, item=item)

    def __delitem__(self, tid: str) -> None:
        del self._where[tid]

    def __contains__(self, tid: object) -> bool:
        return tid in self._where

    def __iter__(self) -> Iterator[str]:
        return iter(self._where)

    def __len__(self) -> int:
        return len(self._where)
