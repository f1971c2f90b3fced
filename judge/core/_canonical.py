"""Canonical forms of JSON values, so equal content compares and hashes equal.

Used for cache keys (exact canonical JSON) and for VAKRA-style response-set comparison, where a
tool response is compared order- and duplicate-insensitively but with every column kept.

Speed without changing a byte: ``canonical_json`` defines the bytes (and so every cache key and
content hash ever written); ``orjson`` produces them whenever it provably writes the same bytes
(plain JSON without floats), and the reference definition runs otherwise. ``loads_json`` parses
with ``orjson`` except where it would read a value differently from ``json.loads`` (integers past
64 bits, NaN / Infinity, lone surrogates), so parsed structures are the same objects either way.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any, NamedTuple

import orjson

from judge.core._depth import MAX_DEPTH, TooDeep, _openers, _shallow_by_layout, parse_json_bounded, text_nesting_error
from judge.core._errors import BadInputError

__all__ = [
    "UNDECIDED",
    "UNIQUE_KEYS",
    "DuplicateKey",
    "SharedMembers",
    "canonical_json",
    "content_hash",
    "loads_exact",
    "loads_exact_bounded",
    "loads_json",
    "parse_json_text",
    "response_key",
]


def canonical_json(value: Any) -> str:
    """Deterministic JSON: sorted keys, no whitespace, integral floats written as ints."""
    if _plain(value):
        try:
            return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode("utf-8")
        except orjson.JSONEncodeError:  # a lone surrogate, an integer past 64 bits: the definition decides
            pass
    return _reference_canonical_json(value)


def _reference_canonical_json(value: Any) -> str:
    """The definition of ``canonical_json`` (it fixed the bytes of every hash ever written)."""
    return json.dumps(_numbers(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


_PLAIN_SCALARS = (str, int, bool, type(None))


def _plain(value: Any) -> bool:
    """Only objects with str keys, arrays, strings, integers, booleans and null: orjson and the
    definition write such values identically (no float formatting, key conversion or ``default``
    involved). Iterative: the value may be nested deeper than the recursion limit."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            for key, sub in item.items():
                if type(key) is not str:
                    return False
                if type(sub) not in _PLAIN_SCALARS:
                    stack.append(sub)
        elif kind is list or kind is tuple:
            stack.extend(sub for sub in item if type(sub) not in _PLAIN_SCALARS)
        elif kind not in _PLAIN_SCALARS:
            return False
    return True


