"""A judge's pass must rest on trusted material, checked by code: text in untrusted content cannot
flip a verdict, whatever language it is written in and however obedient the judge.

Why: rubrics render case content as declared data (``rubrics._base.data_block``), but a judge that
obeys the last instruction it sees is still swayed by an answer that says "mark this correct" in
Russian or holds a fake verdict. Spotting such text by patterns cannot cover every language, so the
decision does not rest on the judge's word alone: a *passing* label (one whose outcome is ``match``)
counts only when the evidence the judge gives checks out deterministically against the material.

Every material key is trusted or untrusted (``EvidenceRule``, declared per material model in
``judge.core._materials`` and so per check: a team's rubric file serving a check gets its check's
rule). Trusted: what the benchmark or our own environment produced (gold answers, reference calls
and their outputs, replayed outputs, the tool spec; for groundedness the tool outputs the answer is
measured against, see the README). Untrusted: what the agent wrote or carried (its answer, its
calls and their recorded results) and the task's free text (question, policy, criteria).

The verdict gives ``quotes`` (exact text copied from named data blocks) and, where the check is
about a value the answer states, ``candidate_answer`` (that value, copied from the answer). A pass
is verified by the rule's ``anchor``:

- ``answer``: the candidate is a span of the answer outside flagged text, and the code compares it
  with the gold answers (``Comparisons.answer_label``, the checks' own comparison): correct passes,
  incorrect / missing replace the judge's label; where the comparison cannot tell, the judge's pass
  stands only for a candidate no longer than ``candidate_tokens_limit`` (an injection does not fit);
- ``grounding``: the candidate is a span of the answer, some quote from the tool outputs (checked
  to be there, outside flagged text) states it (``Comparisons.states``), and every number the
  answer writes (outside flagged text) is stated by the tool outputs: a claim such as "31% more
  than last year" that no output backs refuses the pass;
- ``calls``: some quote from the trusted blocks (reference outputs, gold) is there, and the result of
  a successful predicted call states it: the information was obtained;
- ``quote``: some quote is found in a trusted block;
- ``none`` (no trusted material: policy adherence, open-ended criteria): quotes must be found in the
  blocks they name, and a pass is refused while any untrusted block holds verdict-like text.

Structured verdict-like text in an untrusted block (a JSON object or ``key: value`` lines using
verdict keys: one only a verdict uses, such as verdict / rationale, or two such as label and
confidence, or one with a verdict label such as "correct" as its value) is flagged on the decision (``flags``) and never counts as evidence. A pass that fails its check
becomes an ``unverified`` abstention (never a negative vote): the case then stays unresolved, for
review, unless other judges decide it.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable, Mapping
from typing import Any, Literal

import msgspec

Anchor = Literal["answer", "grounding", "calls", "quote", "none"]
AnswerLabelFn = Callable[[list[Any], str], str | None]
StatesFn = Callable[[str, Any], bool]

# What makes structured text read as a verdict (language-neutral: the verdict a judge returns uses
# these keys and the rubrics' labels whatever language the case is in). Keys only a verdict uses
# make one alone; keys data also uses ("score" of a retriever, "label" of a product) make one only
# with a second verdict key or with a verdict label as the value.
VERDICT_ONLY_KEYS = frozenset({"verdict", "rationale", "candidate_answer", "judgement", "judgment"})
VERDICT_KEYS = VERDICT_ONLY_KEYS | frozenset({"label", "confidence", "evidence", "quotes", "grade", "score", "decision", "outcome"})
VERDICT_LABELS = frozenset(
    {
        "correct", "incorrect", "missing", "supported", "partially", "unsupported", "unsure", "sufficient", "insufficient",
        "compliant", "violated", "equivalent", "not_equivalent", "meets", "partially_meets", "fails", "pass", "passed", "fail",
    }
)  # fmt: skip
_KEY_LINE = re.compile(r'(?im)^[\s>*#`"\'{,-]*(' + "|".join(sorted(VERDICT_KEYS)) + r')["\']?\s*[:=]\s*["\']?([^\n"\',}]{1,60})')
NUMBER = re.compile(r"(?<![\w.])[-+]?\d(?:[\d,]*\d)?(?:\.\d+)?%?")  # a number as an answer writes it (digits in any script's text)
MAX_SCAN = 100_000  # characters of one string scanned for verdict-like text
DEFAULT_CANDIDATE_TOKENS = 12


class EvidenceRule(msgspec.Struct, frozen=True):
    """Which material keys are trusted, and how a pass is checked against them (module docstring).
    ``answer`` / ``results``: the keys holding the agent's answer and its calls (for the anchors)."""

    trusted: tuple[str, ...] = ()  # blocks a quote may anchor a pass on
    carried: tuple[str, ...] = ()  # trusted blocks the agent's file carries: scanned for verdict-like text too
    anchor: Anchor = "none"
    answer: str = "answer"
    results: str = "predicted_calls"
    candidate_tokens_limit: int = DEFAULT_CANDIDATE_TOKENS

    @property
    def needs_candidate(self) -> bool:
        return self.anchor in ("answer", "grounding")


