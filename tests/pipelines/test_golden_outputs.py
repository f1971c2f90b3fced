"""Golden outputs: what ``judge grade`` writes, byte for byte, on the bundled sample (replay, and a
loopback judge panel with control items) and on the shared real-format samples (tau2, Inspect, BFCL
v3 with its score files as ``--labels`` and v4, OTel / Langfuse, OpenAI Agents SDK and LangGraph
traces).

The golden files in ``tests/fixtures/golden/<case>/`` were written by the code before the reshaping
of ``pipelines/`` (issue 25; see ``tests/fixtures/golden/README.md``): ``results.jsonl``,
``summary.json`` and ``report.md`` must stay byte-identical, and ``report.html`` too but for its one
``Generated`` line (kept as a sha256: the file is large); ``manifest.json`` holds timestamps and
versions and is not compared (the project's determinism rule). A resumed run (killed while merging
shards, or after a journaled escalation round) must write the same bytes.

Regenerate (only for a change that means to change outputs, and say why in the commit):
``.venv/bin/python -m tests.pipelines.test_golden_outputs [CASE ...]`` (no case: every case; name
only the cases the change affects).
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "fixtures" / "golden"
FORMATS = "../shared/data/external/formats"  # relative to the repository root: rows name inputs as given
SHARED = ROOT / FORMATS
SAMPLE = ["--tasks", "data/sample/tasks.jsonl", "--trajectories", "data/sample/trajectories.jsonl"]
JUDGES = ["--judge", "openai:judge-a", "--judge", "openai:judge-b", "--judge", "anthropic:judge-c"]
V3 = f"{FORMATS}/bfcl/v3_Salesforce_Llama-xLAM-2-8b-fc-r"
V4 = f"{FORMATS}/bfcl/v4_roshangrewal_gemma4-e4b-toolcall-v02"
TRACES = "tests/fixtures/golden/traces_tasks.jsonl"


def _bfcl_v3(category: str) -> list[str]:
    return [
        "--trajectories",
        f"{V3}/result/Salesforce_Llama-xLAM-2-8b-fc-r/BFCL_v3_{category}_result.json",
        "--tasks",
        f"{V3}/data/BFCL_v3_{category}.json",
        "--reference",
        f"{V3}/data/possible_answer/BFCL_v3_{category}.json",
        "--labels",
        f"{V3}/score/Salesforce_Llama-xLAM-2-8b-fc-r",
    ]


def _bfcl_v4(category: str, where: str) -> list[str]:
    return [
        "--trajectories",
        f"{V4}/result/roshangrewal_gemma4-e4b-toolcall-v02/{where}/BFCL_v4_{category}_result.json",
        "--tasks",
        f"{V4}/data/BFCL_v4_{category}.json",
        "--reference",
        f"{V4}/data/possible_answer/BFCL_v4_{category}.json",
    ]


# case -> the arguments of `judge grade` (without --out), run in the repository root
CASES: dict[str, list[str]] = {
    "sample-replay": [*SAMPLE, "--workers", "2"],
    "sample-judges": [*SAMPLE, *JUDGES, "--workers", "1"],
    "tau2-airline": ["--trajectories", f"{FORMATS}/tau2/airline_gpt-4.1-mini_results.json"],
    "tau2-retail": ["--trajectories", f"{FORMATS}/tau2/retail_gpt-4.1-mini_results.json"],
    "tau2-telecom": ["--trajectories", f"{FORMATS}/tau2/telecom_gpt-4.1-mini_results.json"],
    "inspect-formats-eval": ["--trajectories", f"{FORMATS}/inspect/inspect_ai_log_formats.eval"],
    "inspect-formats-json": ["--trajectories", f"{FORMATS}/inspect/inspect_ai_log_formats.json"],
    "inspect-deduplication": ["--trajectories", f"{FORMATS}/inspect/inspect_ai_log_message_deduplication.eval"],
    "inspect-tool-call-error": ["--trajectories", f"{FORMATS}/inspect/inspect_ai_log_tool_call_error.json"],
    "inspect-metr": ["--trajectories", f"{FORMATS}/inspect/metr_oxdna_simple_claude-opus-4-1_2-of-6-epochs.eval"],
    "bfcl-v3-simple": _bfcl_v3("simple"),
    "bfcl-v3-parallel": _bfcl_v3("parallel"),
    "bfcl-v3-multi-turn": _bfcl_v3("multi_turn_base"),  # replayed in BFCL's own environments (bfcl-eval)
    "bfcl-v4-simple-python": _bfcl_v4("simple_python", "non_live"),
    "bfcl-v4-live-simple": _bfcl_v4("live_simple", "live"),
    "otel-koog": ["--tasks", TRACES, "--trajectories", f"{FORMATS}/otel-genai/langfuse-framework-traces/koog-2025-08-26.trace.json"],
    "otel-microsoft-agent": ["--tasks", TRACES, "--trajectories", f"{FORMATS}/otel-genai/langfuse-framework-traces/microsoft-agent-2025-12-17.trace.json"],
    "openai-agents": ["--tasks", TRACES, "--trajectories", f"{FORMATS}/openai-agents/openai-agents-2025-09-30.trace.json"],
    "langgraph": ["--tasks", TRACES, "--trajectories", f"{FORMATS}/openai-agents/langgraph-python-2025-08-22.trace.json"],
}
COMPARED = ("results.jsonl", "summary.json", "report.md")
HTML_DIGEST = "report.html.sha256"
GZIP_OVER = 256 << 10  # a golden file larger than this is kept gzipped (name.gz, no timestamp in it)
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason="the shared samples (../shared) are not checked out")


def _needs(case: str) -> list:
    return [] if case.startswith("sample-") else [needs_shared]


def html_digest(path: Path) -> str:
    """sha256 of report.html without its one ``Generated`` line (the timestamp)."""
    lines = [line for line in path.read_bytes().splitlines(keepends=True) if b'class="generated"' not in line]
    return hashlib.sha256(b"".join(lines)).hexdigest()


def outputs(out: Path) -> dict[str, bytes]:
    found = {name: (out / name).read_bytes() for name in COMPARED}
    found[HTML_DIGEST] = (html_digest(out / "report.html") + "\n").encode()
    return found


@contextmanager
def in_root() -> Iterator[None]:
    before = os.getcwd()
    os.chdir(ROOT)
    try:
        yield
    finally:
        os.chdir(before)


def panel_replies(server) -> None:
    """judge-a and judge-c answer as a careful grader; judge-b says yes to everything (control items
    catch it, so the panel's gate sets its votes aside)."""
    from tests.pipelines.test_controls import honest, lenient

    server.set_responder("judge-a", honest).set_responder("judge-b", lenient).set_responder("judge-c", honest)


def grade(case: str, out: Path, cache: Path | None = None) -> None:
    from typer.testing import CliRunner

    from pipelines.cli import app

    args = ["grade", *CASES[case], "--out", str(out)]
    if "--judge" in args:
        args += ["--cache", str(cache or out.parent / f"{case}.sqlite3")]
    with in_root():
        result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output


def golden(case: str) -> dict[str, bytes]:
    """The golden bytes of ``case`` (a gzipped file read back as it was written)."""
    found = {}
    for name in (*COMPARED, HTML_DIGEST):
        path = GOLDEN / case / name
        found[name] = path.read_bytes() if path.exists() else gzip.decompress(path.with_name(name + ".gz").read_bytes())
    return found


def write_golden(case: str, files: dict[str, bytes]) -> None:
    target = GOLDEN / case
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    for name, data in files.items():
        if len(data) > GZIP_OVER:
            (target / f"{name}.gz").write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
        else:
            (target / name).write_bytes(data)


@pytest.mark.parametrize("case", [pytest.param(c, marks=_needs(c)) for c in CASES])
def test_outputs_are_the_golden_bytes(case, tmp_path, request):
    if "--judge" in CASES[case]:
        panel_replies(request.getfixturevalue("server"))
    out = tmp_path / "run"
    grade(case, out)
    want, got = golden(case), outputs(out)
    assert [name for name in want if got[name] != want[name]] == []


class _Killed(BaseException):
    """What a kill looks like to the run: it stops between two statements, nothing cleaned up."""


def _dies_after(monkeypatch, cls: type, method: str, calls: int) -> None:
    """``cls.method`` works ``calls`` times, then the process "dies" right after the next call
    (its checkpoint is on disk: the run must go on from it)."""
    original = getattr(cls, method)
    count = {"n": 0}

    def dying(self, *args, **kwargs):
        original(self, *args, **kwargs)
        count["n"] += 1
        if count["n"] > calls:
            raise _Killed

    monkeypatch.setattr(cls, method, dying)


def _sample_options(out: Path, **extra):
    from pipelines.grade import Replayer
    from pipelines.run import GradeOptions

    return GradeOptions(
        tasks=Path("data/sample/tasks.jsonl"), trajectories=Path("data/sample/trajectories.jsonl"), out=out, replayer=Replayer(), shard_lines=100, **extra
    )


@pytest.mark.parametrize("workers", [1, 2])
def test_a_run_killed_while_grading_resumes_to_the_golden_bytes(tmp_path, monkeypatch, workers):
    """Killed after checkpointing its third shard (of seven): resumed, the run regrades nothing it
    merged (the shard records hold the aggregate, ids and report rows) and writes the same bytes."""
    from pipelines.run import RunState, run_grading

    out = tmp_path / "run"
    with in_root():
        with monkeypatch.context() as m:
            _dies_after(m, RunState, "append_shard", 2)
            with pytest.raises(_Killed):
                run_grading(_sample_options(out, workers=workers))
        assert not (out / "results.jsonl").exists()
        outcome = run_grading(_sample_options(out, workers=workers, resume=True))
    assert outcome.resumed
    want, got = golden("sample-replay"), outputs(out)
    assert [name for name in want if got[name] != want[name]] == []


def test_a_run_killed_after_a_judged_round_resumes_to_the_golden_bytes(server, tmp_path, monkeypatch):
    """Killed right after journaling its first escalation round: resumed (a fresh judge cache), the
    journaled round is replayed, never asked again, and the outputs are the golden ones."""
    from judge.llm import JudgeSettings, build_panel
    from pipelines.run import RunState, run_grading

    panel_replies(server)

    def panel(cache: str):
        judges = [CASES["sample-judges"][i + 1] for i, arg in enumerate(CASES["sample-judges"]) if arg == "--judge"]
        return build_panel(JudgeSettings(judges=judges, cache_path=tmp_path / cache))

    out = tmp_path / "run"
    with in_root():
        with monkeypatch.context() as m:
            _dies_after(m, RunState, "append_round", 0)
            with pytest.raises(_Killed):
                run_grading(_sample_options(out, escalator=panel("first.sqlite3")))
        asked = server.calls()
        server.reset_log()
        outcome = run_grading(_sample_options(out, escalator=panel("second.sqlite3"), resume=True))
    assert outcome.resumed and asked > 0
    want, got = golden("sample-judges"), outputs(out)
    assert [name for name in want if got[name] != want[name]] == []


def regenerate(cases: list[str] | None = None) -> None:  # pragma: no cover - run by hand (see the module docstring)
    """Rewrite the golden files of ``cases`` (default: every case)."""
    unknown = sorted(set(cases or []) - set(CASES))
    if unknown:
        raise SystemExit(f"unknown cases {unknown}; the cases: {', '.join(CASES)}")
    import tempfile

    from tests.judge.helpers import isolate_env
    from tests.servers import LoopbackServer

    class Env:  # what isolate_env needs of pytest's monkeypatch
        def setenv(self, name: str, value: str) -> None:
            os.environ[name] = value

        def delenv(self, name: str, raising: bool = True) -> None:
            os.environ.pop(name, None)

    with tempfile.TemporaryDirectory() as tmp, LoopbackServer() as server:
        isolate_env(Env(), Path(tmp))
        os.environ["OPENAI_BASE_URL"], os.environ["ANTHROPIC_BASE_URL"] = server.openai_base_url, server.anthropic_base_url
        panel_replies(server)
        for case in cases or CASES:
            out = Path(tmp) / case / "run"  # named as in the test: report.html is titled by the folder
            grade(case, out)
            write_golden(case, outputs(out))
            print(case, file=sys.stderr)


if __name__ == "__main__":  # pragma: no cover
    regenerate(sys.argv[1:] or None)
