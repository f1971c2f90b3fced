"""Shared helpers for the ingest tests: fixture paths and small file writers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "formats"


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES


@pytest.fixture
def write_jsonl(tmp_path):
    """write_jsonl(name, items) -> path; items that are str/bytes are written verbatim as lines."""

    def write(name: str, items: list) -> Path:
        path = tmp_path / name
        chunks = []
        for item in items:
            if isinstance(item, bytes):
                chunks.append(item)
            elif isinstance(item, str):
                chunks.append(item.encode("utf-8"))
            else:
                chunks.append(json.dumps(item, ensure_ascii=False).encode("utf-8"))
        path.write_bytes(b"\n".join(chunks) + b"\n")
        return path

    return write