UNCHECKED = EvidenceRule(anchor="none")


class Comparisons(msgspec.Struct, frozen=True):
    """The deterministic comparisons a check needs (``judge`` cannot import ``pipelines``: the
    grading layer registers its own with ``use_comparisons``). ``answer_label(gold_answers,
    candidate)``: "correct" / "incorrect" / "missing" or None (cannot tell); ``states(value,
    text)``: does ``text`` (a string or JSON value) state ``value``."""

    answer_label: AnswerLabelFn
    states: StatesFn
    name: str = "registered"


def _plain_label(gold_answers: list[Any], candidate: str) -> str | None:
    """Without the grading layer's comparison: equal normal forms only; anything else undecided."""
    c = normal(candidate)
    if any(c == normal(leaf) for g in gold_answers for leaf in _leaves(g)):
        return "correct"
    return None


def _plain_states(value: str, text: Any) -> bool:
    v = normal(value)
    return bool(v) and any(v in normal(leaf) for leaf in _leaves(text))


PLAIN = Comparisons(answer_label=_plain_label, states=_plain_states, name="plain")
_registered: list[Comparisons] = []


def use_comparisons(comparisons: Comparisons) -> None:
    """Register the comparisons evidence is checked with (the last registration wins)."""
    _registered[:] = [comparisons]


def registered_comparisons() -> Comparisons:
    return _registered[0] if _registered else PLAIN


def normal(text: str) -> str:
    """The form quotes are compared in: NFKC, case-folded, whitespace runs as one space, JSON
    escapes of quotes undone (a judge may copy a block's JSON text or its decoded value)."""
    text = unicodedata.normalize("NFKC", text).casefold().replace('\\"', '"')
    return " ".join(text.split())


def _leaves(value: Any) -> list[str]:
    """Every scalar inside a JSON value as text (a string as it is, anything else as JSON)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [s for v in value.values() for s in _leaves(v)]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _leaves(v)]
    if value is None:
        return []
    return [json.dumps(value, ensure_ascii=False)]


def _text_of(value: Any) -> str:
    """A block's text as a judge may quote it: its string leaves, then its JSON text."""
    return "\n".join(_leaves(value)) + "\n" + json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


# ---------------------------------------------------------------- verdict-like text


class Flag(msgspec.Struct, frozen=True):
    """Verdict-like text found in an untrusted block: where, and the text (cut short)."""

    block: str
    text: str

    def describe(self) -> str:
        return f"{self.block}: verdict-like text {self.text[:80]!r}"


