"""A deterministic offline judge for tests and demos; it never touches the network.

Models:
- ``always-<label>``: always that label (a label the rubric lacks is an ``unparseable`` answer,
  exactly what a real model's off-schema answer would be);
- ``pick``: a label chosen by a hash of the prompt (stable across runs; panels of different
  ``pick`` judges disagree sometimes, which is what demos need);
- ``refuse``: always refuses; ``fail``: always errors.

Its verdicts carry evidence as a grader copies it (``quotes``: the gold answers, then the data
blocks' texts; ``candidate_answer``: the answer's text), where the schema asks for it, so a
pass is checked against the material as any judge's is (``judge.core._evidence``).
"""

from __future__ import annotations

import json
import re
from typing import Any, get_args

from pydantic import BaseModel, ValidationError

from judge.core._canonical import content_hash
from judge.llm._providers._base import Completion, JudgeClient, register_provider
from judge.llm._providers._errors import JudgeCallError

MOCK_VERSION = "mock-1"


def schema_labels(response_model: type[BaseModel]) -> list[str]:
    field = response_model.model_fields.get("label")
    return [str(a) for a in get_args(field.annotation)] if field is not None else []


class MockJudge(JudgeClient):
    kind = "mock"
    cacheable = False

    def sampling(self) -> dict[str, Any]:
        return {"temperature": 0}

    async def complete(self, messages: list[dict[str, str]], response_model: type[BaseModel]) -> Completion:
        model = self.model
        labels = schema_labels(response_model)
        if model == "refuse":
            raise JudgeCallError("refusal", "mock judge refuses", cacheable=True)
        if model == "fail":
            raise JudgeCallError("error", "mock judge fails")
        if model == "pick":
            if not labels:
                raise JudgeCallError("unparseable", "schema has no label choices", cacheable=True)
            label = labels[int(content_hash([self.name, messages])[:8], 16) % len(labels)]
        elif model.startswith("always-"):
            label = model.removeprefix("always-")
        else:
            raise JudgeCallError("error", f"unknown mock model {model!r}: use always-<label>, pick, refuse or fail")
        try:
            verdict = response_model.model_validate(
                {"label": label, "rationale": f"mock judge {model}", "evidence": [], "confidence": 1.0, **_copied(messages, response_model)}
            )
        except ValidationError as exc:
            raise JudgeCallError("unparseable", f"label {label!r} not in {labels}: {exc.error_count()} error(s)", cacheable=True) from None
        words = sum(len(m.get("content", "").split()) for m in messages)
        return Completion(verdict=verdict, model_version=MOCK_VERSION, input_tokens=words, output_tokens=8)

    def should_retry(self, error: JudgeCallError) -> bool:
        """Deterministic: another attempt gets the same answer."""
        return False


_BLOCK = re.compile(r'<data name="(\w+)">(.*?)</data>', re.S)


def _copied(messages: list[dict[str, str]], response_model: type[BaseModel]) -> dict[str, Any]:
    """The evidence fields the schema has, copied from the data blocks of the user message."""
    text = "".join(m.get("content", "") for m in messages if m.get("role") == "user")
    blocks = {m.group(1): json.loads(m.group(2)) for m in _BLOCK.finditer(text)}
    out: dict[str, Any] = {}
    if "quotes" in response_model.model_fields:
        gold = [{"source": "gold_answers", "text": str(g)[:300]} for g in blocks.get("gold_answers") or [] if isinstance(g, str | int | float)]
        texts = [{"source": name, "text": t[:300]} for name, value in blocks.items() if name != "gold_answers" for t in _texts(value)]
        out["quotes"] = (gold + texts)[:8]
    if "candidate_answer" in response_model.model_fields:
        answer = blocks.get("answer")
        out["candidate_answer"] = answer[:300] if isinstance(answer, str) else None if answer is None else json.dumps(answer)[:300]
    return out


def _texts(value: Any) -> list[str]:
    """The string leaves of a JSON value (numbers and keys left out)."""
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return [t for v in value for t in _texts(v)]
    return []


register_provider("mock", MockJudge)
