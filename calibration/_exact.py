"""numpy's few reductions that a run's summary needs, in pure Python and bit for bit, so that a small
run imports no numpy (issue 27: a first trajectory fast).

- ``np_sum`` / ``np_mean``: ``numpy.add.reduce`` of a float64 vector (pairwise summation in blocks of
  eight, as numpy's ``pairwise_sum``), and the mean numpy divides it into;
- ``np_round``: ``round(numpy.float64(x), d)`` (``x * 10**d``, rounded half to even, divided back:
  not Python's correctly rounded ``round``);
- ``wilson``: the Wilson score interval (no numpy in it at all);
- ``bootstrap_ci``: ``calibration.cluster_bootstrap_ci`` without numpy when its answer does not
  depend on the draws (every cluster the same sum and size: one profile, each draw the same mean);
  otherwise that function itself, numpy imported then.

Each is tested against numpy (tests/calibration/test_exact.py). From ``NUMPY_FROM`` values numpy
computes them itself (the same floats, faster on a large run, which loads numpy anyway).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

__all__ = ["bootstrap_ci", "np_mean", "np_round", "np_sum", "wilson"]

_BLOCK = 128  # numpy's PW_BLOCKSIZE
NUMPY_FROM = 2_000  # values: from here numpy itself sums and resamples


def _pairwise(a: Sequence[float], start: int, n: int) -> float:
    if n < 8:
        res = -0.0  # numpy starts from -0.0 (the sum of nothing, and of -0.0s, is -0.0)
        for i in range(start, start + n):
            res += a[i]
        return res
    if n <= _BLOCK:
        r = [float(a[start + j]) for j in range(8)]
        i = 8
        stop = n - n % 8
        while i < stop:
            for j in range(8):
                r[j] += a[start + i + j]
            i += 8
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        while i < n:
            res += a[start + i]
            i += 1
        return res
    n2 = n // 2
    n2 -= n2 % 8
    return _pairwise(a, start, n2) + _pairwise(a, start + n2, n - n2)


def np_sum(values: Sequence[float]) -> float:
    """``float(numpy.asarray(values, dtype=float).sum())``."""
    if len(values) >= NUMPY_FROM:
        import numpy as np

        return float(np.asarray(values, dtype=float).sum())
    a = [float(v) for v in values]
    return _pairwise(a, 0, len(a)) if a else 0.0


def np_mean(values: Sequence[float]) -> float:
    """``float(numpy.asarray(values, dtype=float).mean())`` of a non-empty sequence."""
    return np_sum(values) / len(values)


def np_round(x: float, decimals: int) -> float:
    """``float(round(numpy.float64(x), decimals))`` for a finite ``x``."""
    scale = 10.0**decimals
    return round(x * scale) / scale


def bootstrap_ci(
    values: Sequence[float], clusters: Sequence[Any] | None = None, *, samples: int = 2000, seed: int = 0, level: float = 0.95
) -> tuple[float, float] | None:
    """``calibration.cluster_bootstrap_ci(values, clusters, ...)``, the same floats."""
    if not values:
        return None
    if len(values) >= NUMPY_FROM:
        return _numpy_ci(values, clusters, samples, seed, level)
    if clusters is None:
        profiles = {(float(v), 1.0) for v in values}
        k = len(values)
    else:
        sums: dict[Any, float] = {}
        sizes: dict[Any, float] = {}
        for v, c in zip(values, clusters, strict=True):
            sums[c] = sums.get(c, 0.0) + v  # numpy's bincount adds in row order too
            sizes[c] = sizes.get(c, 0.0) + 1.0
        profiles = {(sums[c], sizes[c]) for c in sums}
        k = len(sums)
    if len(profiles) == 1:  # every draw holds k clusters of one profile: its mean, at both ends
        ((total, size),) = profiles
        mean = (k * total) / (k * size)
        return np_round(mean, 6), np_round(mean, 6)
    return _numpy_ci(values, clusters, samples, seed, level)


def _numpy_ci(values: Sequence[float], clusters: Sequence[Any] | None, samples: int, seed: int, level: float) -> tuple[float, float] | None:
    import numpy as np

    from calibration._stats import cluster_bootstrap_ci

    return cluster_bootstrap_ci(np.asarray(values, dtype=float), None if clusters is None else np.asarray(clusters), samples=samples, seed=seed, level=level)


def wilson(successes: int, n: int, z: float = 1.959963984540054) -> tuple[float | None, float | None]:
    """Wilson score interval of a proportion (well behaved at 0 and 1, unlike the normal one)."""
    if n == 0:
        return None, None
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return round(max(0.0, centre - half), 6), round(min(1.0, centre + half), 6)
