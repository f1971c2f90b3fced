"""Nothing lost: every fact of an old README is on some page of the docs (or in the README).

Run once when the manual moves (it reads the old text from git)::

    python -m tests.docs.coverage 6a742af:README.md

Each paragraph, list item, table row and code line of the old text is normalised (Markdown link
targets and anchors dropped, emphasis and backticks kept, whitespace collapsed) and looked up in
the normalised text of ``README.md`` and ``docs/**/*.md`` together. A unit that is not found is
printed with its line; the exit status is the number of units missing (0: everything landed).
Wording that was edited on purpose shows up here too, to be read, not to be silenced.
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.docs.examples import pages

_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")  # [text](target) -> text
_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_SPACE = re.compile(r"\s+")
_QUOTED_HEADING = re.compile(r'"([^"]+)"')  # README-internal references ("see "Scale"") became links


@dataclass(frozen=True)
class Unit:
    line: int
    text: str


def normalise(text: str) -> str:
    text = _IMAGE.sub(r"\1", text)
    text = _LINK.sub(r"\1", text)
    text = text.replace("\u2019", "'")
    return _SPACE.sub(" ", text).strip()


def units(markdown: str) -> list[Unit]:
    """Paragraphs (lines joined), list items, table rows, headings and each line of a code block."""
    found: list[Unit] = []
    para: list[str] = []
    start = 0
    in_code = False

    def flush() -> None:
        if para:
            found.append(Unit(start, " ".join(para)))
            para.clear()

    for number, line in enumerate(markdown.splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith("```"):
            flush()
            in_code = not in_code
            continue
        if in_code:
            if stripped:
                found.append(Unit(number, stripped))
            continue
        if not stripped:
            flush()
            continue
        if stripped.startswith(("#", "|")) or re.match(r"^([-*]|\d+\.)\s", stripped):
            flush()
            if stripped.startswith("|") and set(stripped) <= set("|-: "):
                continue  # a table's rule
            start = number
            para.append(re.sub(r"^(#+|[-*]|\d+\.)\s+", "", stripped))
            continue
        if not para:
            start = number
        para.append(stripped)
    flush()
    return found


def _pieces(unit: str) -> list[str]:
    """A unit with its quoted cross-references ("How grading works") cut out: those became links."""
    return [p.strip(" ,;:()") for p in _QUOTED_HEADING.split(unit)[::2] if len(p.strip(" ,;:()")) > 3]


def missing(old: str, new: str) -> list[Unit]:
    lost = []
    for unit in units(old):
        text = normalise(unit.text)
        if text in new:
            continue
        pieces = _pieces(text)
        if pieces and all(p in new for p in pieces):
            continue
        lost.append(Unit(unit.line, text))
    return lost


def divergence(text: str, new: str) -> tuple[str, str]:
    """Where a missing unit stops matching: its words around that point, and the text of the
    pages that follows the longest start of it they hold."""
    low, high = 0, len(text)
    while low < high:  # the longest prefix of text that new contains
        mid = (low + high + 1) // 2
        if text[:mid] in new:
            low = mid
        else:
            high = mid - 1
    at = new.find(text[:low]) + low if low else -1
    return text[max(0, low - 60) : low + 140], (new[max(0, at - 60) : at + 140] if at >= 0 else "")


def current_text() -> str:
    return "\n".join(normalise(" ".join(u.text for u in units(p.read_text(encoding="utf-8")))) for p in pages())


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__)
        return 2
    spec = argv[0]
    if ":" in spec:  # REV:PATH, read from git
        old = subprocess.run(["git", "show", spec], check=True, capture_output=True, text=True).stdout
    else:
        old = Path(spec).read_text(encoding="utf-8")
    new = current_text()
    lost = missing(old, new)
    for unit in lost:
        was, now = divergence(unit.text, new)
        print(f"{spec} line {unit.line}:\n  old: ...{was}...\n  new: ...{now}...")
    print(f"{len(lost)} of {len(units(old))} units not found in README.md and docs/", file=sys.stderr)
    return min(len(lost), 255)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
