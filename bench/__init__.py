"""Benches: each module is a script (``python bench/<name>.py``); ``run_all`` prints them together."""

from __future__ import annotations

import compileall
import re
from pathlib import Path

PACKAGES = ("judge", "rubrics", "calibration", "reports", "pipelines", "data", "bench")


def compiled(tree: Path) -> Path:
    """``tree`` with the ``.pyc`` files of its packages written, as an installed wheel has them.

    A child process then reads its modules' bytecode instead of compiling ~135 project modules
    each time (~0.25-0.4 s of its CPU). It matters where ``PYTHONDONTWRITEBYTECODE`` is set (this
    project's sandbox sets it): there no child ever writes them, so every measured run paid the
    compilation, ``make bench`` included. Reading existing ``.pyc`` files is not affected by the
    variable; ``compileall`` writes them whatever it says and skips those up to date."""
    generated = re.compile(re.escape(str(tree / "bench")) + r"/(out|\.venv[^/]*)(/|$)")  # generated inputs, peer environments
    for name in PACKAGES:
        if (tree / name).is_dir():
            compileall.compile_dir(tree / name, quiet=1, rx=generated)
    return tree
