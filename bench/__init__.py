"""Benches: each module is a script (``python bench/<name>.py``); ``run_all`` prints them together."""

from __future__ import annotations

import compileall
from pathlib import Path

PACKAGES = ("judge", "rubrics", "calibration", "reports", "pipelines", "data", "bench")


def compiled(tree: Path) -> Path:
    """``tree`` with the ``.pyc`` files of its packages written, as an installed wheel has them.

    A child process then reads its modules' bytecode instead of compiling ~135 project modules
    each time (~0.25-0.4 s of its CPU). It matters where ``PYTHONDONTWRITEBYTECODE`` is set (this
    project's sandbox sets it): there no child ever writes them, so every measured run paid the
    compilation, ``make bench`` included. Reading existing ``.pyc`` files is not affected by the
    variable; ``compileall`` writes them whatever it says and skips those up to date."""
    for name in PACKAGES:
        if (tree / name).is_dir():
            compileall.compile_dir(tree / name, quiet=1, rx=_Generated(tree))
    return tree


class _Generated:
    """What ``compile_dir`` must skip in a tree: the benches' generated inputs and environments
    (``bench/out``, ``bench/.venv-*``)."""

    def __init__(self, tree: Path):
        self.bench = tree / "bench"

    def search(self, path: str) -> bool:
        inside = Path(path).relative_to(self.bench).parts if Path(path).is_relative_to(self.bench) else ()
        return bool(inside) and (inside[0] == "out" or inside[0].startswith(".venv"))
