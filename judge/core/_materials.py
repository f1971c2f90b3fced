"""What a judge is shown for each rubric: typed material, the contract between the grader (which
builds it) and the rubrics (which render it inside data blocks).

The wire form stays a plain JSON object (``model.model_dump()``): judge cache keys are content
hashes of it, so these models add types without changing a single key. Extra fields are refused:
a grader that sends something a rubric does not declare is a bug, not data.

Each material model declares which of its keys are trusted and how a judge's pass is checked
against them (``EVIDENCE``, see ``judge.core._evidence``): one home, so a rubric file serving a
check gets the check's rule.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, model_serializer

from judge.core._evidence import UNCHECKED, EvidenceRule

_Closed = ConfigDict(extra="forbid")


class CallShown(BaseModel):
    """A predicted call as a judge sees it (result clipped by the grader); ``step``: its index in the
    turn's steps, which a judge names as the decisive step."""

    model_config = _Closed

    step: int
    name: str
    arguments: dict[str, Any] | None  # None: the source did not record them
    status: str
    result: Any = None


class ReferenceCallShown(BaseModel):
    """A reference call, with its output when replay or the task provides one."""

    model_config = _Closed

    name: str
    arguments: dict[str, Any]
    output: Any = None

    @model_serializer(mode="wrap")
    def _omit_unknown_output(self, handler: Any) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if data.get("output") is None:
            data.pop("output", None)
        return data


class ToolOutputShown(BaseModel):
    """A tool output a groundedness judge weighs. ``borrowed`` (left out of the wire form when
    unset, so existing materials keep their cache keys) says the log recorded no result for this
    call and ``result`` is the recorded output of the identical reference call."""

    model_config = _Closed

    step: int
    name: str
    arguments: dict[str, Any] | None  # None: the source did not record them
    result: Any = None
    borrowed: str | None = None

    @model_serializer(mode="wrap")
    def _omit_unborrowed(self, handler: Any) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if data.get("borrowed") is None:
            data.pop("borrowed", None)
        return data


class PolicyCallShown(BaseModel):
    model_config = _Closed

    step: int
    turn_id: str
    name: str
    arguments: dict[str, Any] | None  # None: the source did not record them
    status: str


class AnswerMaterial(BaseModel):
    """answer_correctness: the answer against the gold answers (CRAG)."""

    model_config = _Closed
    EVIDENCE: ClassVar[EvidenceRule] = EvidenceRule(trusted=("gold_answers",), anchor="answer")

    question: str
    gold_answers: list[Any]
    answer: Any  # required, may be null (the agent answered nothing)


class OpenEndedMaterial(BaseModel):
    """open_ended: the answer against the points a good answer covers. ``policy_document``: the
    domain's policy the agent worked under (tau2's environment policy), context for criteria such
    as "the agent should refuse"; omitted from the wire when there is none (cache keys unchanged).
    No trusted material: criteria and policy are the task's free text, the answer the agent's."""

    model_config = _Closed
    EVIDENCE: ClassVar[EvidenceRule] = UNCHECKED

    question: str
    criteria: list[str]
    answer: Any  # required, may be null
    policy_document: str | None = None

    @model_serializer(mode="wrap")
    def _omit_no_policy(self, handler: Any) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if data.get("policy_document") is None:
            data.pop("policy_document", None)
        return data


class SufficiencyMaterial(BaseModel):
    """trajectory_sufficiency: did the calls made get what the reference calls get? Trusted: the
    reference calls with their outputs (from the task or replay) and the gold."""

    model_config = _Closed
    EVIDENCE: ClassVar[EvidenceRule] = EvidenceRule(trusted=("reference_calls", "gold_answers"), anchor="calls")

    question: str
    reference_calls: list[ReferenceCallShown]
    predicted_calls: list[CallShown]
    gold_answers: list[Any] | None = None


class GroundednessMaterial(BaseModel):
    """groundedness: is the answer supported by what the tools returned? The tool outputs are what
    it is measured against (trusted as the reference, though the agent's file carries them, so they
    are scanned for verdict-like text too)."""

    model_config = _Closed
    EVIDENCE: ClassVar[EvidenceRule] = EvidenceRule(trusted=("tool_outputs",), carried=("tool_outputs",), anchor="grounding")

    question: str
    answer: Any
    tool_outputs: list[ToolOutputShown]


class PolicyMaterial(BaseModel):
    """policy_adherence: the plain-text policy against the calls attempted (no trusted material)."""

    model_config = _Closed
    EVIDENCE: ClassVar[EvidenceRule] = UNCHECKED

    policy: str
    question: str
    calls: list[PolicyCallShown]


class StepEquivalenceMaterial(BaseModel):
    """step_equivalence: would the tool treat the two calls the same? Trusted: the reference call
    and the tool's spec."""

    model_config = _Closed
    EVIDENCE: ClassVar[EvidenceRule] = EvidenceRule(trusted=("reference_call", "tool"), anchor="quote")

    reference_call: dict[str, Any]
    predicted_call: dict[str, Any]
    tool: dict[str, Any] | None = None


MATERIAL_FOR_RUBRIC: dict[str, type[BaseModel]] = {
    "answer_correctness": AnswerMaterial,
    "open_ended": OpenEndedMaterial,
    "trajectory_sufficiency": SufficiencyMaterial,
    "groundedness": GroundednessMaterial,
    "policy_adherence": PolicyMaterial,
    "step_equivalence": StepEquivalenceMaterial,
}


def evidence_rule(rubric: str) -> EvidenceRule:
    """The evidence rule of a built-in rubric's material (UNCHECKED for a name none declares)."""
    model = MATERIAL_FOR_RUBRIC.get(rubric)
    return model.EVIDENCE if model is not None else UNCHECKED  # type: ignore[attr-defined]


def material_keys(model: type[BaseModel]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(required, optional) top-level keys of a material model, in declaration order."""
    required = tuple(name for name, f in model.model_fields.items() if f.is_required())
    optional = tuple(name for name, f in model.model_fields.items() if not f.is_required())
    return required, optional
