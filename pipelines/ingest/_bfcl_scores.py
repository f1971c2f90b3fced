"""BFCL score files (``bfcl evaluate``): the leaderboard's own verdict on each entry, as labels.

Layout: ``score/<model>/BFCL_v3_<category>_score.json`` (v4: under ``non_live/``, ``live/``, ...),
JSON Lines: line 1 is the category summary ``{"accuracy", "correct_count", "total_count"}``, every
further line one *failed* entry ``{id, valid: false, error, error_type, model_result_raw, ...}``.
An entry of the category that has no line **passed**: the file names only failures.

``read_bfcl_scores(path)`` returns a read-only mapping id -> ``ExternalLabel`` (source ``"bfcl"``):
a failed entry's label carries BFCL's ``error_type`` and first error message as its reason; any
other id of a category the file scores gets a pass label (lookup, ``get`` and ``in`` follow that
rule; iteration lists the ids the file names, i.e. the failures). ``path`` may be one score file or
a folder of them (``score/<model>/``, searched recursively); the categories are merged.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judge import ExternalLabel
from pipelines.ingest._bfcl import category

__all__ = ["BfclScoreLabels", "looks_like_bfcl_scores", "read_bfcl_scores", "sniff_bfcl_scores"]

SOURCE = "bfcl"
_FILE_NAME = re.compile(r"^BFCL_v\d+_(?P<category>.+)_score\.json$")
_SUMMARY_KEYS = frozenset({"accuracy", "correct_count", "total_count"})
_MAX_REASON = 400


def looks_like_bfcl_scores(first: Any) -> bool:
    """The first object of a BFCL score file is its category summary."""
    return isinstance(first, dict) and set(first) >= _SUMMARY_KEYS and "id" not in first


def sniff_bfcl_scores(path: str | Path) -> bool:
    """Is ``path`` a BFCL score file (or a folder holding some)? Reads one line per file."""
    path = Path(path)
    if path.is_dir():
        return any(_first_line_is_summary(p) for p in sorted(path.rglob("*_score.json")))
    return _first_line_is_summary(path)


def _first_line_is_summary(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            line = fh.readline(1 << 20)
        return looks_like_bfcl_scores(json.loads(line))
    except (OSError, ValueError):
        return False


@dataclass
class BfclScoreLabels(Mapping[str, ExternalLabel]):
    """Labels for the ids of the scored categories: failures as listed, every other id passes."""

    failures: dict[str, ExternalLabel] = field(default_factory=dict)
    categories: dict[str, dict[str, Any]] = field(default_factory=dict)  # category -> summary line

    def __getitem__(self, trajectory_id: str) -> ExternalLabel:
        found = self.failures.get(trajectory_id)
        if found is not None:
            return found
        cat = category(trajectory_id)
        if cat in self.categories:
            return ExternalLabel(source=SOURCE, value=True, passed=True, reason=f"not among the failures of BFCL's {cat} score file")
        raise KeyError(trajectory_id)

    def __iter__(self) -> Iterator[str]:
        return iter(self.failures)

    def __len__(self) -> int:
        return len(self.failures)


def read_bfcl_scores(path: str | Path) -> BfclScoreLabels:
    """BFCL's verdict per entry id (see the module doc). ``ValueError`` names the file and line
    when a file is not a BFCL score file or a failure line cannot be read."""
    path = Path(path)
    files = sorted(p for p in path.rglob("*_score.json")) if path.is_dir() else [path]
    if not files:
        raise ValueError(f"{path}: no BFCL score files (*_score.json) in this folder")
    labels = BfclScoreLabels()
    for file in files:
        _read_file(file, labels)
    return labels


def _read_file(file: Path, labels: BfclScoreLabels) -> None:
    summary: dict[str, Any] | None = None
    cat = None
    named = _FILE_NAME.match(file.name)
    with open(file, encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
            except ValueError as err:
                raise ValueError(f"{file}:{number}: malformed JSON ({err})") from None
            if summary is None:
                if not looks_like_bfcl_scores(entry):
                    raise ValueError(f"{file}:{number}: not a BFCL score file (line 1 must be {{accuracy, correct_count, total_count}})")
                summary = entry
                continue
            uid = entry.get("id") if isinstance(entry, dict) else None
            if not isinstance(uid, str) or not uid:
                raise ValueError(f"{file}:{number}: field id: a failed entry needs its BFCL id")
            labels.failures[uid] = ExternalLabel(source=SOURCE, value=False, passed=False, reason=_reason(entry))
            cat = cat or entry.get("test_category") or category(uid)
    if summary is None:
        raise ValueError(f"{file}: empty file, not a BFCL score file")
    cat = named.group("category") if named else cat
    if cat is None:
        raise ValueError(f"{file}: cannot tell which category it scores (no BFCL_vN_<category>_score.json name and no failed entry)")
    labels.categories[cat] = summary


def _reason(entry: dict[str, Any]) -> str:
    """``error_type: first error message`` (BFCL nests messages in lists and dicts)."""
    error = entry.get("error")
    kind = entry.get("error_type")
    if isinstance(error, dict):
        kind = kind or error.get("error_type")
        error = error.get("error_message", error)
    message = _first_text(error)
    text = f"{kind}: {message}" if kind and message else str(kind or message or "failed")
    return text if len(text) <= _MAX_REASON else text[: _MAX_REASON - 3] + "..."


def _first_text(error: Any) -> str:
    if isinstance(error, str):
        return error
    if isinstance(error, list):
        return "; ".join(_first_text(e) for e in error[:2] if isinstance(e, (str, list)))
    return "" if error is None else json.dumps(error, default=str)[:_MAX_REASON]
