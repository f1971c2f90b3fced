"""The console script's start-up: it builds the app of the one command it runs (``app_for``),
which must answer exactly as the whole app does, and a plain one-line ``judge grade`` in a fresh
interpreter imports none of the heavy libraries a run of that size does not use, and creates no
project dataclass (internal records are msgspec Structs)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.main import get_command_name
from typer.testing import CliRunner

from pipelines.cli import app, app_for

REPO = Path(__file__).resolve().parents[2]
ENV = {"COLUMNS": "100", "NO_COLOR": "1"}  # not TERMINAL_WIDTH: typer reads it once, at import
# imported by nothing a judge-free one-line grade needs (clustering, tables, judges, pools, loops)
NOT_IN_A_PLAIN_GRADE = (
    "sklearn", "scipy", "pandas", "numpy", "pyarrow", "jinja2", "openai", "instructor", "anthropic", "httpx",
    "asyncio", "multiprocessing", "concurrent.futures", "ssl", "rich.progress", "dateutil", "text_to_num",
    "judge.llm", "pipelines.env._runtime", "sqlite3",
)  # fmt: skip


PROJECT = ("judge", "rubrics", "calibration", "reports", "pipelines", "data")
# the project's dataclasses among the classes of every module it imported (the one left is a Mapping:
# a Struct's metaclass cannot be mixed with ABCMeta)
_DATACLASSES_MADE = (
    "import dataclasses, sys\n"
    "def _dataclasses(project):\n"
    "    return {f'{m.__name__}.{v.__qualname__}' for m in list(sys.modules.values()) if m.__name__.split('.')[0] in project\n"
    "            for v in vars(m).values() if isinstance(v, type) and v.__module__ == m.__name__ and dataclasses.is_dataclass(v)}\n"
)


def _paths() -> list[list[str]]:
    """Every command of the app as its words: ``["grade"]``, ``["env", "list"]``, ..."""
    out: list[list[str]] = []
    for c in app.registered_commands:
        out.append([c.name or get_command_name(c.callback.__name__)])  # type: ignore[union-attr]
    for g in app.registered_groups:
        assert g.name is not None and g.typer_instance is not None
        out.append([g.name])
        out += [[g.name, c.name or get_command_name(c.callback.__name__)] for c in g.typer_instance.registered_commands]  # type: ignore[union-attr]
    return out


def _argvs() -> list[list[str]]:
    """Help and a bad option for every command path; for the app and each group also no arguments
    and an unknown sub-command (a command given those would run: ``rubrics export NAME`` writes)."""
    argvs: list[list[str]] = [[], ["--help"], ["no-such-command"], ["--bogus"]]
    groups = {g.name for g in app.registered_groups}
    for path in _paths():
        argvs += [[*path, "--help"], [*path, "--bogus"]]
        if path[0] in groups and len(path) == 1:
            argvs += [path, [*path, "no-such-thing"]]
    return argvs


def test_every_command_is_found():
    names = {" ".join(p) for p in _paths()}
    assert {"grade", "demo", "report", "resume", "run", "calibrate", "schema", "env", "env list", "gold", "rubrics"} <= names


@pytest.mark.parametrize("argv", _argvs(), ids=lambda a: " ".join(a) or "(none)")
def test_the_app_of_one_command_answers_as_the_whole_app(argv):
    runner = CliRunner()
    whole = runner.invoke(app, argv, env=ENV, prog_name="judge")
    one = runner.invoke(app_for(argv), argv, env=ENV, prog_name="judge")
    assert (one.exit_code, one.output) == (whole.exit_code, whole.output)
    if argv and argv[0] in {p[0] for p in _paths()}:
        assert app_for(argv) is not app and len(app_for(argv).registered_commands) + len(app_for(argv).registered_groups) == 1


_CHILD = """
import contextlib, io, json, sys
from pipelines.cli import main
out = []
for argv in json.loads(sys.argv[1]):
    sys.argv = ["judge", *argv]
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        try:
            main()
            code = 0
        except SystemExit as exc:
            code = exc.code
    out.append([code, buf.getvalue()])
print(json.dumps(out))
"""


def test_every_command_help_in_a_fresh_interpreter_is_the_whole_apps():
    """The console script (``main``) in a fresh process: every command's help, word for word and
    exit code for exit code, as the whole app gives it here."""
    import os

    argvs = [[], ["--help"], *([*p, "--help"] for p in _paths())]
    env = {**os.environ, **ENV}
    proc = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(argvs)], capture_output=True, text=True, env=env, check=True)
    got = json.loads(proc.stdout)
    runner = CliRunner()
    for argv, (code, output) in zip(argvs, got, strict=True):
        whole = runner.invoke(app, argv, env=ENV, prog_name="judge")
        assert (code, output) == (whole.exit_code, whole.output), argv
        assert code in (0, 2) and "Usage: judge" in output, argv


def test_a_one_line_grade_in_a_fresh_interpreter_imports_no_heavy_module(tmp_path):
    from bench.conversations import generate

    paths = generate(tmp_path / "conv", 1)
    code = (
        _DATACLASSES_MADE + "import sys\nfrom pipelines.cli import main\nsys.argv[0] = 'judge'\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    code = exc.code\nelse:\n    code = 0\n"
        f"print('LOADED=' + ','.join(m for m in {NOT_IN_A_PLAIN_GRADE!r} if m in sys.modules), file=sys.stderr)\n"
        f"print('DATACLASSES=' + ','.join(sorted(_dataclasses({PROJECT!r}))), file=sys.stderr)\n"
        "sys.exit(code)\n"
    )
    args = ["grade", "--tasks", str(paths["episode"]), "--trajectories", str(paths["trajectories"]), "--out", str(tmp_path / "out")]
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]  # 1: the trajectory failed its checks
    assert "1 graded" in proc.stdout
    assert (tmp_path / "out" / "results.jsonl").read_text().count("\n") == 1
    loaded = next(x for x in proc.stderr.splitlines() if x.startswith("LOADED="))[len("LOADED=") :]
    assert loaded == "", f"a one-line grade imported {loaded}"
    # internal records are msgspec Structs (docs/CONVENTIONS.md): a dataclass costs 0.5-0.75 ms to create on 3.11
    made = next(x for x in proc.stderr.splitlines() if x.startswith("DATACLASSES="))[len("DATACLASSES=") :]
    assert made.split(",") == ["pipelines.ingest._bfcl_scores.BfclScoreLabels"], f"a one-line grade created the dataclasses {made}"
