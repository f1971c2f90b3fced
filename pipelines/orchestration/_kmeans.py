"""The few pieces of scikit-learn that failure-mode clustering uses, in numpy (sparse matrices as
``_csr.CSR``; scipy's BLAS only off the grid), computing what scikit-learn 1.9 computes operation
for operation, so the floats are the same bits.

Why: importing scikit-learn (which imports scipy.stats) costs ~1.5 s of CPU, more than the
clustering itself on runs of thousands of trajectories (issue 27). What is reproduced, each from
the scikit-learn source named beside it, in the same order of floating-point operations:

- ``count_terms``: ``CountVectorizer(token_pattern, stop_words, dtype=float64).fit_transform``
  (lower-case, the pattern's matches, stop words dropped, vocabulary sorted);
- ``l2_normalize``: ``sklearn.preprocessing.normalize`` of a CSR matrix (each row's sum of squares
  in stored order, its square root, every value divided by it);
- ``KMeans``: ``KMeans(n_clusters, n_init, random_state).fit(X, sample_weight)`` and ``predict``
  on dense and CSR input (k-means++ seeding, Lloyd iterations in chunks of 256 rows with BLAS
  ``dgemm`` called exactly as ``_k_means_lloyd.pyx`` calls it, empty-cluster relocation, the
  inertia and centre shift with their manual four-way unrolled sums, the best of ``n_init``);
- ``silhouette_score``: ``sklearn.metrics.silhouette_score`` (Euclidean, one chunk of rows).

Everything runs as scikit-learn runs under ``threadpool_limits(limits=1)`` (one OpenMP thread: the
chunk sums accumulate in sample order). ``tests/orchestration/test_kmeans_replica.py`` compares
every array with scikit-learn's, bit for bit, on generated and benchmark data.

The same bits on every CPU (``KMeans(grid=True)``, what failure clustering uses): BLAS kernels
(OpenBLAS picks one per CPU: Haswell, SkylakeX, Zen...) sum a dot product in their own order, so
scikit-learn's distances differ by an ulp from one machine to the next, and one ulp can flip a
k-means++ candidate or a rounded silhouette. With the input, the data mean and every centre
rounded to multiples of ``2**-GRID_BITS`` (``on_grid``) and all of them at most a few in magnitude,
every product is a multiple of ``2**-(2 * GRID_BITS)`` and every partial sum, in any order, fits in
53 bits: each dot product is exact, whatever the kernel. The k-means++ potentials, sums of many
weighted distances, are summed exactly with ``math.fsum``. ``tests/orchestration/test_blas_independence.py``
runs the clustering under several OpenBLAS kernels and compares the bits.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from pipelines.orchestration._csr import CSR

CHUNK_SIZE = 256  # sklearn/cluster/_k_means_common.pyx
MAX_ITER = 300  # KMeans defaults
TOL = 1e-4
GRID_BITS = 20  # features, data mean and centres on multiples of 2**-20: BLAS dot products exact (module docstring)
_GRID = float(2**GRID_BITS)


def on_grid(values: Any) -> Any:
    """``values`` rounded to the nearest multiple of ``2**-GRID_BITS`` (a new float64 array)."""
    return np.rint(np.asarray(values, dtype=np.float64) * _GRID) / _GRID


def count_terms(texts: list[str], pattern: re.Pattern[str], stop_words: frozenset[str]) -> tuple[Any, list[str]]:
    """(``CSR`` term counts as float64, sorted terms) of ``texts``; ``ValueError`` when no document
    holds a term (as ``CountVectorizer.fit_transform`` raises). Rows store their columns in order
    of first occurrence: callers order them (``CSR.columns_ascending``), as ``clusters._tfidf`` does."""
    vocabulary: dict[str, int] = {}
    rows: list[dict[int, int]] = []
    for text in texts:
        counts: dict[int, int] = {}
        for token in pattern.findall(text.lower()):
            if token in stop_words:
                continue
            j = vocabulary.setdefault(token, len(vocabulary))
            counts[j] = counts.get(j, 0) + 1
        rows.append(counts)
    if not vocabulary:
        raise ValueError("empty vocabulary; perhaps the documents only contain stop words")
    terms = sorted(vocabulary)
    rank = np.empty(len(terms), dtype=np.int32)
    for new, term in enumerate(terms):
        rank[vocabulary[term]] = new
    indptr: list[int] = [0]
    indices: list[int] = []
    values: list[int] = []
    for counts in rows:
        indices.extend(counts)
        values.extend(counts.values())
        indptr.append(len(indices))
    matrix = CSR(
        np.asarray(values, dtype=np.float64), rank[np.asarray(indices, dtype=np.int64)] if indices else np.zeros(0, np.int64), indptr, (len(texts), len(terms))
    )
    return matrix, terms


def l2_normalize(matrix: Any) -> CSR:
    """A copy of the CSR ``matrix`` (a ``CSR`` or scipy's) with each nonzero row scaled to unit L2
    norm (``sklearn.utils.sparsefuncs_fast._inplace_csr_row_normalize_l2``: a sequential sum of
    squares per row, in stored order)."""
    out = CSR(np.array(matrix.data, dtype=np.float64), np.array(matrix.indices), np.array(matrix.indptr), matrix.shape)
    data, indptr = out.data, out.indptr
    lengths = np.diff(indptr)
    sums = np.zeros(out.shape[0], dtype=np.float64)
    for p in range(int(lengths.max()) if lengths.size else 0):  # p-th stored value of every row that has one: sequential per row
        rows = np.flatnonzero(lengths > p)
        values = data[indptr[rows] + p]
        sums[rows] += values * values
    nonzero = sums != 0.0
    norms = np.sqrt(sums)
    scale = np.repeat(np.where(nonzero, norms, 1.0), lengths)
    divide = np.repeat(nonzero, lengths)
    data[divide] = data[divide] / scale[divide]
    return out


def _row_norms_squared(X: Any) -> Any:
    return np.einsum("ij,ij->i", X, X)  # sklearn.utils.extmath.row_norms (dense, squared)


def _squared_distances(A: Any, B: Any, B_norms: Any) -> Any:
    """``sklearn.metrics.pairwise._euclidean_distances(A, B, Y_norm_squared=B_norms, squared=True)``
    for float64 arrays, ``A`` not ``B``."""
    AA = _row_norms_squared(A)[:, None]
    BB = np.reshape(B_norms, (1, -1))
    distances = -2 * (A @ B.T)
    distances += AA
    distances += BB
    np.maximum(distances, np.asarray(0, dtype=distances.dtype), out=distances)
    return distances


def _weighted_sums(distances: Any, sample_weight: Any, exact: bool) -> Any:
    """``distances @ sample_weight`` per row of a 2-D ``distances`` (a BLAS ``dgemv``, as
    scikit-learn), or each row's sum correctly rounded (``math.fsum``: the same bits on every CPU)."""
    if not exact:
        return distances @ sample_weight.reshape(-1, 1)
    return np.array([[math.fsum(row)] for row in (distances * sample_weight).tolist()], dtype=np.float64)


def _kmeans_plusplus(X: Any, n_clusters: int, x_squared_norms: Any, sample_weight: Any, random_state: Any, exact: bool = False) -> Any:
    """sklearn.cluster._kmeans._kmeans_plusplus (dense; the default number of local trials); with
    ``exact``, the potentials summed with ``math.fsum`` instead of BLAS."""
    n_samples, n_features = X.shape
    centers = np.empty((n_clusters, n_features), dtype=X.dtype)
    n_local_trials = 2 + int(np.log(n_clusters))
    center_id = random_state.choice(n_samples, p=sample_weight / sample_weight.sum())
    centers[0] = X[center_id]
    closest_dist_sq = _squared_distances(centers[0, np.newaxis], X, x_squared_norms)
    current_pot = _weighted_sums(closest_dist_sq, sample_weight, exact)[:, 0] if exact else closest_dist_sq @ sample_weight
    for c in range(1, n_clusters):
        rand_vals = random_state.uniform(size=n_local_trials) * current_pot
        candidate_ids = np.searchsorted(np.cumsum(sample_weight * closest_dist_sq), rand_vals)
        np.clip(candidate_ids, None, closest_dist_sq.size - 1, out=candidate_ids)
        distance_to_candidates = _squared_distances(X[candidate_ids], X, x_squared_norms)
        np.minimum(closest_dist_sq, distance_to_candidates, out=distance_to_candidates)
        candidates_pot = _weighted_sums(distance_to_candidates, sample_weight, exact)
        best_candidate = np.argmin(candidates_pot)
        current_pot = candidates_pot[best_candidate]
        closest_dist_sq = distance_to_candidates[best_candidate]
        centers[c] = X[candidate_ids[best_candidate]]
    return centers


def _unrolled_squared(a: Any, b: Any) -> Any:
    """``_euclidean_dense_dense(a[i], b[i], squared=True)`` for each row i: the squared
    differences summed four at a time (((d0 + d1) + d2) + d3), the groups and then the remainder
    added in order to a running total (``sklearn/cluster/_k_means_common.pyx``)."""
    d = a - b
    d = d * d
    n_features = d.shape[1]
    groups, rem = divmod(n_features, 4)
    result = np.zeros(d.shape[0], dtype=np.float64)
    for g in range(groups):
        s = 4 * g
        result += ((d[:, s] + d[:, s + 1]) + d[:, s + 2]) + d[:, s + 3]
    for i in range(rem):
        result += d[:, 4 * groups + i]
    return result


def _dense_labels(X: Any, centers: Any, exact: bool = False) -> Any:
    """The E-step of ``lloyd_iter_chunked_dense``: per chunk of rows, ``||c||^2`` then
    ``dgemm(-2 X c^T, beta=1)`` as scikit-learn calls it (row-major, through the Fortran
    interface), the first centre at the least value. ``exact``: ``X`` and ``centers`` are on the
    grid, so every product and sum is exact and any order of them gives the same bits: numpy's
    matmul computes them, without importing ``scipy.linalg`` (41 ms) for ``dgemm``."""
    norms = _row_norms_squared(centers)
    if exact:
        return np.argmin(norms[None, :] - 2.0 * (X @ centers.T), axis=1).astype(np.int32)
    from scipy.linalg.blas import dgemm

    n_samples = X.shape[0]
    n_clusters = centers.shape[0]
    labels = np.empty(n_samples, dtype=np.int32)
    chunk = CHUNK_SIZE if n_samples > CHUNK_SIZE else n_samples
    for start in range(0, n_samples, chunk):
        block = X[start : start + chunk]
        distances = np.empty((block.shape[0], n_clusters), dtype=np.float64)
        distances[:] = norms
        # C(row-major n x k) = -2 X C^T + C  is, in column-major, C^T = -2 centers^T' X^T + C^T:
        # dgemm('T', 'N', k, n, F, -2, centers, F, X, F, 1, C, k), the call of sklearn's _gemm
        result = dgemm(-2.0, centers.T, block.T, beta=1.0, c=distances.T, trans_a=1, trans_b=0, overwrite_c=1).T
        labels[start : start + block.shape[0]] = np.argmin(result, axis=1)
    return labels


def _sparse_labels(X: Any, centers: Any) -> Any:
    """The E-step of ``lloyd_iter_chunked_sparse``: per row and centre, the dot product summed
    over the row's stored values in order, then ``||c||^2 - 2 dot``; the first centre at the least.
    ``X``: a ``CSR`` or scipy's CSR matrix."""
    n_samples = X.shape[0]
    norms = _row_norms_squared(centers)
    lengths = np.diff(X.indptr)
    dots = np.zeros((n_samples, centers.shape[0]), dtype=np.float64)
    for p in range(int(lengths.max()) if n_samples else 0):
        rows = np.flatnonzero(lengths > p)
        at = X.indptr[rows] + p
        dots[rows] += centers[:, X.indices[at]].T * X.data[at][:, None]
    distances = norms[None, :] - 2 * dots
    return np.argmin(distances, axis=1).astype(np.int32)


def _relocate_empty(X: Any, sample_weight: Any, centers_old: Any, centers_new: Any, weight_in_clusters: Any, labels: Any) -> None:
    """sklearn.cluster._k_means_common._relocate_empty_clusters_dense."""
    empty_clusters = np.where(np.equal(weight_in_clusters, 0))[0].astype(np.int32)
    n_empty = empty_clusters.shape[0]
    if n_empty == 0:
        return
    distances = ((np.asarray(X) - np.asarray(centers_old)[labels]) ** 2).sum(axis=1)
    far_from_centers = np.argpartition(distances, -n_empty)[: -n_empty - 1 : -1].astype(np.int32)
    if np.max(distances) == 0:
        return
    for idx in range(n_empty):
        new_cluster_id = int(empty_clusters[idx])
        far_idx = int(far_from_centers[idx])
        weight = sample_weight[far_idx]
        old_cluster_id = int(labels[far_idx])
        contribution = X[far_idx] * weight
        centers_new[old_cluster_id] -= contribution
        centers_new[new_cluster_id] = contribution
        weight_in_clusters[new_cluster_id] = weight
        weight_in_clusters[old_cluster_id] -= weight


def _lloyd_iter(X: Any, sample_weight: Any, centers_old: Any, centers_new: Any, weight_in_clusters: Any, center_shift: Any, grid: bool) -> Any:
    """One ``lloyd_iter_chunked_dense`` with ``update_centers=True`` (one thread): the labels. With
    ``grid``, the new centres are put on the grid (``on_grid``) once averaged."""
    labels = _dense_labels(X, centers_old, grid)
    weight_in_clusters[:] = 0.0
    np.add.at(weight_in_clusters, labels, sample_weight)
    centers_new[:] = 0.0
    np.add.at(centers_new, labels, X * sample_weight[:, None])
    _relocate_empty(X, sample_weight, centers_old, centers_new, weight_in_clusters, labels)
    argmax_weight = int(np.argmax(weight_in_clusters))
    for j in range(centers_new.shape[0]):  # _average_centers: in order (an empty one copies the largest as it stands then)
        if weight_in_clusters[j] > 0:
            centers_new[j] *= 1.0 / weight_in_clusters[j]
        else:
            centers_new[j] = centers_new[argmax_weight]
    if grid:
        centers_new[:] = on_grid(centers_new)
    center_shift[:] = np.sqrt(_unrolled_squared(centers_new, centers_old))
    return labels


def _is_same_clustering(labels1: Any, labels2: Any, n_clusters: int) -> bool:
    mapping = [-1] * n_clusters
    for a, b in zip(labels1.tolist(), labels2.tolist(), strict=True):
        if mapping[a] == -1:
            mapping[a] = b
        elif mapping[a] != b:
            return False
    return True


def _inertia(X: Any, sample_weight: Any, centers: Any, labels: Any) -> float:
    inertia = 0.0
    for value in (_unrolled_squared(X, centers[labels]) * sample_weight).tolist():
        inertia += value
    return inertia


class KMeans:
    """``sklearn.cluster.KMeans(n_clusters, n_init=n_init, random_state=seed)`` (Lloyd, k-means++,
    ``max_iter=300``, ``tol=1e-4``) on dense float64 input: ``fit`` and ``predict`` (dense or CSR).

    ``grid=True``: the same bits on every CPU (module docstring). The input must then be on the
    grid already (``on_grid``) with rows of norm at most a few; the data mean and the centres are
    put on it, and the k-means++ potentials summed exactly. ``grid=False``: scikit-learn's bits."""

    def __init__(self, n_clusters: int, n_init: int, random_state: int, grid: bool = False):
        self.n_clusters, self.n_init, self.random_state, self.grid = n_clusters, n_init, random_state, grid
        self.cluster_centers_: Any = None

    def fit(self, X: Any, sample_weight: Any) -> KMeans:
        X = np.array(X, dtype=np.float64, order="C", copy=True)
        sample_weight = np.array(sample_weight, dtype=np.float64, order="C", copy=True)
        tol = float(np.mean(np.var(X, axis=0)) * TOL)
        random_state = np.random.RandomState(self.random_state)
        X_mean = X.mean(axis=0)
        if self.grid:
            if not np.array_equal(X, on_grid(X)):
                raise ValueError("KMeans(grid=True) needs its input on the grid: pass on_grid(X)")
            X_mean = on_grid(X_mean)
        X -= X_mean
        x_squared_norms = _row_norms_squared(X)
        best_inertia: float | None = None
        best_labels: Any = None
        best_centers: Any = None
        for _ in range(self.n_init):
            centers_init = _kmeans_plusplus(X, self.n_clusters, x_squared_norms, sample_weight, random_state, exact=self.grid)
            labels, inertia, centers = self._single_lloyd(X, sample_weight, centers_init, tol, self.grid)
            if best_inertia is None or (inertia < best_inertia and not _is_same_clustering(labels, best_labels, self.n_clusters)):
                best_labels, best_centers, best_inertia = labels, centers, inertia
        best_centers += X_mean
        self.cluster_centers_ = best_centers
        return self

    @staticmethod
    def _single_lloyd(X: Any, sample_weight: Any, centers_init: Any, tol: float, grid: bool) -> tuple[Any, float, Any]:
        """sklearn.cluster._kmeans._kmeans_single_lloyd."""
        n_clusters = centers_init.shape[0]
        centers = centers_init
        centers_new = np.zeros_like(centers)
        labels_old = np.full(X.shape[0], -1, dtype=np.int32)
        weight_in_clusters = np.zeros(n_clusters, dtype=X.dtype)
        center_shift = np.zeros(n_clusters, dtype=X.dtype)
        strict_convergence = False
        for _ in range(MAX_ITER):
            labels = _lloyd_iter(X, sample_weight, centers, centers_new, weight_in_clusters, center_shift, grid)
            centers, centers_new = centers_new, centers
            if np.array_equal(labels, labels_old):
                strict_convergence = True
                break
            if (center_shift**2).sum() <= tol:
                break
            labels_old[:] = labels
        if not strict_convergence:
            labels = _dense_labels(X, centers, grid)
        return labels, _inertia(X, sample_weight, centers, labels), centers

    def predict(self, X: Any) -> Any:
        if hasattr(X, "indptr"):  # a CSR matrix (``CSR`` or scipy's)
            return _sparse_labels(X, self.cluster_centers_)
        return _dense_labels(np.ascontiguousarray(X, dtype=np.float64), self.cluster_centers_, self.grid)


def silhouette_score(X: Any, labels: Any) -> float:
    """``sklearn.metrics.silhouette_score(X, labels)`` (Euclidean) for dense ``X`` of at most a few
    thousand rows (scikit-learn computes them in one chunk: its 1 GiB working memory). For ``X``
    on the grid, ``X @ X.T`` is exact, so the score has the same bits on every CPU."""
    X = np.asarray(X, dtype=np.float64)
    labels = np.unique(np.asarray(labels), return_inverse=True)[1].reshape(-1)
    label_freqs = np.bincount(labels)
    n = X.shape[0]
    XX = _row_norms_squared(X)[:, None]
    D = -2 * (X @ X.T)
    D += XX
    D += XX.T
    np.maximum(D, np.asarray(0, dtype=D.dtype), out=D)
    np.fill_diagonal(D, 0, wrap=False)
    np.sqrt(D, out=D)
    D.flat[0 :: n + 1] = 0
    cluster_distances = np.zeros((n, len(label_freqs)), dtype=D.dtype)
    for i in range(n):
        cluster_distances[i] += np.bincount(labels, weights=D[i], minlength=len(label_freqs))
    intra_index = (np.arange(n), labels)
    intra = cluster_distances[intra_index]
    cluster_distances[intra_index] = np.inf
    cluster_distances /= label_freqs
    inter = cluster_distances.min(axis=1)
    denom = (label_freqs - 1).take(labels, mode="clip")
    with np.errstate(divide="ignore", invalid="ignore"):
        intra /= denom
    sil = inter - intra
    with np.errstate(divide="ignore", invalid="ignore"):
        sil /= np.maximum(intra, inter)
    return float(np.mean(np.nan_to_num(sil)))
