"""Adapters from calibration experiments to the live judge panel (``judge.Panel`` or any Escalator).

- ``with_examples`` gives a rubric human-labelled worked examples after its system message
  (``FewShotRubric`` for rubrics that are not templates); the version changes with the examples, so every decision records which prompt
  version produced it (a rubric version comparison is then two panels over the same gold).
- ``panel_judge_run`` turns "build me a panel for these rubrics" into the ``run_judge(items,
  examples)`` callable that ``few_shot_experiment`` and the version comparison use.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import cached_property
from typing import Any, cast

import msgspec

from calibration._gold import GoldItem
from calibration._prompts import FewShotExample, JudgeRun
from judge import Escalator, JudgeRequest, content_hash
from judge.llm import Rubric
from rubrics import RubricExample, TemplateRubric, append_examples


class FewShotRubric(msgspec.Struct, frozen=True, dict=True):
    """Satisfies ``judge.Rubric``: the base rubric plus few-shot examples in the system message."""

    base: Rubric
    examples: tuple[FewShotExample, ...]

    @cached_property
    def version(self) -> str:  # in every judge request's cache key: hashed once
        tag = content_hash([e.model_dump(mode="json") for e in self.examples])[:8]
        return f"{self.base.version}+fs{len(self.examples)}-{tag}"

    @property
    def name(self) -> str:
        return self.base.name

    @property
    def verdict_schema(self):
        return self.base.verdict_schema

    @property
    def label_scores(self) -> Mapping[str, float]:
        return self.base.label_scores

    @property
    def label_outcomes(self) -> Mapping[str, Any]:
        return self.base.label_outcomes

    def render(self, material: Mapping[str, Any]) -> list[dict[str, str]]:
        messages = [dict(m) for m in self.base.render(material)]
        return append_examples(messages, [(ex.label, ex.material) for ex in self.examples])


def with_examples(base: Rubric, examples: Sequence[FewShotExample]) -> Rubric:
    """The rubric with few-shot examples: a template rubric gets them in its own content (so the
    version is a content hash that a rubric file written from it reproduces); any other rubric is
    wrapped in ``FewShotRubric``. Both render the same messages."""
    if isinstance(base, TemplateRubric):
        return cast(Rubric, base.with_examples([RubricExample(label=e.label, material=e.material, item_id=e.item_id) for e in examples]))
    return cast(Rubric, FewShotRubric(base, tuple(examples)))


PanelFactory = Callable[[Mapping[str, Rubric]], Escalator]


def panel_judge_run(build_panel: PanelFactory, rubrics: Mapping[str, Rubric], *, key_prefix: str = "calibration") -> JudgeRun:
    """``build_panel(rubrics) -> Escalator``; a fresh panel per call (closed afterwards if it can be),
    with each item's rubric wrapped in ``FewShotRubric`` when examples are given."""

    async def run(items: Sequence[GoldItem], examples: Sequence[FewShotExample]) -> dict[str, str | None]:
        inline = [it for it in items if it.material is not None]
        table: dict[str, Rubric] = dict(rubrics)
        for name in {it.rubric for it in inline}:
            if name not in table:
                raise KeyError(f"unknown rubric {name!r}; known: {sorted(table)}")
            chosen = tuple(e for e in examples if e.rubric == name)
            if chosen:
                table[name] = with_examples(table[name], chosen)
        panel = build_panel(table)
        try:
            requests = [JudgeRequest(key=f"{key_prefix}/{it.id}", rubric=it.rubric, material=dict(it.material or {})) for it in inline]
            decisions = await panel.decide(requests) if requests else []
        finally:
            closer: Callable[[], Awaitable[None]] | None = getattr(panel, "aclose", None)
            if closer is not None:
                await closer()
        out: dict[str, str | None] = {it.id: None for it in items}  # items without inline material: no verdict
        for it, d in zip(inline, decisions, strict=True):
            out[it.id] = d.label
        return out

    return run
