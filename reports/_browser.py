"""Headless Chromium for the report: DOM after scripts ran, and a PNG screenshot.

Used by the browser test and to make ``docs/report-screenshot.png``. The flags keep Chromium
from reaching the network on its own (no component updates, sync, first-run fetches).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--no-first-run",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--mute-audio",
    "--hide-scrollbars",
    "--force-device-scale-factor=1",
)


def find_chromium() -> str | None:
    """Path of a Chromium/Chrome binary on PATH, or None."""
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


def _run(args: list[str], timeout: float) -> subprocess.CompletedProcess:
    binary = find_chromium()
    if binary is None:
        raise FileNotFoundError("no chromium binary on PATH (Debian: apt-get install chromium)")
    with tempfile.TemporaryDirectory(prefix="report-chromium-") as profile:
        cmd = [binary, *FLAGS, f"--user-data-dir={profile}", *args]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)


def dump_dom(html: Path, timeout: float = 60.0) -> tuple[str, str]:
    """(serialised DOM after the page's scripts ran, Chromium's stderr log)."""
    proc = _run(["--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000", "--dump-dom", Path(html).resolve().as_uri()], timeout)
    if proc.returncode != 0 or not proc.stdout.strip():
        raise RuntimeError(f"chromium --dump-dom failed (rc {proc.returncode}): {proc.stderr[-2000:]}")
    return proc.stdout, proc.stderr


def screenshot(html: Path, png: Path, width: int = 1280, height: int = 1600, timeout: float = 60.0) -> Path:
    """Render ``html`` to ``png`` at width x height (viewport, top of the page)."""
    png = Path(png).resolve()
    png.parent.mkdir(parents=True, exist_ok=True)
    proc = _run([f"--window-size={width},{height}", "--virtual-time-budget=5000", f"--screenshot={png}", Path(html).resolve().as_uri()], timeout)
    if proc.returncode != 0 or not png.exists():
        raise RuntimeError(f"chromium --screenshot failed (rc {proc.returncode}): {proc.stderr[-2000:]}")
    return png
