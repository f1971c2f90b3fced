"""The numpy replica of scikit-learn's k-means, silhouette, term counts and L2 normalisation
(``pipelines.orchestration._kmeans``) against scikit-learn itself: every array equal bit for bit
(``np.array_equal`` on floats, no tolerance), on data shaped like failure-mode features (one-hot
blocks and TF-IDF, duplicate rows, weights), on more rows than one chunk of 256, more features
than a BLAS panel, and cases that make clusters empty (relocation) or stop on the tolerance.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse
from threadpoolctl import threadpool_limits

from pipelines.orchestration import _kmeans
from pipelines.orchestration.clusters import _stop_words, _token_pattern


def _features(rng: np.random.Generator, n: int, blocks: tuple[int, ...], density: float = 0.05) -> np.ndarray:
    """Rows like the clustering's: one-hot blocks, a sparse text block, each block L2-normalised."""
    parts = []
    for width in blocks:
        block = np.zeros((n, width))
        block[np.arange(n), rng.integers(0, width, n)] = 1.0
        parts.append(block)
    text = sparse.random(n, 300, density=density, random_state=int(rng.integers(1 << 30)), format="csr").toarray()
    parts.append(text)
    X = np.hstack(parts)
    return X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)


CASES = [
    ("small", 12, (3, 4), 1),
    ("one chunk", 200, (6, 10, 5), 2),
    ("several chunks", 700, (8, 18, 7), 3),
    ("duplicates", 300, (2, 2), 4),  # few distinct rows: clusters run empty, centres relocate
]


@pytest.mark.parametrize(("name", "n", "blocks", "seed"), CASES, ids=[c[0] for c in CASES])
def test_kmeans_fit_and_predict_equal_scikit_learn_bit_for_bit(name, n, blocks, seed):
    from sklearn.cluster import KMeans

    rng = np.random.default_rng(seed)
    X = _features(rng, n, blocks)
    if name == "duplicates":
        X = X[rng.integers(0, 5, n)]  # 5 distinct rows, many copies
    weights = rng.integers(1, 9, n).astype(float)
    X_sparse = sparse.csr_matrix(X)
    with threadpool_limits(limits=1):
        for k in (2, 3, 7, 12):
            theirs = KMeans(n_clusters=k, n_init=4, random_state=seed).fit(X, sample_weight=weights)
            ours = _kmeans.KMeans(k, 4, seed).fit(X, weights)
            assert np.array_equal(ours.cluster_centers_, theirs.cluster_centers_), (name, k)
            assert np.array_equal(ours.predict(X), theirs.predict(X)), (name, k)
            assert np.array_equal(ours.predict(X_sparse), theirs.predict(X_sparse)), (name, k)


@pytest.mark.parametrize(("name", "n", "blocks", "seed"), CASES[:3], ids=[c[0] for c in CASES[:3]])
def test_silhouette_equals_scikit_learn_bit_for_bit(name, n, blocks, seed):
    from sklearn.metrics import silhouette_score

    rng = np.random.default_rng(seed)
    X = _features(rng, n, blocks)
    for k in (2, 5):
        labels = rng.integers(0, k, n).astype(np.int32)
        labels[:k] = np.arange(k)
        assert _kmeans.silhouette_score(X, labels) == silhouette_score(X, labels)
    singletons = np.arange(n, dtype=np.int32) % (n - 1)  # clusters of one: their silhouette is 0
    assert _kmeans.silhouette_score(X, singletons) == silhouette_score(X, singletons)


def test_term_counts_and_l2_normalisation_equal_scikit_learn():
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.preprocessing import normalize

    texts = [
        "extra write cancel_pending_order at step 3: not in the reference",
        "The agent skipped get_user_details; expected user_id 'sara_doe_496'",
        "",
        "step 4 step 5 answer lacks the order id #W0000000 and the refund amount",
        "Zürich Ünïcode words, and THE stop words it",
    ]
    vectorizer = CountVectorizer(token_pattern=_token_pattern().pattern, stop_words=sorted(_stop_words()), dtype=np.float64)
    theirs = vectorizer.fit_transform(texts)
    ours, terms = _kmeans.count_terms(texts, _token_pattern(), _stop_words())
    assert terms == vectorizer.get_feature_names_out().tolist()
    ours_scipy = sparse.csr_matrix((ours.data, ours.indices, ours.indptr), shape=ours.shape)
    assert (ours_scipy != theirs).nnz == 0
    assert np.array_equal(ours.columns_ascending().indices, theirs.tocsc().tocsr().indices)
    with pytest.raises(ValueError):
        _kmeans.count_terms(["the and it", ""], _token_pattern(), _stop_words())
    rng = np.random.default_rng(0)
    matrix = sparse.random(40, 30, density=0.2, random_state=1, format="csr") * 7.3
    matrix = sparse.vstack([matrix, sparse.csr_matrix((1, 30))], format="csr")  # an empty row stays empty
    shuffled = matrix.copy()
    for i in range(shuffled.shape[0]):  # rows storing their columns out of order: summed in stored order
        lo, hi = shuffled.indptr[i], shuffled.indptr[i + 1]
        order = rng.permutation(hi - lo) + lo
        shuffled.indices[lo:hi], shuffled.data[lo:hi] = shuffled.indices[order], shuffled.data[order]
    for m in (matrix, shuffled):
        want, got = normalize(m, norm="l2"), _kmeans.l2_normalize(m)
        assert np.array_equal(got.data, want.data) and np.array_equal(got.indices, want.indices) and np.array_equal(got.indptr, want.indptr)


@pytest.mark.parametrize(("name", "n", "blocks", "seed"), CASES, ids=[c[0] for c in CASES])
def test_grid_labels_from_numpy_matmul_equal_the_dgemm_labels(name, n, blocks, seed):
    """On the grid, every distance is exact, so numpy's matmul (which ``KMeans(grid=True)`` uses to
    keep ``scipy.linalg`` unimported) picks the same centres as scikit-learn's ``dgemm`` call,
    ties included (duplicate rows and centres that are rows)."""
    rng = np.random.default_rng(seed)
    X = _kmeans.on_grid(_features(rng, n, blocks))
    for k in (2, 5, 12):
        centers = np.vstack([X[rng.integers(0, n, k)], _kmeans.on_grid(X[rng.integers(0, n, k)] * 0.5)])
        exact = _kmeans._dense_labels(X, centers, exact=True)
        assert exact.dtype == np.int32
        assert np.array_equal(exact, _kmeans._dense_labels(X, centers)), (name, k)
