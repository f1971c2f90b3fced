"""A run graded in shards by several workers merges its partial tallies: every field of the tally
is a count (added) or a per-row column (appended in input order), so merging the shards' tallies
gives exactly the summary of one tally over the whole run."""

from __future__ import annotations

import json
from array import array
from typing import Any

import msgspec

from pipelines.orchestration import OrchestrationTally
from tests.orchestration.test_clusters import synthetic_run


def merged(mine: Any, theirs: Any) -> Any:
    """Counts add, columns append, maps merge key by key, records (msgspec Structs) field by field; anything else
    has no safe merge and fails the test."""
    if isinstance(mine, (list, array)):
        mine.extend(theirs)
        return mine
    if isinstance(mine, dict):
        for key, value in theirs.items():
            mine[key] = merged(mine[key], value) if key in mine else value
        return mine
    if isinstance(mine, int) and not isinstance(mine, bool):
        return mine + theirs
    if isinstance(mine, msgspec.Struct):
        for name in mine.__struct_fields__:
            setattr(mine, name, merged(getattr(mine, name), getattr(theirs, name)))
        return mine
    raise AssertionError(f"no merge rule for {type(mine).__name__}")


def check_merge(results: list[Any]) -> None:
    """Tally the results whole, and in three shards merged in order: the summaries must match."""
    whole = OrchestrationTally()
    for r in results:
        whole.add(r)
    cut = len(results) // 3
    first, second, third = OrchestrationTally(), OrchestrationTally(), OrchestrationTally()
    for part, chunk in ((first, results[:cut]), (second, results[cut : 2 * cut]), (third, results[2 * cut :])):
        for r in chunk:
            part.add(r)
    merged(merged(first, second), third)
    assert json.dumps(first.summary(0), sort_keys=True) == json.dumps(whole.summary(0), sort_keys=True)


def test_shard_tallies_merge_into_the_whole_runs_tally():
    check_merge(synthetic_run(per_mode=8)[0])  # the sample's run is checked too (test_sample_run)
