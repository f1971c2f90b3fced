"""``pipelines.orchestration._csr`` against ``scipy.sparse``, bit for bit: the same stored order
and the same floats (``np.array_equal``, no tolerance) for every operation failure clustering
uses, on matrices with empty rows and rows storing their columns out of order."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse

from pipelines.orchestration._csr import CSR, hstack
from pipelines.orchestration._kmeans import on_grid


def _scipy_matrix(rng: np.random.Generator, n_rows: int, n_cols: int, shuffled: bool) -> sparse.csr_matrix:
    dense = rng.random((n_rows, n_cols)) * (rng.random((n_rows, n_cols)) < 0.3)
    dense[rng.integers(0, n_rows)] = 0.0  # an empty row
    m = sparse.csr_matrix(dense)
    if shuffled:  # rows storing their columns out of order, as count_terms writes them
        for i in range(n_rows):
            lo, hi = m.indptr[i], m.indptr[i + 1]
            order = rng.permutation(hi - lo) + lo
            m.indices[lo:hi], m.data[lo:hi] = m.indices[order], m.data[order]
        m.has_sorted_indices = False
    return m


def _ours(m: sparse.csr_matrix) -> CSR:
    return CSR(m.data.copy(), m.indices.copy(), m.indptr.copy(), m.shape)


def _same(ours: CSR, theirs: sparse.csr_matrix) -> bool:
    theirs = sparse.csr_matrix(theirs)
    return (
        ours.shape == theirs.shape
        and np.array_equal(ours.data, theirs.data)
        and np.array_equal(ours.indices, theirs.indices)
        and np.array_equal(ours.indptr, theirs.indptr)
    )


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("shuffled", [False, True])
def test_every_operation_equals_scipy_bit_for_bit(seed, shuffled):
    rng = np.random.default_rng(seed)
    m = _scipy_matrix(rng, 37, 23, shuffled)
    ours = _ours(m)
    assert _same(ours.scaled(0.6), m * 0.6)
    canonical = m.tocsc().tocsr()
    assert _same(ours.columns_ascending(), canonical)
    keep = np.sort(rng.choice(23, 11, replace=False))
    assert _same(ours.columns_ascending().kept_columns(keep), m.tocsc()[:, keep].tocsr())
    idf = 1.0 + rng.random(23) * 3
    assert _same(ours.columns_ascending().times_diagonal(idf), canonical @ sparse.diags(idf))  # each row's columns descending
    rows = rng.integers(0, 37, 50)  # repeats, any order
    assert _same(ours.rows(rows), m[rows])
    assert np.array_equal(ours.toarray(), m.toarray()) and np.array_equal(ours.toarray(rows), m[rows].toarray())
    assert np.array_equal(ours.column_means(rows), m[rows].mean(axis=0).A1)
    gridded = m.copy()
    gridded.data = on_grid(gridded.data * 2e-6)  # values that round to zero on the grid, stored zeros
    theirs = gridded.copy()
    theirs.eliminate_zeros()
    assert (gridded.data == 0).any() and _same(_ours(gridded).without_zeros(), theirs)
    counts = rng.integers(1, 9, 37).astype(float)
    want = np.asarray(theirs.multiply(counts[:, None]).sum(axis=0))
    assert np.array_equal(_ours(theirs).weighted_column_sums(counts), want)


def test_hstack_and_empty_blocks_equal_scipy():
    rng = np.random.default_rng(7)
    blocks = [_scipy_matrix(rng, 12, w, shuffled=True) for w in (3, 5, 8)] + [sparse.csr_matrix((12, 1))]
    ours = hstack([_ours(b) for b in blocks[:3]] + [CSR.empty(12, 1)])
    assert _same(ours, sparse.hstack(blocks, format="csr"))
    assert _same(CSR.empty(4, 2).scaled(3.0), sparse.csr_matrix((4, 2)))
