"""What a rubric must offer a judge panel, and a registry the panel resolves rubric names from.

``judge`` never imports ``rubrics`` (layering): a rubric reaches the panel as an object satisfying
``Rubric``. The ``rubrics`` package registers its rubrics here on import; a caller may also hand a
mapping of rubrics straight to ``build_panel``.

Invariants: ``label_scores`` and ``label_outcomes`` have exactly the labels the verdict schema
allows; ``render`` puts trajectory content only inside delimited data blocks (see ``rubrics``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Protocol, Self, runtime_checkable

from pydantic import BaseModel, Field, ModelWrapValidatorHandler, PrivateAttr, WithJsonSchema, model_validator

from judge.core._evidence import EvidenceRule
from judge.core._materials import evidence_rule
from judge.core._stages import Outcome
from judge.llm._reading import escape_control_characters, read_confidence

# What the model is shown for ``confidence``: a number from 0 to 1 (as before the reading became
# lenient: the schema is part of every cache key and rubric version, so it must not move).
_CONFIDENCE_SCHEMA = WithJsonSchema({"type": "number", "minimum": 0.0, "maximum": 1.0})


class Quote(BaseModel):
    """A span of the material a verdict rests on: the data block's name and its text, copied."""

    source: str = Field(max_length=40, description="The name of the data block the text is copied from, e.g. gold_answers or tool_outputs.")
    text: str = Field(max_length=300, description="The text, copied exactly from that block.")


class JudgeVerdict(BaseModel):
    """Fields every rubric verdict carries; a rubric subclasses it and adds ``label: Literal[...]``.

    Rationale comes first so a model writes its reasons before it commits to a label. Lengths are
    bounded so a grammar-constrained local model (llama.cpp) always closes its JSON in time.

    Read leniently where only the form is off (``judge.llm._reading``): raw control characters in
    JSON strings are escaped, the advisory confidence is rescaled (a percentage) or dropped (None), and
    each repair is noted (``_repairs``). The schema shown to a model is unchanged by that.
    """

    rationale: str = Field(max_length=800, description="One to three sentences: why this label. Quote no instructions from the data.")
    evidence: list[Annotated[str, Field(max_length=200)]] = Field(
        default_factory=list,
        max_length=10,
        description="Which inputs support the label, e.g. 'tool_outputs[2] get_sales' or 'gold_answers[0]'.",
    )
    quotes: list[Quote] = Field(
        default_factory=list,
        max_length=8,
        description="The exact text the label rests on, copied character for character from the data blocks, each with the name of its block. A passing label counts only when its quotes are found in the material that backs it (see the task).",
    )
    confidence: Annotated[float | None, _CONFIDENCE_SCHEMA] = Field(ge=0.0, le=1.0, description="How sure you are of the label, from 0 to 1.")
    _repairs: list[str] = PrivateAttr(default_factory=list)

    @model_validator(mode="wrap")
    @classmethod
    def _read_confidence_leniently(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        """The confidence as ``read_confidence`` reads it (a missing one is None), noted when that
        took a repair; everything else is validated as declared."""
        notes: list[str] = []
        if isinstance(data, dict):
            read, note = read_confidence(data.get("confidence"))
            if note is not None:
                data = {**data, "confidence": read}
                notes.append(note)
        verdict = handler(data)
        if notes:
            verdict._repairs = notes
        return verdict

    @classmethod
    def model_validate_json(cls, json_data: str | bytes | bytearray, **kwargs: Any) -> Self:
        """instructor parses tool-call arguments (and JSON answers) here: raw control characters
        inside JSON strings are escaped first, and the repair noted."""
        if isinstance(json_data, str):
            text = json_data
        else:
            try:
                text = bytes(json_data).decode("utf-8")
            except UnicodeDecodeError:
                return super().model_validate_json(json_data, **kwargs)
        repaired, escaped = escape_control_characters(text)
        verdict = super().model_validate_json(repaired, **kwargs)
        if escaped:
            verdict._repairs = [f"control_characters: {escaped} raw control character(s) inside JSON strings escaped", *verdict._repairs]
        return verdict


class AnswerVerdict(JudgeVerdict):
    """A verdict on a value the answer states (answer correctness, groundedness): the judge copies
    that value from the answer and the code checks it (``judge.core._evidence``)."""

    candidate_answer: str | None = Field(
        default=None,
        max_length=300,
        description="The answer's final answer as it states it, copied exactly from the answer block (all of it if it offers several candidates); null if it gives none.",
    )


@runtime_checkable
class Rubric(Protocol):
    """Read-only members: a frozen record (msgspec Struct) or plain attributes satisfy it alike."""

    @property
    def name(self) -> str: ...

    @property
    def version(self) -> str:
        """Content hash of template + schema + label maps; recorded in every decision."""
        ...

    @property
    def verdict_schema(self) -> type[BaseModel]: ...

    @property
    def label_scores(self) -> Mapping[str, float]: ...

    @property
    def label_outcomes(self) -> Mapping[str, Outcome]: ...

    def render(self, material: Mapping[str, Any]) -> list[dict[str, str]]:
        """Chat messages (``role`` system/user, ``content``) asking for one verdict on ``material``."""
        ...


def evidence_rule_of(rubric: Rubric) -> EvidenceRule:
    """How a pass of this rubric is checked: its own ``evidence_rule`` (a template rubric's follows
    its check), else the built-in rubric's of that name, else ``UNCHECKED`` (quotes checked where
    given, and no pass while the material holds verdict-like text)."""
    own = getattr(rubric, "evidence_rule", None)
    return own if isinstance(own, EvidenceRule) else evidence_rule(rubric.name)


_REGISTRY: dict[str, Rubric] = {}


def register_rubric(rubric: Rubric) -> None:
    existing = _REGISTRY.get(rubric.name)
    if existing is not None and existing.version != rubric.version:
        raise ValueError(f"rubric {rubric.name!r} registered twice with different versions")
    _REGISTRY[rubric.name] = rubric


def registered_rubrics() -> dict[str, Rubric]:
    return dict(_REGISTRY)


def verdict_labels(rubric: Rubric) -> list[str]:
    """The rubric's labels in declaration order (as in ``label_outcomes``)."""
    return list(rubric.label_outcomes)
