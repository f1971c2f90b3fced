"""Usage and output-directory errors exit 2 naming the option and the accepted names (issue 10.8)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipelines.cli import app

REPO = Path(__file__).resolve().parents[2]
TASK = {"task_id": "t1", "question": "q?", "reference_calls": [{"name": "f", "arguments": {"x": 1}}], "gold_answer": "a"}
TRAJ = {"task_id": "t1", "trajectory_id": "r1", "steps": [{"name": "f", "arguments": {"x": 1}, "result": 1}], "final_answer": "a"}


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    paths = {
        "tasks": tmp_path / "tasks.jsonl",
        "trajectories": tmp_path / "runs.jsonl",
        "empty": tmp_path / "empty.jsonl",
        "odd": tmp_path / "odd.jsonl",
        "a_file": tmp_path / "a_file",
        "bad_toml": tmp_path / "bad.toml",
        "bad_config": tmp_path / "bad_config.toml",
    }
    paths["tasks"].write_text(json.dumps(TASK) + "\n")
    paths["trajectories"].write_text(json.dumps(TRAJ) + "\n")
    paths["empty"].write_text("\n\n")
    paths["odd"].write_text('{"foo": 1}\n')
    paths["a_file"].write_text("x")
    paths["bad_toml"].write_text("x = \n")
    paths["bad_config"].write_text("[grading]\nseed = 'x'\n")
    return paths


CASES = {
    # name: (arguments with {placeholders}, option named, text in the message)
    "unknown --format": (["--format", "bogus"], "--format", "accepted: native, openai, anthropic, vakra"),
    "unknown --task-format": (["--task-format", "bogus"], "--task-format", "accepted: native, vakra, bfcl"),
    "--out is a file": (["--out", "{a_file}"], "--out", "is a file, not a directory"),
    "--out under a file": (["--out", "{a_file}/sub"], "--out", "cannot write into"),
    "--reference a format does not take": (["--reference", "{tasks}"], "--reference", "take no reference file"),
    "empty tasks file": (["--tasks", "{empty}"], "--tasks", "holds no tasks"),
    "empty trajectories file": (["--trajectories", "{empty}"], "--trajectories", "holds no trajectories"),
    "undetectable tasks file": (["--tasks", "{odd}"], "--task-format", "accepted: native, vakra, bfcl"),
    "undetectable trajectories file": (["--trajectories", "{odd}"], "--format", "accepted: native, openai, anthropic, vakra"),
    "missing --config": (["--config", "{tasks}.missing"], "--config", "cannot read"),
    "--config not TOML": (["--config", "{bad_toml}"], "--config", "Invalid value"),
    "--config with a bad field": (["--config", "{bad_config}"], "--config", "seed"),
}


def invoke(files: dict[str, Path], extra: list[str], out: Path):
    base = {"--tasks": str(files["tasks"]), "--trajectories": str(files["trajectories"]), "--out": str(out)}
    args = [a.format(**{k: str(v) for k, v in files.items()}) for a in extra]
    for option in list(base):
        if option in args:
            base.pop(option)
    flat = [x for kv in base.items() for x in kv]
    return CliRunner().invoke(app, ["grade", *flat, *args, "--no-replay"], catch_exceptions=False)


@pytest.mark.parametrize("case", sorted(CASES))
def test_usage_error_exits_2_naming_the_option(files, tmp_path, case):
    extra, option, text = CASES[case]
    res = invoke(files, extra, tmp_path / "out")
    assert res.exit_code == 2, res.output
    message = " ".join(res.output.split())
    assert f"error: {option}:" in message and text in message
    assert "fmt=" not in message and "internal error" not in message and "Traceback" not in message


def test_the_installed_command_exits_2_too(files, tmp_path):
    """Through the console script's own error handling, not only the in-process runner."""
    env = {**os.environ, "COLUMNS": "200"}
    cmd = [sys.executable, "-c", "from pipelines.cli import main; main()", "grade", "--tasks", str(files["odd"]), "--trajectories", str(files["trajectories"])]
    proc = subprocess.run([*cmd, "--out", str(tmp_path / "o")], capture_output=True, text=True, cwd=REPO, env=env, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "--task-format" in proc.stderr and "native, vakra, bfcl" in proc.stderr


_WORK_PROBE = """
import gc, json, sys
import pipelines.run
from pipelines.cli import main
real, seen = pipelines.run.run_grading, {}
def probe(*args, **kwargs):
    seen["work"] = [list(gc.get_threshold()), gc.get_freeze_count()]
    return real(*args, **kwargs)
pipelines.run.run_grading = probe
before = list(gc.get_threshold())
try:
    main()
except SystemExit:
    pass
print(json.dumps({"before": before, "after": [list(gc.get_threshold()), gc.get_freeze_count()], **seen}))
"""


def test_the_command_sets_its_imports_aside_once_work_starts_and_restores_the_collector(tmp_path):
    """Start-up runs with rare young collections; the work with the thresholds found at start and
    the imported modules frozen (``judge.core._heap``); after the command, all as it was."""
    from pipelines.resources import sample_dir

    sample = sample_dir()
    args = ["grade", "--tasks", str(sample / "tasks.jsonl"), "--trajectories", str(sample / "trajectories.jsonl"), "--out", str(tmp_path / "out")]
    proc = subprocess.run([sys.executable, "-c", _WORK_PROBE, *args], capture_output=True, text=True, timeout=120)
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["work"][0] == seen["before"]
    assert seen["work"][1] > 10_000  # the modules imported by then, set aside
    assert seen["after"] == [seen["before"], 0]
