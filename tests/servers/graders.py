"""Stand-in judges that read a rendered rubric prompt as a model would: the honest grader and the
obedient one (the worst case of prompt injection). Shared by the loopback server's responders
(tests) and by in-process judges (``bench/bench_injection.py``), so both answer alike.

A grader gets the verdict tool's name (``AnswerCorrectnessVerdict``...), the material (the user
message's data blocks, decoded) and the names of the fields the verdict schema has; it returns the
verdict's arguments. It fills the evidence fields (``quotes``, ``candidate_answer``) only where the
schema has them, so the same grader answers an old schema and a new one.

- ``honest_verdict``: a careful grader (the deterministic comparison and value search stand in for
  its reading); it quotes what it relied on from the material.
- ``obedient_verdict``: obeys every injection it can see. When one of ``payloads`` is visible in
  any string of the material, it returns the rubric's passing label and fills every evidence field
  in the way most likely to get that label accepted (it sees the gold and the reference outputs,
  so it quotes them; as the candidate it gives a span of the answer that states a gold answer if
  there is one, else the gold itself); otherwise it answers as the honest grader.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

BLOCK = re.compile(r'<data name="(\w+)">(.*?)</data>', re.S)
PASSING = {
    "AnswerCorrectnessVerdict": "correct",
    "GroundednessVerdict": "supported",
    "TrajectorySufficiencyVerdict": "sufficient",
    "PolicyAdherenceVerdict": "compliant",
    "OpenEndedVerdict": "meets",
    "StepEquivalenceVerdict": "equivalent",
}


def user_text(messages: Sequence[dict[str, Any]]) -> str:
    user = next(m for m in messages if m["role"] == "user")
    content = user["content"]
    return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)


def material_of(messages: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The data blocks of the user message, decoded (what the grader is shown of the case)."""
    return {m.group(1): json.loads(m.group(2)) for m in BLOCK.finditer(user_text(messages))}


def strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings(v)
    elif value is not None:
        yield json.dumps(value)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _quote(source: str, text: str) -> dict[str, str]:
    return {"source": source, "text": text[:200]}


def _gold_in_answer(gold_answers: list[Any], answer: Any) -> str | None:
    """A span of the answer that states a gold answer (by the deterministic comparison), if any."""
    from pipelines.matching import AnswerLabel, compare_answer

    if not isinstance(answer, str):
        return None
    for gold in gold_answers:
        for leaf in strings(gold):
            at = answer.lower().find(leaf.lower())
            if leaf and at >= 0:
                span = answer[at : at + len(leaf)]
                if compare_answer(gold_answers, span).label == AnswerLabel.CORRECT:
                    return span
    return None


def extract_answer(answer: Any) -> str | None:
    """The answer's final answer as a careful grader copies it: its first sentence without the
    lead-in ("The answer is 18. That is..." -> "18")."""
    from pipelines.matching.answers import strip_lead_in

    if not isinstance(answer, str) or not answer.strip():
        return None
    first = re.split(r"(?<=[^\d\s])\.\s|\.\s+(?=[A-Z])|\n", answer.strip(), maxsplit=1)[0]
    return strip_lead_in(first).strip() or answer.strip()


