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
from typing import TYPE_CHECKING, Any, Literal

from calibration._exact import bootstrap_ci, np_mean, wilson
from judge import FAILURE_STAGE_ORDER

if TYPE_CHECKING:
    import numpy as np

__all__ = ["group_metrics"]

Interval = Literal["cluster_bootstrap", "wilson"]


def _items(values: Any) -> list[Any]:
    """A list of the values (numpy arrays as Python scalars, as before)."""
    return values.tolist() if hasattr(values, "tolist") else list(values)


def group_metrics(
    verdicts: Sequence[str] | np.ndarray,
    *,
    stages: Sequence[str | None] | np.ndarray | None = None,
    clusters: Sequence[Any] | np.ndarray | None = None,
    crag: Sequence[float] | np.ndarray | None = None,
    scores: Mapping[str, Sequence[float] | np.ndarray] | None = None,
    ci: Interval | None = "cluster_bootstrap",
    samples: int = 2000,
    seed: int = 0,
) -> dict[str, Any]:
    """The outcome figures of one group of graded rows (see the module docstring). Pure Python
    (``calibration._exact``: numpy's sums and rounding, bit for bit): numpy loads only for an
    interval whose draws matter."""
    v = _items(verdicts)
    cl = None if clusters is None else _items(clusters)
    n = len(v)
    counted_verdicts = Counter(v)
    k = counted_verdicts.get("pass", 0)
    fail = counted_verdicts.get("fail", 0)
    out: dict[str, Any] = {
        "n": n,
        "pass": k,
        "fail": fail,
        "unresolved": counted_verdicts.get("unresolved", 0),
        "pass_rate": round(k / n, 6) if n else None,
    }
    if ci == "cluster_bootstrap":
        out["pass_rate_ci95"] = bootstrap_ci([1.0 if x == "pass" else 0.0 for x in v], cl, samples=samples, seed=seed) if n else None
    elif ci == "wilson":
        out["pass_rate_ci95"] = wilson(k, n) if n else None
    out["pass_rate_if_unresolved_pass"] = round((n - fail) / n, 6) if n else None
    if stages is not None:
        counted = Counter(_items(stages))
        out["failure_stages"] = {s.value: counted.get(s.value, 0) for s in FAILURE_STAGE_ORDER}
    if crag is not None:
        applicable = [x for x in _items(crag) if x == x]  # NaN: not applicable
        out["crag_score"] = round(np_mean(applicable), 6) if applicable else None
    if scores is not None:
        out["scores"] = {name: _score(_items(values), cl, ci, samples, seed) for name, values in scores.items()}
    return out


def _score(values: list[float], clusters: list[Any] | None, ci: Interval | None, samples: int, seed: int) -> dict[str, Any]:
    keep = [i for i, x in enumerate(values) if x == x]  # NaN: not applicable
    if not keep:
        return {"mean": None, "ci95": None, "n": 0}
    arr = [values[i] for i in keep]
    interval = bootstrap_ci(arr, None if clusters is None else [clusters[i] for i in keep], samples=samples, seed=seed) if ci == "cluster_bootstrap" else None
    return {"mean": round(np_mean(arr), 6), "ci95": interval, "n": len(keep)}
