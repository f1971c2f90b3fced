"""``make bench``: the headline figures side by side, in one run.

Issue 27's figures first, each beside what it is read against, measured in this run:
- **CPU per realistic conversation** (``bench_cpu``): ``judge grade`` of this tree, of the
  baseline commit (``--baseline``, by default the commit issue 27 measured "today" on) and
  LangChain agentevals' superset trajectory match (``bench_peers``; installed in the bench's own
  environment) on the same conversations, one core each, in interleaved rounds (baseline, this
  tree, agentevals, then again), CPU time of each process and its children; outputs of the two
  trees compared byte for byte;
- **a first trajectory** (``bench_first``): ``judge grade`` on a one-line file, wall time, both
  trees alternately, beside ``python -c pass``, with the heavy libraries each imported;
- **in-process grading for reward loops** (``bench_reward``): ``grade_trajectories`` against the
  CLI's CPU per trajectory on the same conversations (and in GRPO-style groups);
- **judge fan-out** (``bench_judges.versus_sdk``): the panel against the bare openai SDK, same
  loopback server, same calls, 1 s latency, 256 in flight, in interleaved rounds (SDK, panel, ...);
- **``--workers 2`` vs 1** (``bench_workers``) at ``--workers-n`` conversations, outputs compared,
  with the load average over the run (the figure means something on a quiet machine only).
Then the earlier headline rows (grading throughput and peak RSS, the floor, start-up) and the
benches other parts of the project own (``HOOKS``: each module that exists is run as a script and
its output printed under its name).

BFCL beside its own checker (issue 27's second row) is the ``bench_bfcl`` hook (BFCL's runners
in the bench's own environment, ``bench/.venv-bfcl``), printed after the table.

``--quick`` runs every figure at small sizes (about 3-4 minutes on a quiet 2-core machine); the
full run (the figures of docs/figures.md: 4,000 conversations x 3 rounds, 100k for the workers) takes about
15-20 minutes there, the first time more (100k conversations are generated and the baseline
unpacked once, under ``bench/out``).

Run: .venv/bin/python bench/run_all.py [--quick] [--baseline REF] [--skip cpu,first,reward,judges,workers,grading,floor,startup,hooks]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# benches owned elsewhere, run as scripts when present (judge fan-out: in-process and sharded ratios; provider batch
# flow; what the deterministic stages decide on the sample and the real-format samples; BFCL beside its own checker)
HOOKS = ("bench_judges", "bench_batch", "bench_decided", "bench_bfcl")
BASELINE = "b865a49"  # main when issue 27 measured "today's" figures
FULL = {"n": 4000, "rounds": 3, "first_runs": 7, "reward_n": 4000, "judge_calls": 2000, "workers_n": 100_000, "grading_n": 100_000}
QUICK = {"n": 1000, "rounds": 2, "first_runs": 3, "reward_n": 1000, "judge_calls": 512, "workers_n": 10_000, "grading_n": 5000}


def _row(*cells: str) -> str:
    return "| " + " | ".join(cells) + " |"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cpu_side_by_side(n: int, rounds: int, baseline: str) -> dict:
    """Baseline, this tree and agentevals on the same conversations, interleaved, CPU of each."""
    import statistics

    from bench.bench_cpu import baseline_tree, cpu_of, differing
    from bench.bench_peers import agentevals_superset
    from bench.conversations import generate

    paths = generate(ROOT / "bench" / "out" / f"conv-{n}", n)
    trees = {"baseline": baseline_tree(baseline), "this tree": ROOT}
    outs = {name: ROOT / "bench" / "out" / f"cpu-{name.replace(' ', '-')}-{n}" for name in trees}
    cpu: dict[str, list[float]] = {"baseline": [], "this tree": [], "agentevals": []}
    for _ in range(rounds):
        for name, tree in trees.items():
            cpu[name].append(cpu_of(tree, paths["episode"], paths["trajectories"], outs[name])["cpu_s"])
        before = _children_cpu()
        agentevals_superset(paths["trajectories"], paths["reference"])
        cpu["agentevals"].append(_children_cpu() - before)
    med = {k: statistics.median(v) for k, v in cpu.items()}
    return {"n": n, "rounds": cpu, "ms": {k: v / n * 1e3 for k, v in med.items()}, "differing": differing(outs["baseline"], outs["this tree"])}


def _rounds(values: list[float]) -> str:
    return ", ".join(f"{v:.2f}" for v in values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="every figure at small sizes (a few minutes)")
    parser.add_argument("--baseline", default=BASELINE, help=f"the commit 'today' is measured on (default {BASELINE})")
    parser.add_argument("--skip", default="", help="comma-separated: cpu,first,reward,judges,workers,grading,floor,startup,hooks")
    args = parser.parse_args()
    size = QUICK if args.quick else FULL
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    started = time.perf_counter()
    load_start = os.getloadavg()
    print(
        f"bench/run_all.py {'--quick ' if args.quick else ''}on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} cores, load average {load_start[0]:.2f}"
    )
    rows = [_row("figure", "today (baseline)", "this tree", "beside", "ratio", "target"), _row(*["---"] * 6)]

    if "cpu" not in skip:
        from bench.bench_cpu import TARGET_RATIO

        c = cpu_side_by_side(size["n"], size["rounds"], args.baseline)
        ms = c["ms"]
        rows.append(
            _row(
                f"CPU per realistic conversation, {c['n']:,} conversations, one core (median of {size['rounds']} interleaved rounds; outputs identical: {'yes' if not c['differing'] else 'no, ' + ', '.join(c['differing']) + ' differ'})",
                f"{ms['baseline']:.3f} ms",
                f"{ms['this tree']:.3f} ms",
                f"agentevals superset match {ms['agentevals']:.3f} ms",
                f"{ms['this tree'] / ms['baseline']:.2f} of today; {ms['this tree'] / ms['agentevals']:.2f}x agentevals",
                f"<= {TARGET_RATIO:.2f} of today",
            )
        )
        print(
            f"  CPU rounds (s): baseline {_rounds(c['rounds']['baseline'])}; this tree {_rounds(c['rounds']['this tree'])}; agentevals {_rounds(c['rounds']['agentevals'])}"
        )
    if "first" not in skip:
        from bench.bench_first import TARGET_S
        from bench.bench_first import compare as first

        f = first(size["first_runs"], args.baseline)
        base, ours = f["median_s"]["baseline"], f["median_s"]["this tree"]
        rows.append(
            _row(
                f"`judge grade` on ONE trajectory, wall (median of {f['runs']}, alternating)",
                f"{base:.3f} s ({', '.join(f['heavy']['baseline']) or 'no heavy imports'})",
                f"{ours:.3f} s ({', '.join(f['heavy']['this tree']) or 'no heavy imports'})",
                f"`python -c pass` {f['python_s']:.3f} s",
                f"{ours / base:.2f} of today",
                f"<= {TARGET_S} s",
            )
        )
    if "reward" not in skip:
        from bench.bench_reward import TARGET_RATIO as REWARD_TARGET
        from bench.bench_reward import compare as reward

        r = reward(size["reward_n"], rounds=size["rounds"])
        rows.append(
            _row(
                f"in-process `grade_trajectories` vs the CLI, CPU per trajectory, {r['n']:,} conversations",
                "-",
                f"{r['reward_ms']:.3f} ms (GRPO groups of {r['group']}: {r['reward_group_ms']:.3f} ms)",
                f"`judge grade` {r['cli_ms']:.3f} ms",
                f"{r['ratio']:.2f}x the CLI's throughput (groups: {r['ratio_groups']:.2f}x)",
                f">= {REWARD_TARGET:.0f}x",
            )
        )
    if "judges" not in skip:
        from bench.bench_judges import SDK, SDK_AIOHTTP, versus_sdk

        j = versus_sdk(size["judge_calls"], 1.0, 256, rounds=size["rounds"])
        s = j["seconds"]
        rows.append(
            _row(
                f"judge fan-out, {j['calls']:,} calls, 1 s latency, 256 in flight, loopback server (interleaved rounds)",
                "-",
                f"panel {_rounds(s['panel'])} s ({j['cpu_ms_per_call']['panel']:.2f} ms CPU per call; ideal {j['ideal_s']:.2f} s)",
                f"bare openai SDK {_rounds(s[SDK_AIOHTTP])} s with aiohttp ({j['cpu_ms_per_call'][SDK_AIOHTTP]:.2f} ms CPU per call), {_rounds(s[SDK])} s with httpx",
                f"{j['ratio'][SDK_AIOHTTP]:.3f}x / {j['ratio'][SDK]:.3f}x the SDK (medians)",
                "<= 1.10x",
            )
        )
    if "workers" not in skip:
        from bench.bench_workers import TARGET_SPEEDUP
        from bench.bench_workers import compare as workers

        before = os.getloadavg()
        w = workers(size["workers_n"], 2)
        after = os.getloadavg()
        rows.append(
            _row(
                f"`--workers 2` vs 1, {w['n']:,} conversations (load average {before[0]:.2f} before, {after[0]:.2f} after; identical: {w['identical']})",
                "-",
                f"{w['many_s']:.1f} s with 2",
                f"{w['one_s']:.1f} s with 1",
                f"{w['speedup']:.2f}x",
                f">= {TARGET_SPEEDUP}x on a quiet machine",
            )
        )
    if "grading" not in skip:
        from bench.bench_grading import TARGET_RATE, TARGET_RSS_MB
        from bench.bench_grading import headline as grading

        g = grading(size["grading_n"])
        rows.append(
            _row(
                f"grading {g['n']:,} realistic conversations, one core",
                "-",
                f"{g['rate']:,.0f}/s ({g['rate_cpu']:,.0f} per CPU second)",
                "-",
                "-",
                f">= {TARGET_RATE:,}/s",
            )
        )
        rows.append(_row(f"peak RSS at {g['n']:,}", "-", f"{g['peak_rss_mb']:.0f} MB", "-", "-", f"<= {TARGET_RSS_MB} MB at 100k"))
    if "floor" not in skip:
        from bench.bench_floor import TARGET_RATE as FLOOR_TARGET
        from bench.bench_floor import measure as floor_of

        fl = floor_of(min(size["grading_n"], 5000))
        floor_us = (fl["read"] + fl["models"] + fl["result"]) * 1e6
        rows.append(
            _row(
                f"floor under grading (read + models + result, no check; the run's collection policy), {int(fl['n']):,} conversations",
                "-",
                f"{floor_us:.0f} us per trajectory",
                "-",
                f"{floor_us / (1e6 / FLOOR_TARGET):.0%} of the target's budget",
                "-",
            )
        )
    if "startup" not in skip:
        from bench.bench_startup import TARGET_S as START_TARGET
        from bench.bench_startup import headline as startup

        for name, s in startup(3 if args.quick else 7).items():
            rows.append(_row(f"`{name}` start-up", "-", f"{s['median_s']:.3f} s", "-", "-", f"< {START_TARGET} s"))

    print("\n".join(rows))
    load_end = os.getloadavg()
    print(
        f"\n(measured in {time.perf_counter() - started:.0f} s; load average {load_start[0]:.2f} at the start, {load_end[0]:.2f} at the end; on a busy machine the figures are indicative only)"
    )
    if "hooks" not in skip:
        for name in HOOKS:
            script = ROOT / "bench" / f"{name}.py"
            if not script.exists():
                continue
            print(f"\n## {name}")
            proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=ROOT)
            print(proc.stdout.strip() or proc.stderr.strip())


if __name__ == "__main__":
    main()
