"""What calibrate and the CLI tell a user names the command-line option (``--rubric NAME``), never
the Python keyword behind it (``rubric=``): found by trying ``judge calibrate`` on a gold set of
several rubrics, which answered "choose one with rubric=", and on labels it could not rank,
which answered "pass positive_label" (an option the command did not have)."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

from typer.testing import CliRunner

from pipelines.cli import app

REPO = Path(__file__).resolve().parents[2]
# a keyword argument ("rubric=" at the end of a phrase), or "pass some_parameter"
PYTHON_SPELLING = re.compile(r"(?<![\w-])[a-z][a-z0-9]*(?:_[a-z0-9]+)*=(?=$|[\s\"'),;])|\bpass [a-z]+_[a-z_]+\b")
SAYING = {"print", "echo", "append", "note", "at", "warning", "Exit"}  # console.print, typer.echo, notes.append, stats.note, InputError.at, ...


def _texts(node: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _messages(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        said = isinstance(node, ast.Raise) or (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute | ast.Name)
            and getattr(node.func, "attr", getattr(node.func, "id", "")) in SAYING
        )
        if said:
            out += [(node.lineno, t) for t in _texts(node)]
    return out


def test_no_message_names_a_python_keyword():
    files = sorted((REPO / "calibration").glob("*.py")) + sorted((REPO / "pipelines" / "cli").glob("*.py"))
    assert len(files) > 20
    found = [f"{p.relative_to(REPO)}:{line}: {text!r}" for p in files for line, text in _messages(p) if PYTHON_SPELLING.search(text)]
    assert found == []
    assert PYTHON_SPELLING.search("the gold set mixes rubrics; choose one with rubric=")  # what the check catches
    assert PYTHON_SPELLING.search("cannot tell the positive label; pass positive_label")
    assert not PYTHON_SPELLING.search("--variant wants NAME=DIR (or NAME=builtin); add --rubric NAME")


def test_an_unrankable_label_set_names_the_option_that_ranks_it(tmp_path):
    gold = tmp_path / "gold.jsonl"
    gold.write_text(
        "".join(
            json.dumps(
                {"id": f"i{i}", "rubric": "tone", "material": {"text": "t"}, "human_labels": [{"annotator": "h", "label": lab}], "judge_verdicts": {"j": lab}}
            )
            + "\n"
            for i, lab in enumerate(["warm", "cold", "warm", "cold"])
        )
    )
    runner = CliRunner()
    res = runner.invoke(app, ["calibrate", "--gold", str(gold), "--out", str(tmp_path / "a")])
    assert res.exit_code == 3 and "--positive-label LABEL" in res.output.replace("\n", "")
    res = runner.invoke(app, ["calibrate", "--gold", str(gold), "--positive-label", "warm", "--out", str(tmp_path / "b")])
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "b" / "calibration.json").read_text())["positive_label"] == "warm"
