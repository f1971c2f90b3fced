"""Judge-panel throughput against a loopback OpenAI-wire server with fixed latency.

500 judge calls, 200 ms server latency, concurrency 32. The server runs in its own process (as a
real provider would), so its CPU does not compete with the panel for this process's GIL. Ideal = 500 * 0.2 / 32 s; target: elapsed
/ ideal <= 1.15. Then the same requests again from the cache: target < 5% of the first run.
Run: ``.venv/bin/python bench/bench_judges.py [--calls N --latency S --concurrency C]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import rubrics  # noqa: E402
from judge import JudgeRequest  # noqa: E402
from judge.llm import JudgeSettings, build_panel  # noqa: E402
from tests.servers.fast import FastOpenAIServer  # noqa: E402


def _serve(conn, latency: float) -> None:
    async def serve() -> None:
        server = FastOpenAIServer(latency_s=latency)
        conn.send(await server.start())
        loop = asyncio.get_running_loop()
        while await loop.run_in_executor(None, conn.recv) == "calls":
            conn.send(server.calls)
        await server.close()

    asyncio.run(serve())


@contextlib.contextmanager
def server_process(latency: float):
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
        return parent.recv()

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


async def baselines(base_url: str, n: int, concurrency: int) -> dict[str, float]:
    """The same calls without the panel: the bare SDK, and bare instructor (what the panel adds to)."""
    import instructor
    import openai

    rubric = rubrics.get_rubric("answer_correctness")
    client = openai.AsyncOpenAI(api_key="bench-key-not-real", base_url=base_url + "/v1", max_retries=0, timeout=30)
    patched = instructor.from_openai(client, mode=instructor.Mode.TOOLS)
    tools = [{"type": "function", "function": {"name": "Verdict", "parameters": rubric.verdict_schema.model_json_schema()}}]
    sem = asyncio.Semaphore(concurrency)
    msgs = [rubric.render(r.material) for r in requests(n)]

    async def sdk(m):
        async with sem:
            await client.chat.completions.create(model="bench-judge", messages=m, tools=tools, temperature=0)

    async def bare_instructor(m):
        async with sem:
            await patched.create_with_completion(model="bench-judge", messages=m, response_model=rubric.verdict_schema, max_retries=1, temperature=0)

    out = {}
    for name, fn in (("openai SDK alone", sdk), ("instructor alone", bare_instructor)):
        start = time.perf_counter()
        await asyncio.gather(*(fn(m) for m in msgs))
        out[name] = time.perf_counter() - start
    await client.close()
    return out


async def run(n: int, latency: float, concurrency: int, with_baselines: bool = True) -> None:
    with server_process(latency) as (base_url, server_calls), tempfile.TemporaryDirectory() as tmp:
        os.environ["OPENAI_API_KEY"] = "bench-key-not-real"
        settings = JudgeSettings(
            judges=["openai:bench-judge"],
            cache_path=Path(tmp) / "cache.sqlite3",
            concurrency=concurrency,
            timeout_s=30,
            config_path=None,
        )
        os.environ["OPENAI_BASE_URL"] = base_url + "/v1"
        reqs = requests(n)

        panel = build_panel(settings, rubrics.RUBRICS)
        start, cpu_start = time.perf_counter(), time.process_time()
        first = await panel.decide(reqs)
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        await panel.aclose()
        stats = panel.stats
        assert all(d.label == "correct" for d in first), "bench run had abstentions"
        calls = server_calls()

        panel = build_panel(settings, rubrics.RUBRICS)
        start = time.perf_counter()
        second = await panel.decide(reqs)
        cached = time.perf_counter() - start
        await panel.aclose()
        assert server_calls() == calls, "cached rerun made HTTP calls"
        assert all(v.cached for d in second for v in d.votes)

        base = await baselines(base_url, n, concurrency) if with_baselines else {}

    ideal = n * latency / concurrency
    ratio = elapsed / ideal
    share = cached / elapsed
    print(f"judge calls: {n} over HTTP, server latency {latency * 1000:.0f} ms, concurrency {concurrency}")
    print(f"client CPU during the first run: {cpu:.3f} s ({cpu / n * 1000:.2f} ms per call: instructor + SDK + panel)")
    print(f"attempts {stats.attempts} for {stats.calls} calls; retries {stats.retry_reasons or 'none'}")
    print(f"first run:  {elapsed:.3f} s   ideal {ideal:.3f} s   ratio {ratio:.3f}   (target <= 1.15: {'ok' if ratio <= 1.15 else 'MISSED'})")
    for name, seconds in base.items():
        print(f"baseline, {name}: {seconds:.3f} s   ratio {seconds / ideal:.3f}   (same server, same concurrency, no panel)")
    print(f"cached run: {cached:.3f} s   {share * 100:.2f}% of the first run   (target < 5%: {'ok' if share < 0.05 else 'MISSED'})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--no-baselines", action="store_true", help="skip the SDK-only and instructor-only runs")
    args = parser.parse_args()
    asyncio.run(run(args.calls, args.latency, args.concurrency, not args.no_baselines))


if __name__ == "__main__":
    main()
