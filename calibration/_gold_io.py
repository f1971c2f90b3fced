"""Reading gold sets: a registry of formats, detected from the file, each with errors naming file:line.

Formats:
- ``jsonl``: native, one ``GoldItem`` per line (schema in docs/schemas/gold.schema.json);
- ``thakur_csv``: Thakur et al.'s TriviaQA judges CSV (nine judge columns + ``Human-Eval``).
  ``True``/``False`` become ``correct``/``incorrect`` under rubric ``answer_correctness``; items are
  clustered by ``question`` (each question was answered by eight models). Rows without a human
  verdict are counted in ``GoldSet.skipped`` rather than dropped silently.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from calibration._gold import GoldItem, GoldSet, HumanLabel, declared_positive, default_positive_label
from judge import UNDECIDED, UNIQUE_KEYS, BadInputError, DuplicateKey, InputError, TooDeep, field_path, json_lines, loads_exact, parse_json_bounded

T = TypeVar("T")

THAKUR_JUDGES: tuple[str, ...] = (
    "JudgeLM",
    "Gemma-2B",
    "Llama3-70B",
    "Llama-70B",
    "GPT-4",
    "Llama-7B",
    "Llama3-8B",
    "Llama-13B",
    "Mistral-7B",
)
THAKUR_COLUMNS: tuple[str, ...] = ("model", "response", "question", "references", "benchmark", *THAKUR_JUDGES, "Human-Eval")
_THAKUR_LABELS = {"true": "correct", "false": "incorrect"}

GoldReader = Callable[[Path, "str | None"], GoldSet]
GOLD_FORMATS: dict[str, GoldReader] = {}


def register_gold_format(name: str) -> Callable[[GoldReader], GoldReader]:
    def deco(fn: GoldReader) -> GoldReader:
        GOLD_FORMATS[name] = fn
        return fn

    return deco


def detect_gold_format(path: Path) -> str:
    """``.csv`` whose header holds the Thakur columns -> thakur_csv; ``.jsonl``/``.json`` -> jsonl."""
    path = Path(path)
    if not path.is_file():
        raise InputError.at("not_found", "gold file does not exist", str(path))
    suffix = path.suffix.lower()
    if suffix == ".csv":
        try:  # the header decides; bad bytes anywhere are the loader's to report, with their place
            with path.open(newline="", encoding="utf-8", errors="replace") as fh:
                header = next(csv.reader(fh), [])
        except csv.Error as exc:
            raise InputError.at("invalid_field", f"unreadable CSV header: {exc}", str(path), 1) from exc
        missing = [c for c in THAKUR_COLUMNS if c not in header]
        if not missing:
            return "thakur_csv"
        raise InputError.at("unknown_format", f"CSV lacks the Thakur columns {missing}; no other CSV gold format is known", str(path), 1)
    if suffix in (".jsonl", ".json", ".ndjson"):
        return "jsonl"
    raise InputError.at("unknown_format", f"cannot tell the gold format from suffix {suffix!r} (known: .csv Thakur, .jsonl native)", str(path))


def load_gold(path: Path, *, format: str | None = None, positive_label: str | None = None) -> GoldSet:
    path = Path(path)
    fmt = format or detect_gold_format(path)
    if fmt not in GOLD_FORMATS:
        raise InputError.at("unknown_format", f"unknown gold format {fmt!r}; known: {sorted(GOLD_FORMATS)}", str(path))
    return GOLD_FORMATS[fmt](path, positive_label)


@register_gold_format("thakur_csv")
def load_thakur_csv(path: Path, positive_label: str | None = None) -> GoldSet:
    path = Path(path)
    items: list[GoldItem] = []
    skipped = 0
    try:
        with path.open(newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            missing = [c for c in THAKUR_COLUMNS if c not in (reader.fieldnames or [])]
            if missing:
                raise InputError.at("invalid_field", f"missing Thakur columns {missing}", str(path), 1)
            width = len(reader.fieldnames or [])
            end_of_previous = 1  # header line
            for row_index, row in enumerate(reader):
                line = end_of_previous + 1  # a record may span lines (multi-line references)
                end_of_previous = reader.line_num
                if None in row or None in row.values():  # DictReader's marks of a record longer / shorter than the header
                    fields = sum(v is not None for k, v in row.items() if k is not None) + len(row.get(None) or ())
                    raise InputError.at("invalid_field", f"a record of {fields} fields where the header names {width}", str(path), line)
                human = _thakur_bool(row["Human-Eval"], str(path), line, "Human-Eval", allow_blank=True)
                if human is None:
                    skipped += 1
                    continue
                verdicts = {j: _thakur_bool(row[j], str(path), line, j, allow_blank=True) for j in THAKUR_JUDGES}
                question = row["question"].strip()
                if not question:
                    raise InputError.at("invalid_field", "empty question (needed as the bootstrap cluster)", str(path), line, "question")
                confidence = row.get("Human-Eval_Confidence", "").strip()
                items.append(
                    GoldItem(
                        id=f"thakur-{row_index + 1:04d}",
                        rubric="answer_correctness",
                        # The CSV's `response` is the exam prompt, not the model's answer: the item can be
                        # scored from recorded verdicts but not re-judged.
                        material={
                            "question": question,
                            "gold_answers": [r.strip() for r in row["references"].split("\n") if r.strip()],
                            "answer": None,
                        },
                        human_labels=[
                            HumanLabel(
                                annotator="thakur-human",
                                label=human,
                                confidence=None if not confidence else (1.0 if confidence.lower() == "true" else 0.0),
                            )
                        ],
                        judge_verdicts=verdicts,
                        cluster=f"q:{question}",
                        agent=row["model"].strip() or None,
                        metadata={"benchmark": row["benchmark"], "source_line": line, "answer_available": False},
                    )
                )
    except UnicodeDecodeError as exc:
        raise InputError.at("encoding", f"not UTF-8: {exc}", str(path)) from exc
    except csv.Error as exc:  # e.g. a field over the csv module's size limit
        raise InputError.at("invalid_field", f"unreadable CSV record: {exc}", str(path), reader.line_num) from exc
    return GoldSet(
        source=str(path),
        format="thakur_csv",
        items=items,
        positive_label=positive_label or "correct",
        skipped={"no_human_verdict": skipped} if skipped else {},
    )


def _thakur_bool(value: str | None, file: str, line: int, field: str, *, allow_blank: bool) -> str | None:
    text = (value or "").strip().lower()
    if not text and allow_blank:
        return None
    if text not in _THAKUR_LABELS:
        raise InputError.at("invalid_field", f"expected True or False, got {value!r}", file, line, field)
    return _THAKUR_LABELS[text]


def _repeated_key(raw: str) -> str | None:
    """The key an object of ``raw`` repeats (valid JSON text), else None."""
    try:
        UNIQUE_KEYS.decode(raw)
    except DuplicateKey as exc:
        return exc.key
    return None


def read_jsonl(path: Path, parse: Callable[[Any], T]) -> list[tuple[int, T]]:
    """(line, ``parse(record)``) of every non-blank line of a hand-made JSONL file (gold sets,
    labelling sets, label files), held to the rules of the trajectory reader: UTF-8, nesting
    bounded and no unpaired surrogate escape (``parse_json_bounded``), a repeated key refused
    rather than overwritten; the first problem is an ``InputError`` naming file, line and field."""
    path = Path(path)
    if not path.is_file():
        raise InputError.at("not_found", "file does not exist", str(path))
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError.at("encoding", f"not UTF-8 (byte {exc.start}): {exc.reason}", str(path)) from exc
    out: list[tuple[int, T]] = []
    for line_no, raw in enumerate(json_lines(text), start=1):
        if not raw.strip():
            continue
        try:
            data = parse_json_bounded(raw)
        except TooDeep as exc:
            raise InputError.at("too_deep", str(exc), str(path), line_no) from None
        except BadInputError as exc:  # an unpaired surrogate escape
            raise InputError.at("encoding", str(exc), str(path), line_no) from None
        except ValueError as exc:
            raise InputError.at("malformed_json", str(exc), str(path), line_no) from exc
        repeated = _repeated_key(raw) if loads_exact(raw, unique_keys=True) is UNDECIDED else None
        if repeated is not None:
            raise InputError.at("malformed_json", f"duplicate key {repeated!r} in one JSON object", str(path), line_no)
        try:
            out.append((line_no, parse(data)))
        except ValidationError as exc:
            err = exc.errors()[0]
            raise InputError.at("invalid_field", err["msg"], str(path), line_no, field_path(tuple(err["loc"]))) from exc
    return out


@register_gold_format("jsonl")
def load_gold_jsonl(path: Path, positive_label: str | None = None) -> GoldSet:
    path = Path(path)
    items: list[GoldItem] = []
    first_line: dict[str, int] = {}
    for line_no, item in read_jsonl(path, GoldItem.model_validate):
        if item.id in first_line:
            raise InputError.at("duplicate_id", f"item id {item.id!r} already used on line {first_line[item.id]}", str(path), line_no, "id")
        first_line[item.id] = line_no
        items.append(item)
    if not items:
        raise InputError.at("empty", "gold file holds no items", str(path))
    rubrics = sorted({it.rubric for it in items})
    labels = {h.label for it in items for h in it.human_labels}
    positive = positive_label or default_positive_label(rubrics[0] if len(rubrics) == 1 else None, labels, declared_positive(items))
    if positive is None and len(rubrics) > 1:  # a mixed set: the first rubric's positive; for_rubric picks each rubric's own
        first = [it for it in items if it.rubric == rubrics[0]]
        positive = default_positive_label(rubrics[0], {h.label for it in first for h in it.human_labels}, declared_positive(first))
    if positive is None:
        raise InputError.at(
            "invalid_field",
            f"cannot tell the positive label among {sorted(labels)}: name it with --positive-label LABEL (or metadata.positive_label on every item)",
            str(path),
            None,
            "human_labels[].label",
        )
    return GoldSet(source=str(path), format="jsonl", items=items, positive_label=positive)


def write_gold_jsonl(gold: GoldSet, path: Path) -> None:
    """Write a gold set in the native format (deterministic: sorted keys, item order kept)."""
    lines = [json.dumps(it.model_dump(mode="json"), sort_keys=True, ensure_ascii=False) for it in gold.items]
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")
