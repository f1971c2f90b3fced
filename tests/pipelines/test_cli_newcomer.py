"""What a newcomer meets first (issue 24, part 5): the help names every accepted format and the Ray
extra as it is installed; tables and summary lines printed to a pipe keep their lines whole, rows
in reading order; the package's shipped data folders are declared packages (no setuptools
"Package would be ignored" warnings), and the wheel carries them."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judge import RunSummary
from pipelines.cli import app
from pipelines.cli._formats import TASK_FORMAT_NAMES, TRAJECTORY_FORMAT_NAMES
from pipelines.cli.grade import print_breakdowns
from pipelines.ingest import TASK_FORMATS, TRAJECTORY_FORMATS

REPO = Path(__file__).resolve().parents[2]
FRAMEWORKS = REPO / "tests" / "fixtures" / "frameworks"
WIDE = {"COLUMNS": "200"}  # the help's option table at a width where no help text is cut


def _help(command: str, env: dict[str, str] | None = None) -> str:
    result = CliRunner().invoke(app, [command, "--help"], env=env)
    assert result.exit_code == 0, result.output
    return result.output


def test_the_help_names_are_the_registrys():
    assert TRAJECTORY_FORMAT_NAMES == TRAJECTORY_FORMATS
    assert TASK_FORMAT_NAMES == TASK_FORMATS


@pytest.mark.parametrize("env", [WIDE, None], ids=["wide", "80 columns"])
def test_grade_help_lists_every_accepted_format(env):
    text = " ".join(_help("grade", env).replace("│", " ").split())  # the help column, its lines joined
    listed = text.split("Trajectory format (auto-detected by default):")[1].split(".")[0]
    assert [name.strip() for name in listed.replace(" or ", ", ").split(",")] == list(TRAJECTORY_FORMATS)
    tasks = text.split("Task format (auto-detected by default):")[1].split(".")[0]
    assert [name.strip() for name in tasks.replace(" or ", ", ").split(",")] == list(TASK_FORMATS)


def test_run_help_lists_the_task_formats():
    text = " ".join(_help("run", WIDE).replace("│", " ").split())
    assert "Task format (auto-detected by default): native, vakra or bfcl." in text


@pytest.mark.parametrize("command", ["grade", "demo"])
def test_the_usage_block_of_docs_cli_lists_every_option(command):
    """docs/cli.md's usage block once lacked --controls, --control-threshold, --min-votes and --task-key."""
    import re

    block = (REPO / "docs" / "cli.md").read_text().split("```text\n", 1)[1].split("```", 1)[0]
    usage = block.split(f"judge {command} ", 1)[1].split("\njudge ", 1)[0]
    documented = set(re.findall(r"--[a-z][a-z-]*", usage))
    offered = set(re.findall(r"--[a-z][a-z-]*", _help(command, WIDE))) - {"--help"}
    assert offered - documented == set()  # every option the command takes is in the usage block
    assert documented - offered == set()  # and none it does not take


def test_the_ray_help_shows_the_extra_to_install():
    assert "pip install 'trajectory-judge[ray]'" in _help("grade", WIDE)  # rich markup would read [ray] as a style


def test_piped_summary_lines_and_tables_are_not_wrapped(tmp_path):
    out = tmp_path / "run"
    log = FRAMEWORKS / "inspect" / "scripted_add.eval"
    result = CliRunner().invoke(app, ["grade", "--trajectories", str(log), "--out", str(out), "--offline"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert "3 graded, 0 trajectory input errors, 0 task input errors" in lines  # the table's title, a line of its own
    # what the run wrote (once a fixed list without report.html, tables/ and drill_steps.jsonl)
    written = next(line for line in lines if line.startswith(f"outputs in {out}/ : ")).split(" : ")[1].split()
    assert written == ["results.jsonl", "summary.json", "report.md", "report.html", "manifest.json", "tables/", "drill_steps.jsonl"]
    assert all((out / name.rstrip("/")).exists() for name in written)
    agreement = next(line for line in lines if line.startswith("agreement with inspect:includes"))
    assert agreement.endswith("0 disagreements, 0 unresolved by us")
    assert any(line.startswith("│   fail at answer_correctness │") for line in lines)


def test_breakdowns_list_hop_counts_as_numbers(tmp_path, capsys):
    tasks, runs = tmp_path / "tasks.jsonl", tmp_path / "runs.jsonl"
    hops = [12, 2, 3, 1]
    tasks.write_text(
        "".join(json.dumps({"task_id": f"t{h}", "question": "q?", "gold_answer": "a", "metadata": {"hop_count": h, "capability": str(h)}}) + "\n" for h in hops)
    )
    runs.write_text("".join(json.dumps({"task_id": f"t{h}", "trajectory_id": f"r{h}", "steps": [], "final_answer": "a"}) + "\n" for h in hops))
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["grade", "--tasks", str(tasks), "--trajectories", str(runs), "--out", str(out), "--offline"])
    assert result.exit_code == 0, result.output
    summary = RunSummary.model_validate_json((out / "summary.json").read_text())
    assert list(summary.by["hop_count"]) == ["1", "12", "2", "3"]  # as summary.json keeps them: sorted as text
    capsys.readouterr()
    print_breakdowns(summary)
    printed = capsys.readouterr().out
    for key in ("capability", "hop count"):
        table = printed.split(f"by {key}\n")[1]
        rows = [line.split("│")[1].strip() for line in table.splitlines() if line.startswith("│")]
        assert rows[:4] == ["1", "2", "3", "12"]


def test_every_shipped_data_folder_is_a_declared_package(monkeypatch):
    """setuptools warns "Package would be ignored" for every folder of a shipped package that
    Python could import (a namespace package) but ``packages`` does not list; the wheel check of
    .ci/run builds it and runs ``judge demo`` from it."""
    import setuptools

    declared: dict = {}
    monkeypatch.setattr(setuptools, "setup", lambda **kw: declared.update(kw))
    monkeypatch.chdir(REPO)
    runpy.run_path(str(REPO / "setup.py"))
    packages = set(declared["packages"])
    assert declared["package_dir"] == {"trajectory_judge_data": "data"}
    shipped = [
        p.relative_to(REPO / "data")
        for p in sorted((REPO / "data").rglob("*"))
        if p.is_dir() and p.name != "__pycache__" and "build" not in p.relative_to(REPO / "data").parts
    ]
    assert shipped  # envs, each environment, the sample
    for folder in shipped:
        assert ".".join(("trajectory_judge_data", *folder.parts)) in packages
    assert not any(p.startswith("trajectory_judge_data.build") for p in packages)  # the generators stay out
