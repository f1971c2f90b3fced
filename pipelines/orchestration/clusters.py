"""Failure modes: failing and unresolved trajectories clustered by what went wrong (the algorithm;
``failure_modes`` collects a run's features, ``_child`` runs this in a child process).

Features of one trajectory (``failure_features``, from its graded result alone), taken from the
decisive check of its first failing turn (for an unresolved one: the first inconclusive check):
- the failure stage (``unresolved:<stage>`` for an unresolved trajectory), one-hot;
- the tools its evidence is about (``Evidence.tool``: the reference call's tool, or the step's for
  a surplus write or a policy violation), multi-hot;
- the evidence kinds (``unsatisfied``, ``extra_write``, ``policy_violation``, ``answer``, ...), multi-hot;
- the check's reason and evidence messages as TF-IDF (words and identifiers; digits dropped, so
  "step 3" and "step 4" read alike; document frequencies counted over trajectories).
Each block is L2-normalised and weighted (``WEIGHTS``), so no block dominates by its width.

Clustering (``cluster_failures``): identical feature rows are merged and weighted by their count;
k-means (k-means++, ``N_INIT`` seeded inits, one thread; scikit-learn's KMeans as computed by
``_kmeans``, its numpy replica, without importing scikit-learn; on features rounded to a grid of
``2**-20`` so that every BLAS dot product is exact and the result the same on every CPU) for k = 2, 3, ... up to ``max_k`` (and the
number of distinct rows); k is the one with the best silhouette, measured over distinct rows (a
cluster of identical trajectories would otherwise score a perfect 1 and every split into
identical groups would look best); the search stops after ``PATIENCE`` k without a gain; ties go
to the smaller k. Large runs fit on a seeded sample of ``FIT_SAMPLE`` trajectories and assign the
rest to the nearest centre. The same inputs and seed give the same clusters, byte for byte.

Each cluster: a label (its dominant stage, its dominant tool when at least half its
members share one, and its top TF-IDF terms), size, share, stages, tools, evidence kinds, the
agents it hits, and the three trajectories closest to its centre as examples.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from typing import Any

import msgspec

from judge import CHECK_DEFAULT_STAGE, EvidenceKind, Outcome, TrajectoryResult, VerdictLabel
from pipelines.orchestration._stop_words import ENGLISH_STOP_WORDS

WEIGHTS = {"stage": 1.0, "tool": 0.6, "kind": 1.0, "text": 0.8}
MAX_K = 20
FIT_SAMPLE = 1000  # trajectories the centres are fitted on in large runs
SILHOUETTE_SAMPLE = 1000  # distinct feature rows the silhouette is measured on
PATIENCE = 3  # stop after this many k in a row without a better silhouette
N_INIT = 4
MAX_TEXT = 600
MIN_DF = 2  # trajectories a term must occur in (runs of 20 or more)
MAX_TERMS = 500
EXAMPLES = 3
TOP_TERMS = 4
_MATCHED = frozenset({EvidenceKind.MATCHED_STRUCTURAL, EvidenceKind.MATCHED_RESPONSE})
_TOKEN = r"(?u)\b[^\W\d_][^\W\d]+\b"  # words and snake_case identifiers, no digits
_EXTRA_STOP_WORDS = ("step", "steps")  # in nearly every evidence message: says nothing about the bug


class FailureFeatures(msgspec.Struct, frozen=True):
    stage: str
    tools: tuple[str, ...]
    kinds: tuple[str, ...]
    text: str


def failure_features(result: TrajectoryResult) -> FailureFeatures | None:
    """The clustering features of a failing or unresolved trajectory; None for the others."""
    if result.verdict == VerdictLabel.FAIL:
        turn = next((t for t in result.turns if t.verdict == VerdictLabel.FAIL), None)
        check = next((c for c in turn.checks if c.outcome == Outcome.MISMATCH), None) if turn is not None else None
        stage = result.failure_stage.value if result.failure_stage is not None else "unknown"
    elif result.verdict == VerdictLabel.UNRESOLVED:
        turn = next((t for t in result.turns if t.verdict == VerdictLabel.UNRESOLVED), None)
        check = next((c for c in turn.checks if c.outcome == Outcome.INCONCLUSIVE), None) if turn is not None else None
        stage = "unresolved:" + (CHECK_DEFAULT_STAGE[check.check].value if check is not None else "unknown")
    else:
        return None
    if check is None:
        return FailureFeatures(stage, (), (), "")
    evidence = [e for e in check.evidence if e.kind not in _MATCHED]
    tools = sorted({e.tool for e in evidence if e.tool})
    kinds = sorted({e.kind.value for e in evidence})
    messages = [e.message for e in evidence]
    text = " ".join(([check.reason] if check.reason not in messages else []) + messages)[:MAX_TEXT]
    return FailureFeatures(stage, tuple(tools), tuple(kinds), text)


class Member(msgspec.Struct, frozen=True):
    trajectory_id: str | None
    task_id: str | None
    agent: str | None
    row: int  # index of its (deduplicated) feature row


class Clustering(msgspec.Struct, frozen=True):
    summary: dict[str, Any]  # JSON-ready: the ``failure_modes`` section of summary.json
    member_clusters: list[int]  # cluster id of each member, in member order


def _one_hot(values: list[tuple[str, ...]]) -> Any:
    import numpy as np

    from pipelines.orchestration._csr import CSR

    vocab = {v: i for i, v in enumerate(sorted({x for vs in values for x in vs}))}
    indptr, indices = [0], []
    for vs in values:
        indices.extend(sorted(vocab[x] for x in set(vs)))
        indptr.append(len(indices))
    data = np.ones(len(indices), dtype=float)
    return CSR(data, indices, indptr, (len(values), max(len(vocab), 1)))


def _normalised(block: Any, weight: float) -> Any:
    return _l2(block).scaled(weight)


def _tfidf(texts: list[str], counts: Any) -> tuple[Any, list[str]]:
    """TF-IDF of the distinct rows, with document frequencies counted over trajectories (a row
    stands for ``counts[i]`` identical trajectories): sublinear tf, smooth idf, L2 rows. A term
    must occur in ``MIN_DF`` trajectories (or all are kept in runs under 20 trajectories)."""
    import numpy as np

    from pipelines.orchestration._csr import CSR
    from pipelines.orchestration._kmeans import count_terms

    try:
        counted, terms = count_terms(texts, _token_pattern(), _stop_words())
    except ValueError:  # no term at all
        return CSR.empty(len(texts), 1), []
    tf = counted.columns_ascending()  # column order within rows now canonical, whatever order the counts were stored in
    total = float(counts.sum())
    df = np.bincount(tf.indices, weights=counts[tf.row_of_each_value()], minlength=tf.shape[1])  # trajectories per term: sums of whole numbers, exact
    keep = np.flatnonzero(df >= (MIN_DF if total >= 20 else 1))
    if keep.size > MAX_TERMS:  # the most frequent terms, ties by name
        keep = np.sort(sorted(keep, key=lambda j: (-df[j], terms[j]))[:MAX_TERMS])
    if keep.size == 0:
        return CSR.empty(len(texts), 1), []
    tf = tf.kept_columns(keep)
    tf.data = 1.0 + np.log(tf.data)
    idf = np.log((1.0 + total) / (1.0 + df[keep])) + 1.0
    return _l2(tf.times_diagonal(idf)), [str(terms[j]) for j in keep]  # tf >= 1 and idf >= 1: no product is zero


def _l2(matrix: Any) -> Any:
    from pipelines.orchestration._kmeans import l2_normalize

    return l2_normalize(matrix)


def cluster_failures(rows: list[FailureFeatures], members: list[Member], seed: int = 0, max_k: int = MAX_K) -> Clustering:
    """Cluster the members (each pointing at one of ``rows``); see the module docstring."""
    method = (
        f"k-means over failure stage, evidence tool, evidence kind and evidence-text TF-IDF; k in 2..{max_k} by silhouette; seed {seed}; "
        "identical feature rows merged with their counts"
    )
    if not members:
        return Clustering({"clustered": 0, "k": 0, "silhouette": None, "method": method, "clusters": []}, [])
    if len(rows) == 1:  # one distinct row: one cluster, no k-means to run (and no numpy or scipy to import)
        return _one_row(rows[0], members, method)
    return _cluster_rows(rows, members, seed, max_k, method)


def _cluster_rows(rows: list[FailureFeatures], members: list[Member], seed: int, max_k: int, method: str) -> Clustering:
    import numpy as np

    from pipelines.orchestration._csr import hstack

    counts = np.bincount([m.row for m in members], minlength=len(rows)).astype(float)
    text, terms = _tfidf([r.text for r in rows], counts)
    blocks = [
        _normalised(_one_hot([(r.stage,) for r in rows]), WEIGHTS["stage"]),
        _normalised(_one_hot([r.tools for r in rows]), WEIGHTS["tool"]),
        _normalised(_one_hot([r.kinds for r in rows]), WEIGHTS["kind"]),
        _normalised(text, WEIGHTS["text"]),
    ]
    X = _on_grid(hstack(blocks))
    labels, k, silhouette, centres = _choose_k(X, counts, [m.row for m in members], seed, max_k)
    described, ids = _describe(rows, members, X, text, terms, labels, centres)
    summary = {"clustered": len(members), "k": k, "silhouette": silhouette, "method": method, "clusters": described}
    return Clustering(summary, [ids[int(labels[m.row])] for m in members])


def _on_grid(X: Any) -> Any:
    """The CSR features on k-means' grid (``_kmeans.on_grid``), values that round to zero dropped:
    its dot products are then exact, so the clusters have the same bits on every CPU."""
    from pipelines.orchestration._kmeans import on_grid

    X.data = on_grid(X.data)
    return X.without_zeros()


def _distinct_rows(X: Any) -> int:
    return len({(tuple(X.indices[X.indptr[i] : X.indptr[i + 1]]), tuple(_rounded(X.data[X.indptr[i] : X.indptr[i + 1]]))) for i in range(X.shape[0])})


def _rounded(values: Any) -> tuple[float, ...]:
    return tuple(round(float(v), 9) for v in values)


def _choose_k(X: Any, counts: Any, member_rows: list[int], seed: int, max_k: int) -> tuple[Any, int, float | None, Any]:
    """(label per row, k, silhouette, centres). One cluster when the rows cannot be told apart."""
    import numpy as np
    from threadpoolctl import threadpool_limits

    n_rows = X.shape[0]
    distinct = _distinct_rows(X)
    if distinct < 2:
        return np.zeros(n_rows, dtype=int), 1, None, X.weighted_column_sums(counts) / counts.sum()
    rng = np.random.default_rng(seed)
    population = np.asarray(member_rows)
    if len(population) > FIT_SAMPLE:  # large runs: fit on a seeded sample of the trajectories
        drawn = np.bincount(population[np.sort(rng.choice(len(population), FIT_SAMPLE, replace=False))], minlength=n_rows)
        fit_rows = np.flatnonzero(drawn)
        fit_weights = drawn[fit_rows].astype(float)
    else:
        fit_rows = np.flatnonzero(counts)
        fit_weights = counts[fit_rows]
    # silhouette over distinct rows, not trajectories: a cluster of identical trajectories would
    # otherwise score a perfect 1 and every split into identical groups would look best
    present = np.flatnonzero(counts)
    sample = present if len(present) <= SILHOUETTE_SAMPLE else present[np.sort(rng.choice(len(present), SILHOUETTE_SAMPLE, replace=False))]
    X_fit = X.toarray(fit_rows)  # at most FIT_SAMPLE rows: dense k-means is far faster than sparse
    X_sample = X.toarray(sample)
    # one thread: these fits are small, OpenMP threads only spin against each other (5x slower on
    # a busy 2-core machine), and the result cannot depend on the machine's core count
    with threadpool_limits(limits=1):
        best = _best_k(X_fit, fit_weights, X_sample, len(sample), min(max_k, _distinct_rows(X.rows(fit_rows))), seed)
    if best is None:  # too few trajectories to compare partitions: one cluster
        return np.zeros(n_rows, dtype=int), 1, None, X.weighted_column_sums(counts) / counts.sum()
    score, k, model = best
    with threadpool_limits(limits=1):
        labels = model.predict(X)
    return labels, k, score, model.cluster_centers_


def _best_k(X_fit: Any, weights: Any, X_sample: Any, n_sample: int, k_max: int, seed: int) -> tuple[float, int, Any] | None:
    """(silhouette, k, fitted model) of the best k in 2..k_max, stopping after PATIENCE k without gain."""
    from pipelines.orchestration._kmeans import KMeans, silhouette_score

    best: tuple[float, int, Any] | None = None
    since_best = 0
    for k in range(2, k_max + 1):
        model = KMeans(n_clusters=k, n_init=N_INIT, random_state=seed, grid=True).fit(X_fit, weights)
        sample_labels = model.predict(X_sample)
        if not 2 <= len(set(sample_labels.tolist())) < n_sample:
            continue
        score = round(float(silhouette_score(X_sample, sample_labels)), 4)
        if best is None or score > best[0]:
            best, since_best = (score, k, model), 0
        else:
            since_best += 1
            if since_best >= PATIENCE:  # the silhouette stopped improving: larger k only fragments
                break
    return best


def _describe(
    rows: list[FailureFeatures], members: list[Member], X: Any, text: Any, terms: list[str], labels: Any, centres: Any
) -> tuple[list[dict[str, Any]], dict[int, int]]:
    """The clusters, largest first, and the public id (1-based, in that order) of each k-means label."""
    import numpy as np

    total = len(members)
    by_cluster: dict[int, list[Member]] = {}
    for m in members:
        by_cluster.setdefault(int(labels[m.row]), []).append(m)
    clusters: list[dict[str, Any]] = []
    for c, group in by_cluster.items():
        stages = Counter(rows[m.row].stage for m in group)
        tools = Counter(t for m in group for t in rows[m.row].tools)
        kinds = Counter(k for m in group for k in rows[m.row].kinds)
        agents = Counter(m.agent or "unknown" for m in group)
        member_rows = np.asarray([m.row for m in group])
        weights = text.column_means(member_rows) if text.shape[1] == len(terms) and terms else np.zeros(0)
        order = sorted(range(len(weights)), key=lambda i: (-round(float(weights[i]), 9), terms[i]))
        top_terms = [terms[i] for i in order if weights[i] > 0][:TOP_TERMS]
        stage = _top(stages)
        tool = _top(tools)
        label = stage + (f" at {tool}" if tool and tools[tool] * 2 >= len(group) else "") + (": " + ", ".join(top_terms) if top_terms else "")
        centre = np.asarray(centres[c]).ravel()
        distinct_rows = sorted(set(member_rows.tolist()))
        block = X.toarray(distinct_rows) - centre  # distinct rows of one cluster: small
        dist = {r: float(np.linalg.norm(block[i])) for i, r in enumerate(distinct_rows)}
        first_members: dict[int, list[Member]] = {}
        for m in group:  # per row, its first EXAMPLES members in input order
            bucket = first_members.setdefault(m.row, [])
            if len(bucket) < EXAMPLES:
                bucket.append(m)
        nearest = sorted(distinct_rows, key=lambda r: (round(dist[r], 9), r))
        picked = [m for r in nearest for m in first_members[r]][:EXAMPLES]
        examples = [{"trajectory_id": m.trajectory_id, "task_id": m.task_id, "agent": m.agent} for m in picked]
        clusters.append(
            {
                "_label": c,
                "label": label,
                "size": len(group),
                "share": round(len(group) / total, 6),
                "stage": stage,
                "stages": _sorted(stages),
                "tools": _sorted(tools),
                "evidence_kinds": _sorted(kinds),
                "top_terms": top_terms,
                "agents": _sorted(agents),
                "examples": examples,
            }
        )
    clusters.sort(key=lambda d: (-d["size"], d["label"], d["_label"]))
    ids: dict[int, int] = {}
    for i, cluster in enumerate(clusters, 1):
        ids[cluster.pop("_label")] = i
        cluster["id"] = i
    return clusters, ids


def _one_row(row: FailureFeatures, members: list[Member], method: str) -> Clustering:
    """``_cluster_rows`` where every member has the same features, in plain Python: one cluster.

    The same summary as the general path: its top terms are the row's TF-IDF terms by weight (with
    one row every term's document frequency is the trajectory count, so every idf is 1 and a
    term's weight is its sublinear tf, ``1 + log(count)``, over the row's L2 norm; the norm does not
    change the order, which is by weight rounded to 9 digits, then by term); its examples are the
    first members in input order (every member is at the same distance from the centre)."""
    total = len(members)
    weights = {term: 1.0 + math.log(n) for term, n in _term_counts(row.text).items()}
    norm = math.sqrt(sum(w * w for w in weights.values()))
    ranked = sorted(sorted(weights)[:MAX_TERMS], key=lambda t: (-round(weights[t] / norm, 9), t))
    top_terms = ranked[:TOP_TERMS]
    tools = Counter(dict.fromkeys(row.tools, total))
    tool = _top(tools)
    label = row.stage + (f" at {tool}" if tool else "") + (": " + ", ".join(top_terms) if top_terms else "")
    cluster = {
        "label": label,
        "size": total,
        "share": round(total / total, 6),
        "stage": row.stage,
        "stages": {row.stage: total},
        "tools": _sorted(tools),
        "evidence_kinds": _sorted(Counter(dict.fromkeys(row.kinds, total))),
        "top_terms": top_terms,
        "agents": _sorted(Counter(m.agent or "unknown" for m in members)),
        "examples": [{"trajectory_id": m.trajectory_id, "task_id": m.task_id, "agent": m.agent} for m in members[:EXAMPLES]],
        "id": 1,
    }
    summary = {"clustered": total, "k": 1, "silhouette": None, "method": method, "clusters": [cluster]}
    return Clustering(summary, [1] * total)


@functools.cache
def _token_pattern() -> re.Pattern[str]:
    return re.compile(_TOKEN)


@functools.cache
def _stop_words() -> frozenset[str]:
    return frozenset(ENGLISH_STOP_WORDS | set(_EXTRA_STOP_WORDS))


def _term_counts(text: str) -> Counter[str]:
    """What scikit-learn's ``CountVectorizer(token_pattern=_TOKEN, stop_words=...)`` counts in one
    document: lower-cased, the pattern's matches, stop words dropped."""
    stop = _stop_words()
    return Counter(t for t in _token_pattern().findall(text.lower()) if t not in stop)


def _top(counter: Counter[str]) -> str:
    return min(counter.items(), key=lambda kv: (-kv[1], kv[0]))[0] if counter else ""


def _sorted(counter: Counter[str]) -> dict[str, int]:
    return dict(sorted(counter.items(), key=lambda kv: (-kv[1], kv[0])))
