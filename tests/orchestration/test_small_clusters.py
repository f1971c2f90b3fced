"""A run whose failing trajectories all share one feature row is clustered in plain Python (no
numpy, scipy or scikit-learn to import): the same summary, key for key, as the k-means path."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest

from pipelines.orchestration import clusters
from pipelines.orchestration._stop_words import ENGLISH_STOP_WORDS
from pipelines.orchestration.clusters import FailureFeatures, Member

WORDS = ["argument", "athlete", "year", "unknown", "the", "and", "missing", "value", "step", "wrong", "get_medals", "tool", "country", "a"]


def test_the_stop_words_are_scikit_learns():
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS as theirs

    assert theirs == ENGLISH_STOP_WORDS


def _text(rng: random.Random) -> str:
    shape = rng.choice(["words", "empty", "stop_only", "digits", "many_terms"])
    if shape == "empty":
        return ""
    if shape == "stop_only":
        return "the and of step 3 steps"
    if shape == "digits":
        return " ".join(f"call {rng.randint(1, 9)} failed at step {rng.randint(1, 9)}" for _ in range(rng.randint(1, 4)))
    if shape == "many_terms":  # over MAX_TERMS distinct terms: the first ones alphabetically are kept
        return " ".join(f"term{chr(97 + i % 26)}{chr(97 + i // 26 % 26)}x" for i in range(clusters.MAX_TERMS + 40))
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 30)))


def _cases(n: int):
    rng = random.Random(7)
    for _ in range(n):
        row = FailureFeatures(
            stage=rng.choice(["tool_selection", "argument_values", "unresolved:answer_grounding"]),
            tools=tuple(sorted(rng.sample(["get_medals", "get_athlete", "get_country"], rng.randint(0, 3)))),
            kinds=tuple(sorted(rng.sample(["unsatisfied", "extra_write", "answer"], rng.randint(0, 2)))),
            text=_text(rng),
        )
        size = rng.choice([1, 2, 5, 19, 20, 23, 60])
        members = [Member(f"tr{i}", f"t{i % 4}", rng.choice(["a", "b", None]), 0) for i in range(size)]
        yield row, members


@pytest.mark.parametrize("case", range(40))
def test_one_row_is_clustered_as_k_means_clusters_it(case):
    row, members = list(_cases(40))[case]
    method = "m"
    plain = clusters._one_row(row, members, method)
    general = clusters._cluster_rows([row], members, 0, clusters.MAX_K, method)
    assert json.dumps(plain.summary) == json.dumps(general.summary)
    assert plain.member_clusters == general.member_clusters


def test_cluster_failures_takes_the_plain_path_for_one_row_only():
    code = (
        "import sys\n"
        "from pipelines.orchestration.clusters import FailureFeatures, Member, cluster_failures\n"
        "row = FailureFeatures('tool_selection', ('get_medals',), ('unsatisfied',), 'wrong tool get_medals')\n"
        "done = cluster_failures([row], [Member('a', 't', None, 0), Member('b', 't', None, 0)])\n"
        "assert done.summary['k'] == 1 and done.member_clusters == [1, 1]\n"
        "print(' '.join(m for m in ('numpy', 'scipy', 'sklearn') if m in sys.modules))\n"
        "other = FailureFeatures('argument_values', ('get_country',), ('unsatisfied',), 'wrong code')\n"
        "cluster_failures([row, other], [Member('a', 't', None, 0), Member('b', 't', None, 1)])\n"
        "print(' '.join(m for m in ('numpy', 'scipy', 'sklearn') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[0] == ""  # one row: nothing heavy imported
    assert set(out[1].split()) == {"numpy"}  # two rows: k-means, by the numpy replica (no scikit-learn, no scipy: issue 27)
