"""The one function that turns a group of graded rows into its outcome figures: ``group_metrics``.

The aggregator (``pipelines.grade.aggregate``: ``summary.json``, also when a run resumes from its
checkpoints) and the reports (``reports._tables``: ``judge grade``'s report and ``judge report``)
both call it, so a pass rate, a stage count or an interval is computed one way only.

Figures of a group (the keys are those of ``judge.GroupStats``):

- ``n``, ``pass``, ``fail``, ``unresolved``: verdict counts;
- ``pass_rate`` (unresolved counted as not passed), ``pass_rate_if_unresolved_pass`` (the other
  bound), rounded to 6 places; None for an empty group;
- ``pass_rate_ci95``: ``ci="cluster_bootstrap"`` resamples ``clusters`` (task codes) as
  ``calibration.cluster_bootstrap_ci``; ``ci="wilson"`` is the Wilson score interval
  (``calibration.wilson``, for cells with no cluster bootstrap); ``ci=None`` leaves it out;
- ``failure_stages`` (with ``stages``): the count of each first failure stage, in stage order;
- ``crag_score`` (with ``crag``): the mean of the applicable CRAG values (NaN = not applicable);
- ``scores`` (with ``scores``, name -> values, NaN = not applicable): mean, ``ci95`` (with a
  cluster-bootstrap ``ci``) and the number of applicable values of each score.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np

from calibration._stats import cluster_bootstrap_ci, wilson
from judge import FAILURE_STAGE_ORDER

__all__ = ["group_metrics"]

Interval = Literal["cluster_bootstrap", "wilson"]


def group_metrics(
    verdicts: Sequence[str] | np.ndarray,
    *,
    stages: Sequence[str | None] | np.ndarray | None = None,
    clusters: np.ndarray | None = None,
    crag: np.ndarray | None = None,
    scores: Mapping[str, np.ndarray] | None = None,
    ci: Interval | None = "cluster_bootstrap",
    samples: int = 2000,
    seed: int = 0,
) -> dict[str, Any]:
    """The outcome figures of one group of graded rows (see the module docstring)."""
    v = np.asarray(verdicts, dtype=object)
    n = int(v.size)
    is_pass = v == "pass"
    passed = is_pass.astype(float)
    k = int(is_pass.sum())
    out: dict[str, Any] = {
        "n": n,
        "pass": k,
        "fail": int((v == "fail").sum()),
        "unresolved": int((v == "unresolved").sum()),
        "pass_rate": round(float(passed.mean()), 6) if n else None,
    }
    if ci == "cluster_bootstrap":
        out["pass_rate_ci95"] = cluster_bootstrap_ci(passed, clusters, samples=samples, seed=seed) if n else None
    elif ci == "wilson":
        out["pass_rate_ci95"] = wilson(k, n) if n else None
    out["pass_rate_if_unresolved_pass"] = round(float((v != "fail").mean()), 6) if n else None
    if stages is not None:
        counted = Counter(stages.tolist() if isinstance(stages, np.ndarray) else stages)
        out["failure_stages"] = {s.value: counted.get(s.value, 0) for s in FAILURE_STAGE_ORDER}
    if crag is not None:
        applicable = crag[~np.isnan(crag)]
        out["crag_score"] = round(float(applicable.mean()), 6) if applicable.size else None
    if scores is not None:
        out["scores"] = {name: _score(values, clusters, ci, samples, seed) for name, values in scores.items()}
    return out


def _score(values: np.ndarray, clusters: np.ndarray | None, ci: Interval | None, samples: int, seed: int) -> dict[str, Any]:
    keep = ~np.isnan(values)
    if not keep.any():
        return {"mean": None, "ci95": None, "n": 0}
    arr = values[keep]
    interval = cluster_bootstrap_ci(arr, None if clusters is None else clusters[keep], samples=samples, seed=seed) if ci == "cluster_bootstrap" else None
    return {"mean": round(float(arr.mean()), 6), "ci95": interval, "n": int(keep.sum())}
