"""The process's garbage-collection policy (``judge.core._heap``): blocks nest, the last one to end
unfreezes, a freeze or a disabled collector that is not ours is left alone, thresholds come back."""

from __future__ import annotations

import gc
import threading

import pytest

from judge.core import _heap
from judge.core._heap import freeze_more, frozen_heap, quiet_gc


@pytest.fixture(autouse=True)
def _clean_collector():
    assert gc.get_freeze_count() == 0 and gc.isenabled()
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.enable()
    gc.set_threshold(*threshold)
    assert _heap._depth == 0 and not _heap._ours


def test_a_block_freezes_the_older_objects_and_hands_them_back():
    with frozen_heap():
        frozen = gc.get_freeze_count()
        assert frozen > 0
    assert gc.get_freeze_count() == 0


def test_a_nested_block_freezes_more_and_only_the_outer_one_unfreezes():
    """The hazard of levers that each did nothing when something was frozen on entry: the first
    one's freeze switched the later ones off. A nested block sets aside what was built since."""
    with frozen_heap():
        outer = gc.get_freeze_count()
        built = [[i] for i in range(1000)]  # tracked objects the outer freeze did not see
        with frozen_heap():
            assert gc.get_freeze_count() >= outer + len(built)
        assert gc.get_freeze_count() >= outer + len(built)  # the outer block still runs: nothing handed back yet
    assert gc.get_freeze_count() == 0


def test_freeze_more_sets_aside_what_a_block_built_and_nothing_outside_one():
    freeze_more()
    assert gc.get_freeze_count() == 0
    with frozen_heap():
        before = gc.get_freeze_count()
        built = [[i] for i in range(1000)]
        freeze_more()
        assert gc.get_freeze_count() >= before + len(built)
    assert gc.get_freeze_count() == 0


def test_overlapping_blocks_unfreeze_when_the_last_one_ends():
    first, second = frozen_heap(), frozen_heap()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)  # not last in, first out (concurrent rounds, threads)
    assert gc.get_freeze_count() > 0
    second.__exit__(None, None, None)
    assert gc.get_freeze_count() == 0


def test_blocks_in_threads_share_one_freeze():
    inside, release = threading.Barrier(3), threading.Event()

    def block():
        with frozen_heap():
            inside.wait()
            release.wait()

    threads = [threading.Thread(target=block) for _ in range(2)]
    for t in threads:
        t.start()
    inside.wait()
    assert gc.get_freeze_count() > 0
    release.set()
    for t in threads:
        t.join()
    assert gc.get_freeze_count() == 0


def test_a_freeze_that_is_not_ours_stays_and_every_block_leaves_it_be():
    gc.freeze()
    frozen = gc.get_freeze_count()
    with frozen_heap():
        with frozen_heap():
            freeze_more()
        assert gc.get_freeze_count() == frozen  # nothing of ours added, so nothing of theirs undone
    assert gc.get_freeze_count() == frozen


def test_a_disabled_collector_is_left_as_it_is():
    gc.disable()
    with frozen_heap():
        freeze_more()
        assert gc.get_freeze_count() == 0
        with quiet_gc(), frozen_heap():
            assert gc.get_freeze_count() == 0
    assert not gc.isenabled()


def test_a_block_that_raises_still_unfreezes():
    with pytest.raises(RuntimeError), frozen_heap():
        raise RuntimeError("boom")
    assert gc.get_freeze_count() == 0


def test_a_forked_worker_keeps_what_it_inherited_and_blocks_change_nothing(monkeypatch):
    monkeypatch.setattr(_heap, "_for_life", True)
    with frozen_heap():
        freeze_more()
        assert gc.get_freeze_count() == 0


def test_quiet_gc_raises_the_young_threshold_and_puts_the_old_ones_back():
    gc.set_threshold(700, 11, 12)
    with quiet_gc(5000):
        assert gc.get_threshold() == (5000, 11, 12)
        with quiet_gc(2000):  # a lower one inside changes nothing
            assert gc.get_threshold() == (5000, 11, 12)
        with quiet_gc(9000):
            assert gc.get_threshold() == (9000, 11, 12)
        assert gc.get_threshold() == (5000, 11, 12)
    assert gc.get_threshold() == (700, 11, 12)


def test_quiet_gc_leaves_thresholds_the_block_set_itself():
    gc.set_threshold(700, 10, 10)
    with quiet_gc(5000):
        gc.set_threshold(100, 10, 10)
    assert gc.get_threshold() == (100, 10, 10)


def test_work_starts_ends_the_quiet_start_up_and_freezes_what_it_imported():
    gc.set_threshold(700, 10, 10)
    with frozen_heap(), quiet_gc(5000):
        before = gc.get_freeze_count()
        built = [[i] for i in range(1000)]  # a command's imports
        _heap.work_starts()
        assert gc.get_threshold() == (700, 10, 10)
        assert gc.get_freeze_count() >= before + len(built)
    assert gc.get_threshold() == (700, 10, 10) and gc.get_freeze_count() == 0
