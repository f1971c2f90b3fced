"""Deterministic final-answer grading with CRAG's labels, and value look-up for grounding.

``compare_answer`` decides only what a rule can decide for certain; everything else comes back
with ``label=None`` (inconclusive) so the judge stage sees it. Never a guess: a wrong "incorrect"
costs a passing agent its score, a wrong "correct" hides a hallucination.

Four rules keep a word-for-word match from deciding what it cannot:

* **Yes/no golds are decided by the yes/no the prediction commits to.** A gold that is only a
  polar word (``_POLAR_FAMILIES``: yes/no, true/false, correct/incorrect, right/wrong, 是/否/不是/没有,
  对/错/不对; trimmed, any case) is matched by a prediction that clearly commits: the polar word
  leads it (after "The answer is", "It's" ...) followed by the end, punctuation, a spaced dash or
  an echo of the question ("No it isn't"), and nothing after it flips or hedges it (the opposite
  polarity, a negation after "yes", a hedge, contrast or condition, a question mark anywhere). The
  same polarity is ``correct``, the opposite ``incorrect``, within one family only (conventions
  differ across families on negative questions). A polar word that is not the answer ("No doubt
  it is the Nile"), both polarities, a hedge or a question back stay inconclusive. A gold that
  leads with a yes/no and says more ("No, it is shorter") is ``incorrect`` against the opposite.
* **Several candidates are not an answer.** A prediction that lists other candidates of the gold's
  kind besides the gold does not pass because the gold is among them: inconclusive. It is split
  like a list (commas, semicolons, "and", lines, bullets); the gold's *kind* is its shape. A
  *name* (every content word capitalised: "Paris", "Rio de Janeiro") is rivalled by items that are
  short names ("Lyon", "Joe Biden"), and, when the gold itself stands as an item, by items opening
  with a name ("Paris and Lyon are both ..."); a *code* (holds digits: "LJ137") by short items with
  digits; *words* and CJK golds by short items of content words only (at most one token longer than
  the gold). "France" in "Paris, France" counts as a rival: a shape cannot tell a qualifier from
  a competing name, so a judge decides. Not rivals: the sentence around the gold ("The capital is
  Paris, a city of 2 million"), the gold repeated, parts of the gold ("Obama, Barack"), items of
  another type (a number for a name) or script (a translation). Numbers have their own rule (the
  gold among other numbers is inconclusive), and a list gold is compared as a list.
* **A number equal to the gold must be stated as the gold's value** (``_uncommitted``): not denied,
  hedged or asked in its clause ("not 42", "maybe 42", "Did you mean 42?"), not a bound or an
  estimate ("more than 42", "nearly 42"), not in another unit or currency than the gold's ("5
  miles" for "5 km", "€1,200" for "$1,200"). Otherwise inconclusive.
* **The same words in another order are not the same answer** ("Bob defeated Alice" for "Alice
  defeated Bob"): the token-F1 pass needs the shared words in the gold's order, a name written
  surname first around one comma aside. Otherwise inconclusive.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
import warnings
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import msgspec

from judge import AnswerLabel, parse_json_text, strip_instructions
from pipelines.matching.normalize import is_cjk, normalize_answer_text, normalize_ascii, tokens

__all__ = [
    "AnswerLabel",
    "AnswerMatch",
    "AnswerThresholds",
    "Haystack",
    "HaystackParts",
    "compare_answer",
    "is_missing",
    "numbers_in",
    "shares_content",
    "value_finder",
    "value_in_text",
]


class AnswerThresholds(msgspec.Struct, frozen=True):
    """The tunable deterministic tolerances (calibration tunes them)."""

    accept_similarity: float = 1.0  # token F1 >= this -> correct (1.0: same tokens after normalisation)
    reject_similarity: float | None = None  # short prediction with F1 <= this -> incorrect; None: never
    short_answer_tokens: int = 8
    numeric_relative_tolerance: float = 1e-6


class AnswerMatch(msgspec.Struct, frozen=True):
    label: AnswerLabel | None  # None = inconclusive: escalate to a judge, never guess
    reason: str
    gold_index: int | None = None
    instructions: tuple[str, ...] = ()  # instruction-like sentences found in the prediction (addressed to the grader)


# ---------------------------------------------------------------- numbers in text

_SCALES: dict[str, float] = {
    "thousand": 1e3, "k": 1e3, "千": 1e3,
    "million": 1e6, "mn": 1e6, "m": 1e6, "百万": 1e6,
    "billion": 1e9, "bn": 1e9, "b": 1e9,
    "trillion": 1e12, "tn": 1e12, "t": 1e12,
    "万": 1e4, "亿": 1e8,
}  # fmt: skip
_SCALE_ALT = "|".join(sorted((re.escape(s) for s in _SCALES), key=len, reverse=True))
_MENTION = re.compile(
    r"(?<![\w.])(?P<sign>[-+\u2212])?[$€£¥₹]?"
    r"(?P<num>(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)"
    r"(?:[eE](?P<exp>[-+]?\d+))?"
    r"(?P<pct>\s?%)?"
    rf"(?:\s?(?P<scale>{_SCALE_ALT})(?![a-z]))?",
    re.IGNORECASE,
)
# Where a mention can start: its first character (sign, currency, digit, or the dot of ".5") not
# after a word character or dot. Written first-character-first so the regex engine scans for it
# at C speed; the full pattern is then tried only there (see ``_mention_matches``).
_MENTION_START = re.compile(r"[-+\u2212$€£¥₹.\d](?<![\w.].)")
_CURRENCY_WORDS = frozenset({"us", "usd", "eur", "gbp", "cny", "rmb", "jpy", "inr", "aud", "cad", "chf"})


class _Mention(msgspec.Struct, frozen=True):
    """One number written in text. ``value`` is what it literally says; ``readings`` adds the
    percent (12% -> 0.12) and scale (1.2 million -> 1200000) readings, any of which may be meant."""

    value: float
    readings: tuple[float, ...]
    start: int
    end: int


def _mention_matches(text: str) -> Iterator[re.Match[str]]:
    """The matches of ``_MENTION.finditer(text)``, found faster on long text (KBs of tool output):
    a match can only start at a ``_MENTION_START`` position, so the full pattern is tried at
    those, in order, skipping the ones inside the previous match."""
    pos = 0
    for start in _MENTION_START.finditer(text):
        at = start.start()
        if at < pos:
            continue
        m = _MENTION.match(text, at)
        if m is not None:
            pos = m.end()
            yield m


def _readings(m: re.Match[str]) -> tuple[float, ...]:
    """What a matched mention says (its value first), and its percent / scale readings."""
    num, exp, sign, pct, scale = m.group("num", "exp", "sign", "pct", "scale")
    try:
        value = float(num.replace(",", "")) * (10.0 ** int(exp) if exp else 1.0)
    except OverflowError:
        value = math.inf
    if sign in ("-", "\u2212"):
        value = -value
    if not pct and not scale:
        return (value,)
    readings = [value]
    if pct:
        readings.append(value / 100.0)
    if scale:
        readings.append(value * _SCALES[scale.lower()])
    return tuple(readings)


def _mentions(text: str) -> list[_Mention]:
    found: list[_Mention] = []
    for m in _mention_matches(text):
        readings = _readings(m)
        found.append(_Mention(readings[0], readings, m.start(), m.end()))
    return found


_MAYBE_JSON = frozenset("{[ntf")  # first characters (or whitespace) of strings parse_json_text may change


def _walk_leaves(value: Any) -> list[Any]:
    """Scalar leaves of a JSON value (dict values, list items) in document order, JSON text parsed
    first. Iterative: tool outputs are untrusted and may nest deeper than the recursion limit."""
    out: list[Any] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str) and (item[:1] in _MAYBE_JSON or item[:1].isspace()):
            item = parse_json_text(item)
        if isinstance(item, dict):
            stack.extend(reversed(item.values()))
        elif isinstance(item, (list, tuple)):
            stack.extend(reversed(item))
        else:
            out.append(item)
    return out


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def numbers_in(text: Any) -> list[float]:
    """Numbers appearing in a value: JSON numbers, and numbers written in its strings.

    "1,234.5" -> 1234.5, "-3" -> -3, "12%" -> 12, "$4.50" -> 4.5, "1e3" -> 1000. A hyphen right
    after a word or digit is not a minus sign ("2020-21", "COVID-19").
    """
    out: list[float] = []
    for leaf in _walk_leaves(text):
        if _is_number(leaf):
            out.append(float(leaf))
        elif isinstance(leaf, str):
            out.extend(m.value for m in _mentions(leaf))
    return out


_UNIT_RESIDUE = re.compile(r"^[\s$€£¥₹%.,:()]*$")
_WORD = re.compile(r"[^\W\d_]+")


def _as_number(value: Any) -> tuple[float, ...] | None:
    """The readings of ``value`` if it *is* a number: a JSON number, or a string holding one number
    with at most a currency before it and up to two unit words after it ("$4.50", "12 %",
    "1.2 million dollars", "23 years old")."""
    if _is_number(value):
        return (float(value),)
    if not isinstance(value, str):
        return None
    return _str_as_number(value)


@functools.lru_cache(maxsize=4096)
def _str_as_number(value: str) -> tuple[float, ...] | None:
    """``_as_number`` of a string, remembered: the same gold value or required item is asked of
    every message and every tool output of a trajectory."""
    text = value.strip()
    found = _mentions(text)
    if len(found) != 1:
        return None
    mention = found[0]
    before, after = text[: mention.start], text[mention.end :]
    before_words = _WORD.findall(before)
    after_words = _WORD.findall(after)
    if any(w.lower() not in _CURRENCY_WORDS for w in before_words) or len(after_words) > 2:
        return None
    if not _UNIT_RESIDUE.match(_WORD.sub("", before + " " + after)):
        return None
    return mention.readings


def _close(a: float, b: float, rel: float) -> bool:
    if math.isnan(a) and math.isnan(b):
        return True
    return math.isclose(a, b, rel_tol=rel, abs_tol=0.0)


def _any_close(xs: tuple[float, ...], ys: tuple[float, ...], rel: float) -> bool:
    return any(_close(x, y, rel) for x in xs for y in ys)


def _number_text(x: float) -> str:
    if _is_number(x) and math.isfinite(x) and float(x) == int(x) and abs(x) < 2**63:
        return str(int(x))
    return str(x)


# ---------------------------------------------------------------- missing answers

_NON_ANSWERS = frozenset({"unknown", "n/a", "na", "n.a.", "not available", "no answer", "none available", "未知", "不知道", "不清楚", "无法回答"})
_REFUSAL = re.compile(
    r"^(?:(?:i'?m |i am )?(?:so )?sorry[\s,.!]*(?:but[\s,]*)?)?(?:"
    r"i (?:do not|don'?t|dont) know"
    r"|i (?:cannot|can'?t|can not|could ?n'?t|could not|am unable to|'?m unable to|am not able to|was unable to|wasn'?t able to)"
    r" (?:answer|determine|find|provide|help|assist|say|tell|locate|access|retrieve|verify|confirm|give)"
    r"|i'?m unable to (?:answer|determine|find|provide|help|assist)"
    r"|i have no (?:information|data|way to|idea)"
    r"|no idea|not sure|no clue|(?:i )?can'?t say"
    r"|there (?:is|was|are) (?:no|not enough|insufficient) (?:information|data|relevant)"
    r"|(?:no|insufficient|not enough) (?:information|data)(?: is| was)? (?:available|found|provided)"
    r"|unable to (?:answer|determine|find)"
    r"|(?:the )?answer (?:is )?(?:unknown|not available)"
    r")",
    re.IGNORECASE,
)
_REFUSAL_ZH = re.compile(r"^(?:(?:很)?抱歉[，,。！!]?\s*)?(?:我)?(?:不知道|无法回答|无法确定|无法提供|无法找到|不清楚|没有找到|找不到|未能找到|不能回答)")


# "I don't know exactly, but it is 23": a refusal that goes on to answer is an answer; so is one
# that goes on to guess ("I don't know, maybe 42": graded, and left open as a guess).
_BUT_ANSWER = re.compile(r"\b(?:but|however|though|although|maybe|perhaps|probably|possibly)\b\W*\w|(?:但|不过|可是|可能|也许)\W*\w")


def is_missing(prediction: Any) -> bool:
    """True when the prediction gives no answer: nothing, "I don't know", "N/A", a refusal.

    A text that *starts* with a refusal is missing unless it goes on with "but ..." (then it is
    graded as an answer); a bare "none" is not missing (it can be the right answer).
    """
    if prediction is None:
        return True
    if isinstance(prediction, (list, tuple)):
        return all(is_missing(p) for p in prediction)
    if isinstance(prediction, dict):
        return not prediction
    if not isinstance(prediction, str):
        return False
    text = prediction.strip().replace("\u2019", "'").lower()
    bare = text.rstrip(" .!?。！？")
    if not bare or bare in _NON_ANSWERS:
        return True
    refusal = _REFUSAL.match(text) or _REFUSAL_ZH.match(text)
    return refusal is not None and not _BUT_ANSWER.search(text[refusal.end() :])


# ---------------------------------------------------------------- answer shapes


def _prepare(value: Any) -> Any:
    """Bring an answer to one of three shapes: scalar, list of scalars, or table (list of rows).

    JSON text is parsed; one-element lists are unwrapped (VAKRA's ``["23"]`` and ``[[1.2587]]``)
    but a one-row table with several columns stays a table; dict rows become their values in the
    dict's own key order; a one-column table is a list.
    """
    if isinstance(value, str):
        parsed = parse_json_text(value)
        if isinstance(parsed, (list, dict)):
            value = parsed
    while True:
        if isinstance(value, dict):
            value = [list(value.values())]
        if not isinstance(value, (list, tuple)):
            return value
        value = [list(v.values()) if isinstance(v, dict) else v for v in value]
        if len(value) == 1 and not (isinstance(value[0], (list, tuple)) and len(value[0]) != 1):
            value = value[0]
            continue
        if value and all(isinstance(v, (list, tuple)) and len(v) == 1 for v in value):
            value = [v[0] for v in value]
            continue
        if any(isinstance(v, (list, tuple)) for v in value):  # a table: every row a list
            return [list(v) if isinstance(v, (list, tuple)) else [v] for v in value]
        return value


def _is_table(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, list) for v in value)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if _is_number(value):
        return _number_text(value)
    return str(value)


class _Ctx(msgspec.Struct, frozen=True):
    ordered: bool
    rel: float
    th: AnswerThresholds


_Decision = tuple[AnswerLabel | None, str]

# ---------------------------------------------------------------- shared content

# Function words carry no content: sharing only these is sharing nothing.
_STOPWORDS = frozenset(
    {"a", "an", "the", "and", "or", "but", "if", "then", "than", "so", "of", "in", "on", "at", "to", "for", "from", "by", "with",
     "about", "as", "into", "over", "after", "before", "between", "under", "is", "are", "was", "were", "be", "been", "being", "am",
     "do", "does", "did", "has", "have", "had", "it", "its", "itself", "this", "that", "these", "those", "there", "here", "which",
     "who", "whom", "whose", "what", "when", "where", "why", "how", "i", "me", "my", "we", "our", "you", "your", "he", "him",
     "his", "she", "her", "they", "them", "their", "not", "no", "yes", "all", "any", "some", "each", "both", "more", "most",
     "other", "such", "only", "own", "same", "very", "can", "will", "would", "should", "could", "may", "might", "must", "just",
     "also", "answer", "final", "result", "total", "value", "number", "one", "ones", "per", "s", "t", "i'm", "im", "it's",
     "的", "了", "是", "在", "和", "与", "及", "或", "也", "都", "就", "而", "其", "这", "那", "个", "之", "为", "以", "于", "把",
     "被", "对", "从", "向", "等", "吗", "呢", "吧", "啊", "我", "你", "他", "她", "它", "们", "有", "没", "不", "很", "答", "案"}
)  # fmt: skip
# Polar answer words, each family a word and its opposites written in one convention. A yes/no
# decision compares words of one family only: across families the conventions can differ (to
# "Isn't the Nile shorter?", "No" and "True" can both mean it is not; Chinese 是 / 对 confirm the
# question's framing, English "yes" asserts the proposition).
_POLAR_FAMILIES: tuple[tuple[frozenset[str], frozenset[str]], ...] = (
    (frozenset({"yes"}), frozenset({"no"})),
    (frozenset({"true"}), frozenset({"false"})),
    (frozenset({"correct"}), frozenset({"incorrect"})),
    (frozenset({"right"}), frozenset({"wrong"})),
    (frozenset({"是"}), frozenset({"否", "不是", "没有"})),
    (frozenset({"对"}), frozenset({"错", "不对"})),
)
_POLARITY: dict[str, tuple[int, bool]] = {  # word -> (family, positive)
    word: (family, positive)
    for family, pair in enumerate(_POLAR_FAMILIES)
    for positive, words in zip((True, False), pair, strict=True)
    for word in words
}  # fmt: skip
_POLAR = frozenset(_POLARITY)


def _english_digits(text: str) -> str:
    """English number words as digits ("twenty-one" -> "21"); other text unchanged."""
    from text_to_num import alpha2digit  # on first use: a run without such answers never imports it

    try:
        return str(alpha2digit(text, "en", threshold=0))
    except Exception:  # the converter is a third-party parser: never let it decide
        return text


def _chinese_digits(text: str) -> str:
    """Chinese numerals as digits ("十二" -> "12"); only for finding shared values, where a false
    conversion ("一起" -> "1起") can only keep a case open, never decide it."""
    if not any(is_cjk(ch) for ch in text):
        return text
    import cn2an  # heavy import (~80 ms): only for text with CJK characters

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return str(cn2an.transform(text, "cn2an"))
        except Exception:
            return text


def _scripts(text: str) -> set[str]:
    """Writing systems of the letters in ``text`` (LATIN, CJK, CYRILLIC, ...)."""
    out = set()
    for ch in text:
        if ch.isalpha():
            out.add("CJK" if is_cjk(ch) else unicodedata.name(ch, "OTHER").split(" ")[0])
    return out


def _stem(word: str) -> str:
    for suffix in ("ies", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def _content(text: str) -> tuple[list[str], list[str], list[tuple[float, ...]]]:
    """(all word tokens, content words, number readings) of a text, number words counted as numbers."""
    digits = _chinese_digits(_english_digits(text))
    toks = tokens(digits)
    words = [t for t in toks if t not in _STOPWORDS and not any(c.isdigit() for c in t)]
    return toks, words, [m.readings for m in _mentions(digits)]


def _initials(toks: list[str]) -> set[str]:
    """Acronyms a run of words can be written as ("united states" -> "us")."""
    words = [t for t in toks if t not in _STOPWORDS and t.isalpha()]
    return {"".join(w[0] for w in words[i:j]) for i in range(len(words)) for j in range(i + 2, min(len(words), i + 6) + 1)}


def _words_meet(a: str, b: str) -> bool:
    if a == b or _stem(a) == _stem(b):
        return True
    short, long = sorted((a, b), key=len)
    return len(short) >= 4 and long.startswith(short)  # Japan / Japanese, medal / medallist


def shares_content(gold: str, prediction: str, rel: float = 1e-6) -> bool | None:
    """Whether the prediction shares any content word or value with the gold; None when that cannot
    be told by words alone.

    None (so the case stays open for a judge) when either side has no content word and no value,
    when the two are written in different scripts (a translation can be right: 巴黎 / Paris), or
    when the gold is a yes/no answer (many words affirm). Values include numbers written as words
    (English, and Chinese numerals), words meet by stem or a shared prefix of four letters, and an
    acronym meets the words it abbreviates (US / United States).
    """
    gold_toks, gold_words, gold_values = _content(gold)
    pred_toks, pred_words, pred_values = _content(prediction)
    if not (gold_words or gold_values) or not (pred_words or pred_values):
        return None
    if all(t in _POLAR for t in gold_toks) or normalize_answer_text(gold) in _POLAR:
        return None
    gold_scripts, pred_scripts = _scripts(gold), _scripts(prediction)
    if gold_scripts and pred_scripts and not gold_scripts & pred_scripts:
        return None
    if any(_any_close(g, p, rel) for g in gold_values for p in pred_values):
        return True
    if any(_words_meet(g, p) for g in gold_words for p in pred_words):
        return True
    acronyms_gold, acronyms_pred = _initials(gold_toks), _initials(pred_toks)
    return any(w in acronyms_gold for w in pred_words) or any(w in acronyms_pred for w in gold_words)


_NO_SHARE = "the prediction shares no content word or value with the gold"


def _no_content(text: str) -> bool:
    _, words, values = _content(text)
    return not words and not values


# ---------------------------------------------------------------- scalar golds

_NEGATION_WORDS = frozenset(
    {"not", "no", "never", "neither", "nor", "cannot", "isnt", "arent", "wasnt", "werent", "dont", "doesnt",
     "didnt", "cant", "couldnt", "wont", "wouldnt", "shouldnt", "hasnt", "havent", "hadnt", "aint", "不", "没"}
)  # fmt: skip


# Offering alternatives ("Paris or Lyon") is not committing to the gold either.
_ALTERNATIVE_WORDS = frozenset({"or", "either", "或"})


def _negations(toks: list[str]) -> set[str]:
    """Cues that the prediction denies or hedges what it mentions: negations and alternatives."""
    return {t for t in toks if t in _NEGATION_WORDS or t in _ALTERNATIVE_WORDS}


def _contains_run(haystack: list[str], needle: list[str]) -> bool:
    n = len(needle)
    return n > 0 and any(haystack[i : i + n] == needle for i in range(len(haystack) - n + 1))


def _f1(gold: list[str], pred: list[str]) -> float:
    common = sum((Counter(gold) & Counter(pred)).values())
    if not common:
        return 0.0
    precision, recall = common / len(pred), common / len(gold)
    return 2 * precision * recall / (precision + recall)


_NUMBER_WORDS = re.compile(
    r"\b(?:zero|none|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|"
    r"sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|thousand|"
    r"million|billion|trillion|dozen|half|quarter|single|couple|pair|both|once|twice|thrice|no)\b|[零〇一二两三四五六七八九十百千万亿半]",
    re.IGNORECASE,
)


def _judge_numeric(readings: tuple[float, ...], gold: Any, pred: Any, ctx: _Ctx) -> _Decision:
    gold_text = _number_text(readings[0])
    if _is_number(pred):
        ok = _any_close(readings, (float(pred),), ctx.rel)
        return (AnswerLabel.CORRECT, "same number") if ok else (AnswerLabel.INCORRECT, f"{_text(pred)} is not {gold_text}")
    text = _text(pred)
    found = _mentions(text)
    if not found and _NUMBER_WORDS.search(text):
        text = _english_digits(text)  # "twenty-one" -> "21"
        found = _mentions(text)
        if not found or _NUMBER_WORDS.search(text):  # "a dozen", "twice", 三个: words no parser reads for certain
            return None, f"the prediction writes its number in words; gold is {gold_text}"
    if not found:
        if _ORDINAL_WORDS.search(text):
            return None, f"the prediction writes its number as an ordinal word; gold is {gold_text}"
        return AnswerLabel.INCORRECT, f"the prediction states no number; gold is {gold_text}"
    found = [_signed_by_word(text, m) for m in found]
    hits = [_any_close(readings, m.readings, ctx.rel) for m in found]
    if len(found) == 1 and not hits[0]:
        return AnswerLabel.INCORRECT, f"the prediction's only number {_number_text(found[0].value)} is not {gold_text}"
    if all(hits):
        why = _uncommitted(gold, text, found)
        if why is not None:
            return None, f"the prediction states the gold {gold_text} but {why}"
        if len(found) == 1:
            return AnswerLabel.CORRECT, "the prediction's only number equals the gold"
        return AnswerLabel.CORRECT, "every number in the prediction equals the gold"
    if any(hits):
        return None, f"the prediction has the gold {gold_text} among other numbers"
    return None, f"the prediction has several numbers, none equal to {gold_text}"


_ORDINAL_WORDS = re.compile(
    r"\b(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|\w+teenth|\w+tieth|hundredth|"
    r"thousandth|millionth)\b",
    re.IGNORECASE,
)
_MINUS_WORD = re.compile(r"\b(?:minus|negative)\s+$", re.IGNORECASE)


def _signed_by_word(text: str, m: _Mention) -> _Mention:
    """ "minus 42" / "negative 42" says -42."""
    if m.value <= 0 or not _MINUS_WORD.search(text, max(0, m.start - 12), m.start):
        return m
    return _Mention(-m.value, tuple(-r for r in m.readings), m.start, m.end)


# Words right before a number that make it a bound or an estimate, not the value: "over 42",
# "at least 42", "nearly 42", "~42".
_BOUND_BEFORE = re.compile(
    r"(?:(?:more|less|fewer|greater|higher|lower|larger|smaller|bigger|other)\s+than|at\s+(?:least|most)|up\s+to|"
    r"\b(?:over|under|above|below|nearly|almost|approximately|approx|roughly|around|about|circa|beyond|exceeding|exceeds)|"
    r"[<>≤≥≈~])\W{0,2}$",
    re.IGNORECASE,
)
# Words anywhere that leave a stated number uncommitted: uncertainty, and offering alternatives.
_UNCOMMITTED_WORDS = frozenset({"maybe", "perhaps", "probably", "possibly", "unsure", "uncertain", "unclear", "or", "either"})
_CURRENCY_NAMES: dict[str, frozenset[str]] = {
    "$": frozenset({"dollar", "usd", "us", "buck"}),
    "€": frozenset({"euro", "eur"}),
    "£": frozenset({"pound", "gbp", "sterling"}),
    "¥": frozenset({"yen", "yuan", "jpy", "cny", "rmb", "renminbi"}),
    "₹": frozenset({"rupee", "inr"}),
}
_PERCENT_WORDS = frozenset({"percent", "pct", "percentage"})
_AFTER_WORD = re.compile(r"[ \t\u00a0]?([^\W\d_]+)")
_SYMBOL = re.compile(r"[$€£¥₹]")


# Where a clause ends: punctuation (not a number's own "," or "."), or a contrasting conjunction.
_CLAUSE_BREAK = re.compile(r"[;:!?。，；：！？\n]|[,.](?!\d)|\b(?:but|however|although|though|whereas|yet)\b", re.IGNORECASE)


def _clause(text: str, start: int, end: int) -> tuple[int, int]:
    """The bounds of the clause holding ``text[start:end]``: "I don't know exactly, but it is 23"
    states 23 in a clause no negation touches; "it is not 23" does not."""
    begin = 0
    for before in _CLAUSE_BREAK.finditer(text, 0, start):
        begin = before.end()
    after = _CLAUSE_BREAK.search(text, end)
    return begin, after.start() if after else len(text)


def _unit(text: str, start: int, end: int) -> tuple[str | None, str | None]:
    """The currency symbol written with the number at ``text[start:end]``, and the unit word right
    after it (lower-cased and stemmed; percent as "%", a function word as none)."""
    number = text[start:end]
    symbol = _SYMBOL.search(number)
    if number.rstrip().endswith("%"):
        return (symbol.group() if symbol else None), "%"
    m = _AFTER_WORD.match(text, end)
    word = _stem(m.group(1).lower()) if m else None
    if word in _PERCENT_WORDS:
        word = "%"
    elif word in _STOPWORDS or word in _NEGATION_WORDS:
        word = None
    return (symbol.group() if symbol else None), word


def _units_differ(gold: tuple[str | None, str | None], pred: tuple[str | None, str | None]) -> bool:
    """Whether two numbers' units are told apart: different currency symbols, a currency against a
    word that does not name it, or two different unit words. A unit on one side only tells nothing."""
    (g_sym, g_word), (p_sym, p_word) = gold, pred
    if g_sym and p_sym:
        return g_sym != p_sym or (g_word is not None and p_word is not None and g_word != p_word)
    if g_sym and p_word:
        return p_word not in _CURRENCY_NAMES[g_sym]
    if p_sym and g_word:
        return g_word not in _CURRENCY_NAMES[p_sym]
    return g_word is not None and p_word is not None and g_word != p_word


def _uncommitted(gold: Any, text: str, found: list[_Mention]) -> str | None:
    """Why a prediction whose numbers equal the gold's still does not state the gold's value, or
    None: it asks a question, denies or hedges (a negation or alternative the gold does not have;
    "not 42", "42 or 43", "maybe 42"), gives a bound or an estimate ("more than 42", "nearly 42"),
    or writes another unit or currency than the gold ("5 miles" for "5 km", "5 cents" for "$5").
    Such an answer is left to a judge."""
    gold_text = gold if isinstance(gold, str) else ""
    gold_toks = set(tokens(gold_text))
    for m in found:
        start, end = _clause(text, m.start, m.end)
        if text[end : end + 1] in ("?", "？"):
            return "asks a question"
        toks = tokens(text[start:end])
        cues = (_negations(toks) | (set(toks) & _UNCOMMITTED_WORDS)) - gold_toks
        if cues:
            return f"also says {sorted(cues)[0]!r}"
        if _BOUND_BEFORE.search(text, max(start, m.start - 24), m.start):
            return "as a bound or an estimate"
    gold_found = _mentions(gold_text.strip()) if gold_text else []
    if len(gold_found) == 1:
        g = gold_found[0]
        gold_unit = _unit(gold_text.strip(), g.start, g.end)
        for m in found:
            if _units_differ(gold_unit, _unit(text, m.start, m.end)):
                return "in another unit or currency"
    return None


# ---------------------------------------------------------------- yes/no golds

_EMPHASIS = re.compile(r"[*_`\"“”]")  # markdown emphasis and quotes around an answer ("**No**, ...")
_LATIN_POLAR_WORDS = "|".join(sorted((w for w in _POLARITY if w.isascii()), key=len, reverse=True))
_CJK_POLAR_WORDS = "|".join(sorted((w for w in _POLARITY if not w.isascii()), key=len, reverse=True))
# A polar word commits when it leads the text and is followed by the end, punctuation (not the dot
# of "No. 5"), a spaced dash ("Yes - it is"), or a short echo of the question ("No it isn't").
_LATIN_POLAR_LEAD = re.compile(
    rf"^(?P<word>{_LATIN_POLAR_WORDS})(?:\s*(?:$|\.(?!\s*\d)|[,;:!…]|[–—]|-(?=\s|$))"
    r"|\s+(?=(?:it|he|she|they|that|this|there|i|we|you)\s+(?:is|was|are|were|am|do|does|did|has|have|had|can|could|will|would|shall|should|may|might|must)(?:n['’]?t|['’]t)?\b))",
    re.IGNORECASE,
)
_CJK_POLAR_LEAD = re.compile(rf"^(?P<word>{_CJK_POLAR_WORDS})(?:的|啊|呀|了)?\s*(?:$|[.,;:!…。，；：！、])")
# After the polar word, these make the answer ambiguous: hedges, conditions, contrasts, alternatives.
_HEDGE_WORDS = frozenset(
    {"maybe", "perhaps", "probably", "possibly", "likely", "unlikely", "unsure", "uncertain", "unclear", "depends", "depending",
     "sometimes", "partly", "partially", "somewhat", "arguably", "but", "however", "although", "though", "except", "unless",
     "if", "whereas", "or", "either"}
)  # fmt: skip
# In Chinese, polar words, negators and hedges are characters inside words: any of them after the
# answer's polar word leaves it open ("是的，它不是").
_CJK_HEDGES = re.compile(r"[是否对错不没非未或但若]|可能|也许|大概|或许|如果|除非|要是|可是")


class _PolarAnswer(msgspec.Struct, frozen=True):
    """The yes/no a text clearly commits to: its polar word, family and polarity, and whether the
    text says nothing more (``bare``)."""

    word: str
    family: int
    positive: bool
    bare: bool


def _polar_answer(text: str) -> _PolarAnswer | None:
    """The yes/no ``text`` clearly commits to, or None.

    It commits when a polar word leads it (framing phrases already stripped) followed by the end,
    punctuation or an echo of the question, and nothing after that word flips or hedges it: no
    question mark anywhere (a question back), no polar word of the opposite polarity ("No... yes"),
    no hedge, condition or contrast ("Yes, but only in winter"), no negation after a positive word
    ("Yes, it is not"), no negated polar word after a negative one ("No, it's not false").
    """
    body = _EMPHASIS.sub("", text).strip()
    if "?" in body or "？" in body:
        return None
    m = _LATIN_POLAR_LEAD.match(body) or _CJK_POLAR_LEAD.match(body)
    if m is None:
        return None
    word = m.group("word").lower()
    family, positive = _POLARITY[word]
    rest = body[m.end() :]
    toks = tokens(rest)
    if any(t in _HEDGE_WORDS for t in toks) or _CJK_HEDGES.search(rest):
        return None
    if any(_POLARITY[t][1] is not positive for t in toks if t in _POLARITY):
        return None
    if any(t in _NEGATION_WORDS for t in toks) and (positive or any(t in _POLARITY and t not in _NEGATION_WORDS for t in toks)):
        return None
    return _PolarAnswer(word, family, positive, bare=not toks)


def _judge_polar(gold: _PolarAnswer, pred: str, same_text: bool) -> _Decision:
    """A gold that is only a yes/no word: decided by the yes/no the prediction commits to, never by
    the polar word merely occurring ("No doubt it is the Nile" answers neither yes nor no)."""
    if "?" in pred or "？" in pred:
        return None, f"a polar (yes/no) gold ({gold.word!r}): the prediction asks a question"
    if same_text:
        return AnswerLabel.CORRECT, "normalised exact match"
    answer = _polar_answer(pred)
    if answer is None:
        return None, f"a polar (yes/no) gold ({gold.word!r}): the prediction does not clearly answer yes or no"
    if answer.family != gold.family:
        return None, f"a polar (yes/no) gold ({gold.word!r}): the prediction answers {answer.word!r}, a polar word of another convention"
    if answer.positive is gold.positive:
        return AnswerLabel.CORRECT, f"a polar (yes/no) gold: the prediction clearly answers {answer.word!r}, as the gold does"
    return AnswerLabel.INCORRECT, f"a polar (yes/no) gold: the prediction clearly answers {answer.word!r}, the opposite of the gold's {gold.word!r}"


# ---------------------------------------------------------------- several candidates

# Words that open a sentence without naming anything ("Sure, Paris"): never a candidate.
_DISCOURSE_WORDS = frozenset(
    {"sure", "well", "however", "indeed", "certainly", "actually", "okay", "ok", "so", "thus", "hence", "therefore", "alright",
     "absolutely", "definitely", "basically", "honestly", "unfortunately", "fortunately", "interestingly", "note", "additionally",
     "finally", "firstly", "secondly", "then", "now", "overall", "anyway", "again", "instead", "still", "yet", "otherwise", "sorry",
     "great", "hello", "hi", "thanks", "historically", "originally", "currently", "today", "traditionally", "officially",
     "technically", "generally", "typically", "usually", "initially", "ultimately", "eventually", "recently", "previously",
     "formerly", "later", "earlier", "yesterday", "meanwhile", "besides", "furthermore", "moreover", "specifically"}
)  # fmt: skip
# Lower-case particles inside names ("Rio de Janeiro", "Ludwig van Beethoven").
_NAME_PARTICLES = frozenset({"de", "da", "do", "dos", "das", "del", "della", "di", "du", "la", "le", "van", "von", "der", "den", "y", "bin", "al", "el"})
# Lower-case words a name may hold besides particles ("Bank of America", "Tower of the Winds").
_NAME_LOWER = _NAME_PARTICLES | {"of", "the", "and", "a", "an", "for", "on", "at", "upon"}
_EDGE_PUNCT = re.compile(r"^[^\w]+|[^\w]+$")


def _words_of(text: str) -> list[str]:
    return [w for w in (_EDGE_PUNCT.sub("", w) for w in text.split()) if w]


def _is_name(words: list[str]) -> bool:
    """Every word capitalised but a few connecting words ("Bank of America", "Rio de Janeiro"), and
    at least one capitalised word that is no function word ("The Hague", not "The")."""
    if not all(w[0].isupper() or w.lower() in _NAME_LOWER for w in words):
        return False
    return any(w[0].isupper() and w.lower() not in _STOPWORDS for w in words)


def _answer_kind(text: str) -> str:
    """The gold's kind, for telling competing candidates: ``code`` (holds digits), ``cjk``,
    ``name`` (every content word capitalised), else ``words``."""
    if any(c.isdigit() for c in text):
        return "code"
    if any(is_cjk(c) for c in text):
        return "cjk"
    return "name" if _is_name(_words_of(text)) else "words"


def _leading_name(item: str) -> str:
    """The capitalised run that opens ``item`` ("Lyon" in "Lyon is larger"), name particles allowed
    inside, ending at a comma-like mark (not at an abbreviation's dot: "Dr. Jane Doe")."""
    run: list[str] = []
    for raw in item.split():
        word = _EDGE_PUNCT.sub("", raw)
        if not ((word and word[0].isupper()) or (run and word.lower() in _NAME_PARTICLES)):
            break
        run.append(word)
        if raw.endswith((",", ";", ":", "!", "?", ")")):
            break
    while run and run[-1].lower() in _NAME_PARTICLES:
        run.pop()
    return " ".join(run)


def _other_candidates(gold: str, pred: str, th: AnswerThresholds) -> list[str]:
    """Items the prediction lists besides the gold that are of the gold's kind (see the module doc).

    The prediction is split like a list (commas, semicolons, "and", new lines, bullets). An item is
    another candidate when it names something else than the gold (a content word the gold lacks)
    and has the gold's shape: for a ``name`` gold, an item that is a short name ("Lyon", "Joe
    Biden"), or, when the gold itself stands as an item, one that opens with a name ("Paris and
    Lyon are both ..."); for a ``code`` gold, a short item with digits that is no plain number; for
    ``cjk`` and ``words`` golds, a short item of content words only (at most one token longer than
    the gold). Items in another script (a translation) or of another type (a number for a name)
    are not candidates.
    """
    kind = _answer_kind(gold)
    gold_toks = set(tokens(gold))
    items = _split_list(pred)
    limit = min(len(gold_toks) + 1, th.short_answer_tokens)
    gold_is_item = kind == "name" and any(set(tokens(item)) == gold_toks or set(tokens(_leading_name(item))) == gold_toks for item in items)
    found: list[str] = []
    for item in items:
        if kind == "name":
            whole = _is_name(_words_of(item)) and len(tokens(item)) <= th.short_answer_tokens and _text_only(item)
            candidate = item if whole else (_leading_name(item) if gold_is_item else "")
            if any(is_cjk(c) for c in candidate):
                continue
        elif kind == "code":
            candidate = item if any(c.isdigit() for c in item) and _as_number(item) is None else ""
        elif kind == "cjk":
            candidate = item if any(is_cjk(c) for c in item) else ""
        else:
            candidate = item if _text_only(item) and not any(is_cjk(c) for c in item) else ""
        toks = tokens(candidate)
        content = [t for t in toks if t not in _STOPWORDS and t not in _DISCOURSE_WORDS and t not in _POLAR]
        if not content or all(t in gold_toks for t in content):
            continue
        if kind != "name" and (len(content) != len(toks) or len(toks) > limit):
            continue
        found.append(candidate)
    return found


def _no_other_candidates(gold: str, pred: str, ctx: _Ctx, reason: str) -> _Decision:
    """``correct`` for ``reason``, unless the prediction lists other candidates of the gold's kind:
    naming several is not answering, even when the gold is among them (a judge decides)."""
    others = _other_candidates(gold, pred, ctx.th)
    if others:
        return None, f"the prediction lists several candidates of the gold's kind: the gold and {others[:3]!r}"[:300]
    return AnswerLabel.CORRECT, reason


def _reordered(gold_toks: list[str], pred_toks: list[str]) -> bool:
    """Whether the words the two share come in another order: "Bob defeated Alice" has every word
    of "Alice defeated Bob", and says the opposite."""
    shared = set(gold_toks) & set(pred_toks)
    gold_seq, pred_seq = [t for t in gold_toks if t in shared], [t for t in pred_toks if t in shared]
    return not (_subsequence(gold_seq, pred_seq) or _subsequence(pred_seq, gold_seq))


def _subsequence(short: list[str], long: list[str]) -> bool:
    rest = iter(long)
    return all(t in rest for t in short)


def _inverted_name(gold_toks: list[str], pred: str) -> bool:
    """A name written surname first around one comma ("Obama, Barack" for "Barack Obama")."""
    head, comma, tail = strip_lead_in(pred).partition(",")
    return bool(comma) and "," not in tail and tokens(tail) + tokens(head) == gold_toks


def _judge_text(gold: str, pred: str, ctx: _Ctx) -> _Decision:
    norm_gold, norm_pred = normalize_answer_text(gold), normalize_answer_text(pred)
    if not norm_gold:  # gold is only punctuation: nothing to normalise
        same = gold.strip().casefold() == pred.strip().casefold()
        return (AnswerLabel.CORRECT, "exact match") if same else (None, "gold has no words to compare")
    polar = _polar_answer(gold)
    if polar is not None and polar.bare:
        return _judge_polar(polar, pred, norm_gold == norm_pred)
    if norm_gold == norm_pred:
        return AnswerLabel.CORRECT, "normalised exact match"
    if polar is not None:  # the gold leads with a yes/no and says more: the opposite yes/no is wrong
        answer = _polar_answer(pred)
        if answer is not None and answer.family == polar.family and answer.positive is not polar.positive:
            return AnswerLabel.INCORRECT, f"the prediction clearly answers {answer.word!r}, the opposite of the gold's {polar.word!r}"
    gold_toks, pred_toks = tokens(gold), tokens(pred)
    negated = bool(_negations(pred_toks) - _negations(gold_toks))
    if _contains_run(pred_toks, gold_toks) and not negated:
        return _no_other_candidates(gold, pred, ctx, "the gold appears word for word in the prediction")
    similarity = _f1(gold_toks, pred_toks)
    if similarity >= ctx.th.accept_similarity and not negated:
        if _reordered(gold_toks, pred_toks) and not _inverted_name(gold_toks, pred):
            return None, f"token F1 {similarity:.2f}, but the shared words stand in another order (who did what to whom may differ)"
        return _no_other_candidates(gold, pred, ctx, f"token F1 {similarity:.2f} >= {ctx.th.accept_similarity}")
    reject = ctx.th.reject_similarity
    if reject is not None and len(pred_toks) <= ctx.th.short_answer_tokens and similarity <= reject:
        return AnswerLabel.INCORRECT, f"short prediction, token F1 {similarity:.2f} <= {reject}"
    if shares_content(gold, pred, ctx.rel) is False:
        return AnswerLabel.INCORRECT, _NO_SHARE
    why = "negation or alternatives in the prediction" if negated else f"token F1 {similarity:.2f}"
    return None, f"text differs from the gold ({why})"


def _text_only(text: str) -> bool:
    return not any(c.isdigit() for c in text) and any(c.isalpha() for c in text)


def _judge_scalar(gold: Any, pred: Any, ctx: _Ctx) -> _Decision:
    if _is_table(pred):
        return None, "a table for a single-value gold"
    if isinstance(pred, list):
        # several values for one gold: decisive only when every value agrees on the verdict
        labels = [_judge_scalar(gold, p, ctx)[0] for p in pred]
        if labels and all(label is AnswerLabel.CORRECT for label in labels):
            return AnswerLabel.CORRECT, "every listed value equals the gold"
        if labels and all(label is AnswerLabel.INCORRECT for label in labels):
            return AnswerLabel.INCORRECT, "no listed value equals the gold"
        if AnswerLabel.CORRECT in labels:  # several candidates are not an answer, the gold among them or not
            return None, "a list of values for a single-value gold: the gold among other values"
        return None, "a list of values for a single-value gold"
    readings = _as_number(gold)
    if readings is None and isinstance(gold, str) and _NUMBER_WORDS.search(gold):
        readings = _as_number(_english_digits(gold))  # a gold written in words ("twenty-one") is a number
    if readings is not None:
        return _judge_numeric(readings, gold, pred, ctx)
    gold_text = _text(gold)
    bare = _as_number(pred)
    if bare is not None and bare[0] in (0.0, 1.0) and (polar := _polar_answer(gold_text)) is not None and polar.bare:
        return None, f"a polar (yes/no) gold ({polar.word!r}): a bare {_number_text(bare[0])} may stand for yes or no"
    if bare is not None and _text_only(gold_text) and not any(_any_close(values, bare, ctx.rel) for values in _content(gold_text)[2]):
        return AnswerLabel.INCORRECT, f"a bare number for a gold that is text ({gold_text!r})"  # unless it says the number: "team of three"
    return _judge_text(gold_text, _text(pred), ctx)


# ---------------------------------------------------------------- list and table golds

_LIST_SPLIT = re.compile(r"\s*(?:(?<!\d),|,(?!\d{3}(?!\d))|[;，；、\n])\s*(?:and\s+|&\s+)?|\s+(?:and|&)\s+", re.IGNORECASE)
_BULLET = re.compile(r"^(?:[-*•]|\d+[.)])\s+")


def _split_list(text: str) -> list[str]:
    body = text.strip()
    if body.count(":") == 1 and body.split(":", 1)[1].strip():
        body = body.split(":", 1)[1]
    body = body.strip().rstrip(".。")
    return [e for e in (_BULLET.sub("", part).strip() for part in _LIST_SPLIT.split(body)) if e]


def _cells_equal(gold: Any, pred: Any, rel: float) -> bool:
    g, p = _as_number(gold), _as_number(pred)
    if g is not None and p is not None:
        return _any_close(g, p, rel)
    ng, np_ = normalize_answer_text(_text(gold)), normalize_answer_text(_text(pred))
    return ng == np_ if (ng or np_) else _text(gold).strip() == _text(pred).strip()


def _set_cover(gold: list, pred: list, equal) -> tuple[list, list]:
    """(gold items no prediction equals, predicted items no gold equals): set semantics."""
    lost = [g for g in gold if not any(equal(g, p) for p in pred)]
    extra = [p for p in pred if not any(equal(g, p) for g in gold)]
    return lost, extra


def _judge_list(gold: list, pred: Any, ctx: _Ctx) -> _Decision:
    if _is_table(pred):
        return None, "a table for a list gold"
    structured = isinstance(pred, list)
    items = pred if structured else ([pred] if _is_number(pred) else _split_list(_text(pred)))
    equal = lambda g, p: _cells_equal(g, p, ctx.rel)  # noqa: E731
    if ctx.ordered:
        same = len(items) == len(gold) and all(equal(g, p) for g, p in zip(gold, items, strict=False))
        lost, extra = ([], []) if same else _set_cover(gold, items, equal)
        if same:
            return AnswerLabel.CORRECT, "same items in the same order"
    else:
        lost, extra = _set_cover(gold, items, equal)
        if not lost and not extra:
            return AnswerLabel.CORRECT, "same set of items"
    if not structured:
        gold_runs = [tokens(_text(g)) for g in gold]
        for item in extra:
            toks = tokens(_text(item))
            if len(toks) > ctx.th.short_answer_tokens or any(_contains_run(toks, run) for run in gold_runs):
                if all(shares_content(_text(g), _text(pred), ctx.rel) is False for g in gold):
                    return AnswerLabel.INCORRECT, _NO_SHARE
                return None, f"cannot read the prediction as a clean list (item {item!r})"
    detail = f"missing {lost!r}, unexpected {extra!r}" if (lost or extra) else "items in a different order"
    return AnswerLabel.INCORRECT, f"list differs: {detail}"[:300]


def _judge_table(gold: list[list], pred: Any, ctx: _Ctx) -> _Decision:
    if not _is_table(pred):
        if len(gold) == 1:  # one row: its cells are the parts of the answer
            return _judge_list(gold[0], pred, ctx)
        if all(shares_content(_text(cell), _text(pred), ctx.rel) is False for row in gold for cell in row):
            return AnswerLabel.INCORRECT, _NO_SHARE
        return None, "the prediction is not a table (list of rows)"

    def rows_equal(g: list, p: list) -> bool:
        return len(g) == len(p) and all(_cells_equal(x, y, ctx.rel) for x, y in zip(g, p, strict=True))

    if len(gold) != len(pred):
        return AnswerLabel.INCORRECT, f"table has {len(pred)} rows, gold has {len(gold)}"
    if ctx.ordered:
        bad = [i for i, (g, p) in enumerate(zip(gold, pred, strict=True)) if not rows_equal(g, p)]
        if not bad:
            return AnswerLabel.CORRECT, "same rows in the same order, all columns"
        return AnswerLabel.INCORRECT, f"row {bad[0]} differs: expected {gold[bad[0]]!r}, got {pred[bad[0]]!r}"[:300]
    import numpy as np  # with scipy, on first use (a run without unordered comparisons loads neither)
    from scipy.optimize import linear_sum_assignment  # on first use: importing scipy.optimize costs ~50 MB of RSS

    equal = np.array([[rows_equal(g, p) for p in pred] for g in gold], dtype=float)
    rows, cols = linear_sum_assignment(-equal)
    matched = int(equal[rows, cols].sum())
    if matched == len(gold):
        return AnswerLabel.CORRECT, "same multiset of rows, all columns"
    unmatched = [gold[r] for r, c in zip(rows, cols, strict=True) if equal[r, c] == 0.0]
    return AnswerLabel.INCORRECT, f"{len(gold) - matched} gold rows not in the prediction, e.g. {unmatched[0]!r}"[:300]


def _judge(gold: Any, pred: Any, ctx: _Ctx) -> _Decision:
    if _is_table(gold):
        return _judge_table(gold, pred, ctx)
    if isinstance(gold, list):
        return _judge_list(gold, pred, ctx)
    return _judge_scalar(gold, pred, ctx)


_LEAD_IN = re.compile(
    r"^\s*(?:(?:so|thus|therefore|hence)[,\s]+)?(?:the\s+(?:final\s+)?answer\s+is|(?:final\s+)?answer\s*[:：]|"
    r"it\s+is|it's|it\s+was|that\s+is|that's|this\s+is|答案是|答案[:：])\s*[:：]?\s*",
    re.IGNORECASE,
)


def strip_lead_in(text: str) -> str:
    """Drop a framing phrase ("The answer is", "It's", "Answer:", 答案是) and a final full stop,
    so "It's The Broken Canyon." is read as the item it names. Negations stay ("It's not X")."""
    body = _LEAD_IN.sub("", text, count=1).strip()
    if body.endswith((".", "。")):  # a sentence's full stop; a decimal never ends with one
        body = body[:-1].rstrip()
    return body or text


def compare_answer(
    gold_answers: list,
    prediction: Any,
    *,
    ordered: bool = False,
    tolerance: float | None = None,
    thresholds: AnswerThresholds = AnswerThresholds(),
) -> AnswerMatch:
    """Grade ``prediction`` against alternative gold answers: correct, incorrect, missing or None.

    The first alternative that decides ``correct`` wins; ``incorrect`` needs every alternative to
    decide ``incorrect``; anything else is inconclusive (``label=None``) with the reasons.
    ``tolerance`` is relative (the turn's ``answer_tolerance``); it overrides the threshold's.
    """
    if not gold_answers:
        raise ValueError("compare_answer needs at least one gold answer")
    if is_missing(prediction) and not any(is_missing(g) for g in gold_answers):
        return AnswerMatch(AnswerLabel.MISSING, "the prediction gives no answer")
    rel = tolerance if tolerance is not None else thresholds.numeric_relative_tolerance
    ctx = _Ctx(ordered=ordered, rel=rel, th=thresholds)
    match = _compare(gold_answers, prediction, ctx)
    scan = strip_instructions(prediction) if isinstance(prediction, str) else None
    if scan is None or not scan.flagged:
        return match
    # instruction-like text addressed to the grader: what the answer says without it decides
    if match.label is None:
        if _no_content(scan.text):
            match = AnswerMatch(AnswerLabel.INCORRECT, "the answer is only instruction-like text addressed to the grader")
        else:
            without = _compare(gold_answers, scan.text, ctx)
            if without.label is not None:
                match = AnswerMatch(without.label, f"{without.reason} (once the instruction-like text is set aside)", without.gold_index)
    return AnswerMatch(match.label, match.reason, match.gold_index, scan.removed)


def _compare(gold_answers: list, prediction: Any, ctx: _Ctx) -> AnswerMatch:
    pred = _prepare(strip_lead_in(prediction) if isinstance(prediction, str) else prediction)
    decisions: list[_Decision] = []
    for index, gold in enumerate(gold_answers):
        label, reason = _judge(_prepare(gold), pred, ctx)
        if label is AnswerLabel.CORRECT:
            return AnswerMatch(label, reason, index)
        decisions.append((label, reason))
    reasons = decisions[0][1] if len(decisions) == 1 else "; ".join(f"gold {i}: {r}" for i, (_, r) in enumerate(decisions))
    if all(label is AnswerLabel.INCORRECT for label, _ in decisions):
        return AnswerMatch(AnswerLabel.INCORRECT, reasons)
    return AnswerMatch(None, reasons)


# ---------------------------------------------------------------- grounding


_LEAF_SEP = "\ue002"  # a private-use character: separates leaves in a Haystack's token line


class Haystack:
    """A value searched many times by ``value_in_text`` (a turn's tool outputs), prepared once.

    Its scalar leaves are walked once; on the first string look-up every leaf is tokenised into
    one line (ASCII leaves in a single C-speed pass), leaves separated by a token no needle
    holds; on the first number look-up every leaf's number readings are collected (string leaves
    scanned as one text). So asking for the gold and for every number of an answer costs one
    pass over KBs of tool output, not one per question.
    """

    __slots__ = ("_asked", "_inf", "_leaves", "_line", "_nan", "_numbers", "_readings", "_sorted", "_text", "_texts")

    def __init__(self, text: Any):
        self._text = text
        self._leaves: list[Any] | None = None  # walked on the first look-up (often none is needed)
        self._line: str | None = None
        self._readings: list[tuple[float, ...]] | None = None
        self._sorted: list[float] | None = None  # the finite readings, sorted (``has_close``)
        self._asked = False  # ``has_close`` was asked before

    @property
    def leaves(self) -> list[Any]:
        if self._leaves is None:
            self._leaves = _walk_leaves(self._text)
            self._texts: list[str] = []  # leaves that are not numbers, as text (None leaves left out)
            self._numbers: list[int | float] = []
            for leaf in self._leaves:
                kind = type(leaf)
                if kind is str:
                    self._texts.append(leaf)
                elif kind is int or kind is float or _is_number(leaf):
                    self._numbers.append(leaf)
                elif leaf is not None:
                    self._texts.append(_text(leaf))
        return self._leaves

    def line(self) -> str:
        """Each leaf's tokens joined by single spaces, leaves joined by the separator token, padded
        with one space at each end: a run of tokens (none of them the separator) occurs inside one
        leaf iff its padded form is a substring of this line (tokens hold no whitespace)."""
        if self._line is None:
            self.leaves  # noqa: B018  (walks the value once)
            sep = f" {_LEAF_SEP} "
            texts = self._texts + [_number_text(n) for n in self._numbers]
            ascii_part = normalize_ascii(sep.join(t for t in texts if t.isascii()))
            others = [" ".join(tokens(t)) for t in texts if not t.isascii()]
            self._line = " " + sep.join([ascii_part, *others]) + " "
        return self._line

    def readings(self) -> list[tuple[float, ...]]:
        """Every number reading of every leaf. String leaves are scanned as one text joined by the
        separator, which the number pattern treats like the start / end of a string (it is no word
        character, digit, sign, dot, space or percent sign), so no mention spans two leaves."""
        if self._readings is None:
            self.leaves  # noqa: B018  (walks the value once)
            found: list[tuple[float, ...]] = [(float(n),) for n in self._numbers]
            found.extend(map(_readings, _mention_matches(_LEAF_SEP.join(self._texts))))
            self._readings = found
        return self._readings

    def has_close(self, needle: tuple[float, ...], rel: float) -> bool:
        """``any(_any_close(needle, r, rel) for r in self.readings())``, by bisection in the sorted
        readings: a number asked of a long conversation's outputs is compared with its neighbours
        only. ``isclose(x, y)`` implies ``|x - y| <= rel * |x| / (1 - rel)``, so every candidate lies
        in that window (widened for rounding) and is confirmed with the same ``_close``. The first
        question scans (most haystacks are asked once); the second sorts."""
        if not self._asked:  # the first question scans
            self._asked = True
            return any(_any_close(needle, r, rel) for r in self.readings())
        if not 0.0 <= rel < 0.5:
            return any(_any_close(needle, r, rel) for r in self.readings())
        if self._sorted is None:
            flat = [y for r in self.readings() for y in r]
            self._nan = any(math.isnan(y) for y in flat)
            self._inf = {y for y in flat if math.isinf(y)}
            self._sorted = sorted(y for y in flat if math.isfinite(y))
        values = self._sorted
        for x in needle:
            if math.isnan(x):
                if self._nan:
                    return True
            elif math.isinf(x):
                if x in self._inf:
                    return True
            else:
                width = abs(x) * rel / (1.0 - rel) * (1.0 + 1e-9) + 4.0 * math.ulp(x)
                i, top = bisect_left(values, x - width), x + width
                while i < len(values) and values[i] <= top:
                    if _close(x, values[i], rel):
                        return True
                    i += 1
        return False


class HaystackParts:
    """Several haystacks searched as one (``Haystack(outputs)`` for the ``outputs`` they hold, one
    part per output), so a part prepared once serves every later search that includes it: the
    grounding of each turn of a conversation reuses the earlier turns' prepared tool outputs.

    Equivalent because every rule of ``value_in_text`` is per leaf: a string is a run inside one
    leaf, a number a reading of one leaf, a list or dict needs each element somewhere (each
    element is looked for across all parts)."""

    __slots__ = ("parts",)

    def __init__(self, parts: list[Haystack]):
        self.parts = parts


def _leaf_test(value: Any, relative_tolerance: float) -> Callable[[Haystack], bool]:
    """The test ``value_in_text`` applies to one haystack for a parsed scalar ``value`` (not None)."""
    readings = _as_number(value)
    if readings is not None:
        return lambda hay: hay.has_close(readings, relative_tolerance)
    needle = tokens(_text(value))
    if not needle:
        return lambda hay: False
    if _LEAF_SEP in needle:  # cannot be told from a leaf boundary: compare leaf by leaf
        return lambda hay: any(_contains_run(tokens(_text(leaf)), needle) for leaf in hay.leaves if leaf is not None)
    run = " " + " ".join(needle) + " "
    return lambda hay: run in hay.line()


def value_in_text(value: Any, text: Any, *, relative_tolerance: float = 1e-6) -> bool:
    """Does ``value`` appear in ``text`` (a tool output: JSON value, JSON text or plain text)?

    Numbers are looked for among the numbers in the text (with tolerance, any percent/scale
    reading); strings as normalised whole-word runs inside one string of the output; lists and
    dicts need every element/value to appear. An empty value is never evidence: False.
    Pass a ``Haystack`` (or ``HaystackParts``) as ``text`` to search the same text for several values.
    """
    value = parse_json_text(value)
    hay = text if isinstance(text, (Haystack, HaystackParts)) else Haystack(text)
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return bool(value) and all(value_in_text(v, hay, relative_tolerance=relative_tolerance) for v in value)
    if value is None:
        return False
    test = _leaf_test(value, relative_tolerance)
    return any(map(test, hay.parts)) if isinstance(hay, HaystackParts) else test(hay)


def value_finder(value: Any, *, relative_tolerance: float = 1e-6) -> Callable[[Haystack], bool]:
    """``value_in_text(value, hay)`` as a test of many haystacks, with ``value`` read once (its JSON
    text parsed, its number readings or its tokens found once, not once per haystack): a required
    item is asked of every agent message."""
    parsed = parse_json_text(value)
    if isinstance(parsed, (dict, list, tuple)):
        return lambda hay: value_in_text(value, hay, relative_tolerance=relative_tolerance)  # each element is read per haystack as before
    if parsed is None:
        return lambda hay: False
    return _leaf_test(parsed, relative_tolerance)
