"""Rubrics: one module per rubric (prompt template + verdict schema + label maps + version), and
rubric files (a user's own templates with a TOML header) that add to or override them by name.

Importing this package registers every built-in rubric with ``judge`` so a panel can resolve rubric
names; ``RUBRICS`` is the registry by name. ``rubric_set(folder)`` is the table a run uses when the
user passes ``--rubrics FOLDER``; ``write_rubric_files`` exports rubrics in that form.
"""

from typing import cast

from judge.llm import Rubric, register_rubric
from rubrics import answer_correctness, groundedness, open_ended, policy_adherence, step_equivalence, trajectory_sufficiency
from rubrics._base import EXAMPLES_HEADER, MaterialError, RubricExample, TemplateRubric, append_examples, data_block, encode_data
from rubrics._files import read_rubric_file, read_rubric_folder, rubric_file_text, rubric_set, write_rubric_files
from rubrics._materials import CHECK_OF_RUBRIC, CONTRACTS, MaterialContract, sample_material
from rubrics._safety import RubricFileError, check_template

RUBRICS: dict[str, TemplateRubric] = {
    module.RUBRIC.name: module.RUBRIC for module in (answer_correctness, trajectory_sufficiency, groundedness, policy_adherence, step_equivalence, open_ended)
}

for _rubric in RUBRICS.values():
    register_rubric(cast(Rubric, _rubric))  # a frozen msgspec Struct: mypy reads the protocol's plain attributes as settable


def get_rubric(name: str) -> TemplateRubric:
    if name not in RUBRICS:
        raise KeyError(f"unknown rubric {name!r}; known: {', '.join(sorted(RUBRICS))}")
    return RUBRICS[name]


def rubric_names() -> list[str]:
    return sorted(RUBRICS)


__all__ = [
    "CHECK_OF_RUBRIC",
    "CONTRACTS",
    "EXAMPLES_HEADER",
    "RUBRICS",
    "MaterialContract",
    "MaterialError",
    "RubricExample",
    "RubricFileError",
    "TemplateRubric",
    "append_examples",
    "check_template",
    "data_block",
    "encode_data",
    "get_rubric",
    "read_rubric_file",
    "read_rubric_folder",
    "rubric_file_text",
    "rubric_names",
    "rubric_set",
    "sample_material",
    "write_rubric_files",
]
