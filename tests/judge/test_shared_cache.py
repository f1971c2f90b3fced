"""Runs sharing one judge cache pay once for a question they ask at the same time (issue 10
item 10): a claim in the SQLite cache, with a lease, so a dead claimant never blocks others.

Two real processes against one loopback server that counts requests; then the claim's edge
cases (waiting for a live claimant's answer, a released claim, a dead or expired claimant, lease
renewal) within one process, where another ``JudgeCache`` on the same file plays the other run.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from judge.llm import JudgeCache
from judge.llm._cache import HOST
from tests.judge.helpers import answer_request, make_panel
from tests.servers import Delay, Reply

ROOT = Path(__file__).resolve().parents[2]
N = 4


def _worker(tmp_path: Path, server, name: str, *extra: str) -> subprocess.Popen:
    args = [sys.executable, "-m", "tests.judge.claim_worker", "--cache", str(tmp_path / "cache.sqlite3"), "--base-url", server.openai_base_url]
    out = open(tmp_path / f"{name}.out", "w")  # noqa: SIM115  (the child holds it)
    err = open(tmp_path / f"{name}.err", "w")  # noqa: SIM115  (a file, not a pipe: a chatty child never blocks on a full pipe)
    return subprocess.Popen([*args, "--n", str(N), *extra], cwd=ROOT, stdout=out, stderr=err, text=True, env=dict(os.environ))


def _result(tmp_path: Path, name: str, proc: subprocess.Popen) -> dict:
    proc.wait(timeout=120)
    assert proc.returncode == 0, (tmp_path / f"{name}.err").read_text()
    return json.loads((tmp_path / f"{name}.out").read_text())


def _wait_for(condition, what: str, timeout: float = 60.0, procs: dict[str, subprocess.Popen] | None = None, errors: Path | None = None) -> None:
    """Wait for ``condition``; a worker of ``procs`` that ends meanwhile fails the test with its
    own error output (not a timeout that hides why)."""
    deadline = time.monotonic() + timeout
    while not condition():
        for name, proc in (procs or {}).items():
            if proc.poll() is not None:
                err = (errors / f"{name}.err").read_text() if errors is not None else ""
                raise AssertionError(f"worker {name} ended (exit {proc.returncode}) while waiting for {what}: {err}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def test_two_runs_started_together_pay_once_between_them(server, tmp_path):
    server.latency_s = 1.0  # both runs ask while the other's calls are in flight
    go = tmp_path / "go"
    procs = {name: _worker(tmp_path, server, name, "--ready", str(tmp_path / f"{name}.ready"), "--go", str(go)) for name in ("a", "b")}
    _wait_for(lambda: all((tmp_path / f"{n}.ready").exists() for n in procs), "both runs to start", procs=procs, errors=tmp_path)
    go.touch()
    results = [_result(tmp_path, name, proc) for name, proc in procs.items()]
    assert server.calls("judge-a") == N
    assert sum(r["calls"] for r in results) == N  # each question asked by exactly one of them
    assert sum(r["cache_hits"] for r in results) == N  # the other took its answer    assert all(r["labels"] == ["correct"] * N for r in results)
    assert JudgeCache(tmp_path / "cache.sqlite3").claims() == []  # nothing left claimed


async def _until(condition, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition never held"
        await asyncio.sleep(0.01)


def _key(panel) -> str:
    judge = panel.judges[0]
    rubric = panel.rubric("answer_correctness")
    return panel.caller.call(judge, rubric, rubric.render(answer_request().material)).key


def _other_run(tmp_path: Path, owner: str) -> JudgeCache:
    return JudgeCache(tmp_path / "cache.sqlite3", claimant=owner)


@pytest.fixture
def panel(server, tmp_path):
    server.set_default("judge-a", Reply("incorrect"))
    panel = make_panel(tmp_path, ["openai:judge-a"])
    panel.caller.claim_poll_s = (0.01, 0.05)
    return panel


async def test_waiter_takes_the_answer_the_claimant_writes(server, tmp_path, panel):
    other = _other_run(tmp_path, "elsewhere:1:abc")
    key = _key(panel)
    assert other.claim(key, lease_s=600).claimed
    task = asyncio.create_task(panel.decide([answer_request()]))
    await asyncio.sleep(0.3)
    assert not task.done() and server.calls() == 0  # waiting, not paying
    other.put(key, "openai:judge-a", {"verdict": {"label": "missing", "rationale": "other run", "evidence": [], "confidence": 0.7}, "model_version": "v9"})
    [d] = await task
    await panel.aclose()
    assert server.calls() == 0 and d.label == "missing" and d.votes[0].cached and d.votes[0].model_version == "v9"
    assert panel.stats.shared_with_other_runs == 1 and panel.stats.calls == 0
    assert other.claims() == []


async def test_a_released_claim_without_answer_is_asked_by_the_waiter(server, tmp_path, panel):
    other = _other_run(tmp_path, "elsewhere:1:abc")
    key = _key(panel)
    assert other.claim(key, lease_s=600).claimed
    task = asyncio.create_task(panel.decide([answer_request()]))
    await asyncio.sleep(0.2)
    assert server.calls() == 0
    other.release(key)  # the other run's call failed transiently: not cached, claim given up
    [d] = await task
    await panel.aclose()
    assert server.calls() == 1 and d.label == "incorrect" and not d.votes[0].cached


async def test_a_dead_claimant_on_this_host_is_taken_over_at_once(server, tmp_path, panel):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    other = _other_run(tmp_path, f"{HOST}:{int(dead.stdout)}:abc")  # that process has exited
    assert other.claim(_key(panel), lease_s=3600).claimed
    [d] = await asyncio.wait_for(panel.decide([answer_request()]), timeout=30)
    await panel.aclose()
    assert server.calls() == 1 and d.label == "incorrect"


async def test_an_expired_lease_frees_the_question(server, tmp_path, panel):
    other = _other_run(tmp_path, "elsewhere:1:abc")  # a host we cannot check: only the lease tells
    assert other.claim(_key(panel), lease_s=0.5).claimed
    [d] = await asyncio.wait_for(panel.decide([answer_request()]), timeout=30)
    await panel.aclose()
    assert server.calls() == 1 and d.label == "incorrect" and panel.stats.shared_with_other_runs == 0


async def test_the_claimant_renews_its_lease_while_the_call_runs(server, tmp_path, panel):
    server.set_default("judge-a", Delay(1.2, Reply("correct")))
    panel.caller.claim_lease_s = 0.3
    key = _key(panel)
    task = asyncio.create_task(panel.decide([answer_request()]))
    watcher = _other_run(tmp_path, "elsewhere:1:abc")
    await _until(lambda: server.calls() == 1)
    await asyncio.sleep(0.8)  # well past the first lease: only renewals keep it
    assert watcher.holder(key) == panel.cache.claimant
    [d] = await task
    assert d.label == "correct" and watcher.holder(key) is None and watcher.claims() == []
    await panel.aclose()


async def test_claims_are_released_on_close(server, tmp_path, panel):
    server.set_default("judge-a", Delay(5.0, Reply("correct")))
    task = asyncio.create_task(panel.decide([answer_request()]))
    await _until(lambda: server.calls() == 1)
    assert len(_other_run(tmp_path, "x:1:y").claims()) == 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await panel.aclose()
    assert _other_run(tmp_path, "x:1:y").claims() == []


class _BusyAtFirst(sqlite3.Connection):
    """A connection whose first statement fails as SQLite does when another process holds the file."""

    failures = 0

    def execute(self, *args: Any, **kwargs: Any) -> sqlite3.Cursor:
        if type(self).failures > 0:
            type(self).failures -= 1
            exc = sqlite3.OperationalError("database is locked")
            exc.sqlite_errorname = "SQLITE_BUSY"  # type: ignore[attr-defined]
            raise exc
        return super().execute(*args, **kwargs)


def test_opening_retries_while_another_process_holds_a_fresh_file(tmp_path, monkeypatch):
    """SQLite can report "locked" at once, past its busy timeout, when two runs set a new file
    to WAL together; opening retries the (idempotent) setup instead of failing the run."""
    monkeypatch.setattr(_BusyAtFirst, "failures", 3)
    real = sqlite3.connect
    monkeypatch.setattr("judge.llm._cache.sqlite3.connect", lambda *a, **k: real(*a, factory=_BusyAtFirst, **k))
    cache = JudgeCache(tmp_path / "cache.sqlite3")
    assert _BusyAtFirst.failures == 0
    cache.put("k", "judge", {"verdict": "pass"})
    assert cache.get("k") == {"verdict": "pass"}
    cache.close()


def test_opening_gives_up_after_its_wait_and_on_other_errors(tmp_path, monkeypatch):
    from judge.llm import _cache

    monkeypatch.setattr(_BusyAtFirst, "failures", 10**6)
    real = sqlite3.connect
    monkeypatch.setattr("judge.llm._cache.sqlite3.connect", lambda *a, **k: real(*a, factory=_BusyAtFirst, **k))
    started = time.monotonic()
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        _cache._open(tmp_path / "cache.sqlite3", wait_s=0.3)
    assert time.monotonic() - started < 5
    monkeypatch.setattr("judge.llm._cache.sqlite3.connect", real)
    (tmp_path / "not-a-db.sqlite3").write_bytes(b"this is not a database file, it is text" * 100)
    with pytest.raises(sqlite3.DatabaseError):
        _cache._open(tmp_path / "not-a-db.sqlite3", wait_s=30)  # not a lock: fails at once


def _open_at_once(path: str, barrier: Any, errors: Any) -> None:
    barrier.wait()
    try:
        JudgeCache(Path(path)).close()
    except Exception as exc:  # reported to the test, which names it
        errors.put(repr(exc))


def test_many_runs_opening_one_new_cache_together_all_open(tmp_path):
    """The race that failed CI once in ~240 opens, tried for real: 6 processes at a barrier."""
    ctx = multiprocessing.get_context("fork")
    errors = ctx.Queue()
    for trial in range(8):
        path = str(tmp_path / f"cache-{trial}.sqlite3")
        barrier = ctx.Barrier(6)
        procs = [ctx.Process(target=_open_at_once, args=(path, barrier, errors)) for _ in range(6)]
        for proc in procs:
            proc.start()
        for proc in procs:
            proc.join(60)
            assert proc.exitcode == 0
    assert errors.empty(), errors.get()


def test_a_cache_that_cannot_be_opened_is_a_configuration_error_naming_it(tmp_path):
    from judge import ConfigurationError

    garbage = tmp_path / "garbage.sqlite3"
    garbage.write_bytes(b"not SQLite at all " * 64)
    with pytest.raises(ConfigurationError, match=f"judge cache {garbage}: file is not a database .*--no-cache"):
        JudgeCache(garbage)
    with pytest.raises(ConfigurationError, match=f"judge cache {garbage / 'inner.sqlite3'}:"):
        JudgeCache(garbage / "inner.sqlite3")  # its folder would be a file
