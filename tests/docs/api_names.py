"""Every public name is in the API reference: a mkdocs hook (``hooks:`` in ``mkdocs.yml``).

After the site is built, mkdocstrings has written ``objects.inv``, the inventory of every object
the reference rendered. Each name in the ``__all__`` of a package face (``FACES``) must be there,
under the package (``judge.Task``) or under the module it lives in (``pipelines.reward.grade_trajectory``,
where the face loads it lazily); a name that is not fails the build, named, so a new public name
cannot be left out of the reference unnoticed.
"""

from __future__ import annotations

import importlib
import sys
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

FACES = ("judge", "judge.llm", "rubrics", "calibration", "reports", "pipelines")


def inventory_names(data: bytes) -> set[str]:
    """The object names of a Sphinx inventory (version 2: four header lines, then zlib)."""
    header, sep, body = data.partition(b"zlib.\n")
    if not sep or not header.startswith(b"# Sphinx inventory version 2"):
        raise ValueError("not a version 2 Sphinx inventory")
    return {line.split(" ", 1)[0] for line in zlib.decompress(body).decode("utf-8").splitlines() if line.strip()}


def undocumented(package: str, exported: Iterable[str], documented: set[str]) -> list[str]:
    """The names of ``exported`` that ``documented`` holds neither as ``package.name`` nor as
    ``package.<module>.name``."""
    return [
        name
        for name in exported
        if f"{package}.{name}" not in documented and not any(d.startswith(f"{package}.") and d.endswith(f".{name}") for d in documented)
    ]


def check(site_dir: Path, faces: Iterable[str] = FACES) -> list[str]:
    documented = inventory_names((site_dir / "objects.inv").read_bytes())
    return [f"{pkg}.{name}" for pkg in faces for name in undocumented(pkg, importlib.import_module(pkg).__all__, documented)]


def on_post_build(config: Any, **_: Any) -> None:
    from mkdocs.exceptions import PluginError

    root = str(Path(config["config_file_path"]).resolve().parent)  # the checkout being documented,
    if root not in sys.path:  # whatever the environment has installed
        sys.path.insert(0, root)
    missing = check(Path(config["site_dir"]))
    if missing:
        raise PluginError(f"public names missing from the API reference (docs/api/): {', '.join(missing)}")
