"""``judge schema``: export the JSON Schemas of the native formats."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pipelines.cli._common import stdout


def schema(out: Annotated[Path, typer.Option(help="Directory for the JSON Schemas.")] = Path("docs/schemas")) -> None:
    """Export the JSON Schemas of the native task and trajectory formats."""
    from pipelines.ingest import export_json_schemas

    for path in export_json_schemas(out):
        stdout.print(str(path))
