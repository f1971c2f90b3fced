"""docs/report-screenshot.png (the README's picture of report.html) is a real, non-blank PNG.

Regenerate it from the bundled sample with:
  SOURCE_DATE_EPOCH=1767225600 .venv/bin/judge demo --out /tmp/shot/demo
  .venv/bin/python -c "from reports import screenshot; from pathlib import Path; screenshot(Path('/tmp/shot/demo/report.html'), Path('docs/report-screenshot.png'), width=1280, height=1500)"
"""

from __future__ import annotations

from pathlib import Path

import pytest

IMAGE = Path(__file__).resolve().parents[2] / "docs" / "report-screenshot.png"


def test_readme_screenshot_is_a_non_blank_png():
    assert IMAGE.is_file(), f"{IMAGE} missing: see this module's docstring to regenerate it"
    assert IMAGE.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    image = pytest.importorskip("PIL.Image")
    with image.open(IMAGE) as im:
        assert im.size == (1280, 1500)
        gray = im.convert("L").tobytes()
    assert len(set(gray)) > 20
