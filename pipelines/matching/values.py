"""Argument-value comparison: is the agent's value one the reference accepts, as the tool sees it?

Rules (see ``compare_argument``): acceptable values are the reference literal plus
``ArgumentRule.any_of`` and, with ``ArgumentRule.pattern``, any value whose text the pattern fully
matches (RE2); numbers compare by value (3 == 3.0, never True == 1) with optional tolerances;
strings BFCL-normalised (NFKC first; decimal points and minus signs kept) unless exact; ISO dates as dates; lists ordered unless the rule or schema
says unordered (then as multisets, by optimal assignment); objects key by key, where keys the
reference does not mention are ignored when extra keys are allowed (``extra_arguments="allow"``).

Keys the tool cannot see: a nested object's schema that declares its properties and marks
undeclared keys ignored (``"x-extra-keys": "ignore"``: pydantic argument models, tau2's tools) drops
a key it does not declare, as the tool does. Where no schema says whether the tool reads a key
(no properties, no ``additionalProperties``), ``undeclared_keys=True`` lets the comparison go on
and report such keys (``ValueMatch.undeclared``) instead of failing on them: the caller decides
(under outcome grading a write then matches only "modulo undeclared keys": inconclusive). A
schema's ``anyOf`` / ``oneOf`` reads an object by its first branch that declares properties.

Schemas converted from BFCL (they carry ``x-bfcl-type``) follow BFCL's checker: an int stands for
a ``float`` only at the argument's top level (BFCL converts it there; an int item of a float list
is its nested type error), an int never stands for a BFCL ``integer``'s float, and strings compare
by BFCL's standardised text only (no date reading).

A parameter of BFCL's Java and JavaScript categories (its schema carries ``x-bfcl-language``) takes
the language's source text: the agent's string is first read as BFCL reads a literal of the declared
type (``pipelines.matching.literals``; a value that is not a string fails as BFCL's type error), and
the value read is compared with the reference under the schema of that value.

Invariant: ``values_equal(a, b) == values_equal(b, a)``. The type check is symmetric too: a value
passes it when it fits the schema type *or* has the same JSON type as the other side (BFCL's
"variable" rule: a reference may hold a string where the schema says integer).
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from datetime import datetime
from typing import Any, Final

import msgspec

from judge import ArgumentRule, pattern_full_match
from pipelines.matching.literals import read_literal, value_schema
from pipelines.matching.normalize import bfcl_normalize

__all__ = ["MISSING", "ValueMatch", "compare_argument", "identical", "values_equal"]


class _Missing:
    """Sentinel for 'argument not given' (distinct from an explicit ``None``/null)."""

    _instance: _Missing | None = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing()


class ValueMatch(msgspec.Struct, frozen=True):
    ok: bool
    reason: str = ""  # for a mismatch: short human text naming the path inside nested values
    undeclared: tuple[str, ...] = ()  # with undeclared_keys: paths of keys no schema declares, left out of the comparison


_SAME: Final = ValueMatch(True)  # frozen: one shared result for every identical pair


class _Opts(msgspec.Struct, frozen=True):
    tolerance: float | None = None
    relative_tolerance: float | None = None
    unordered: bool | None = None  # applies to the top-level list only; nested lists follow their schema
    exact: bool = False
    extra_keys: bool = False  # keys of the agent's objects that the reference does not mention are ignored
    depth: int = 0  # 0: the argument itself; nested values are deeper
    array_item: bool = False  # a direct item of the argument's top-level list (BFCL's nested type check)
    undeclared: list[str] | None = None  # collects keys no schema declares (None: such a key is a difference)
    reference_first: bool = False  # the first value is the reference: BFCL's nested type rule applies to the second (the agent's) only

    def nested(self, *, array_item: bool = False) -> _Opts:
        """Options for values inside a list or object: ``unordered`` applies to the top level only."""
        return _Opts(
            self.tolerance, self.relative_tolerance, None, self.exact, self.extra_keys, self.depth + 1, array_item, self.undeclared, self.reference_first
        )

    def collecting(self, into: list[str] | None) -> _Opts:
        """The same options collecting undeclared keys into ``into`` (one trial comparison's own list)."""
        return _Opts(
            self.tolerance, self.relative_tolerance, self.unordered, self.exact, self.extra_keys, self.depth, self.array_item, into, self.reference_first
        )


class _Diff(msgspec.Struct, frozen=True):
    """Why two values differ, at ``path`` (relative to the argument: ``[1].value``)."""

    path: str
    expected: str
    got: str
    why: str = ""

    def render(self, alternatives: int = 0) -> str:
        alt = f" (or {alternatives} alternative{'s' if alternatives != 1 else ''})" if alternatives else ""
        where = f"{self.path}: " if self.path else ""
        why = f" ({self.why})" if self.why else ""
        return f"{where}expected {self.expected}{alt}, got {self.got}{why}"


_EXACT_FORMATS = frozenset({"uri", "uuid", "email"})
_DATE_FORMATS = frozenset({"date", "date-time"})
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?$")


def _show(value: Any, limit: int = 60) -> str:
    text = repr(list(value) if isinstance(value, tuple) else value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---------------------------------------------------------------- JSON types and the schema


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


# BFCL's own type names, for specs that were not converted to JSON Schema; "any" constrains nothing.
_TYPE_ALIASES = {"dict": "object", "float": "number", "tuple": "array", "list": "array", "any": None}


def _declared_types(schema: dict | None) -> set[str]:
    if not schema:
        return set()
    declared = schema.get("type")
    names = [declared] if isinstance(declared, str) else declared if isinstance(declared, list) else []
    types = {_TYPE_ALIASES.get(t, t) for t in names if isinstance(t, str)}
    return set() if None in types else {t for t in types if t is not None}  # "any" constrains nothing


def _fits(value: Any, schema: dict | None, array_item: bool = False) -> bool:
    """Does ``value`` have a JSON type the schema allows? No declared type: anything fits."""
    declared = _declared_types(schema)
    if not declared:
        return True
    kind = _kind(value)
    if kind in declared:
        return True
    if kind == "integer" and "number" in declared:
        # JSON Schema's integers are numbers; BFCL converts an int to float only at the top level
        return not (array_item and (schema or {}).get("x-bfcl-type") == "float")
    if kind == "number" and "integer" in declared:
        # JSON Schema counts 3.0 as an integer; BFCL's Python checker does not.
        strict = (schema or {}).get("x-bfcl-type") == "integer"
        return not strict and math.isfinite(value) and value == int(value)
    return False


def _type_diff(a: Any, b: Any, schema: dict | None, path: str, array_item: bool = False, reference_first: bool = False) -> _Diff | None:
    """``reference_first``: ``a`` is the reference, whose int items of a float list stand for
    themselves (BFCL type-checks the model's value only: ``[60, 30]`` accepts ``[60.0, 30.0]``)."""
    if _kind(a) == _kind(b):
        return None
    want = "/".join(sorted(_declared_types(schema)))
    for value, item in ((b, array_item), (a, array_item and not reference_first)):
        if not _fits(value, schema, item):
            return _Diff(path, _show(a), _show(b), f"type: the schema wants {want}, not {_kind(value)} {_show(value, 30)}")
    return None


# ---------------------------------------------------------------- scalars


def _numbers_equal(a: float, b: float, opts: _Opts) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if opts.tolerance is None and opts.relative_tolerance is None:
        return a == b
    return math.isclose(a, b, rel_tol=opts.relative_tolerance or 0.0, abs_tol=opts.tolerance or 0.0)


def _float_noise(a: float, b: float) -> bool:
    """Two floats a rounding error apart (0.1 + 0.2 against 0.3): the same number to a tool; BFCL's
    checker compares exactly, so its tasks do not take this."""
    return isinstance(a, float) and isinstance(b, float) and math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class _When(msgspec.Struct, frozen=True):
    """A parsed date or date-time; ``has_time`` is False for a date-only string."""

    moment: datetime
    has_time: bool


# Two defaults that differ in every field tell which fields the string actually gave.
_DEFAULT_A = datetime(2000, 1, 1, 0, 0, 0, 0)
_DEFAULT_B = datetime(2001, 2, 2, 1, 1, 1, 1)


_WEEKDAYS = {name: day for day, names in enumerate(("mon monday", "tue tues tuesday", "wed wednesday", "thu thur thurs thursday", "fri friday",
                                                      "sat saturday", "sun sunday")) for name in names.split()}  # fmt: skip
_WORD_RUN = re.compile(r"[^\W\d_]+")


def _parse_when(text: str) -> _When | None:
    """The date (and time) ``text`` names, or None: not a full date, or one naming a weekday the
    date does not fall on ("Monday, March 5, 2024" was a Tuesday: which one is meant is unknown)."""
    from dateutil import parser as date_parser  # on first use: a run that compares no dates never imports it

    try:
        a = date_parser.parse(text, default=_DEFAULT_A, fuzzy=False)
        b = date_parser.parse(text, default=_DEFAULT_B, fuzzy=False)
    except (ValueError, OverflowError, TypeError):
        return None
    if (a.year, a.month, a.day) != (b.year, b.month, b.day):
        return None  # year, month or day not given: not a comparable date
    if _wrong_weekday(text, a):
        return None
    return _When(a, has_time=a.hour == b.hour)


def _wrong_weekday(text: str, moment: datetime) -> bool:
    named = {_WEEKDAYS[w] for w in _WORD_RUN.findall(text.lower()) if w in _WEEKDAYS}
    return bool(named) and named != {moment.weekday()}


def _dates_equal(x: _When, y: _When) -> bool:
    if not x.has_time or not y.has_time:
        # a date equals a date, or a date-time at midnight of that date
        def midnight_or_date(w: _When) -> bool:
            t = w.moment
            return not w.has_time or (t.hour, t.minute, t.second, t.microsecond) == (0, 0, 0, 0)

        return x.moment.date() == y.moment.date() and midnight_or_date(x) and midnight_or_date(y)
    if x.moment.tzinfo is not None and y.moment.tzinfo is not None:
        return x.moment == y.moment  # equal instants
    return x.moment.replace(tzinfo=None) == y.moment.replace(tzinfo=None)  # wall clock when one is naive


def _string_diff(a: str, b: str, schema: dict | None, opts: _Opts, path: str) -> _Diff | None:
    if a == b:  # the same text is equal under every rule below (verbatim, BFCL-normalised, as dates)
        return None
    schema = schema or {}
    fmt = schema.get("format")
    if opts.exact or schema.get("x-exact") is True or fmt in _EXACT_FORMATS:
        return None if a == b else _Diff(path, _show(a), _show(b), "compared verbatim")
    if "x-bfcl-type" in schema:  # BFCL's checker: standardised text, dates included
        return None if bfcl_normalize(a) == bfcl_normalize(b) else _Diff(path, _show(a), _show(b))
    if fmt in _DATE_FORMATS or _ISO_DATE.match(a.strip()) or _ISO_DATE.match(b.strip()):
        wa, wb = _parse_when(a), _parse_when(b)
        if wa is not None and wb is not None:
            return None if _dates_equal(wa, wb) else _Diff(path, _show(a), _show(b), "different date")
        if wa is not None or wb is not None:
            bad = b if wb is None else a
            return _Diff(path, _show(a), _show(b), f"cannot parse {_show(bad)} as a full date (or it names a weekday its date does not fall on)")
        # neither side is a date although the schema says so: compare as text
    return _text_diff(a, b, path)


# What of a string's numbers BFCL's standardised text drops but a tool reads: a decimal point
# between digits ("1.5" is not "15") and a minus sign ("-50" is not "50"); digit separators
# ("555-1234", "1,000") stay dropped.
_NUMBER_MARKS = re.compile(r"\d|(?<![^\W\d_])\.(?=\d)|(?<![\w.])[-\u2212](?=\.?\d)")


def _number_marks(s: str) -> str:
    return "".join(_NUMBER_MARKS.findall(s)).replace("\u2212", "-")


def _text_diff(a: str, b: str, path: str) -> _Diff | None:
    """Strings of a native task: BFCL's standardised text (case, spaces, ``,./-_*^`` aside) of the
    NFKC forms (an accent written precomposed or combining, full-width digits), provided the two
    say the same numbers: "-50.00" and "5000" standardise alike and are not the same amount."""
    x, y = (a, b) if a.isascii() and b.isascii() else (unicodedata.normalize("NFKC", a), unicodedata.normalize("NFKC", b))
    if bfcl_normalize(x) != bfcl_normalize(y):
        return _Diff(path, _show(a), _show(b))
    if _number_marks(x) != _number_marks(y):
        return _Diff(path, _show(a), _show(b), "the numbers differ (a decimal point or a minus sign)")
    return None


# ---------------------------------------------------------------- structures


def _unordered_for(schema: dict | None, override: bool | None) -> bool:
    if override is not None:
        return override
    schema = schema or {}
    return schema.get("uniqueItems") is True or schema.get("x-unordered") is True


def _count(n: int) -> str:
    return f"{n} item" if n == 1 else f"{n} items"


def _items_schema(schema: dict | None) -> dict | None:
    items = (schema or {}).get("items")
    return items if isinstance(items, dict) else None


def _object_schema(schema: dict | None) -> dict | None:
    """The schema an object value is read by: itself, or the first ``anyOf`` / ``oneOf`` branch that
    declares properties (``List[Model | dict]``: the tool builds the model from every object)."""
    if not schema or "properties" in schema:
        return schema
    for key in ("anyOf", "oneOf"):
        for branch in schema.get(key) or ():
            if isinstance(branch, dict) and isinstance(branch.get("properties"), dict):
                return branch
    return schema


def _dropped_by_tool(schema: dict | None, key: str) -> bool:
    """The schema declares its properties, not ``key``, and says the tool ignores undeclared keys."""
    schema = schema or {}
    props = schema.get("properties")
    return isinstance(props, dict) and key not in props and schema.get("x-extra-keys") == "ignore"


def _says_whether_read(schema: dict | None, key: str) -> bool:
    """Whether the schema tells if the tool reads ``key``: it declares it, or rules on undeclared keys."""
    schema = schema or {}
    props = schema.get("properties")
    return (isinstance(props, dict) and key in props) or "additionalProperties" in schema or "x-extra-keys" in schema


def _property_schema(schema: dict | None, key: str) -> dict | None:
    schema = schema or {}
    props = schema.get("properties")
    if isinstance(props, dict) and isinstance(props.get(key), dict):
        return props[key]
    extra = schema.get("additionalProperties")
    return extra if isinstance(extra, dict) else None


def _list_diff(a: list, b: list, schema: dict | None, opts: _Opts, path: str) -> _Diff | None:
    item_schema = _items_schema(schema)
    inner = opts.nested(array_item=opts.depth == 0)
    if not _unordered_for(schema, opts.unordered):
        if len(a) != len(b):
            return _Diff(path, _count(len(a)), _count(len(b)), f"{_show(a)} vs {_show(b)}")
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            diff = _diff(x, y, item_schema, inner, f"{path}[{i}]")
            if diff is not None:
                return diff
        return None
    if not a and not b:
        return None
    # Multiset equality under a fuzzy (non-transitive) element equality needs a real assignment.
    import numpy as np  # with scipy, on first use (a run without unordered comparisons loads neither)
    from scipy.optimize import linear_sum_assignment  # on first use: importing scipy.optimize costs ~50 MB of RSS

    found: dict[tuple[int, int], list[str]] = {}  # each pair's undeclared keys, kept for the pairs assigned

    def pair_equal(i: int, j: int) -> bool:
        keys: list[str] | None = None if inner.undeclared is None else []
        same = _diff(a[i], b[j], item_schema, inner.collecting(keys), f"{path}[{j}]") is None
        if same and keys:
            found[(i, j)] = keys
        return same

    equal = np.array([[pair_equal(i, j) for j in range(len(b))] for i in range(len(a))], dtype=float).reshape(len(a), len(b))
    rows, cols = linear_sum_assignment(-equal) if equal.size else (np.array([], int), np.array([], int))
    matched = [(r, c) for r, c in zip(rows, cols, strict=True) if equal[r, c] == 1.0]
    if len(matched) == len(a) == len(b):
        if inner.undeclared is not None:
            for pair in sorted(matched):
                inner.undeclared.extend(found.get((int(pair[0]), int(pair[1])), ()))
        return None
    lost = [a[i] for i in range(len(a)) if i not in {r for r, _ in matched}]
    extra = [b[j] for j in range(len(b)) if j not in {c for _, c in matched}]
    return _Diff(path, _show(a), _show(b), f"unordered; not matched: {_show(lost, 40)}, unexpected: {_show(extra, 40)}")


def _dict_diff(a: dict, b: dict, schema: dict | None, opts: _Opts, path: str) -> _Diff | None:
    inner = opts.nested()
    schema = _object_schema(schema)
    for key in sorted(set(a) | set(b), key=str):
        where = f"{path}.{key}" if path else str(key)
        if _dropped_by_tool(schema, key):  # the tool never sees a key its argument model drops
            continue
        if key not in b:
            return _Diff(where, _show(a[key]), "nothing", "missing key")
        if key not in a:
            if opts.extra_keys:
                continue
            if opts.undeclared is not None and not _says_whether_read(schema, key):
                opts.undeclared.append(where)  # whether the tool reads it is unknown: the caller decides
                continue
            return _Diff(where, "no such key", _show(b[key]), "unexpected key")
        diff = _diff(a[key], b[key], _property_schema(schema, key), inner, where)
        if diff is not None:
            return diff
    return None


def _diff(a: Any, b: Any, schema: dict | None, opts: _Opts, path: str) -> _Diff | None:
    """None when ``a`` and ``b`` are equal under the schema and options; else why not."""
    type_diff = _type_diff(a, b, schema, path, opts.array_item, opts.reference_first)
    if type_diff is not None:
        return type_diff
    if _is_number(a) and _is_number(b):
        if _numbers_equal(a, b, opts) or (_float_noise(a, b) and "x-bfcl-type" not in (schema or {})):
            return None
        return _Diff(path, _show(a), _show(b))
    if isinstance(a, str) and isinstance(b, str):
        return _string_diff(a, b, schema, opts, path)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return _list_diff(list(a), list(b), schema, opts, path)
    if isinstance(a, dict) and isinstance(b, dict):
        return _dict_diff(a, b, schema, opts, path)
    if _kind(a) != _kind(b):
        return _Diff(path, _show(a), _show(b), f"{_kind(a)} vs {_kind(b)}")
    return None if a == b else _Diff(path, _show(a), _show(b))


# ---------------------------------------------------------------- public API


def values_equal(
    a: Any,
    b: Any,
    schema: dict | None = None,
    *,
    tolerance: float | None = None,
    relative_tolerance: float | None = None,
    unordered: bool | None = None,
    exact: bool = False,
) -> bool:
    """Symmetric fuzzy equality of two JSON values under a parameter schema (see module doc)."""
    return _diff(a, b, schema, _Opts(tolerance, relative_tolerance, unordered, exact), "") is None


def _as_text(value: Any) -> str:
    """What a pattern is matched against: a string as is, anything else as compact JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


_NO_RULE = ArgumentRule()  # read only: the rule of an argument the reference gives no rule for
_PLAIN_SCALARS = (str, int, bool, type(None))  # equal by ``==`` and of one JSON kind per type (float apart: NaN)


def identical(a: Any, b: Any) -> bool:
    """``a`` and ``b`` are the same JSON value, type for type (1 vs 1.0 vs True, a list vs a tuple
    and NaN are not). Every comparison rule accepts such a pair, so it needs none of them: callers
    use it as a fast path and take the full comparison for anything else. Iterative: agent values
    are untrusted and may nest deeper than the recursion limit."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        kind = type(x)
        if kind is not type(y):
            return False
        if kind in _PLAIN_SCALARS or kind is float:
            if x != y:  # NaN != NaN: the full comparison decides
                return False
        elif kind is list:
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y))
        elif kind is dict:
            if len(x) != len(y):
                return False
            for key, value in x.items():
                if key not in y:
                    return False
                stack.append((value, y[key]))
        else:
            return False  # a tuple or another type: the full comparison decides
    return True


