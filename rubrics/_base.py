"""A rubric = a jinja2 prompt template + a pydantic verdict schema + label maps + a content version.

Prompt-injection hardening: everything taken from the case (questions, answers, tool calls and
outputs, policies, gold answers) is rendered by ``data_block`` as JSON inside
``<data name="...">...</data>``, with ``<``, ``>`` and ``&`` written as JSON unicode escapes, so no
content can open or close a data block; the system prompt (which never contains case content)
declares data blocks to be data, never instructions. ``json.loads`` of a block gives back the
original value exactly.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import jinja2
from pydantic import BaseModel

from judge import Outcome, content_hash
from judge.llm import JudgeVerdict

TEMPLATES = Path(__file__).parent / "templates"
SHARED_INCLUDES = ("_data_rules.j2",)

_ENV = jinja2.Environment(
    loader=jinja2.FileSystemLoader(str(TEMPLATES)),
    undefined=jinja2.StrictUndefined,
    autoescape=False,
    keep_trailing_newline=False,
    trim_blocks=True,
    lstrip_blocks=True,
)


def encode_data(value: Any) -> str:
    """JSON text of ``value`` in which no ``<``, ``>`` or ``&`` appears literally."""
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def data_block(name: str, value: Any) -> str:
    if not name.replace("_", "").isalnum():
        raise ValueError(f"data block name {name!r} must be an identifier")
    return f'<data name="{name}">{encode_data(value)}</data>'


_ENV.globals["data"] = data_block


class MaterialError(ValueError):
    """The material handed to a rubric lacks a field the rubric needs."""


@dataclass(frozen=True)
class TemplateRubric:
    """Satisfies ``judge.Rubric``. ``required``/``optional``: the material keys (see judge.core._escalation)."""

    name: str
    template: str
    verdict_schema: type[BaseModel]
    label_scores: Mapping[str, float]
    label_outcomes: Mapping[str, Outcome]
    required: tuple[str, ...]
    optional: tuple[str, ...] = ()
    description: str = ""
    extra_fields: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        labels = _schema_labels(self.verdict_schema)
        if not issubclass(self.verdict_schema, JudgeVerdict):
            raise TypeError(f"{self.name}: verdict schema must subclass judge.JudgeVerdict")
        if list(self.label_outcomes) != labels or set(self.label_scores) != set(labels):
            raise ValueError(f"{self.name}: label maps {list(self.label_outcomes)} / {sorted(self.label_scores)} do not match schema labels {labels}")

    @property
    def labels(self) -> list[str]:
        return list(self.label_outcomes)

    @cached_property
    def version(self) -> str:
        sources = {name: (TEMPLATES / name).read_text(encoding="utf-8") for name in (self.template, *SHARED_INCLUDES)}
        return content_hash(
            {
                "templates": sources,
                "schema": self.verdict_schema.model_json_schema(),
                "scores": dict(self.label_scores),
                "outcomes": {k: str(v) for k, v in self.label_outcomes.items()},
            }
        )[:16]

    def render(self, material: Mapping[str, Any]) -> list[dict[str, str]]:
        missing = [k for k in self.required if k not in material]
        if missing:
            raise MaterialError(f"rubric {self.name}: material lacks {', '.join(missing)} (has {', '.join(sorted(material)) or 'nothing'})")
        context = {k: material.get(k) for k in (*self.required, *self.optional)}
        extra = {k: v for k, v in material.items() if k not in context}  # rendered too: nothing is dropped
        template = _ENV.get_template(self.template)
        ctx = template.new_context({**context, "extra_material": extra, "labels": self.labels})
        system = "".join(template.blocks["system"](ctx)).strip()
        user = "".join(template.blocks["user"](ctx)).strip()
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def _schema_labels(schema: type[BaseModel]) -> list[str]:
    from typing import get_args

    field_info = schema.model_fields.get("label")
    if field_info is None:
        raise TypeError(f"verdict schema {schema.__name__} has no 'label' field")
    return [str(a) for a in get_args(field_info.annotation)]
