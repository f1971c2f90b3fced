"""The garbage collector during a round of judge calls: it walks only what the round allocates.

Why: a process that judges holds a large heap of long-lived objects (imported modules, the SDKs'
classes, pydantic schemas: ~170k tracked objects before any run data; a grading run adds its
pending cases). Every judge call in flight allocates objects that live through a few collections
(requests, responses, retry state), so full collections come every few hundred calls, and each
walks the whole heap: measured at 256 calls in flight, about a third of the client CPU per call
(``bench/bench_judges.py``). Objects that existed before the round cannot become garbage because
of it, so walking them is waste: ``gc.freeze`` sets them aside for the round and ``gc.unfreeze``
hands them back to the oldest generation afterwards (both O(1)). Nothing is collected later than
it would be, except cyclic garbage among those older objects, which waits for the round's end.

The same holds the heap still across a fork: a judge worker process (``_sharded``) is forked
inside ``old_objects_set_aside`` and keeps what it inherited frozen for life
(``keep_inherited_frozen``), so its collector never walks, and so never copies, the run's pages.

Invariants: what this froze it unfreezes, and only that: a process that froze its heap itself
(``gc.get_freeze_count() > 0`` on entry) is left as it is; nested and concurrent rounds share one
freeze, undone when the last of them ends. ``gc.get_freeze_count`` walks the frozen objects, so
it is asked only when nothing is frozen by us, and never in a worker.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

_rounds = 0  # rounds in progress under our freeze
_ours = False  # whether the current freeze is ours
_for_life = False  # a forked worker: what it inherited stays frozen, rounds change nothing


@contextlib.contextmanager
def old_objects_set_aside() -> Iterator[None]:
    """For the duration of a judging round, the collector ignores every object older than it."""
    global _rounds, _ours
    if _for_life:
        yield
        return
    if _rounds == 0:
        _ours = gc.get_freeze_count() == 0
        if _ours:
            gc.freeze()
    _rounds += 1
    try:
        yield
    finally:
        _rounds -= 1
        if _rounds == 0 and _ours:
            gc.unfreeze()
            _ours = False


def keep_inherited_frozen() -> None:
    """In a process forked inside ``old_objects_set_aside``: keep the inherited objects frozen
    (they are the parent's; this process never frees them), and make rounds leave them be."""
    global _for_life, _rounds, _ours
    _for_life, _rounds, _ours = True, 0, False
