"""The documentation's code examples run, as pydantic-ai's ``tests/test_examples.py`` runs its own.

Each block of ``docs/**/*.md`` and ``README.md`` is one test named ``page:line`` (the rules are in
``tests/docs/examples.py``): python blocks are executed and their ``# >`` output compared, JSON
tasks read by the native task reader, TOML configs loaded as ``--config`` loads them, shell blocks
marked ``run`` executed with bash against the bundled sample (``judge`` being this checkout's
command) and the others skipped with the reason the page gives. Nothing reaches the network: no
API key is passed on, the providers' base URLs and the proxies point at a closed loopback port,
and in-process examples may connect to loopback only.
"""

from __future__ import annotations

import contextlib
import io
import ipaddress
import json
import os
import socket
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.docs.examples import ROOT, RUN_LANGUAGES, Example, all_examples, find_examples, problems

EXAMPLES = all_examples()
CLOSED = "http://127.0.0.1:9"  # the discard port: nothing listens there, a stray request fails at once
SHARED = ROOT.parent / "shared"


def test_every_block_says_what_it_is():
    found = [p for ex in EXAMPLES for p in problems(ex)]
    assert not found, "\n".join(found)


def test_the_examples_are_found():
    """The finder sees the blocks the pages hold: each kind that runs is there, and shell blocks run."""
    langs = {ex.lang for ex in EXAMPLES}
    assert langs >= RUN_LANGUAGES
    assert any(ex.lang == "sh" and ex.mark == "run" for ex in EXAMPLES)
    assert any(ex.page == "README.md" for ex in EXAMPLES)


def test_the_finder_reads_marks_and_reports_undecided_blocks():
    text = "\n".join(
        [
            "<!-- example: run -->",
            "```sh",
            "judge env list",
            "```",
            "<!-- example: skip (needs a key (a hosted judge)) -->",
            "```sh",
            "judge grade --judge openai:x",
            "```",
            "```sh",
            "judge env list",
            "```",
            "```",
            "plain",
            "```",
            "<!-- example: skip () -->",
            "```python",
            "print(1)",
            "# > 1",
            "```",
        ]
    )
    run, skip, unmarked, bare, empty_reason = find_examples(text, "page.md")
    assert (run.mark, run.line, run.code) == ("run", 2, "judge env list\n")
    assert (skip.mark, skip.why) == ("skip", "needs a key (a hosted judge)")
    assert problems(run) == [] and problems(skip) == []
    assert "needs <!-- example: run -->" in problems(unmarked)[0]
    assert "without a language" in problems(bare)[0]
    assert "must say why" in problems(empty_reason)[0]
    assert empty_reason.expected_output() == ["1"]
    with pytest.raises(ValueError, match=r"page\.md:1: a code fence that never closes"):
        find_examples("```sh\njudge env list\n", "page.md")


@pytest.fixture
def offline(monkeypatch, tmp_path):
    """No key, no provider, no proxy off this machine; in-process sockets reach loopback only."""
    for name in list(os.environ):
        if name.endswith(("_API_KEY", "_TOKEN")):
            monkeypatch.delenv(name)
    for name in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.setenv(name, CLOSED)
    monkeypatch.setenv("NO_PROXY", "")
    monkeypatch.setenv("no_proxy", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # the judge cache's default home
    real_connect = socket.socket.connect

    def loopback_only(sock: socket.socket, address):
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            try:
                allowed = ipaddress.ip_address(address[0]).is_loopback
            except ValueError:
                allowed = False
            if not allowed:
                raise OSError(f"a documentation example tried to reach {address[0]}: examples stay off the network")
        return real_connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", loopback_only)


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A folder laid out as the repository root is for a reader: data/ there, ../shared beside it."""
    work = tmp_path / "repo"
    work.mkdir()
    (work / "data").symlink_to(ROOT / "data")
    if SHARED.is_dir():
        (tmp_path / "shared").symlink_to(SHARED)
    monkeypatch.chdir(work)
    return work


@pytest.mark.parametrize("example", [ex for ex in EXAMPLES if ex.lang in RUN_LANGUAGES], ids=lambda ex: ex.id)
def test_example(example: Example, offline, workdir):
    if example.mark == "skip":
        pytest.skip(example.why)
    {"python": run_python, "json": read_json, "toml": load_toml, "sh": run_shell}[example.lang](example, workdir)


def run_python(example: Example, workdir: Path) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(example.code, example.id, "exec"), {"__name__": "__main__"})
    expected = example.expected_output()
    if expected is not None:
        assert out.getvalue().splitlines() == expected, f"{example.id}: the output differs from its # > lines"


def read_json(example: Example, workdir: Path) -> None:
    value = json.loads(example.code)
    if isinstance(value, dict) and "task_id" in value and ("question" in value or "turns" in value):
        from pipelines.ingest import load_tasks

        path = workdir / "task.json"
        path.write_text(example.code, encoding="utf-8")
        taskset = load_tasks(path, strict=True)  # strict: a field the schema does not know is an error
        assert not taskset.errors, [e.render() for e in taskset.errors]
        assert list(taskset.tasks) == [value["task_id"]]


def load_toml(example: Example, workdir: Path) -> None:
    from judge.llm import load_config_file
    from pipelines.config import GradingConfig

    tomllib.loads(example.code)  # the TOML itself, with the parser's own message
    path = workdir / "config.toml"
    path.write_text(example.code, encoding="utf-8")
    load_config_file(path)  # panels, providers, prices, retries: an unknown key or a bad value raises
    GradingConfig.load(path)  # the [grading] section


def run_shell(example: Example, workdir: Path) -> None:
    if "../shared/" in example.code and not SHARED.is_dir():
        pytest.skip(f"real data not present: {SHARED}")
    bin_dir = workdir.parent / "bin"
    bin_dir.mkdir()
    judge = bin_dir / "judge"  # this checkout's judge command, whatever is installed
    judge.write_text(
        f'#!/bin/sh\nexec {sys.executable} -c \'import sys; from pipelines.cli import main; sys.argv[0] = "judge"; main()\' "$@"\n',
        encoding="utf-8",
    )
    judge.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    done = subprocess.run(["bash", "-e", "-c", example.code], cwd=workdir, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, f"{example.id} exited {done.returncode}\n--- stdout\n{done.stdout[-4000:]}\n--- stderr\n{done.stderr[-4000:]}"
