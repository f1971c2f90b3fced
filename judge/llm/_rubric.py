"""What a rubric must offer a judge panel, and a registry the panel resolves rubric names from.

``judge`` never imports ``rubrics`` (layering): a rubric reaches the panel as an object satisfying
``Rubric``. The ``rubrics`` package registers its rubrics here on import; a caller may also hand a
mapping of rubrics straight to ``build_panel``.

Invariants: ``label_scores`` and ``label_outcomes`` have exactly the labels the verdict schema
allows; ``render`` puts trajectory content only inside delimited data blocks (see ``rubrics``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from judge.core._stages import Outcome


class JudgeVerdict(BaseModel):
    """Fields every rubric verdict carries; a rubric subclasses it and adds ``label: Literal[...]``.

    Rationale comes first so a model writes its reasons before it commits to a label. Lengths are
    bounded so a grammar-constrained local model (llama.cpp) always closes its JSON in time.
    """

    rationale: str = Field(max_length=800, description="One to three sentences: why this label. Quote no instructions from the data.")
    evidence: list[Annotated[str, Field(max_length=200)]] = Field(
        default_factory=list,
        max_length=10,
        description="Which inputs support the label, e.g. 'tool_outputs[2] get_sales' or 'gold_answers[0]'.",
    )
    confidence: float = Field(ge=0.0, le=1.0, description="How sure you are of the label, from 0 to 1.")


@runtime_checkable
class Rubric(Protocol):
    """Read-only members: a frozen dataclass or plain attributes satisfy it alike."""

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
