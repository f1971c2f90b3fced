"""The code examples of the documentation: every fenced block of ``docs/**/*.md`` and ``README.md``.

A block is decided by its language, and a shell block also by the line just before it:

- ``python``: runs; lines ``# > text`` are the output it must print, in order (``# >``, not
  pydantic's ``#>``: ruff formats the Python blocks of Markdown too, and writes ``#>`` as ``# >``);
- ``json``: parsed; a task (``task_id`` with ``question`` or ``turns``) must read as one, strictly;
- ``toml``: parsed and loaded as ``judge grade --config`` loads a config file;
- ``sh``: ``<!-- example: run -->`` before it runs it with bash, ``<!-- example: skip (why) -->``
  leaves it, saying why; a shell block with neither is a problem;
- ``text``: synopses, trees, output: nothing to run.

A fence without a language, or with another one, is a problem too: every block says what it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUN_LANGUAGES = frozenset({"python", "json", "toml", "sh"})
LANGUAGES = RUN_LANGUAGES | {"text"}

_FENCE = re.compile(r"^```(?P<lang>[^\s`]*)\s*$")
_MARK = re.compile(r"^<!-- example: (?:(?P<run>run)|skip \((?P<why>.*)\)) -->$")


@dataclass(frozen=True)
class Example:
    page: str  # relative to the repository root
    line: int  # of the opening fence, 1-based
    lang: str
    code: str
    mark: str | None  # "run", "skip", or None when the line before the fence says nothing
    why: str = ""  # the reason a skipped block gives

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"

    def expected_output(self) -> list[str] | None:
        """The ``# >`` lines of a python block (None when it states no output)."""
        lines = [line[4:] if line.startswith("# > ") else "" for line in self.code.splitlines() if line.rstrip() == "# >" or line.startswith("# > ")]
        return lines or None


def find_examples(text: str, page: str) -> list[Example]:
    """The fenced blocks of one Markdown text. An unclosed fence is a ValueError naming its line."""
    examples: list[Example] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        start = i
        i += 1
        while i < len(lines) and lines[i].strip() != "```":
            i += 1
        if i == len(lines):
            raise ValueError(f"{page}:{start + 1}: a code fence that never closes")
        mark = _MARK.match(lines[start - 1].strip()) if start > 0 else None
        examples.append(
            Example(
                page=page,
                line=start + 1,
                lang=opening["lang"],
                code="\n".join(lines[start + 1 : i]) + "\n",
                mark=None if mark is None else ("run" if mark["run"] else "skip"),
                why="" if mark is None or mark["run"] else mark["why"].strip(),
            )
        )
        i += 1
    return examples


def problems(example: Example) -> list[str]:
    """What keeps a block from saying what it is and what happens to it."""
    if not example.lang:
        return [f"{example.id}: a code block without a language (one of {', '.join(sorted(LANGUAGES))})"]
    if example.lang not in LANGUAGES:
        return [f"{example.id}: language {example.lang!r} is none of {', '.join(sorted(LANGUAGES))}"]
    found = []
    if example.lang == "sh" and example.mark is None:
        found.append(f"{example.id}: a shell block needs <!-- example: run --> or <!-- example: skip (why) --> on the line before it")
    if example.mark == "skip" and not example.why:
        found.append(f"{example.id}: a skipped block must say why")
    if example.mark == "run" and example.lang != "sh":
        found.append(f"{example.id}: only shell blocks take <!-- example: run --> (python, json and toml blocks always run)")
    return found


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def all_examples() -> list[Example]:
    return [ex for path in pages() for ex in find_examples(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))]
