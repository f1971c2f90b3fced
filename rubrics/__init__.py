"""Rubrics: one module per rubric (prompt template + verdict schema + label maps + version).

Importing this package registers every rubric with ``judge`` so a panel can resolve rubric names;
``RUBRICS`` is the registry by name.
"""

from judge.llm import register_rubric
from rubrics import answer_correctness, groundedness, open_ended, policy_adherence, step_equivalence, trajectory_sufficiency
from rubrics._base import MaterialError, TemplateRubric, data_block, encode_data

RUBRICS: dict[str, TemplateRubric] = {
    module.RUBRIC.name: module.RUBRIC for module in (answer_correctness, trajectory_sufficiency, groundedness, policy_adherence, step_equivalence, open_ended)
}

for _rubric in RUBRICS.values():
    register_rubric(_rubric)


def get_rubric(name: str) -> TemplateRubric:
    if name not in RUBRICS:
        raise KeyError(f"unknown rubric {name!r}; known: {', '.join(sorted(RUBRICS))}")
    return RUBRICS[name]


def rubric_names() -> list[str]:
    return sorted(RUBRICS)


__all__ = ["RUBRICS", "MaterialError", "TemplateRubric", "data_block", "encode_data", "get_rubric", "rubric_names"]
