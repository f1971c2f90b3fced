"""Reports: the run summary as Markdown (and more formats), deterministic for the same inputs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reports._markdown import render_markdown


def write_reports(summary: dict[str, Any], out: Path) -> list[Path]:
    """Write every report format for one run into ``out``; returns the paths written."""
    path = out / "report.md"
    path.write_text(render_markdown(summary), encoding="utf-8")
    return [path]


__all__ = ["render_markdown", "write_reports"]
