"""Usage and output-directory errors exit 2 naming the option and the accepted names (issue 10.8)."""

from __future__ import annotations

import gzip
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
        "unknown_section": tmp_path / "unknown_section.toml",
    }
    paths["tasks"].write_text(json.dumps(TASK) + "\n")
    paths["trajectories"].write_text(json.dumps(TRAJ) + "\n")
    paths["empty"].write_text("\n\n")
    paths["odd"].write_text('{"foo": 1}\n')
    paths["a_file"].write_text("x")
    paths["bad_toml"].write_text("x = \n")
    paths["bad_config"].write_text("[grading]\nseed = 'x'\n")
    paths["unknown_section"].write_text("[gradingg]\nseed = 1\n")
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
    # once exit 4 "invalid judge configuration" while a wrong [grading] value was exit 2
    "--config with an unknown section": (["--config", "{unknown_section}"], "--config", "unknown top-level key or section gradingg (did you mean grading?)"),
    # once pydantic's "1 validation error for JudgeSettings / rule / ... https://errors.pydantic.dev/..." (exit 4)
    "unknown --vote": (["--judge", "openai:m", "--vote", "maj"], "--vote", "must be majority, unanimous or weighted, not 'maj'"),
    "negative --max-cost": (["--judge", "openai:m", "--max-cost", "-1"], "--max-cost", "must be at least 0.0, not -1.0"),
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


def test_judge_setting_errors_show_no_pydantic_output(files, tmp_path):
    res = invoke(files, ["--judge", "openai:m", "--vote", "maj"], tmp_path / "out")
    assert "validation error" not in res.output and "pydantic" not in res.output and "JudgeSettings" not in res.output
    assert not (tmp_path / "out").exists()


def test_judge_run_names_its_own_max_cost_option(capsys):
    import typer

    from pipelines.cli._common import judge_settings

    with pytest.raises(typer.Exit) as exited:
        judge_settings(["openai:m"], None, None, False, False, -1.0, None, None, None, options={"max_cost_usd": "--judge-max-cost"})
    assert exited.value.exit_code == 2
    assert "error: --judge-max-cost: must be at least 0.0, not -1.0" in " ".join(capsys.readouterr().err.split())


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


EMPTY_INPUTS = {
    # name: the bytes of a trajectories input that holds no trajectory (None: /dev/null itself)
    "an empty file": b"",
    "/dev/null": None,
    "blank lines": b"\n \n\t\n",
    "an empty array": b"[ ]\n",
    "an empty gzip": gzip.compress(b""),
}


@pytest.mark.parametrize("case", sorted(EMPTY_INPUTS))
@pytest.mark.parametrize("stdin", [False, True], ids=["file", "stdin"])
def test_an_empty_trajectories_input_writes_nothing_and_the_rerun_works(files, tmp_path, case, stdin):
    """Refused (exit 2) before --out is touched: it used to write a whole run of nothing there, then
    exit 2, and that folder refused the rerun with a good file ("holds another run's files")."""
    data = EMPTY_INPUTS[case]
    path = Path("/dev/null") if data is None else tmp_path / "nothing.jsonl"
    if data is not None:
        path.write_bytes(data)
    out = tmp_path / "out"
    args = ["grade", "--tasks", str(files["tasks"]), "--trajectories", "-" if stdin else str(path), "--out", str(out), "--no-replay"]
    res = CliRunner().invoke(app, args, input=path.read_bytes() if stdin else None, catch_exceptions=False)
    assert res.exit_code == 2, res.output
    shown = "standard input" if stdin else str(path)
    assert f"error: --trajectories: {shown} is empty: it holds no trajectories" in " ".join(res.output.split())
    assert "outputs in" not in res.output and not out.exists()
    again = invoke(files, [], out)
    assert again.exit_code == 0, again.output


