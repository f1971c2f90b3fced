"""A second run sharing the judge cache, as its own process (``python -m tests.judge.claim_worker``).

Asks ``--n`` answer-correctness questions of ``openai:judge-a`` at ``--base-url``, with the cache
at ``--cache``, once ``--go`` exists (a file barrier, so two runs start together); prints the
labels and the call counts as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path

import rubrics
from judge.llm import JudgeSettings, build_panel
from tests.judge.helpers import answer_request


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--n", type=int, default=4)
    parser.add_argument("--go", type=Path, help="wait for this file before asking")
    parser.add_argument("--ready", type=Path, help="create this file once the panel is built")
    args = parser.parse_args()
    os.environ["OPENAI_BASE_URL"] = args.base_url
    os.environ.setdefault("OPENAI_API_KEY", "test-openai-key-not-real")
    panel = build_panel(JudgeSettings(judges=["openai:judge-a"], cache_path=args.cache, timeout_s=20), rubrics.RUBRICS)
    assert panel is not None
    panel.caller.claim_poll_s = (0.02, 0.1)
    if args.ready:
        args.ready.touch()
    deadline = time.monotonic() + 60
    while args.go and not args.go.exists():
        if time.monotonic() > deadline:
            sys.exit("no go signal")
        await asyncio.sleep(0.005)
    decisions = await panel.decide([answer_request(i) for i in range(args.n)])
    await panel.aclose()
    stats = panel.stats
    print(
        json.dumps(
            {
                "labels": [d.label for d in decisions],
                "cached": [v.cached for d in decisions for v in d.votes],
                "calls": stats.calls,
                "cache_hits": stats.cache_hits,
                "shared_with_other_runs": stats.shared_with_other_runs,
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main())
