"""What is in an environments folder, read without loading any environment.

``judge env list`` must answer in a blink: it reads each domain's files as plain JSON (no
pydantic models, no schema checks, no SQLite, no BM25 index). Loading a domain (``_runtime``)
validates everything; the version both report is computed here, once, from the same bytes.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

__all__ = ["describe_environment", "environment_version", "list_environments", "roots"]


def roots(root: Path | None) -> Path:
    from pipelines.resources import environments_root

    return Path(root) if root is not None else environments_root()


def list_environments(root: Path | None = None) -> list[str]:
    base = roots(root)
    if not base.is_dir():
        return []
    return sorted(p.name for p in base.iterdir() if (p / "tools.json").is_file() and (p / "db.sqlite").is_file())


def environment_version(folder: Path) -> str:
    """A content hash of the domain's database, tools and documents (16 hex digits)."""
    digest = hashlib.sha256()
    for name in ("db.sqlite", "tools.json", "docs.jsonl"):
        path = folder / name
        digest.update(name.encode())
        digest.update(path.read_bytes() if path.is_file() else b"")
    return digest.hexdigest()[:16]


def describe_environment(name: str, root: Path | None = None) -> dict[str, Any]:
    """Name, version, tool and document counts of one domain, as its files state them (not
    validated: ``load_environment`` does that)."""
    folder = roots(root) / name
    try:
        tools = json.loads((folder / "tools.json").read_text(encoding="utf-8"))["tools"]
    except (OSError, ValueError, KeyError, TypeError):
        tools = []
    tools = tools if isinstance(tools, list) else []
    writes = sum(1 for t in tools if isinstance(t, dict) and _side_effect(t.get("spec")) == "write")
    docs_path = folder / "docs.jsonl"
    # lines as judge.json_lines splits them (\n, \r\n or a lone \r, never U+2028), on the bytes: importing
    # judge would load pydantic, which costs more than the rest of the command
    docs = sum(1 for line in docs_path.read_bytes().replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n") if line.strip()) if docs_path.is_file() else 0
    return {"name": name, "version": environment_version(folder), "tools": len(tools), "writes": writes, "documents": docs}


def _side_effect(spec: Any) -> Any:
    """As ``ToolSpec`` reads it: the wrapped OpenAI form's inner spec wins over the outer one."""
    if not isinstance(spec, dict):
        return None
    if spec.get("type") == "function" and isinstance(spec.get("function"), dict):
        return spec["function"].get("side_effect", spec.get("side_effect", "read"))
    return spec.get("side_effect", "read")
