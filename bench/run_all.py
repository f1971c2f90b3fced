"""``make bench``: the headline figures side by side, in one run.

- our grading vs LangChain agentevals' superset trajectory match on the same realistic
  conversations (``bench_peers``), one core each;
- grading throughput and peak RSS on one core (``bench_grading``, the realistic headline);
- the floor under it: reading, validating the models and writing a result, no check (``bench_floor``);
- ``--workers 1`` vs every core, outputs checked byte for byte (``bench_workers``);
- start-up of ``judge --help`` and ``judge env list`` (``bench_startup``);
- then the benches other parts of the project own (judge fan-out, in one process and sharded
  over 2 judge worker processes, ratios side by side; provider batches...): each module listed
  in ``HOOKS`` that exists is run as it is and its output printed under its name.
  To add one, write ``bench/<name>.py`` (runnable as a script) and list it there.

Sizes default to a quick run (``--n``); the figures of docs/figures.md use ``--n 100000``.
Run: .venv/bin/python bench/run_all.py [--n 20000] [--peers-n 4000] [--skip peers,workers,...]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# benches owned elsewhere, run as scripts when present (judge fan-out: in-process and sharded ratios; provider batch
# flow; what the deterministic stages decide on the sample and the real-format samples; BFCL beside its own checker)
HOOKS = ("bench_judges", "bench_batch", "bench_decided", "bench_bfcl")


def _row(what: str, figure: str, target: str) -> str:
    return f"| {what} | {figure} | {target} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000, help="conversations for the throughput and workers runs")
    parser.add_argument("--peers-n", type=int, default=4_000, help="conversations for the side-by-side with agentevals")
    parser.add_argument("--skip", default="", help="comma-separated: peers,grading,floor,workers,startup,hooks")
    args = parser.parse_args()
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    rows = ["| what | figure | target |", "|---|---|---|"]
    started = time.perf_counter()

    if "peers" not in skip:
        from bench.bench_peers import headline as peers

        p = peers(args.peers_n)
        a, o = p["agentevals"], p["ours"]
        rows.append(_row(f"agentevals superset match, {p['n']:,} conversations, one core", f"{a['elapsed_s']:.1f} s ({p['n'] / a['elapsed_s']:,.0f}/s)", "-"))
        rows.append(
            _row(
                f"judge grade, the same {p['n']:,} conversations, one core",
                f"{o['elapsed_s']:.1f} s ({p['n'] / o['elapsed_s']:,.0f}/s; {p['n'] / o['cpu_s']:,.0f} per CPU second); {o['elapsed_s'] / a['elapsed_s']:.2f}x agentevals",
                "-",
            )
        )
    if "grading" not in skip:
        from bench.bench_grading import TARGET_RATE, TARGET_RSS_MB
        from bench.bench_grading import headline as grading

        g = grading(args.n)
        rows.append(
            _row(
                f"grading {g['n']:,} realistic conversations, one core",
                f"{g['rate']:,.0f} trajectories/s ({g['rate_cpu']:,.0f} per CPU second)",
                f">= {TARGET_RATE:,}/s",
            )
        )
        rows.append(_row(f"peak RSS at {g['n']:,}", f"{g['peak_rss_mb']:.0f} MB", f"<= {TARGET_RSS_MB} MB at 100k"))
    if "floor" not in skip:
        from bench.bench_floor import TARGET_RATE as FLOOR_TARGET
        from bench.bench_floor import measure as floor_of

        f = floor_of(min(args.n, 5000))
        floor_us = (f["read"] + f["models"] + f["result"]) * 1e6
        rows.append(
            _row(
                f"floor under grading (read + models + result, no check), {int(f['n']):,} conversations, one core",
                f"{floor_us:.0f} us per trajectory ({f['rate']:,.0f}/s): {floor_us / (1e6 / FLOOR_TARGET):.0%} of the target's budget",
                "-",
            )
        )
    if "workers" not in skip:
        from bench.bench_workers import TARGET_SPEEDUP, compare

        w = compare(args.n)
        rows.append(
            _row(
                f"1 vs {w['workers']} workers, {w['n']:,} conversations",
                f"{w['one_s']:.1f} s vs {w['many_s']:.1f} s = {w['speedup']:.2f}x; byte-identical: {w['identical']}",
                f">= {TARGET_SPEEDUP}x on 2 cores",
            )
        )
    if "startup" not in skip:
        from bench.bench_startup import TARGET_S
        from bench.bench_startup import headline as startup

        for name, s in startup().items():
            rows.append(_row(f"`{name}` start-up", f"{s['median_s']:.3f} s", f"< {TARGET_S} s"))

    print("\n".join(rows))
    print(f"\n(measured in {time.perf_counter() - started:.0f} s; on a shared machine the figures are indicative only)")
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