def compare_argument(
    expected: Any,
    actual: Any,
    rule: ArgumentRule | None = None,
    schema: dict | None = None,
    *,
    extra_keys: bool = False,
    undeclared_keys: bool = False,
) -> ValueMatch:
    """Does the agent's ``actual`` value satisfy the reference (``expected`` + ``rule``)?

    ``expected`` is ``MISSING`` when the reference gives only ``rule.any_of`` or ``rule.pattern``;
    ``actual`` is ``MISSING`` when the agent omitted the argument. ``extra_keys``: object keys the
    reference does not mention are ignored. ``undeclared_keys``: a nested key no schema says the tool
    reads is left out and reported in ``undeclared`` (see the module doc). Raises ``ValueError`` when the reference accepts no value
    at all (no literal, no ``any_of``, no pattern, not ``any_value``, not omit-only): that is a broken
    reference, not an agent error.
    """
    if expected is not MISSING and not (schema and "x-bfcl-language" in schema) and identical(expected, actual):
        return _SAME  # the reference literal itself (most calls of a good agent): no rule can reject it
    return _compare_argument(expected, actual, rule, schema, extra_keys=extra_keys, undeclared_keys=undeclared_keys)


def _compare_argument(
    expected: Any,
    actual: Any,
    rule: ArgumentRule | None = None,
    schema: dict | None = None,
    *,
    extra_keys: bool = False,
    undeclared_keys: bool = False,
) -> ValueMatch:
    """The full comparison: ``compare_argument`` without its fast path."""
    rule = rule or _NO_RULE
    if actual is MISSING:
        return ValueMatch(True) if rule.optional else ValueMatch(False, "required argument not given")
    if rule.any_value:
        return ValueMatch(True)
    if rule.pattern is not None and pattern_full_match(rule.pattern, _as_text(actual)):
        return ValueMatch(True)
    language = schema.get("x-bfcl-language") if schema else None
    read_as = ""
    if language is not None:  # the agent wrote source text of another language: read it as BFCL does
        assert schema is not None
        declared, items = str(schema.get("x-bfcl-type")), schema.get("x-bfcl-items")
        read = read_literal(actual, language, declared, items)
        if read.error is not None:
            return ValueMatch(False, read.error)
        if read.value != actual:
            read_as = f" (the {language} {declared} literal {_show(actual, 80)} reads as {_show(read.value, 80)})"
        actual, schema = read.value, value_schema(language, declared, items)
    acceptable = ([] if expected is MISSING else [expected]) + list(rule.any_of or [])
    if not acceptable:
        if rule.pattern is not None:
            return ValueMatch(False, f"{_show(actual)} does not match the pattern {rule.pattern!r}")
        if rule.any_of == [] and rule.optional:
            return ValueMatch(False, f"may only be omitted, got {_show(actual)}")
        raise ValueError("reference argument has no acceptable value: no literal, no any_of, no pattern, not any_value")
    opts = _Opts(rule.tolerance, rule.relative_tolerance, rule.unordered, rule.exact, extra_keys, reference_first=True)
    first: _Diff | None = None
    for candidate in acceptable:
        keys: list[str] | None = [] if undeclared_keys else None
        diff = _diff(candidate, actual, schema, opts.collecting(keys), "")
        if diff is None:
            return ValueMatch(True, undeclared=tuple(keys or ()))
        first = first or diff
    assert first is not None
    also = f" (nor the pattern {rule.pattern!r})" if rule.pattern is not None else ""
    return ValueMatch(False, first.render(alternatives=len(acceptable) - 1) + also + read_as)