def content_hash(value: Any) -> str:
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def _numbers(value: Any) -> Any:
    if isinstance(value, float):
        if math.isfinite(value) and value == int(value) and abs(value) < 2**63:
            return int(value)
        return value
    if isinstance(value, dict):
        return {str(k): _numbers(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_numbers(v) for v in value]
    return value


# A run of 19 digits may be an integer past orjson's 64 bits, which it would read as a float.
# JSON numbers are ASCII digits: mapping every digit byte to "0" and every other byte to "."
# makes the check one C-speed translate and one substring search (a regex is ~10x slower on KBs).
# The same translation marks brackets: "[" and "{" both become "[", so one counted pass also bounds
# the nesting (``loads_json``; UTF-8 never holds these bytes inside a multibyte character).
_DIGITS_AS_ZERO = bytes(ord("0") if 48 <= c <= 57 else ord("[") if c in (0x5B, 0x7B) else ord(".") for c in range(256))
_LONG_RUN = b"0" * 19


def _marks(text: str | bytes) -> bytes:
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    return raw.translate(_DIGITS_AS_ZERO)


def _has_long_digit_run(text: str | bytes) -> bool:
    return _LONG_RUN in _marks(text)


class DuplicateKey(BadInputError):
    """A JSON object repeats ``key``: ``UNIQUE_KEYS`` refuses it rather than keep the last value
    (a ``ValueError`` too, as the standard library's own decoding errors are)."""

    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKey(key)
            seen.add(key)
    return out


UNIQUE_KEYS = json.JSONDecoder(object_pairs_hook=_no_duplicate_keys)  # the standard library, refusing repeated keys


class _Undecided:
    def __repr__(self) -> str:
        return "UNDECIDED"


UNDECIDED: Any = _Undecided()  # what ``loads_exact`` returns when the standard library must decide


_ESCAPE_003 = b"\\u003"  # how an escaped colon (\u003a or \u003A) starts: one search rules both out


def loads_exact(text: str | bytes, *, unique_keys: bool = False) -> Any:
    """The value ``json.loads(text)`` gives, read by orjson, whenever orjson certainly gives the
    same; ``UNDECIDED`` otherwise (the caller reads the text with the standard library, which
    decides and words any error): an integer past 64 bits (orjson reads a float), NaN, Infinity,
    an overflowing float, a lone surrogate escape, malformed text, a byte-order mark (orjson
    refuses these), and with ``unique_keys`` an object repeating a key (orjson keeps the last
    silently). No depth bound here: callers bound it (orjson stops at 1,024 levels; see
    ``loads_exact_bounded``).

    With ``unique_keys``, a container is first written back (compact orjson): text that reads back
    as itself (``_writes_back``) is proven to repeat no key and to hold no integer orjson turned
    into a float (it writes every float with a ``.`` or an exponent), so JSONL written by orjson,
    serde or ``JSON.stringify`` needs no other pass. Other text is checked as before
    (``_counted``): repeated keys found by counting colons: without ``\\u003a`` escapes, the text's
    colons are its keys plus the colons inside its strings; orjson writes the parsed value back
    with one colon per key it kept and the same strings, so the counts differ exactly when a key
    was dropped."""
    return _loads(text, unique_keys, None)[0]


def loads_exact_bounded(text: str | bytes, limit: int, *, unique_keys: bool = True) -> tuple[Any, bool]:
    """(``loads_exact(text, unique_keys=...)``, whether that value certainly nests at most
    ``limit`` levels). The bound is read off the value's indented layout (``_depth``) in the same
    pass as the other guards, so a reader need not count the text's brackets; False leaves the
    check to the caller (``text_nesting_error``, which names the path)."""
    return _loads(text, unique_keys, limit)


def _loads(text: str | bytes, unique_keys: bool, limit: int | None) -> tuple[Any, bool]:
    if not unique_keys and _has_long_digit_run(text):  # an integer that may not fit 64 bits
        return UNDECIDED, False
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return UNDECIDED, False
    container = isinstance(value, (dict, list))
    if unique_keys:
        if container:
            try:
                dumped: bytes | None = orjson.dumps(value)
            except orjson.JSONEncodeError:  # nested past orjson's writing depth
                dumped = None
            proven = dumped is not None and _writes_back(dumped, text)
            if not proven and not _counted(text, dumped):
                return UNDECIDED, False
        elif _has_long_digit_run(text):
            return UNDECIDED, False
    if limit is None:
        return value, False
    return value, not container or _shallow_by_layout(value, limit)


def _writes_back(dumped: bytes, text: str | bytes) -> bool:
    """``text`` is exactly ``dumped``, but for a line terminator after it."""
    raw = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
    return raw.startswith(dumped) and raw[len(dumped) :] in _TERMINATORS


_TERMINATORS = (b"", b"\n", b"\r\n", b"\r")


def _counted(text: str | bytes, dumped: bytes | None) -> bool:
    """The checks for text that does not read back as itself: no integer run that may pass 64
    bits, and no key dropped (colon counts; ``dumped`` is the parsed container written back, None
    where orjson could not write it)."""
    if _has_long_digit_run(text):
        return False
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    colons = raw.count(b":")
    if not colons:
        return True
    if _ESCAPE_003 in raw and (b"\\u003a" in raw or b"\\u003A" in raw):  # keys cannot be counted
        return False
    return dumped is not None and dumped.count(b":") == colons


class SharedMembers:
    """``loads_exact(line, unique_keys=True)`` for JSON Lines whose objects repeat some top-level
    members byte for byte (converted logs write their deployment's tool specs on every task line:
    ~85% of each line's bytes, parsed again on each). The line is split into its top-level members
    (msgspec, reading each value as raw text without building it); a named member's text met
    before gives the value parsed then, the same object (callers must not mutate it); every other
    member is parsed by orjson as before. The same value as ``loads_exact`` for every line, and
    ``UNDECIDED`` wherever ``loads_exact`` would return it or this path cannot tell, or where the
    value may nest deeper than ``limit`` levels: a value it returns needs no depth check.

    - each member is bounded once, when parsed (a shared one once, when first met): at most
      ``limit - 1`` levels by its indented layout (``_depth``), which also keeps every member well
      under orjson's 1,024 levels, the whole line's limit;
    - a line whose members each read back as themselves (compact orjson) and that is as long as
      ``{"key":member,...}`` (``_rebuilt``) is proven as in ``loads_exact``: no key repeats, no
      integer became a float;
    - any other line: its own checks (an integer run that may pass 64 bits, a ``\\u003`` escape
      that hides colons) and repeated keys by the colon count of ``loads_exact`` taken per member:
      the line's colons are the members' colons, one per top-level key and those inside top-level
      keys; a member's own count is checked when it is parsed;
    - a top-level key holding a lone surrogate (which orjson refuses), a line that is not one
      object, anything msgspec or orjson cannot read.

    At most ``MAX_KEPT`` member texts are kept (first in, first out), each at least ``MIN_BYTES``
    long: memory stays bounded whatever the file. A text is found among the kept ones of its
    length by comparing bytes (a memory compare; hashing a long new text on every line cost more)."""

    MAX_KEPT = 64
    MIN_BYTES = 512

    def __init__(self, names: tuple[str, ...], limit: int = MAX_DEPTH):
        import msgspec

        self.names = frozenset(names)
        self.limit = limit
        self._split = msgspec.json.Decoder(dict[str, msgspec.Raw])
        self._errors = (msgspec.DecodeError, msgspec.ValidationError)
        self._kept: dict[bytes, _Member] = {}  # member text -> what parsing it gave (first in, first out)
        self._sizes: dict[int, list[bytes]] = {}  # the kept texts by length

    def loads(self, raw: bytes) -> Any:
        try:
            members = self._split.decode(raw)
        except self._errors:
            return UNDECIDED
        if not any(name in members for name in self.names):
            return UNDECIDED
        value: dict[str, Any] = {}
        parsed: list[tuple[str, bytes, _Member]] = []
        exact = True
        for key, member in members.items():
            text = bytes(member)
            found = self._shared(text) if key in self.names and len(text) >= self.MIN_BYTES else self._parse(text)
            if found is None:
                return UNDECIDED
            value[key] = found.value
            exact = exact and found.exact
            parsed.append((key, text, found))
        if exact and self._rebuilt(parsed, raw):
            return value
        return value if self._counted(parsed, raw) else UNDECIDED

    def _shared(self, text: bytes) -> _Member | None:
        for kept in self._sizes.get(len(text), ()):
            if kept == text:
                return self._kept[kept]
        member = self._parse(text)
        if member is None:
            return None
        if len(self._kept) >= self.MAX_KEPT:
            oldest = next(iter(self._kept))
            del self._kept[oldest]
            self._sizes[len(oldest)].remove(oldest)
        self._kept[text] = member
        self._sizes.setdefault(len(text), []).append(text)
        return member

    @staticmethod
    def _rebuilt(parsed: list[tuple[str, bytes, _Member]], raw: bytes) -> bool:
        """The line is as long as ``{"key":member,...}`` written compact: then no member was
        dropped (a repeated key, whose earlier member msgspec let go). The members' texts are spans
        of the line, and no other spelling of a key is shorter than orjson's (it escapes only what
        JSON requires, with the shortest escape), so any whitespace, longer key spelling or dropped
        member makes the line longer. No byte is copied or compared."""
        size = 1 + len(parsed)  # the braces and the separators
        try:
            for key, text, _ in parsed:
                size += len(orjson.dumps(key)) + 1 + len(text)
        except orjson.JSONEncodeError:  # a lone surrogate in a key
            return False
        end = len(raw)
        if raw.endswith(b"\n"):
            end -= 2 if raw.endswith(b"\r\n") else 1
        elif raw.endswith(b"\r"):
            end -= 1
        return end == size

    @staticmethod
    def _counted(parsed: list[tuple[str, bytes, _Member]], raw: bytes) -> bool:
        """The checks of a line that is not its members written back: those of ``loads_exact``."""
        if _has_long_digit_run(raw) or _ESCAPE_003 in raw:
            return False
        colons = len(parsed)
        for key, text, member in parsed:
            try:
                key.encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate: orjson refuses the line
                return False
            colons += (text.count(b":") if member.colons is None else member.colons) + key.count(":")
        return colons == raw.count(b":")  # else a top-level key repeats (msgspec kept its last value)

    def _parse(self, text: bytes) -> _Member | None:
        """What one member's text gives, None where ``loads_exact`` would not decide or the member
        may nest deeper than ``limit - 1`` levels."""
        try:
            item = orjson.loads(text)
        except orjson.JSONDecodeError:
            return None
        container = isinstance(item, (dict, list))
        try:
            dumped = orjson.dumps(item)
        except orjson.JSONEncodeError:  # nested past orjson's writing depth
            return None
        if container and _openers(text) >= self.limit and not _shallow_by_layout(item, self.limit - 1):
            return None
        if dumped == text:
            return _Member(item, None, True)
        count = text.count(b":")
        if container and count and dumped.count(b":") != count:  # a key repeats inside it
            return None
        return _Member(item, count, False)


class _Member(NamedTuple):
    """A member's parsed value; ``exact``: its text is the value written back (compact orjson);
    ``colons`` of its text (None for an exact one: counted only if its line needs it)."""

    value: Any
    colons: int | None
    exact: bool


def loads_json(text: str | bytes, limit: int = MAX_DEPTH) -> Any:
    """``parse_json_bounded`` (``json.loads`` for untrusted text: ``TooDeep`` past ``limit`` levels,
    a ``ValueError`` for unpaired surrogate escapes), faster: the same value for every input, a
    ``ValueError`` for the same ones. orjson parses (``loads_exact``); what it would read
    differently or rejects goes to the definition.

    One translation of the text serves both guards (``_marks``): the digit runs of ``loads_exact``
    and the bracket count that shows most texts cannot nest past ``limit``; only a text with more
    brackets than that takes the definition's depth check (``text_nesting_error``)."""
    marks = _marks(text)
    if _LONG_RUN in marks:  # an integer that may not fit 64 bits
        return parse_json_bounded(text, limit)
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return parse_json_bounded(text, limit)
    if isinstance(value, (dict, list)) and marks.count(b"[") > limit:
        path = text_nesting_error(value, text, limit)  # the definition's depth check
        if path is not None:
            raise TooDeep(limit, path)
    return value


_MAYBE_JSON = frozenset("{[ntf")


def parse_json_text(value: Any) -> Any:
    """Tool results often arrive as JSON text; compare the structure, not the spelling."""
    if isinstance(value, str) and (value[:1] in _MAYBE_JSON or value[:1].isspace()):
        text = value.strip()
        if text[:1] in ("{", "[") or text in ("null", "true", "false"):
            try:
                return loads_json(text)
            except ValueError:  # not JSON, or nested too deeply to be compared as structure
                return value
    return value


def response_key(value: Any, digits: int = 9) -> str:
    """Order- and duplicate-insensitive key of a tool response (lists become sets, rows stay whole).

    Floats are rounded to ``digits`` significant digits so that 1.2587000000001 == 1.2587. Keys
    are compared with each other, never stored: only their equality is defined.
    """
    return _dump_sorted(_set_form(parse_json_text(value), digits))


def _dump_sorted(value: Any) -> str:
    """JSON with sorted keys of a set form (str keys; finite numbers; strings): orjson writes it
    unless a string holds a lone surrogate."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode("utf-8")
    except orjson.JSONEncodeError:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _json_number(text: str) -> float | int | None:
    """A tool that returns the text "42" returned the same content as one that returns 42."""
    if not text or text[0] not in "-0123456789":
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _set_form(value: Any, digits: int) -> Any:
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            return str(value)
        as_float = float(f"{float(value):.{digits}g}")
        return int(as_float) if as_float == int(as_float) and abs(as_float) < 2**63 else as_float
    if isinstance(value, str):
        text = value.strip()
        number = _json_number(text)
        return text if number is None else _set_form(number, digits)
    if isinstance(value, dict):
        return {str(k): _set_form(v, digits) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        items = {_dump_sorted(_set_form(v, digits)) for v in value}
        return ["\u0000set"] + sorted(items)
    return str(value)
