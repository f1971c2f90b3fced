"""External labels given with ``--labels FILE``: the verdict a team's previous tool gave each
trajectory, so that ``summary.json`` and the report show where we agree with it.

A labels file is JSONL (or a JSON array) of ``{"trajectory_id" | "task_id", "label", "reason"?,
"source"?}``; ``label`` is true / false, "pass" / "fail" (and the words ``judge.label_passed``
knows) or a reward in [0, 1] (passing at full credit). A ``task_id`` label applies to every
trajectory of that task without a label of its own. Every bad line is an error naming file, line
and field; a label naming no graded trajectory is reported, never silently dropped.

BFCL score files (``score/<model>/BFCL_*_score.json``, or that folder) are recognised and read as
BFCL's verdicts (``pipelines.ingest.read_bfcl_scores``): they name only the failed entries, and
every other id of a scored category passed.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from judge import ExternalLabel, InputErrorInfo, InputWarning, Trajectory, label_passed
from pipelines.ingest import Limits, read_bfcl_scores, sniff_bfcl_scores
from pipelines.ingest._reader import read_items

__all__ = ["LabelSet", "load_labels"]


class LabelSet(msgspec.Struct):
    by_trajectory: Mapping[str, ExternalLabel] = msgspec.field(default_factory=dict)
    by_task: Mapping[str, ExternalLabel] = msgspec.field(default_factory=dict)
    errors: list[InputErrorInfo] = msgspec.field(default_factory=list)
    used: set[str] = msgspec.field(default_factory=set)  # keys ("trajectory:<id>" / "task:<id>") that labelled something

    def apply(self, trajectory: Trajectory) -> Trajectory:
        """The trajectory with its label appended (a label of its own wins over its task's)."""
        if trajectory.trajectory_id in self.by_trajectory:
            key, label = f"trajectory:{trajectory.trajectory_id}", self.by_trajectory[trajectory.trajectory_id]
        elif trajectory.task_id in self.by_task:
            key, label = f"task:{trajectory.task_id}", self.by_task[trajectory.task_id]
        else:
            return trajectory
        self.used.add(key)
        return trajectory.model_copy(update={"external_labels": [*trajectory.external_labels, label]})

    def unused(self, file: str) -> list[InputWarning]:
        out = []
        for kind, table in (("trajectory", self.by_trajectory), ("task", self.by_task)):
            for ident in table:
                if f"{kind}:{ident}" not in self.used:
                    out.append(
                        InputWarning(kind="unused_label", message=f"no graded trajectory for the label of {kind} {ident!r}", file=file, field=f"{kind}_id")
                    )
        return out


def _error(file: str, line: int | None, field_name: str, message: str) -> InputErrorInfo:
    return InputErrorInfo(kind="invalid_field", message=message, file=file, line=line, field=field_name)


def load_labels(path: Path, limits: Limits = Limits()) -> LabelSet:
    name = str(path)
    if sniff_bfcl_scores(path):
        try:
            return LabelSet(by_trajectory=read_bfcl_scores(path))
        except ValueError as err:
            return LabelSet(errors=[_error(name, None, "<root>", str(err))])
    if path.is_dir():
        return LabelSet(errors=[_error(name, None, "<root>", "a folder of labels must hold BFCL score files (*_score.json)")])
    by_trajectory: dict[str, ExternalLabel] = {}
    by_task: dict[str, ExternalLabel] = {}
    labels = LabelSet(by_trajectory=by_trajectory, by_task=by_task)
    source_default = f"labels:{path.stem}"
    for raw in read_items(path, limits):
        if raw.error is not None:
            labels.errors.append(raw.error)
            continue
        item: Any = raw.value
        if not isinstance(item, dict):
            labels.errors.append(_error(name, raw.line, "<root>", "a label must be a JSON object"))
            continue
        if "label" not in item:
            labels.errors.append(_error(name, raw.line, "label", "Field required: true/false, pass/fail or a reward in [0, 1]"))
            continue
        value = item["label"]
        if label_passed(value) is None:
            labels.errors.append(_error(name, raw.line, "label", f"not a verdict: {value!r} (use true/false, pass/fail or a reward in [0, 1])"))
            continue
        reason = item.get("reason")
        label = ExternalLabel(source=str(item.get("source") or source_default), value=value, reason=None if reason is None else str(reason))
        for key, table in (("trajectory_id", by_trajectory), ("task_id", by_task)):
            if key in item:
                ident = str(item[key])
                if ident in table:
                    labels.errors.append(_error(name, raw.line, key, f"{key} {ident!r} is labelled twice; the first label is kept"))
                else:
                    table[ident] = label
                break
        else:
            labels.errors.append(_error(name, raw.line, "trajectory_id", "Field required: trajectory_id or task_id"))
    return labels
