"""A run's failing and unresolved trajectories, collected for clustering into failure modes.

Kept as columns appended in input order, so a partial collection made by another worker merges
by appending (``pipelines.grade.aggregate``'s merge rule for per-row fields); strings are interned, so a
feature text shared by many trajectories is stored once.
"""

from __future__ import annotations

import sys
from typing import Any

import msgspec

from judge import TrajectoryResult
from pipelines.orchestration._child import PendingClustering
from pipelines.orchestration.clusters import Clustering, FailureFeatures, Member, failure_features

ISOLATE_FROM = 2000  # failing trajectories from which the clustering runs in a child process
_SEP = "\x1f"


class FailureModes(msgspec.Struct):
    """Collects the features of a run's failing and unresolved trajectories (see the module docstring)."""

    trajectory_ids: list[str | None] = msgspec.field(default_factory=list)
    task_ids: list[str | None] = msgspec.field(default_factory=list)
    agents: list[str | None] = msgspec.field(default_factory=list)
    stages: list[str] = msgspec.field(default_factory=list)
    tools: list[str] = msgspec.field(default_factory=list)  # joined by _SEP
    kinds: list[str] = msgspec.field(default_factory=list)  # joined by _SEP
    texts: list[str] = msgspec.field(default_factory=list)

    def add(self, result: TrajectoryResult) -> None:
        features = failure_features(result)
        if features is None:
            return
        self.trajectory_ids.append(result.trajectory_id)
        self.task_ids.append(_intern(result.task_id))
        self.agents.append(_intern(result.agent))
        self.stages.append(sys.intern(features.stage))
        self.tools.append(sys.intern(_SEP.join(features.tools)))
        self.kinds.append(sys.intern(_SEP.join(features.kinds)))
        self.texts.append(sys.intern(features.text))

    def __len__(self) -> int:
        return len(self.stages)

    def rows_and_members(self) -> tuple[list[FailureFeatures], list[Member]]:
        """Distinct feature rows (in order of first appearance) and every member pointing at its row."""
        index: dict[FailureFeatures, int] = {}
        members = []
        for i, stage in enumerate(self.stages):
            features = FailureFeatures(stage, _split(self.tools[i]), _split(self.kinds[i]), self.texts[i])
            row = index.setdefault(features, len(index))
            members.append(Member(self.trajectory_ids[i], self.task_ids[i], self.agents[i], row))
        return list(index), members

    def start(self, seed: int = 0, isolate: bool | None = None) -> PendingClustering:
        """Start clustering the members; from ``ISOLATE_FROM`` members on (or with ``isolate``) in
        a child process, so the clustering's imports and working memory never weigh on the streaming
        grader and the clustering overlaps the rest of the summary (same function, same inputs:
        the same bytes either way)."""
        rows, members = self.rows_and_members()
        # one distinct row needs no k-means (clustered in plain Python): no child for it
        return PendingClustering(rows, members, seed, isolate if isolate is not None else len(members) >= ISOLATE_FROM and len(rows) > 1)

    def clustering(self, seed: int = 0, isolate: bool | None = None) -> Clustering:
        return self.start(seed, isolate).result()

    def summary(self, seed: int = 0) -> dict[str, Any]:
        return self.clustering(seed).summary

    def assignments(self, seed: int = 0) -> list[int]:
        """The cluster id of every member, in the order they were added."""
        return self.clustering(seed).member_clusters


def _split(joined: str) -> tuple[str, ...]:
    return tuple(joined.split(_SEP)) if joined else ()


def _intern(value: str | None) -> str | None:
    return None if value is None else sys.intern(value)