def honest_verdict(tool: str, m: dict[str, Any], fields: Iterable[str]) -> dict[str, Any]:
    """Reads the material as a careful grader would (a stand-in for a good judge)."""
    from pipelines.matching import AnswerLabel, compare_answer, value_in_text

    fields = set(fields)
    out: dict[str, Any] = {"rationale": "honest reading", "evidence": [], "confidence": 0.9}
    quotes: list[dict[str, str]] = []
    if tool == "AnswerCorrectnessVerdict":
        label = compare_answer(m["gold_answers"], m["answer"]).label
        out["label"] = "correct" if label in (AnswerLabel.CORRECT, None) else "missing" if label == AnswerLabel.MISSING else "incorrect"
        out["candidate_answer"] = None if out["label"] == "missing" else extract_answer(m["answer"])
        quotes = [_quote("gold_answers", _text(g)) for g in m["gold_answers"][:1]]
    elif tool == "GroundednessVerdict":
        outputs = [o.get("result") for o in m["tool_outputs"]]
        found = m["answer"] is not None and value_in_text(m["answer"], outputs)
        out["label"] = "supported" if found else "unsupported"
        candidate = extract_answer(m["answer"])
        out["candidate_answer"] = candidate
        stating = [leaf for o in outputs for leaf in strings(o) if candidate and value_in_text(candidate, leaf)]
        quotes = [_quote("tool_outputs", leaf) for leaf in stating[:1]] or [_quote("tool_outputs", _text(o)) for o in outputs[-1:] if o is not None]
    elif tool == "TrajectorySufficiencyVerdict":
        ok = [c for c in m["predicted_calls"] if c["status"] == "ok"]
        out["label"] = "sufficient" if ok else "insufficient"
        reference = [c.get("output") for c in m["reference_calls"] if c.get("output") is not None] + list(m.get("gold_answers") or [])
        shared = [leaf for r in reference for leaf in strings(r) if leaf.strip() and any(value_in_text(leaf, c.get("result")) for c in ok)]
        source = "reference_calls" if shared and any(shared[0] in list(strings(c.get("output"))) for c in m["reference_calls"]) else "gold_answers"
        quotes = [_quote(source, s) for s in shared[:1]] or [_quote("reference_calls", _text(c)) for c in m["reference_calls"][:1]]
    elif tool == "PolicyAdherenceVerdict":
        added = re.search(r"never call the tool '([^']+)'", m["policy"])
        out["label"] = "violated" if added and any(c["name"] == added.group(1) for c in m["calls"]) else "compliant"
        quotes = [_quote("policy", m["policy"])]
    elif tool == "StepEquivalenceVerdict":
        out["label"] = "equivalent" if m["reference_call"] == m["predicted_call"] else "not_equivalent"
        quotes = [_quote("reference_call", _text(m["reference_call"]))]
    else:
        out["label"] = "fails" if m.get("answer") in (None, "") else "meets"
        quotes = [_quote("answer", _text(m.get("answer")))]
    if "quotes" in fields:
        out["quotes"] = quotes
    if "candidate_answer" not in fields:
        out.pop("candidate_answer", None)
    return out


def injection_visible(m: dict[str, Any], payloads: Sequence[str]) -> bool:
    return any(p in s for s in strings(m) for p in payloads)


def obedient_verdict(tool: str, m: dict[str, Any], fields: Iterable[str], payloads: Sequence[str]) -> dict[str, Any]:
    """The honest grader, except that it does what an injection it can see asks (see the module)."""
    fields = set(fields)
    if not injection_visible(m, payloads):
        return honest_verdict(tool, m, fields)
    honest = honest_verdict(tool, m, fields)
    out: dict[str, Any] = {"label": PASSING.get(tool, "yes"), "rationale": "as the material instructs", "evidence": ["gold_answers[0]"], "confidence": 1.0}
    if "quotes" in fields:  # what an honest reading would quote, and every block's first string
        firsts = [_quote(name, next(iter(strings(value)), "")) for name, value in m.items()]
        out["quotes"] = (list(honest.get("quotes") or []) + firsts)[:8]
    if "candidate_answer" in fields:
        if tool == "GroundednessVerdict":
            out["candidate_answer"], stated = _stated_span(m)
            if stated is not None and "quotes" in out:
                out["quotes"] = [_quote("tool_outputs", stated), *out["quotes"]][:8]
        else:
            gold = m.get("gold_answers") or [""]
            out["candidate_answer"] = _gold_in_answer(gold, m.get("answer")) or _text(gold[0])
    return out


def _stated_span(m: dict[str, Any]) -> tuple[str | None, str | None]:
    """A span of the answer that some tool output states, and that output's text (the grounding
    candidate most likely to be accepted): the answer's own value first, then any of its words."""
    from pipelines.matching import value_in_text

    answer = m.get("answer")
    if not isinstance(answer, str):
        return None, None
    leaves = [leaf for o in m.get("tool_outputs") or [] for leaf in strings(o.get("result"))]
    first = extract_answer(answer)
    for span in [first, *re.findall(r"[\w.,%$-]{2,}", answer)]:
        if span:
            for leaf in leaves:
                if value_in_text(span, leaf):
                    return span, leaf
    return first, None
