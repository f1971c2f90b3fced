"""JSON Schemas of the native formats, generated from the pydantic models so they cannot drift.

``docs/schemas/`` holds the generated files; a test fails when they are out of date. Regenerate with
``.venv/bin/python -m pipelines.ingest._schemas docs/schemas``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from pydantic import BaseModel

from judge import Task, Trajectory

SCHEMA_FILES: dict[str, type[BaseModel]] = {"task.schema.json": Task, "trajectory.schema.json": Trajectory}


def render_schema(model: type[BaseModel]) -> str:
    """Deterministic text: sorted keys, fixed indentation, trailing newline."""
    return json.dumps(model.model_json_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def export_json_schemas(out_dir: str | os.PathLike) -> list[Path]:
    """Write ``task.schema.json`` and ``trajectory.schema.json`` into ``out_dir``; returns the paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, model in SCHEMA_FILES.items():
        target = out / name
        target.write_text(render_schema(model), encoding="utf-8")
        written.append(target)
    return written


if __name__ == "__main__":  # pragma: no cover
    for path in export_json_schemas(sys.argv[1] if len(sys.argv) > 1 else "docs/schemas"):
        print(path)
