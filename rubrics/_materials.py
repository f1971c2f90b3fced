"""What each check hands a rubric: the material keys, and a realistic sample to test templates on.

A rubric serves one check; the check fixes its material (see ``judge.core._escalation``). A rubric
file names its check in its header, and the file is accepted only if its template renders this
sample (and a second, differently filled copy) with every piece of case content inside a data block.

Invariant: ``sample_material(check, tag)`` has the same shape for every tag; every string leaf is a
unique canary ``zq<tag><n>qz`` so a leak of case content outside the data blocks can be found in the
rendered text.
"""

from __future__ import annotations

from typing import Any

import msgspec
from pydantic import BaseModel

from judge import MATERIAL_FOR_RUBRIC, material_keys


class MaterialContract(msgspec.Struct, frozen=True):
    """A check's material: its keys come from the typed model in ``judge.core`` (one home), the
    sample is what rubric files are test-rendered with (it validates against that model)."""

    check: str  # the check a rubric serves (header field ``check``)
    rubric: str  # the built-in rubric serving it
    sample: dict[str, Any]

    @property
    def model(self) -> type[BaseModel]:
        return MATERIAL_FOR_RUBRIC[self.rubric]

    @property
    def required(self) -> tuple[str, ...]:
        return material_keys(self.model)[0]

    @property
    def optional(self) -> tuple[str, ...]:
        return material_keys(self.model)[1]

    @property
    def keys(self) -> tuple[str, ...]:
        return (*self.required, *self.optional)


_CALL = {"name": "get_sales", "arguments": {"region": "north", "year": 2023}}
CONTRACTS: dict[str, MaterialContract] = {
    c.check: c
    for c in (
        MaterialContract(
            "answer",
            "answer_correctness",
            {"question": "How many stores sold more than 1M?", "gold_answers": ["14", "fourteen"], "answer": "14 stores"},
        ),
        MaterialContract(
            "calls",
            "trajectory_sufficiency",
            {
                "question": "Total sales in the north in 2023?",
                "gold_answers": ["1200"],
                "reference_calls": [{**_CALL, "output": {"total": "1200"}}],
                "predicted_calls": [
                    {"step": 0, **_CALL, "status": "ok", "result": "total 1200"},
                    {"step": 1, **_CALL, "status": "error", "result": "Error: timeout"},
                ],
            },
        ),
        MaterialContract(
            "grounding",
            "groundedness",
            {
                "question": "Total sales in the north in 2023?",
                "answer": "1200 in total",
                "tool_outputs": [{"step": 0, "name": "get_sales", "arguments": _CALL["arguments"], "result": "total 1200"}],
            },
        ),
        MaterialContract(
            "policy",
            "policy_adherence",
            {
                "policy": "Never delete rows.",
                "question": "Clean the table.",
                "calls": [{"step": 0, "turn_id": "t1", "name": "delete_row", "arguments": {"id": "r7"}, "status": "ok"}],
            },
        ),
        MaterialContract(
            "step_equivalence",
            "step_equivalence",
            {
                "reference_call": _CALL,
                "predicted_call": {"name": "get_sales", "arguments": {"region": "North"}},
                "tool": {"name": "get_sales", "description": "Sales by region and year."},
            },
        ),
        MaterialContract(
            "open_ended",
            "open_ended",
            {"question": "Summarise the refund policy.", "criteria": ["mentions the 30-day window", "is polite"], "answer": "Refunds within 30 days."},
        ),
    )
}
CHECK_OF_RUBRIC: dict[str, str] = {c.rubric: c.check for c in CONTRACTS.values()}


def canary(tag: str, n: int) -> str:
    return f"zq{tag}{n:03d}qz"


def sample_material(check: str, tag: str) -> dict[str, Any]:
    """The contract's sample with every string leaf (keys of nested objects kept) replaced by a canary."""
    counter = iter(range(1_000))

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return canary(tag, next(counter))
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        return value

    return {k: walk(v) for k, v in CONTRACTS[check].sample.items()}


def canaries_in(value: Any) -> list[str]:
    """Every string leaf of a value (the canaries of a sample material, in order)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [c for v in value for c in canaries_in(v)]
    if isinstance(value, dict):
        return [c for v in value.values() for c in canaries_in(v)]
    return []
