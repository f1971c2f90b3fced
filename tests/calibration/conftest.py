"""Shared fixtures: the real Thakur TriviaQA judges file (read-only, from ../shared) and its gold set."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import pipelines.checks.answer  # noqa: F401  (registers the comparisons a judge's pass is checked with, as the CLI does)
from calibration import GoldSet, load_gold

THAKUR_DIR = Path(__file__).resolve().parents[3] / "shared" / "data" / "external" / "thakur-triviaqa-judges"
THAKUR_CSV = THAKUR_DIR / "TriviaQA_Judges_w_HumanJudgement_V2.csv"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "calibration"


@pytest.fixture(scope="session")
def thakur_csv() -> Path:
    if not THAKUR_CSV.is_file():
        pytest.skip(f"real data not present: {THAKUR_CSV}")
    return THAKUR_CSV


@pytest.fixture(scope="session")
def thakur_gold(thakur_csv: Path) -> GoldSet:
    return load_gold(thakur_csv)


@pytest.fixture(scope="session")
def source_figures(thakur_csv: Path) -> dict[str, tuple[float, float]]:
    """The figures table of SOURCE.md, parsed (never copied into the tests): name -> (% agreement, kappa)."""
    text = (THAKUR_DIR / "SOURCE.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\|\s*([^|]+?)\s*\|\s*([0-9.]+)\s*\|\s*([0-9.]+)\s*\|\s*$", text, flags=re.M)
    return {name: (float(pct), float(kappa)) for name, pct, kappa in rows}


@pytest.fixture
def loopback_openai(monkeypatch, tmp_path):
    """A loopback server speaking the OpenAI wire (tests/servers); no real key, no internet."""
    from tests.servers import LoopbackServer, Reply

    for var in ("OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID", "OPENAI_CUSTOM_HEADERS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-real")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with LoopbackServer(default=Reply("correct")) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        yield srv
