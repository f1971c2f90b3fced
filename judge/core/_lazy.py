"""Packages whose public names load their modules on first use (PEP 562).

Why: what a command imports decides its start-up time and every worker's memory. A package such
as ``reports`` (pandas, pyarrow) or ``calibration`` (scikit-learn) keeps its curated ``__all__``
while a caller that needs one light name does not pay for the heavy ones.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, exports: dict[str, str], namespace: dict[str, Any]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of ``package``: ``exports`` maps each public name
    to the module defining it; a name, once loaded, is stored in ``namespace`` (the package's
    globals), so later lookups never come back here."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(exports)

    return __getattr__, __dir__
