"""The gold-set vocabulary: items that humans labelled, optionally with judge verdicts recorded elsewhere.

Why a separate model: calibration must run on existing runs without calling any judge, so an item can
carry ``judge_verdicts`` ({judge name: label or None for an abstention}) next to its human labels.

Invariants (validated, tested):
- an item names its material exactly one way: inline ``material`` or a ``ref`` to task + trajectory;
- an item has at least one human label, and annotator ids are unique within the item;
- item ids are unique within a gold set (checked by the loaders, which know the file and line);
- ``cluster_key`` groups items that are not independent (same question, same task): the bootstrap
  and the train/held-out split resample and assign whole clusters.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

# The label a rubric calls "good"; TPR/TNR, leniency and the weights file are stated against it.
POSITIVE_LABEL_FOR_RUBRIC: dict[str, str] = {
    "answer_correctness": "correct",
    "trajectory_sufficiency": "sufficient",
    "groundedness": "supported",
    "policy_adherence": "compliant",
    "step_equivalence": "equivalent",
    "open_ended": "meets",
}
# Fallback for rubrics not listed above: the first of these that occurs among the labels.
_GENERIC_POSITIVES = ("correct", "pass", "yes", "true", "match")


class HumanLabel(BaseModel):
    model_config = ConfigDict(extra="forbid")

    annotator: str = Field(min_length=1)
    label: str = Field(min_length=1)
    confidence: float | None = None
    note: str = ""


class MaterialRef(BaseModel):
    """Points at material graded elsewhere (a task + trajectory in a run), instead of copying it."""

    model_config = ConfigDict(extra="forbid")

    task_id: str = Field(min_length=1)
    trajectory_id: str = Field(min_length=1)
    turn_id: str | None = None
    check: str | None = None


class GoldItem(BaseModel):
    """One human-labelled judging case."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    rubric: str = Field(min_length=1)
    material: dict[str, Any] | None = None
    ref: MaterialRef | None = None
    human_labels: list[HumanLabel] = Field(min_length=1)
    judge_verdicts: dict[str, str | None] = Field(default_factory=dict)
    cluster: str | None = None  # items sharing a cluster are resampled together
    agent: str | None = None  # the model that produced the judged material (self-preference probe)
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _one_material(self) -> GoldItem:
        if (self.material is None) == (self.ref is None):
            raise ValueError("give exactly one of 'material' (inline) or 'ref' (task_id + trajectory_id)")
        ids = [h.annotator for h in self.human_labels]
        dup = sorted(a for a, c in Counter(ids).items() if c > 1)
        if dup:
            raise ValueError(f"annotator ids repeat within the item: {dup}")
        return self

    @property
    def cluster_key(self) -> str:
        if self.cluster is not None:
            return self.cluster
        if self.ref is not None:
            return f"task:{self.ref.task_id}"
        return f"item:{self.id}"

    @property
    def human_label(self) -> str | None:
        """The reference label: the strict plurality of the human labels, None on a tie."""
        counts = Counter(h.label for h in self.human_labels).most_common()
        if len(counts) > 1 and counts[0][1] == counts[1][1]:
            return None
        return counts[0][0]

    @property
    def judgeable(self) -> bool:
        """Whether a live judge can be shown this item: its material is inline and complete. A loader
        whose source lacks the judged answer marks the item ``metadata.answer_available: false``
        (the Thakur CSV: its ``response`` column is the exam prompt, not the model's answer)."""
        return self.material is not None and self.metadata.get("answer_available") is not False

    def material_summary(self) -> dict[str, Any]:
        if self.material is not None:
            return dict(self.material)
        assert self.ref is not None  # exactly one of material / ref (validated)
        return {"ref": self.ref.model_dump(exclude_none=True)}


class GoldSet(BaseModel):
    """A loaded gold set plus what loading it left out (and why), so nothing is dropped silently."""

    source: str
    format: str
    items: list[GoldItem]
    positive_label: str
    skipped: dict[str, int] = Field(default_factory=dict)  # reason -> count of rows not turned into items

    @property
    def labels(self) -> list[str]:
        """All labels seen (human and judge), positive first, then sorted: a stable label order."""
        seen = {h.label for it in self.items for h in it.human_labels}
        seen |= {v for it in self.items for v in it.judge_verdicts.values() if v is not None}
        seen.add(self.positive_label)
        return [self.positive_label] + sorted(seen - {self.positive_label})

    @property
    def judges(self) -> list[str]:
        """Judge names in first-seen order (the column order for the Thakur CSV)."""
        out: dict[str, None] = {}
        for it in self.items:
            for name in it.judge_verdicts:
                out.setdefault(name, None)
        return list(out)

    @property
    def rubrics(self) -> list[str]:
        return sorted({it.rubric for it in self.items})

    def for_rubric(self, rubric: str | None) -> GoldSet:
        """The items of one rubric; the positive label follows the rubric when the set-wide one
        does not occur among that rubric's labels (a mixed set's 'correct' means nothing to 'yes/no')."""
        if rubric is None:
            return self
        items = [it for it in self.items if it.rubric == rubric]
        labels = {h.label for it in items for h in it.human_labels}
        positive = self.positive_label
        declared = declared_positive(items)
        if declared is not None or (labels and positive not in labels):
            positive = default_positive_label(rubric, labels, declared) or positive
        return self.model_copy(update={"items": items, "positive_label": positive})


def why_not_judgeable(items: list[GoldItem]) -> str | None:
    """Why no live judge can be run on any of ``items`` (None when at least one is judgeable)."""
    if not items or any(it.judgeable for it in items):
        return None
    if all(it.material is None for it in items):
        return "its items point at a run (ref: task_id + trajectory_id) instead of carrying their material inline"
    return "its items carry no judged answer (metadata answer_available: false: the source records the question, the gold answers and verdicts, not the answer that was judged)"


def default_positive_label(rubric: str | None, labels: set[str], declared: str | None = None) -> str | None:
    """``declared``: the positive label the items name (a labelling set records its rubric's);
    else the rubric's known positive when the labels seen are that rubric's (even if no human
    chose the positive one); else a generic name among the labels."""
    if declared is not None:
        return declared
    if rubric in POSITIVE_LABEL_FOR_RUBRIC:
        positive = POSITIVE_LABEL_FOR_RUBRIC[rubric]
        if positive in labels or labels <= set(_rubric_labels(rubric)):
            return positive
    lowered = {lab.lower(): lab for lab in labels}
    for name in _GENERIC_POSITIVES:
        if name in lowered:
            return lowered[name]
    return None


def _rubric_labels(name: str | None) -> list[str]:
    import rubrics

    rubric = rubrics.RUBRICS.get(name or "")
    return list(rubric.label_outcomes) if rubric is not None else []


def declared_positive(items: list[GoldItem]) -> str | None:
    """The positive label the items' metadata names (``positive_label``), if they agree on one."""
    named = {it.metadata.get("positive_label") for it in items} - {None}
    return str(next(iter(named))) if len(named) == 1 else None


def gold_item_json_schema() -> dict[str, Any]:
    """JSON Schema of one line of a native gold JSONL file (exported to docs/schemas/gold.schema.json)."""
    schema = GoldItem.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "GoldItem"
    schema["description"] = (
        "One human-labelled judging case; a gold set is a JSONL file with one such object per line. "
        "Give inline 'material' (the rubric's material dict) or a 'ref' to task_id + trajectory_id. "
        "'judge_verdicts' maps a judge name to its recorded label (null = abstained)."
    )
    return schema