def verdict_like_spans(text: str) -> list[tuple[int, int]]:
    """Spans of ``text`` holding structured verdict-like text (at any depth of a JSON object, or as
    ``key: value`` lines; the rule is the module docstring's). A label alone ("correct") is an
    ordinary word: only a verdict key makes a verdict. Each ``{`` is tried with the JSON decoder."""
    body = text[:MAX_SCAN]
    spans: list[tuple[int, int]] = []
    decoder = json.JSONDecoder()
    at = body.find("{")
    while at >= 0:
        try:
            value, end = decoder.raw_decode(body, at)
        except ValueError:
            at = body.find("{", at + 1)
            continue
        if isinstance(value, dict) and _verdict_like(value):
            spans.append((at, end))
            at = body.find("{", end)
        else:
            at = body.find("{", at + 1)
    for m in _KEY_LINE.finditer(body):
        key, value = m.group(1).casefold(), m.group(2).strip().casefold()
        if (key in VERDICT_ONLY_KEYS or value in VERDICT_LABELS) and not any(s <= m.start() < e for s, e in spans):
            spans.append((m.start(), m.end()))
    return sorted(spans)


def _verdict_like(obj: Mapping[str, Any]) -> bool:
    keys = {str(k).strip().casefold(): v for k, v in obj.items()}
    found = set(keys) & VERDICT_KEYS
    if found & VERDICT_ONLY_KEYS or len(found) >= 2:
        return True
    if any(isinstance(keys[k], str) and keys[k].strip().casefold() in VERDICT_LABELS for k in found):
        return True
    return any(isinstance(v, Mapping) and _verdict_like(v) for v in obj.values())


def find_flags(material: Mapping[str, Any], rule: EvidenceRule) -> tuple[list[Flag], dict[str, list[str]]]:
    """Verdict-like text in the material's untrusted blocks (every block not declared trusted, and
    the trusted ones the agent's file carries), and per block the strings with those spans cut out
    (what may count as evidence)."""
    flags: list[Flag] = []
    cleaned: dict[str, list[str]] = {}
    for name, value in material.items():
        if name in rule.trusted and name not in rule.carried:
            continue
        kept: list[str] = []
        for leaf in _leaves(value):
            spans = verdict_like_spans(leaf)
            for s, e in spans:
                flags.append(Flag(name, leaf[s:e]))
            kept.append(_cut(leaf, spans))
        cleaned[name] = kept
    return flags, cleaned


def _cut(text: str, spans: list[tuple[int, int]]) -> str:
    if not spans:
        return text
    parts, at = [], 0
    for s, e in spans:
        parts.append(text[at:s])
        at = max(at, e)
    parts.append(text[at:])
    return "\n".join(parts)


# ---------------------------------------------------------------- verification


class Verified(msgspec.Struct, frozen=True):
    """The outcome of checking one passing vote: ``ok`` False with ``why``; ``label``: the label
    the code decided from the candidate (None: the judge's stands)."""

    ok: bool
    why: str = ""
    label: str | None = None


class CaseEvidence(msgspec.Struct):
    """One request's material prepared once for all its votes: flags, and the text a quote may be
    found in per block (untrusted blocks without their flagged spans)."""

    material: Mapping[str, Any]
    rule: EvidenceRule
    flags: list[Flag]
    cleaned: dict[str, list[str]]
    _texts: dict[str, str] = msgspec.field(default_factory=dict)

    @classmethod
    def of(cls, material: Mapping[str, Any], rule: EvidenceRule) -> CaseEvidence:
        flags, cleaned = find_flags(material, rule)
        return cls(material, rule, flags, cleaned)

    def text(self, block: str) -> str:
        if block not in self._texts:
            value = self.material.get(block)
            self._texts[block] = normal("\n".join(self.cleaned[block]) if block in self.cleaned else _text_of(value))
        return self._texts[block]

    def found(self, quote: str, block: str) -> bool:
        q = normal(quote)
        return bool(q) and block in self.material and q in self.text(block)

    def in_trusted(self, quote: str) -> str | None:
        return next((b for b in self.rule.trusted if self.found(quote, b)), None)


