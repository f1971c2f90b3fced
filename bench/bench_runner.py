"""Agent-runner benchmarks against a loopback agent server running in its own process.

1. Overhead per step, model latency excluded: a zero-latency server, one trajectory at a time,
   5 tool-calling steps then an answer per trajectory. A step = one model message and the tool call
   it asks for; its wall time includes the loopback HTTP round trip and the server's JSON work, so
   it bounds the runner's own overhead from above. Target: median <= 5 ms. Also printed: the
   runner process's CPU time per step (robust on a loaded machine: the server runs in another
   process) and the same steps replayed from the cache (no HTTP at all).
2. Throughput: 100 tasks x 3 trials, 200 ms model latency, concurrency 16, one tool call and one
   answer per trajectory. Ideal = ceil(300 / 16) waves x 2 model calls x 0.2 s. Target: <= 1.2x.

Run: ``.venv/bin/python bench/bench_runner.py [--tasks N --trials K --latency S --concurrency C]``.
Grading is not included (``judge grade`` has its own benchmarks).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipelines.env import load_environment  # noqa: E402
from pipelines.runner import RunOptions, collect_trajectories  # noqa: E402
from tests.servers.fast_agent import FastAgentServer  # noqa: E402

YEARS = (2000, 2004, 2008, 2012, 2016, 2020, 2024)


def _serve(conn, latency: float, steps: int) -> None:
    async def serve() -> None:
        server = FastAgentServer(latency_s=latency, steps=steps)
        conn.send(await server.start())
        loop = asyncio.get_running_loop()
        while await loop.run_in_executor(None, conn.recv) == "calls":
            conn.send(server.calls)
        await server.close()

    asyncio.run(serve())


@contextlib.contextmanager
def server_process(latency: float, steps: int):
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_serve, args=(child, latency, steps), daemon=True)
    proc.start()
    child.close()
    if not parent.poll(60):
        proc.kill()
        raise RuntimeError("loopback agent server did not start")
    base_url = parent.recv()

    def calls() -> int:
        parent.send("calls")
        return parent.recv()

    try:
        yield base_url, calls
    finally:
        with contextlib.suppress(OSError):
            parent.send("stop")
        proc.join(5)
        if proc.is_alive():
            proc.kill()


def write_tasks(path: Path, n: int) -> Path:
    env = load_environment("olympics")
    tools = [t.model_dump(mode="json", exclude_none=True) for t in env.tools]
    session = env.session()
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            year = YEARS[i % len(YEARS)]
            city = session.execute("get_games_by_year", {"year": year}).result["host_city"]
            task = {
                "task_id": f"bench-{i:04d}",
                "question": f"Which city hosted the {year} Summer Games? (case {i})",
                "reference_calls": [{"name": "get_games_by_year", "arguments": {"year": year}}],
                "gold_answer": city,
                "environment": "olympics",
                "tools": tools,
            }
            fh.write(json.dumps(task) + "\n")
    return path


def collect(tasks: Path, out: Path, base_url: str, cache: Path, trials: int, concurrency: int, offline: bool = False):
    return collect_trajectories(
        RunOptions(
            agent="openai:bench-agent",
            tasks=tasks,
            out=out,
            trials=trials,
            concurrency=concurrency,
            base_url=base_url,
            cache_path=cache,
            offline=offline,
        )
    )


def per_step_ms(out: Path) -> list[float]:
    """Per trajectory: wall time / model messages (each message with its tool call is one step)."""
    values = []
    with open(out / "trajectories.jsonl", encoding="utf-8") as fh:
        for line in fh:
            meta = json.loads(line)["metadata"]
            values.append(meta["latency_ms"]["total"] / meta["model_calls"])
    return values


def overhead(tmp: Path, n: int) -> None:
    tasks = write_tasks(tmp / "overhead-tasks.jsonl", n)
    with server_process(0.0, steps=5) as (base_url, calls):
        collect(tasks, tmp / "warmup", base_url, tmp / "warmup.sqlite", 1, 1)  # imports, SDK client, environment load
        started, cpu = time.perf_counter(), time.process_time()
        live = collect(tasks, tmp / "overhead", base_url, tmp / "overhead.sqlite", 1, 1)
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        served = calls()
    assert live.complete, live.errors[:3]
    steps = per_step_ms(tmp / "overhead")
    cached_run = collect(tasks, tmp / "overhead-cached", base_url, tmp / "overhead.sqlite", 1, 1, offline=True)  # the server is gone: offline
    assert cached_run.complete, cached_run.errors[:3]
    cached = per_step_ms(tmp / "overhead-cached")
    q = statistics.quantiles(steps, n=10)
    messages = served // 2  # the warm-up run made as many requests as the measured one
    print(f"overhead per step (zero-latency model, {n} trajectories x 6 messages, one at a time): "
          f"wall median {statistics.median(steps):.2f} ms, p90 {q[-1]:.2f} ms (target median <= 5 ms); "
          f"runner CPU {1000 * cpu / messages:.2f} ms per step ({messages} steps in {elapsed:.2f} s)")  # fmt: skip
    print(f"  same steps replayed from the cache: median {statistics.median(cached):.2f} ms per step")


def throughput(tmp: Path, n: int, trials: int, latency: float, concurrency: int) -> None:
    tasks = write_tasks(tmp / "throughput-tasks.jsonl", n)
    with server_process(latency, steps=1) as (base_url, calls):
        collect(write_tasks(tmp / "warm.jsonl", 2), tmp / "warm", base_url, tmp / "warm.sqlite", 1, 2)
        started, cpu = time.perf_counter(), time.process_time()
        outcome = collect(tasks, tmp / "throughput", base_url, tmp / "throughput.sqlite", trials, concurrency)
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        served = calls()
    assert outcome.complete, outcome.errors[:3]
    jobs = n * trials
    ideal = math.ceil(jobs / concurrency) * 2 * latency
    print(f"{n} tasks x {trials} trials, {latency * 1000:.0f} ms model latency, concurrency {concurrency}: "
          f"{elapsed:.2f} s for {jobs} trajectories ({served - 4} model calls) = {elapsed / ideal:.3f}x the ideal {ideal:.2f} s (target <= 1.2x); runner CPU {cpu:.2f} s")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--overhead-trajectories", type=int, default=40)
    args = parser.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "bench-key-not-real")
    with tempfile.TemporaryDirectory() as tmp:
        overhead(Path(tmp), args.overhead_trajectories)
        throughput(Path(tmp), args.tasks, args.trials, args.latency, args.concurrency)


if __name__ == "__main__":
    main()
