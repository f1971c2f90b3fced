"""The process's one garbage-collection policy: set long-lived objects aside, collect less often.

Why: our work builds large heaps of long-lived objects (imported modules, pydantic schemas, a
tasks file's models, a caller's training state), and CPython's full collections walk all of them
although none can become garbage because of the work at hand: measured, ~40% of loading a tasks
file and a third of a judging round's client CPU. ``gc.freeze`` sets every object tracked so far
aside and ``gc.unfreeze`` hands them back to the oldest generation (both O(1)). Frozen objects are
still freed by reference counting; only cyclic garbage among them waits for the unfreeze.

Three levers, used by the loader, the reward batch, the CLI and the judging rounds alike:

- ``frozen_heap()``: for a block, the objects older than it are set aside. Blocks nest (and
  overlap across threads): each entry sets aside what exists by then, and the unfreeze comes when
  the last of them ends, never before (so an inner block cannot undo an outer one's freeze).
- ``freeze_more()``: inside a block, also set aside what was built since (a loader's items so far).
- ``quiet_gc()``: for a block that mostly builds survivors (imports), young collections come less
  often; the thresholds it found are put back at its end or at ``work_starts()`` (the CLI: start-up
  under ``quiet_gc`` and ``frozen_heap``, then ``work_starts`` sets the imported modules aside).

Invariants: what this module froze it unfreezes, and nothing else: a caller that froze objects
itself (``gc.get_freeze_count() > 0`` when no block of ours runs) or disabled the collector is left
as it is, and then every block (nested ones included) changes nothing. ``gc.get_freeze_count``
walks the frozen objects, so it is asked only when no block of ours runs, and never in a process
that keeps its inherited objects frozen for life (``keep_inherited_frozen``: a forked worker).
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

__all__ = ["freeze_more", "frozen_heap", "keep_inherited_frozen", "quiet_gc", "work_starts"]

QUIET_THRESHOLD = 50_000  # young collections per allocations under quiet_gc (CPython's default: 700)

_lock = threading.Lock()
_depth = 0  # blocks of ours in progress
_ours = False  # whether the current freeze is ours (False: a caller's, a disabled collector, or none wanted)
_for_life = False  # a forked worker: what it inherited stays frozen, blocks change nothing
_quiet: list[tuple[tuple[int, ...], tuple[int, ...]]] = []  # quiet_gc blocks in progress: (set, found)


@contextlib.contextmanager
def frozen_heap() -> Iterator[None]:
    """For the duration of the block, the collector ignores every object older than it."""
    global _depth, _ours
    with _lock:
        if _for_life:
            entered = False
        else:
            entered = True
            if _depth == 0:
                _ours = gc.isenabled() and gc.get_freeze_count() == 0
            if _ours:
                gc.freeze()
            _depth += 1
    try:
        yield
    finally:
        if entered:
            with _lock:
                _depth -= 1
                if _depth == 0 and _ours:
                    gc.unfreeze()
                    _ours = False


def freeze_more() -> None:
    """Inside a ``frozen_heap`` of ours, set aside what was built since it began, too (a no-op
    elsewhere): for a loop that builds long-lived objects, such as a loader's items."""
    with _lock:
        if _ours and _depth > 0:
            gc.freeze()


@contextlib.contextmanager
def quiet_gc(threshold0: int = QUIET_THRESHOLD) -> Iterator[None]:
    """For a block that builds mostly survivors (start-up imports), a young collection every
    ``threshold0`` allocations instead of CPython's 700; the thresholds are put back after it, or
    at ``work_starts`` (unless the block set its own). A disabled collector, or a higher threshold,
    is left as it is."""
    old = gc.get_threshold()
    if not gc.isenabled() or old[0] >= threshold0:
        yield
        return
    ours = (threshold0, *old[1:])
    gc.set_threshold(*ours)
    _quiet.append((ours, old))
    try:
        yield
    finally:
        _quiet.remove((ours, old))
        if gc.get_threshold() == ours:
            gc.set_threshold(*old)


def work_starts() -> None:
    """Start-up is over (a command has imported what it needs): the thresholds the outermost
    ``quiet_gc`` found come back, and inside a ``frozen_heap`` what is imported is set aside."""
    if _quiet and gc.get_threshold() == _quiet[-1][0]:
        gc.set_threshold(*_quiet[0][1])
    freeze_more()


def keep_inherited_frozen() -> None:
    """In a process forked inside ``frozen_heap``: keep the inherited objects frozen (they are the
    parent's; this process never frees them), and make blocks leave them be."""
    global _for_life, _depth, _ours
    with _lock:
        _for_life, _depth, _ours = True, 0, False
