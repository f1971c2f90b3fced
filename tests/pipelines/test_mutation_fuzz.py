"""Mutated real-format samples through ``judge grade``: no input may crash the run or lose a row.

Each case takes a real sample (the format fixtures, whose origin notes sit beside them, the bundled
sample, and the tau2 results in ../shared when present), applies a few seeded random mutations
(a value replaced by one of another type, a key dropped or renamed, an element repeated, nesting
added, a line cut short or a stray line inserted) and grades it. Invariants: the CLI never ends in an
internal error (exit 1) or an exception, and for line formats read one item per line every input
line is one row of results.jsonl. This found the crashes fixed in the readers (a list as an OpenAI
role, a BFCL ``required`` of lists) and the markup crash of the error listing.
The seeds are fixed: a failure names its case and seed, and reruns the same way.
"""

from __future__ import annotations

import copy
import json
import random
import traceback
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from pipelines.cli import app

ROOT = Path(__file__).resolve().parents[2]
FORMATS = ROOT / "tests" / "fixtures" / "formats"
SAMPLE = ROOT / "data" / "sample"
TAU2 = ROOT.parent / "shared" / "data" / "external" / "formats" / "tau2" / "retail_gpt-4.1-mini_results.json"

# name: (trajectories, tasks, reference, one item per line)
CASES: dict[str, tuple[Path, Path | None, Path | None, bool]] = {
    "native": (SAMPLE / "trajectories.jsonl", SAMPLE / "tasks.jsonl", None, True),
    "openai": (FORMATS / "openai_trajectories.jsonl", FORMATS / "native_tasks.jsonl", None, True),
    "anthropic": (FORMATS / "anthropic_trajectories.jsonl", FORMATS / "native_tasks.jsonl", None, True),
    "vakra": (FORMATS / "vakra_predictions.jsonl", FORMATS / "vakra_input.jsonl", FORMATS / "vakra_ground_truth.jsonl", False),
    "bfcl": (FORMATS / "bfcl_results.jsonl", FORMATS / "bfcl_questions.jsonl", FORMATS / "bfcl_possible_answers.jsonl", False),
    "otel": (FORMATS / "otel_file_exporter.jsonl", None, None, False),
    "inspect": (FORMATS / "inspect_tool_call_errors.json", None, None, False),
    "native-array": (FORMATS / "native_trajectories_array.json", FORMATS / "native_tasks.jsonl", None, False),
    "tau2": (TAU2, None, None, False),
}
SEEDS = range(5)

# values of every JSON type, and strings readers and printers have tripped on
ODD_VALUES: list[Any] = [
    None,
    True,
    0,
    -1,
    2**70,
    1.5e308,
    "",
    "[/x] [bold]",
    "x" * 3000,
    [],
    {},
    {"a": []},
    [None],
    '{"a": 1}',
    "[1, 2",
    "null",
    "\u0000",
    "\u202e",
    "NaN",
    {"role": "tool"},
    [[[[[[]]]]]],
]
RENAMES = ["id", "name", "role", "content", "arguments", "tool_calls", "steps", "turns", "x-extra"]


def _nodes(value: Any, path: tuple = ()) -> list[tuple[tuple, Any]]:
    out = [(path, value)]
    if isinstance(value, dict):
        for k, child in value.items():
            out += _nodes(child, (*path, k))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            out += _nodes(child, (*path, i))
    return out


def _mutate(doc: Any, rng: random.Random) -> Any:
    path, node = rng.choice(_nodes(doc))
    if not path:
        return doc
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    key = path[-1]
    roll = rng.random()
    if roll < 0.45:
        parent[key] = copy.deepcopy(rng.choice(ODD_VALUES))
    elif roll < 0.6:
        del parent[key]
    elif roll < 0.7 and isinstance(parent, dict):
        parent[rng.choice(RENAMES)] = parent.pop(key)
    elif roll < 0.8 and isinstance(parent, list):
        parent.insert(key, copy.deepcopy(parent[key]))
    elif roll < 0.9:
        parent[key] = [node] if isinstance(node, str) else str(node)
    else:
        for _ in range(rng.choice([3, 60, 300])):
            node = [node]
        parent[key] = node
    return doc


def _mutate_lines(text: str, rng: random.Random) -> list[str]:
    lines = text.splitlines()
    for _ in range(rng.choice([1, 2, 3])):
        i = rng.randrange(len(lines))
        roll = rng.random()
        if roll < 0.08 and lines[i]:
            lines[i] = lines[i][: rng.randrange(len(lines[i]))]
        elif roll < 0.12:
            lines.insert(i, rng.choice(["garbage", "{}", "null", '{"a":1,"a":2}']))
        else:
            try:
                doc = json.loads(lines[i])
            except ValueError:
                continue
            lines[i] = json.dumps(_mutate(doc, rng), ensure_ascii=rng.random() < 0.5)
    return lines


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", list(CASES))
def test_mutated_real_inputs_never_crash_the_run_or_lose_a_row(name, seed, tmp_path):
    trajectories, tasks, reference, per_line = CASES[name]
    if not trajectories.exists():
        pytest.skip(f"{trajectories} is not here (../shared absent)")
    rng = random.Random(f"{name}:{seed}")
    lines: list[str] | None = None
    if tasks is not None and rng.random() < 0.3:  # a mutated task file, the trajectories as they are
        mutated = tmp_path / f"tasks{tasks.suffix}"
        mutated.write_text("\n".join(_mutate_lines(tasks.read_text(encoding="utf-8"), rng)) + "\n", encoding="utf-8")
        tasks, path = mutated, trajectories
    else:
        path = tmp_path / trajectories.name
        if trajectories.suffix == ".jsonl":
            lines = _mutate_lines(trajectories.read_text(encoding="utf-8"), rng)
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        else:
            doc = json.loads(trajectories.read_text(encoding="utf-8"))
            for _ in range(rng.choice([1, 2, 3])):
                doc = _mutate(doc, rng)
            path.write_text(json.dumps(doc, ensure_ascii=rng.random() < 0.5), encoding="utf-8")
    out = tmp_path / "out"
    args = ["grade", "--trajectories", str(path), "--out", str(out), "--offline", "--workers", "1"]
    args += ["--tasks", str(tasks)] if tasks is not None else []
    args += ["--reference", str(reference)] if reference is not None else []
    res = CliRunner().invoke(app, args)
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        pytest.fail(f"{name} seed {seed}: " + "".join(traceback.format_exception(res.exception))[-3000:])
    assert res.exit_code in (0, 2, 3), f"{name} seed {seed}: exit {res.exit_code}\n{res.output[-3000:]}"
    if res.exit_code == 0 and per_line and lines is not None:
        items = [line for line in lines if line.strip()]
        rows = (out / "results.jsonl").read_text(encoding="utf-8").splitlines()
        assert len(rows) == len(items), f"{name} seed {seed}: {len(items)} input lines, {len(rows)} rows"
