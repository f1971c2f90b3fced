"""Start-up of the ``judge`` command: ``judge --help`` and ``judge env list``.

Each command runs as a fresh process (what a user waits for), several times; the median wall
time is printed, with the modules of ours and the heavy libraries the command imported.

Target (issue 11): both under 0.3 s.
Run: .venv/bin/python bench/bench_startup.py [--runs 7]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
TARGET_S = 0.3
COMMANDS = {"judge --help": ["--help"], "judge env list": ["env", "list"]}
HEAVY = ("pydantic", "numpy", "scipy", "pandas", "sklearn", "openai", "anthropic", "instructor", "bm25s", "jieba", "jsonschema", "matplotlib")

_PROBE = """
import sys
from pipelines.cli import app
try:
    app(args={args!r}, standalone_mode=False)
except SystemExit:
    pass
print("HEAVY=" + ",".join(sorted({{m.split('.')[0] for m in sys.modules}} & set({heavy!r}))), file=sys.stderr)
"""


def judge_exe() -> list[str]:
    exe = Path(sys.executable).with_name("judge")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "pipelines.cli"]


def time_command(args: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([*judge_exe(), *args], capture_output=True, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def heavy_imports(args: list[str]) -> list[str]:
    proc = subprocess.run([sys.executable, "-c", _PROBE.format(args=args, heavy=HEAVY)], capture_output=True, text=True, cwd=ROOT)
    line = next((x for x in proc.stderr.splitlines() if x.startswith("HEAVY=")), "HEAVY=")
    return [m for m in line[len("HEAVY=") :].split(",") if m]


def headline(runs: int = 7) -> dict[str, dict]:
    from bench import compiled

    compiled(ROOT)  # the commands read bytecode, as an installed wheel's do
    return {name: {"median_s": time_command(args, runs), "heavy": heavy_imports(args)} for name, args in COMMANDS.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    python = statistics.median(_python_startup() for _ in range(args.runs))
    print(f"bare Python start-up: {python:.3f} s (the floor under every command)")
    for name, r in headline(args.runs).items():
        print(
            f"{name}: {r['median_s']:.3f} s median of {args.runs} (target < {TARGET_S} s; ratio {r['median_s'] / TARGET_S:.2f}x); heavy libraries imported: {', '.join(r['heavy']) or 'none'}"
        )


def _python_startup() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
