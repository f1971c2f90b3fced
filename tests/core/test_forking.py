"""A worker forked while another thread of the run is inside a write to stderr inherits that
stream's lock held for ever: its first write hangs. ``fresh_std_streams`` gives it streams of its
own. Shown both ways in a child interpreter (it rewires its own stderr to a pipe)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import os, signal, sys, threading, time
    from judge import fresh_std_streams

    fresh = sys.argv[1] == "fresh"
    r, w = os.pipe()
    sys.stderr = open(w, "w", buffering=1)  # a pipe nobody reads yet: a large write blocks, lock held
    threading.Thread(target=lambda: sys.stderr.write("x" * (1 << 20) + "\\n"), daemon=True).start()
    time.sleep(0.3)  # the writer is blocked inside the write, holding the buffer's lock
    pid = os.fork()  # what a worker pool does (multiprocessing would flush stderr first: it would wait too)
    if pid == 0:
        if fresh:
            fresh_std_streams()
        sys.stderr.write("worker wrote\\n")
        sys.stderr.flush()
        os._exit(0)
    threading.Thread(target=lambda: [None for _ in iter(lambda: os.read(r, 1 << 16), b"")], daemon=True).start()  # drain
    hung, deadline = True, time.monotonic() + 5
    while hung and time.monotonic() < deadline:
        hung = os.waitpid(pid, os.WNOHANG)[0] != pid
        time.sleep(0.05)
    if hung:
        os.kill(pid, signal.SIGKILL)
    os.write(1, b"hung\\n" if hung else b"finished\\n")
    os._exit(0)
    """
)


def _run(mode: str) -> str:
    out = subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True, timeout=60)
    return out.stdout.strip()


def test_a_forked_worker_with_fresh_streams_writes_while_the_parent_was_mid_write():
    assert _run("fresh") == "finished"


def test_without_them_the_inherited_lock_hangs_the_worker():
    assert _run("inherited") == "hung"  # the hazard is real: without the fix the worker never writes


def test_grading_workers_take_fresh_streams_first():
    from pipelines.run import executors

    assert "fresh_std_streams" in executors._init_worker.__code__.co_names  # a forked grading worker's first step
