"""Shared fixtures: the real Thakur TriviaQA judges file (read-only, from ../shared) and its gold set."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

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
