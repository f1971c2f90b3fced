"""Runs that never lie: atomic outputs, manifest last, no mixing of runs, resume after a kill,
inputs read once (a FIFO, standard input), and what a cached rerun may change."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench.conversations import generate as generate_conversations
from bench.generate import generate
from pipelines.cli import EXIT_USAGE, app, optional_values
from pipelines.run import GradeOptions, RunDirError, RunState, run_grading

runner = CliRunner()
OUTPUTS = ("results.jsonl", "summary.json", "report.md")


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> tuple[Path, Path]:
    return generate(tmp_path_factory.mktemp("gen"), 120, n_tasks=30, seed=9)


def _outputs(out: Path) -> dict[str, bytes]:
    return {name: (out / name).read_bytes() for name in OUTPUTS}


# ---- refusing, overwriting, atomic publishing ---------------------------------------------------


def test_an_out_holding_another_run_is_refused_unless_overwrite(generated, tmp_path):
    tasks, trajectories = generated
    out = tmp_path / "run"
    run_grading(GradeOptions(tasks=tasks, trajectories=trajectories, out=out))
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["complete"] is True and manifest["inputs"][1]["sha256"]
    assert not (out / ".judge-run").exists()  # the run state is gone once the run is complete
    with pytest.raises(RunDirError, match="--overwrite"):
        run_grading(GradeOptions(tasks=tasks, trajectories=trajectories, out=out))
    res = runner.invoke(app, ["grade", "--tasks", str(tasks), "--trajectories", str(trajectories), "--out", str(out)])
    assert res.exit_code == EXIT_USAGE and "--overwrite" in res.output
    (out / "notes.txt").write_text("mine")  # a file that is not a run output is left alone
    first = _outputs(out)
    run_grading(GradeOptions(tasks=tasks, trajectories=trajectories, out=out, overwrite=True))
    assert _outputs(out) == first and (out / "notes.txt").read_text() == "mine"


def test_out_that_is_a_file_is_a_usage_error(generated, tmp_path):
    tasks, trajectories = generated
    (tmp_path / "taken").write_text("x")
    res = runner.invoke(app, ["grade", "--tasks", str(tasks), "--trajectories", str(trajectories), "--out", str(tmp_path / "taken")])
    assert res.exit_code == EXIT_USAGE and "--out" in res.output


class _Killed(BaseException):
    """What a kill looks like to the run: it stops between two statements, nothing cleaned up."""


def _kill_after(monkeypatch, method: str, calls: int) -> None:
    from pipelines.run.merge import Merger

    original = getattr(Merger, method)
    count = {"n": 0}

    def dying(self, *args, **kwargs):
        count["n"] += 1
        if count["n"] > calls:
            raise _Killed
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Merger, method, dying)


def test_a_killed_run_leaves_no_complete_manifest_and_resumes_to_the_same_bytes(generated, tmp_path, monkeypatch):
    tasks, trajectories = generated
    reference = tmp_path / "ref"
    run_grading(GradeOptions(tasks=tasks, trajectories=trajectories, out=reference, shard_lines=25))
    out = tmp_path / "run"
    with monkeypatch.context() as m:
        _kill_after(m, "_merge", 2)  # killed while merging the third shard
        with pytest.raises(_Killed):
            run_grading(GradeOptions(tasks=tasks, trajectories=trajectories, out=out, shard_lines=25))
    assert not (out / "manifest.json").exists() and not (out / "results.jsonl").exists()
    state = json.loads((out / ".judge-run" / "state.json").read_text())
    assert state["trajectories"]["shards"] == 2 and state["phase"] == "grading"
    res = runner.invoke(app, ["grade", "--tasks", str(tasks), "--trajectories", str(trajectories), "--out", str(out)])
    assert res.exit_code == EXIT_USAGE and "--resume" in res.output
    graded: list[int] = []
    from pipelines.run import shards

    original = shards.ShardGrader.add

    def counting(self, loaded, only=None):
        if only is None or loaded.source.item in only:
            graded.append(loaded.source.item)
        return original(self, loaded, only)

    monkeypatch.setattr(shards.ShardGrader, "add", counting)
    outcome = run_grading(GradeOptions(tasks=tasks, trajectories=trajectories, out=out, shard_lines=25, resume=True))
    assert outcome.resumed and min(graded) == 50  # the two merged shards (50 trajectories) were not regraded
    assert _outputs(out) == _outputs(reference)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["complete"] and len(manifest["resumed_at"]) == 1
    assert manifest["inputs"][1]["sha256"] == json.loads((reference / "manifest.json").read_text())["inputs"][1]["sha256"]


def _two_pretty_items(generated: tuple[Path, Path], tmp_path: Path) -> Path:
    """The generated trajectories with two items pretty-printed over many lines, so that a cut
    every few lines splits them (the run then grades two shards joined as one)."""
    items = [json.loads(line) for line in generated[1].read_text().splitlines() if line.strip()]
    path = tmp_path / "pretty.jsonl"
    path.write_text("".join(json.dumps(item, indent=1 if i in (10, 60) else None) + "\n" for i, item in enumerate(items)))
    return path


@pytest.mark.parametrize("workers", [1, 2])
def test_a_run_killed_after_merging_a_joined_shard_resumes(generated, tmp_path, monkeypatch, workers):
    """A joined shard's checkpoint records the hash of the bytes it graded (it once recorded none,
    and --resume then refused the run as if the input had changed)."""
    tasks, trajectories = generated[0], _two_pretty_items(generated, tmp_path)
    reference = tmp_path / "ref"
    run_grading(GradeOptions(tasks=tasks, trajectories=trajectories, out=reference, shard_lines=10**6))
    out = tmp_path / "run"
    with monkeypatch.context() as m:
        _kill_after(m, "_merge", 3)
        with pytest.raises(_Killed):
            run_grading(GradeOptions(tasks=tasks, trajectories=trajectories, out=out, shard_lines=20, workers=workers))
    records = list(RunState(out / ".judge-run").shard_records())
    assert len(records) == 3 and any(r.lines > 20 for r in records)  # a joined shard among them
    assert all(r.sha256 for r in records)
    outcome = run_grading(GradeOptions(tasks=tasks, trajectories=trajectories, out=out, shard_lines=20, workers=workers, resume=True))
    assert outcome.resumed and _outputs(out) == _outputs(reference)


def test_resume_refuses_other_inputs_or_options(generated, tmp_path, monkeypatch):
    tasks, original = generated
    trajectories = tmp_path / "trajectories.jsonl"
    trajectories.write_bytes(original.read_bytes())
    out = tmp_path / "run"
    with monkeypatch.context() as m:
        _kill_after(m, "_merge", 1)
        with pytest.raises(_Killed):
            run_grading(GradeOptions(tasks=tasks, trajectories=trajectories, out=out, shard_lines=25))
    with pytest.raises(RunDirError, match="trajectories"):
        run_grading(GradeOptions(tasks=tasks, trajectories=original, out=out, shard_lines=25, resume=True))
    with pytest.raises(RunDirError, match="shards"):
        run_grading(GradeOptions(tasks=tasks, trajectories=trajectories, out=out, shard_lines=30, resume=True))
    trajectories.write_bytes(original.read_bytes().replace(b'"agent-0"', b'"agent-7"', 1))  # edited in place
    with pytest.raises(RunDirError, match="does not hold the bytes"):
        run_grading(GradeOptions(tasks=tasks, trajectories=trajectories, out=out, shard_lines=25, resume=True))
    with pytest.raises(RunDirError, match="no interrupted run"):
        run_grading(GradeOptions(tasks=tasks, trajectories=trajectories, out=tmp_path / "empty", resume=True))


@pytest.mark.parametrize("name", ["results.partial", "shards.jsonl"])
def test_a_state_file_cut_below_its_checkpoint_is_refused_and_left_as_found(generated, tmp_path, monkeypatch, name):
    """A run-state file shorter than its recorded checkpoint once came back padded with NUL bytes
    (``truncate`` lengthens a short file) and the resume died on "control character" errors."""
    tasks, trajectories = generated
    out = tmp_path / "run"
    with monkeypatch.context() as m:
        _kill_after(m, "_merge", 2)
        with pytest.raises(_Killed):
            run_grading(GradeOptions(tasks=tasks, trajectories=trajectories, out=out, shard_lines=25))
    state_dir = out / ".judge-run"
    path = state_dir / name
    path.write_bytes(path.read_bytes()[:-100])
    before = {p.name: p.read_bytes() for p in state_dir.iterdir() if p.is_file()}
    with pytest.raises(RunDirError, match=f"{name}: .* shorter than its last checkpoint .*damaged.*--overwrite"):
        run_grading(GradeOptions(tasks=tasks, trajectories=trajectories, out=out, shard_lines=25, resume=True))
    assert {p.name: p.read_bytes() for p in state_dir.iterdir() if p.is_file()} == before  # nothing padded, nothing cut
    assert b"\0" not in path.read_bytes()
    res = runner.invoke(app, ["grade", "--tasks", str(tasks), "--trajectories", str(trajectories), "--out", str(out), "--resume"])
    assert res.exit_code == EXIT_USAGE and "shorter than its last checkpoint" in " ".join(res.output.split())


# ---- judges: resume without asking again; cached reruns ------------------------------------------


@pytest.fixture()
def conversations(tmp_path) -> dict[str, Path]:
    return generate_conversations(tmp_path / "conv", 30, seed=4)


def _panel(tmp_path: Path, cache: str):
    from judge.llm import JudgeSettings, build_panel

    return build_panel(JudgeSettings(judges=["openai:judge-a", "openai:judge-b"], cache_path=tmp_path / cache))


def test_resume_during_escalation_asks_no_judge_twice(server, conversations, tmp_path, monkeypatch):
    from tests.servers.loopback import Reply

    server.set_default("judge-a", Reply("correct")).set_default("judge-b", Reply("correct"))
    tasks, trajectories = conversations["turns"], conversations["trajectories"]
    run_grading(GradeOptions(tasks=tasks, trajectories=trajectories, out=tmp_path / "ref", escalator=_panel(tmp_path, "ref.sqlite3"), shard_lines=10))
    live_calls = server.calls()
    assert live_calls > 0
    server.reset_log()
    out = tmp_path / "run"
    from pipelines.run import RunState

    original = RunState.append_round
    rounds = {"n": 0}

    def dying(self, entry):
        original(self, entry)
        rounds["n"] += 1
        raise _Killed  # killed right after the first round was journaled

    with monkeypatch.context() as m:
        m.setattr(RunState, "append_round", dying)
        with pytest.raises(_Killed):
            run_grading(GradeOptions(tasks=tasks, trajectories=trajectories, out=out, escalator=_panel(tmp_path, "run.sqlite3"), shard_lines=10))
    first_round = server.calls()
    server.reset_log()
    outcome = run_grading(
        GradeOptions(tasks=tasks, trajectories=trajectories, out=out, escalator=_panel(tmp_path, "fresh.sqlite3"), shard_lines=10, resume=True)
    )
    assert outcome.resumed
    assert first_round + server.calls() == live_calls  # the journaled round is replayed, never asked again
    assert _outputs(out) == _outputs(tmp_path / "ref")


def test_a_cached_rerun_differs_only_in_cached_flags_and_call_counts(server, conversations, tmp_path):
    from tests.servers.loopback import Reply

    server.set_default("judge-a", Reply("correct")).set_default("judge-b", Reply("incorrect"))
    tasks, trajectories = conversations["turns"], conversations["trajectories"]
    run_grading(GradeOptions(tasks=tasks, trajectories=trajectories, out=tmp_path / "live", escalator=_panel(tmp_path, "c.sqlite3")))
    assert server.calls() > 0
    server.reset_log()
    run_grading(GradeOptions(tasks=tasks, trajectories=trajectories, out=tmp_path / "cached", escalator=_panel(tmp_path, "c.sqlite3")))
    assert server.calls() == 0
    live, cached = _outputs(tmp_path / "live"), _outputs(tmp_path / "cached")
    assert _normalised_results(live["results.jsonl"]) == _normalised_results(cached["results.jsonl"])
    s_live, s_cached = json.loads(live["summary.json"]), json.loads(cached["summary.json"])
    assert s_live["judges"]["calls"] > 0 and s_cached["judges"]["calls"] == 0
    for s in (s_live, s_cached):
        s.pop("judges")
    assert s_live == s_cached
    differing = [(a, b) for a, b in zip(live["report.md"].decode().splitlines(), cached["report.md"].decode().splitlines(), strict=True) if a != b]
    assert differing and all("judge" in a.lower() or "call" in a.lower() or "$" in a for a, _ in differing), differing
    manifest = json.loads((tmp_path / "cached" / "manifest.json").read_text())["judge_answers"]
    assert manifest["live_votes"] == 0 and manifest["cached_votes"] > 0 and manifest["differs_from_a_live_run_only_in"]
    assert json.loads((tmp_path / "live" / "manifest.json").read_text())["judge_answers"]["differs_from_a_live_run_only_in"] == []


def _normalised_results(data: bytes) -> list[dict]:
    rows = [json.loads(line) for line in data.splitlines()]
    for row in rows:
        row.pop("judge_calls", None)
        row.pop("judge_cost_usd", None)
        for turn in row.get("turns", []):
            for check in turn["checks"]:
                for vote in (check.get("decision") or {}).get("votes", []):
                    vote.pop("cached", None)
                    vote.pop("cost_usd", None)
    return rows


# ---- inputs read once: a FIFO, standard input ---------------------------------------------------


def _feed_fifo(path: Path, data: bytes) -> threading.Thread:
    os.mkfifo(path)

    def write() -> None:
        with open(path, "wb") as fh:
            fh.write(data)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


def test_fifo_inputs_are_read_once_and_grade_every_row(generated, tmp_path):
    tasks, trajectories = generated
    reference = tmp_path / "ref"
    run_grading(GradeOptions(tasks=tasks, trajectories=trajectories, out=reference))
    fifo_traj, fifo_tasks = tmp_path / "traj.fifo", tmp_path / "tasks.fifo"
    writers = [_feed_fifo(fifo_traj, trajectories.read_bytes()), _feed_fifo(fifo_tasks, tasks.read_bytes())]
    res = runner.invoke(app, ["grade", "--tasks", str(fifo_tasks), "--trajectories", str(fifo_traj), "--out", str(tmp_path / "fifo"), "--workers", "2"])
    assert res.exit_code == 0, res.output
    for w in writers:
        w.join(5)
    rows = (tmp_path / "fifo" / "results.jsonl").read_text().splitlines()
    assert len(rows) == 120
    assert (tmp_path / "fifo" / "summary.json").read_bytes() == (reference / "summary.json").read_bytes()
    expected = (reference / "results.jsonl").read_text().replace(json.dumps(str(trajectories))[1:-1], json.dumps(str(fifo_traj))[1:-1])
    assert "\n".join(rows) + "\n" == expected


def test_standard_input_is_an_input(generated, tmp_path):
    tasks, trajectories = generated
    res = runner.invoke(app, ["grade", "--tasks", str(tasks), "--trajectories", "-", "--out", str(tmp_path / "stdin")], input=trajectories.read_bytes())
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in (tmp_path / "stdin" / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 120 and {r["source"]["file"] for r in rows} == {"-"}
    manifest = json.loads((tmp_path / "stdin" / "manifest.json").read_text())
    assert manifest["inputs"][1] == {"role": "trajectories", "path": "-", "format": "auto", "sha256": _sha256(trajectories)}
    bad_tasks = b'{"task_id": "t", "question": 5}\n'
    res = runner.invoke(app, ["grade", "--tasks", "-", "--trajectories", str(trajectories), "--out", str(tmp_path / "t")], input=bad_tasks)
    summary = json.loads((tmp_path / "t" / "summary.json").read_text())
    assert {e["file"] for e in summary["errors"] if e["scope"] == "task"} == {"-"}  # errors name the input as given, not a spool
    res = runner.invoke(app, ["grade", "--tasks", "-", "--trajectories", "-", "--out", str(tmp_path / "x")], input=b"")
    assert res.exit_code == EXIT_USAGE and "one input only" in res.output


def _sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_ray_option_takes_an_optional_address():
    assert optional_values(["grade", "--ray"]) == ["grade", "--ray", "local"]
    assert optional_values(["grade", "--ray", "--workers", "2"]) == ["grade", "--ray", "local", "--workers", "2"]
    assert optional_values(["grade", "--ray", "auto"]) == ["grade", "--ray", "auto"]