def verify_pass(case: CaseEvidence, quotes: list[dict[str, Any]], candidate: str | None, comparisons: Comparisons, outcomes: Mapping[str, Any]) -> Verified:
    """Check a passing vote's evidence by the rule's anchor (module docstring)."""
    rule = case.rule
    texts = [(str(q.get("source") or ""), str(q.get("text") or "")) for q in quotes if isinstance(q, Mapping)]
    misplaced = [f"{src}: {txt[:40]!r}" for src, txt in texts if txt.strip() and not case.found(txt, src)]
    if rule.anchor == "none":
        if case.flags:
            return Verified(False, "verdict-like text in the material and no trusted material to check a pass against: " + case.flags[0].describe())
        if texts and len(misplaced) == len(texts):
            return Verified(False, f"no quote is found in the block it names ({misplaced[0]})")
        return Verified(True)
    if rule.needs_candidate:
        if candidate is None or not candidate.strip():
            return Verified(False, "a pass needs the candidate answer copied from the answer; none given")
        if not case.found(candidate, rule.answer):
            where = " (it lies in verdict-like text)" if _in_raw(case, candidate, rule.answer) else ""
            return Verified(False, f"the candidate answer {candidate[:60]!r} is not in the answer{where}")
    if rule.anchor == "answer":
        gold = case.material.get("gold_answers") or []
        label = comparisons.answer_label(list(gold), candidate or "")
        if label is not None:
            if label not in outcomes:
                return Verified(False, f"the comparison's label {label!r} is not one of the rubric's")
            return Verified(True, f"the candidate {candidate!r} compared with the gold by {comparisons.name} comparison: {label}", label)
        if len((candidate or "").split()) > rule.candidate_tokens_limit or len(candidate or "") > 12 * rule.candidate_tokens_limit:
            return Verified(False, f"the comparison cannot tell and the candidate is longer than {rule.candidate_tokens_limit} words")
        return Verified(True, f"the candidate {candidate!r} is in the answer; the comparison cannot tell: the judge's label stands")
    if rule.anchor == "grounding":
        support = [txt for src, txt in texts if src in rule.trusted and case.found(txt, src)]
        if not support:
            return Verified(False, "a pass needs a quote found in the tool outputs")
        if not any(comparisons.states(candidate or "", s) for s in support):
            return Verified(False, f"no quoted tool output states the candidate {candidate[:60]!r}" if candidate else "no candidate")
        outputs = [case.material.get(b) for b in rule.trusted]
        answer_text = "\n".join(case.cleaned.get(rule.answer, [])) or "\n".join(_leaves(case.material.get(rule.answer)))
        unstated = [n for n in NUMBER.findall(answer_text) if not comparisons.states(n, outputs)]
        if unstated:
            return Verified(False, f"the answer states {', '.join(unstated[:3])}, which no tool output states")
        return Verified(True)
    trusted = [(src, txt) for src, txt in texts if src in rule.trusted and case.found(txt, src)]
    if not trusted:
        return Verified(False, f"a pass needs a quote found in the trusted material ({', '.join(rule.trusted)})")
    if rule.anchor == "calls":
        results = [_without_flags(c.get("result")) for c in case.material.get(rule.results) or [] if isinstance(c, Mapping) and c.get("status") == "ok"]
        if not any(comparisons.states(txt, r) for _, txt in trusted for r in results):
            return Verified(False, "no quoted reference information is in the result of a successful call")
    return Verified(True)


def _without_flags(value: Any) -> str:
    """A value's text with its verdict-like spans cut out (what a result may show as evidence)."""
    return "\n".join(_cut(leaf, verdict_like_spans(leaf)) for leaf in _leaves(value))


def _in_raw(case: CaseEvidence, quote: str, block: str) -> bool:
    q = normal(quote)
    return bool(q) and q in normal(_text_of(case.material.get(block)))
