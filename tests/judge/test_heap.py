"""The collector during judging rounds: older objects are set aside for the round and handed back
after it, and a freeze that is not ours is never undone."""

from __future__ import annotations

import gc

from judge.llm._heap import old_objects_set_aside


def test_a_round_freezes_the_older_objects_and_hands_them_back():
    assert gc.get_freeze_count() == 0
    with old_objects_set_aside():
        frozen = gc.get_freeze_count()
        assert frozen > 0
        with old_objects_set_aside():  # a nested round shares the freeze
            assert gc.get_freeze_count() == frozen
        assert gc.get_freeze_count() == frozen  # the outer round is still running
    assert gc.get_freeze_count() == 0


def test_a_freeze_that_is_not_ours_stays():
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with old_objects_set_aside():
            pass
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()
