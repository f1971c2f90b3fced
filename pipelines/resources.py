"""Where the bundled data lives: read through importlib.resources, so an installed wheel and a
checkout (editable install) find the same files."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

_PACKAGE = "trajectory_judge_data"


def bundled_path(*parts: str) -> Path:
    """A path inside the bundled data (``bundled_path("envs")``, ``bundled_path("sample")``).

    The package is a plain directory in both a wheel and an editable install, so a real
    filesystem path exists (SQLite needs one)."""
    return Path(str(resources.files(_PACKAGE).joinpath(*parts)))


def environments_root() -> Path:
    return bundled_path("envs")


def sample_dir() -> Path:
    return bundled_path("sample")
