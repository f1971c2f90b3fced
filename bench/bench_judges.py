"""Judge fan-out: panel throughput against a loopback OpenAI-wire server with fixed latency.

Two scenarios by default (issue 11 item 6): 2,000 calls at 1 s latency with 256 in flight (what
providers' batch-evaluation tiers allow), and 500 calls at 200 ms with 32 in flight. The server
runs in its own process (as a real provider would), so its CPU does not compete with the panel
for this process's GIL. Ideal = calls * latency / concurrency; target: elapsed / ideal <= 1.15.
Then the same requests again from the cache (target < 5% of the first run), the same requests
sharded over ``--processes`` judge worker processes (``judge.llm.ShardedPanel``, what
``judge grade --workers N`` does with a large escalation round; timed from the fork of the
workers to the last decision, their start included, and checked to decide exactly what the
panel alone decided), and, for scale, the same calls through the bare SDK and bare instructor
(no cache, no panel) on the same server.

Client CPU per call (``process_time``, and the workers' own CPU for the sharded run) is the
figure that does not depend on how busy the machine is; the elapsed ratios do (on a shared
machine they measure the neighbours too).

``--threshold``: in-process vs sharded for small rounds (16 to 256 requests), which is how
``judge.llm.SHARD_MIN_REQUESTS`` was chosen.

Run: ``.venv/bin/python bench/bench_judges.py [--calls N --latency S --concurrency C] [--processes P] [--no-baselines] [--threshold]``.
``fanout_figures()`` returns the same figures for ``bench/run_all.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import os
import resource
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import rubrics  # noqa: E402
from judge import JudgeRequest  # noqa: E402
from judge.llm import JudgeSettings, Panel, ShardedPanel, build_panel  # noqa: E402
from tests.servers.fast import FastOpenAIServer  # noqa: E402

SCENARIOS = ((2000, 1.0, 256), (500, 0.2, 32))
PROCESSES = 2  # judge worker processes of the sharded run (this project's machine has 2 cores)
TARGET_RATIO, TARGET_CACHED_SHARE = 1.15, 0.05


@dataclass
class Figures:
    calls: int
    latency_s: float
    concurrency: int
    elapsed_s: float = 0.0
    cpu_s: float = 0.0
    cached_s: float = 0.0
    processes: int = PROCESSES
    sharded_s: float = 0.0
    sharded_cpu_s: float = 0.0  # this process and the workers together
    attempts: int = 0
    retries: dict[str, int] = field(default_factory=dict)
    baselines: dict[str, float] = field(default_factory=dict)

    @property
    def ideal_s(self) -> float:
        return self.calls * self.latency_s / self.concurrency

    @property
    def ratio(self) -> float:
        return self.elapsed_s / self.ideal_s

    @property
    def cpu_ms_per_call(self) -> float:
        return self.cpu_s / self.calls * 1000

    @property
    def sharded_ratio(self) -> float:
        return self.sharded_s / self.ideal_s

    @property
    def sharded_cpu_ms_per_call(self) -> float:
        return self.sharded_cpu_s / self.calls * 1000

    @property
    def cached_share(self) -> float:
        return self.cached_s / self.elapsed_s

    def as_dict(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "latency_s": self.latency_s,
            "concurrency": self.concurrency,
            "elapsed_s": round(self.elapsed_s, 3),
            "ideal_s": round(self.ideal_s, 3),
            "ratio": round(self.ratio, 3),
            "cpu_ms_per_call": round(self.cpu_ms_per_call, 3),
            "cached_share": round(self.cached_share, 4),
            "processes": self.processes,
            "sharded_elapsed_s": round(self.sharded_s, 3),
            "sharded_ratio": round(self.sharded_ratio, 3),
            "sharded_cpu_ms_per_call": round(self.sharded_cpu_ms_per_call, 3),
            "baseline_ratios": {k: round(v / self.ideal_s, 3) for k, v in self.baselines.items()},
        }


def _serve(conn: Any, latency: float) -> None:
    async def serve() -> None:
        server = FastOpenAIServer(latency_s=latency)
        conn.send(await server.start())
        loop = asyncio.get_running_loop()
        while await loop.run_in_executor(None, conn.recv) == "calls":
            conn.send(server.calls)
        await server.close()

    asyncio.run(serve())


@contextlib.contextmanager
def server_process(latency: float) -> Iterator[tuple[str, Any]]:
    """Yields (base_url, calls()) of a loopback server running in a child process."""
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_serve, args=(child, latency), daemon=True)
    proc.start()
    child.close()  # so a crashed child shows up as EOF here instead of a hang
    if not parent.poll(60):
        proc.kill()
        raise RuntimeError("loopback server process did not start")
    base_url = parent.recv()

    def calls() -> int:
        parent.send("calls")
        return int(parent.recv())

    try:
        yield base_url, calls
    finally:
        parent.send("stop")
        proc.join(timeout=10)


def requests(n: int) -> list[JudgeRequest]:
    return [
        JudgeRequest(
            key=f"bench-{i}/t1/answer",
            rubric="answer_correctness",
            material={"question": f"How many orders did store {i} ship in May?", "gold_answers": [str(i % 97)], "answer": f"{i % 89} orders"},
        )
        for i in range(n)
    ]


SDK = "openai SDK alone"
SDK_AIOHTTP = "openai SDK alone (aiohttp)"


async def baselines(base_url: str, n: int, concurrency: int, only: str | None = None) -> dict[str, float]:
    """The same calls without the panel: the bare SDK (its default httpx transport, and aiohttp
    with a pool as large as the calls in flight, as the SDK documents for concurrency and as the
    panel runs it), and bare instructor (what the panel adds to)."""
    import httpx
    import instructor
    import openai

    rubric = rubrics.get_rubric("answer_correctness")
    client = openai.AsyncOpenAI(api_key="bench-key-not-real", base_url=base_url + "/v1", max_retries=0, timeout=30)
    pool = httpx.Limits(max_connections=concurrency + 8, max_keepalive_connections=concurrency + 8)
    aio = openai.AsyncOpenAI(
        api_key="bench-key-not-real", base_url=base_url + "/v1", max_retries=0, http_client=openai.DefaultAioHttpClient(limits=pool, timeout=30)
    )
    patched = instructor.from_openai(client, mode=instructor.Mode.TOOLS)
    tools: Any = [{"type": "function", "function": {"name": "Verdict", "parameters": rubric.verdict_schema.model_json_schema()}}]
    sem = asyncio.Semaphore(concurrency)
    msgs: list[Any] = [rubric.render(r.material) for r in requests(n)]

    async def sdk(m: Any) -> None:
        async with sem:
            await client.chat.completions.create(model="bench-judge", messages=m, tools=tools, temperature=0)

    async def sdk_aiohttp(m: Any) -> None:
        async with sem:
            await aio.chat.completions.create(model="bench-judge", messages=m, tools=tools, temperature=0)

    async def bare_instructor(m: Any) -> None:
        async with sem:
            await patched.create_with_completion(model="bench-judge", messages=m, response_model=rubric.verdict_schema, max_retries=1, temperature=0)

    out = {}
    for name, fn in ((SDK, sdk), (SDK_AIOHTTP, sdk_aiohttp), ("instructor alone", bare_instructor)):
        if only is not None and name != only:
            continue
        start = time.perf_counter()
        await asyncio.gather(*(fn(m) for m in msgs))
        out[name] = time.perf_counter() - start
    await client.close()
    await aio.close()
    return out


def _settings(base_url: str, cache: Path, concurrency: int) -> JudgeSettings:
    os.environ["OPENAI_API_KEY"] = "bench-key-not-real"
    os.environ["OPENAI_BASE_URL"] = base_url + "/v1"
    return JudgeSettings(judges=["openai:bench-judge"], cache_path=cache, concurrency=concurrency, timeout_s=60)


def _panel(settings: JudgeSettings) -> Panel:
    panel = build_panel(settings, rubrics.RUBRICS)
    assert panel is not None
    return panel


async def _decide(escalator: Any, reqs: list[JudgeRequest]) -> list[Any]:
    try:
        return list(await escalator.decide(reqs))
    finally:
        await escalator.aclose()


def sharded(settings: JudgeSettings, reqs: list[JudgeRequest], processes: int) -> tuple[list[Any], float, float]:
    """(decisions, elapsed, CPU of this process and the workers): timed from the fork of the workers
    (made outside the event loop, as a run makes them) to the last decision."""
    panel = _panel(settings)
    cpu_start, children_start = time.process_time(), _children_cpu()
    start = time.perf_counter()
    escalator = ShardedPanel(panel, settings, rubrics.RUBRICS, processes=processes, min_requests=1)
    decisions = asyncio.run(_decide(escalator, reqs))  # closing reaps the workers: their CPU is counted
    elapsed = time.perf_counter() - start
    return decisions, elapsed, time.process_time() - cpu_start + _children_cpu() - children_start


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(n: int, latency: float, concurrency: int, with_baselines: bool = True, processes: int = PROCESSES) -> Figures:
    figures = Figures(n, latency, concurrency, processes=processes)
    with server_process(latency) as (base_url, server_calls), tempfile.TemporaryDirectory() as tmp:
        settings = _settings(base_url, Path(tmp) / "cache.sqlite3", concurrency)
        reqs = requests(n)

        panel = _panel(settings)
        start, cpu_start = time.perf_counter(), time.process_time()
        first = asyncio.run(_decide(panel, reqs))
        figures.elapsed_s, figures.cpu_s = time.perf_counter() - start, time.process_time() - cpu_start
        figures.attempts, figures.retries = panel.stats.attempts, dict(panel.stats.retry_reasons)
        assert all(d.label == "correct" for d in first), "bench run had abstentions"
        calls = server_calls()

        panel = _panel(settings)
        start = time.perf_counter()
        second = asyncio.run(_decide(panel, reqs))
        figures.cached_s = time.perf_counter() - start
        assert server_calls() == calls, "cached rerun made HTTP calls"
        assert all(v.cached for d in second for v in d.votes)

        if processes > 1:  # a fresh cache: every call is paid again, by the workers
            fresh = settings.model_copy(update={"cache_path": Path(tmp) / "sharded.sqlite3"})
            decisions, figures.sharded_s, figures.sharded_cpu_s = sharded(fresh, reqs, processes)
            assert server_calls() == 2 * calls, "the sharded run did not ask every question once"
            assert [d.model_dump() for d in decisions] == [d.model_dump() for d in first], "the sharded run decided otherwise"

        if with_baselines:
            figures.baselines = asyncio.run(baselines(base_url, n, concurrency))
    return figures


def versus_sdk(n: int, latency: float, concurrency: int, rounds: int = 2) -> dict[str, Any]:
    """The panel (fresh cache each round) and the bare openai SDK on the same server, interleaved
    (SDK with httpx, SDK with aiohttp, panel, again ...), so that a machine that gets busier or
    quieter weighs on all alike: elapsed seconds of each round, and the panel's median over each
    SDK median (issue 27's fan-out target reads the faster SDK set-up)."""
    import statistics

    seconds: dict[str, list[float]] = {"panel": [], SDK: [], SDK_AIOHTTP: []}
    cpu: dict[str, list[float]] = {name: [] for name in seconds}
    with server_process(latency) as (base_url, _), tempfile.TemporaryDirectory() as tmp:
        reqs = requests(n)
        for i in range(rounds):
            for name in (SDK, SDK_AIOHTTP):
                started = time.process_time()
                seconds[name].append(asyncio.run(baselines(base_url, n, concurrency, only=name))[name])
                cpu[name].append(time.process_time() - started)
            panel = _panel(_settings(base_url, Path(tmp) / f"round-{i}.sqlite3", concurrency))
            start, started = time.perf_counter(), time.process_time()
            decided = asyncio.run(_decide(panel, reqs))
            seconds["panel"].append(time.perf_counter() - start)
            cpu["panel"].append(time.process_time() - started)
            assert all(d.label == "correct" for d in decided), "bench run had abstentions"
    med = {name: statistics.median(values) for name, values in seconds.items()}
    return {
        "calls": n,
        "seconds": seconds,
        "ratio": {name: med["panel"] / med[name] for name in (SDK, SDK_AIOHTTP)},
        "cpu_ms_per_call": {name: statistics.median(values) / n * 1000 for name, values in cpu.items()},
        "ideal_s": n * latency / concurrency,
    }


async def _two_rounds(escalator: ShardedPanel, first: list[JudgeRequest], second: list[JudgeRequest]) -> float:
    """Decide ``first``, then ``second``: the seconds the second took."""
    try:
        await escalator.decide(first)
        start = time.perf_counter()
        await escalator.decide(second)
        return time.perf_counter() - start
    finally:
        await escalator.aclose()


def threshold(latency: float, concurrency: int, sizes: tuple[int, ...] = (16, 32, 64, 128, 256, 512), processes: int = PROCESSES) -> None:
    """One round of each size (fresh questions: every call paid): in this process; over workers
    started for it (their start included: what the first round of a run pays); over workers
    already running (a later round)."""
    print(f"\none round, {latency * 1000:.0f} ms latency, concurrency {concurrency}: in-process vs {processes} workers")
    with server_process(latency) as (base_url, _), tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            settings = _settings(base_url, Path(tmp) / f"{size}.sqlite3", concurrency)
            fresh = iter(requests(4 * size)[i : i + size] for i in range(0, 4 * size, size))
            panel = _panel(settings)
            start = time.perf_counter()
            asyncio.run(_decide(panel, next(fresh)))
            alone = time.perf_counter() - start
            panel = _panel(settings)
            start = time.perf_counter()
            escalator = ShardedPanel(panel, settings, rubrics.RUBRICS, processes=processes, min_requests=1)

            warm = asyncio.run(_two_rounds(escalator, next(fresh), next(fresh)))
            cold = time.perf_counter() - start - warm
            print(
                f"  {size:4d} requests: in-process {alone:.3f} s; workers started for it {cold:.3f} s ({cold / alone:.2f}x); workers running {warm:.3f} s ({warm / alone:.2f}x)"
            )


def report(f: Figures) -> None:
    ok = "ok" if f.ratio <= TARGET_RATIO else "MISSED"
    print(f"\njudge calls: {f.calls} over HTTP, server latency {f.latency_s * 1000:.0f} ms, concurrency {f.concurrency}")
    print(f"client CPU during the first run: {f.cpu_s:.3f} s ({f.cpu_ms_per_call:.2f} ms per call: instructor + SDK + caller + panel)")
    print(f"attempts {f.attempts} for {f.calls} calls; retries {f.retries or 'none'}")
    print(f"first run:  {f.elapsed_s:.3f} s   ideal {f.ideal_s:.3f} s   ratio {f.ratio:.3f}   (target <= {TARGET_RATIO}: {ok})")
    if f.sharded_s:
        ok = "ok" if f.sharded_ratio <= TARGET_RATIO else "MISSED"
        print(
            f"sharded over {f.processes} worker processes: {f.sharded_s:.3f} s   ratio {f.sharded_ratio:.3f}   (target <= {TARGET_RATIO}: {ok}; "
            f"workers' start included; CPU {f.sharded_cpu_ms_per_call:.2f} ms per call, all processes; decisions identical to the in-process run)"
        )
    for name, seconds in f.baselines.items():
        print(f"baseline, {name}: {seconds:.3f} s   ratio {seconds / f.ideal_s:.3f}   (same server, same concurrency, no cache, no panel)")
    share_ok = "ok" if f.cached_share < TARGET_CACHED_SHARE else "MISSED"
    print(f"cached run: {f.cached_s:.3f} s   {f.cached_share * 100:.2f}% of the first run   (target < 5%: {share_ok})")


def fanout_figures(with_baselines: bool = False) -> list[dict[str, Any]]:
    """Both scenarios, as dicts (for ``bench/run_all.py``)."""
    return [run(n, lat, c, with_baselines).as_dict() for n, lat, c in SCENARIOS]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, help="one scenario instead of the default two")
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--processes", type=int, default=PROCESSES, help="judge worker processes of the sharded run (1: none)")
    parser.add_argument("--no-baselines", action="store_true", help="skip the SDK-only and instructor-only runs")
    parser.add_argument("--threshold", action="store_true", help="in-process vs sharded for rounds of 16-256 requests, then stop")
    args = parser.parse_args()
    if args.threshold:
        for lat, c in ((0.2, 32), (1.0, 256)):
            threshold(lat, c, processes=args.processes)
        return
    scenarios = [(args.calls, args.latency, args.concurrency)] if args.calls else list(SCENARIOS)
    results = [run(n, lat, c, not args.no_baselines, args.processes) for n, lat, c in scenarios]
    for figures in results:
        report(figures)
    print(
        "\nsummary: "
        + "; ".join(
            f"{f.calls} calls @ {f.latency_s * 1000:.0f} ms / {f.concurrency}: ratio {f.ratio:.3f} in one process"
            + (f", {f.sharded_ratio:.3f} over {f.processes} worker processes" if f.sharded_s else "")
            for f in results
        )
    )
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"(load average {load:.1f} on {os.cpu_count()} CPUs at the end: elapsed ratios include the machine's other work)")


if __name__ == "__main__":
    main()