def test_an_empty_trajectories_input_without_tasks_is_said_to_be_empty(files, tmp_path):
    res = CliRunner().invoke(app, ["grade", "--trajectories", str(files["empty"]), "--out", str(tmp_path / "out")], catch_exceptions=False)
    assert res.exit_code == 2 and "holds no trajectories" in res.output and "carries no tasks" not in res.output
    assert not (tmp_path / "out").exists()


def test_a_usage_error_on_the_way_in_leaves_no_spool_behind(files, tmp_path, monkeypatch):
    import tempfile

    spools = tmp_path / "tmp"
    spools.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spools))
    args = ["grade", "--tasks", str(files["tasks"]), "--trajectories", "-", "--out", str(tmp_path / "out"), "--no-replay"]
    res = CliRunner().invoke(app, args, input=b"", catch_exceptions=False)
    assert res.exit_code == 2 and "holds no trajectories" in res.output
    assert list(spools.iterdir()) == []  # standard input's spool removed at once, not when collected


def test_an_empty_input_with_overwrite_leaves_the_run_in_out_as_it_was(files, tmp_path):
    out = tmp_path / "out"
    assert invoke(files, [], out).exit_code == 0
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    res = invoke(files, ["--trajectories", "{empty}", "--overwrite"], out)
    assert res.exit_code == 2 and "holds no trajectories" in res.output
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before


def test_run_grading_refuses_an_empty_input_unless_asked_to_grade_it(files, tmp_path):
    """The library says it as the CLI does; ``empty_ok`` is judge run's: a run that collected nothing
    (every trial failed) is graded as such beside its run_errors.jsonl."""
    from pipelines.ingest import UsageError
    from pipelines.run import GradeOptions, run_grading

    with pytest.raises(UsageError, match="holds no trajectories"):
        run_grading(GradeOptions(tasks=files["tasks"], trajectories=files["empty"], out=tmp_path / "out"))
    assert not (tmp_path / "out").exists()
    outcome = run_grading(GradeOptions(tasks=files["tasks"], trajectories=files["empty"], out=tmp_path / "out", empty_ok=True))
    assert outcome.summary.counts.trajectories == 0 and (tmp_path / "out" / "results.jsonl").read_bytes() == b""


@pytest.mark.parametrize("url", ["127.0.0.1:44393/v1", "ftp://127.0.0.1:44393/v1", "http://127.0.0.1:99999/v1", "http://127.0.0.1:44393/v1\n"])
def test_a_bad_judge_base_url_exits_4_before_grading(files, tmp_path, url):
    out = tmp_path / "out"
    base = ["grade", "--tasks", str(files["tasks"]), "--trajectories", str(files["trajectories"]), "--out", str(out), "--no-replay", "--judge", "openai:m"]
    res = CliRunner().invoke(app, [*base, "--no-cache"], env={"OPENAI_BASE_URL": url, "OPENAI_API_KEY": "x"}, catch_exceptions=False)
    assert res.exit_code == 4, res.output
    message = " ".join(res.output.split())
    assert "invalid judge configuration: OPENAI_BASE_URL:" in message and "is not a usable base URL" in message
    assert not out.exists()  # refused before grading: no run, interrupted or not
    config = tmp_path / "judges.toml"
    config.write_text(f"[providers.openai]\nbase_url = {json.dumps(url)}\n")
    res = CliRunner().invoke(app, [*base, "--no-cache", "--config", str(config)], env={"OPENAI_API_KEY": "x"}, catch_exceptions=False)
    assert res.exit_code == 4 and "providers.openai.base_url" in " ".join(res.output.split()), res.output
    assert not out.exists()


def test_the_config_keys_are_the_judge_config_files_and_grading():
    from judge.llm._settings import ConfigFile
    from pipelines.config import CONFIG_KEYS

    assert set(CONFIG_KEYS) == set(ConfigFile.model_fields)


def test_an_unknown_section_beside_judges_is_a_usage_error_too(files, tmp_path):
    res = invoke(files, ["--config", str(files["unknown_section"]), "--judge", "openai:m", "--offline"], tmp_path / "out")
    assert res.exit_code == 2 and "error: --config:" in " ".join(res.output.split()), res.output
