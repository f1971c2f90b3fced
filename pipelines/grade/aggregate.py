"""From per-trajectory results to ``summary.json``: pass rates with CIs, failure-stage counts,
scores, breakdowns, and the VAKRA leaderboard.

Every group's figures (the whole run, each breakdown value; counts, pass rates, CIs, stage
counts, scores) come from ``calibration.group_metrics``, the one function the reports call too.

Only a compact row per trajectory is kept (the full results stream to disk), so aggregation
memory grows by a few hundred bytes per trajectory.

Input warnings (unknown fields, orphan results...) are counted per kind and field pattern with
the first place each was seen. When trajectories carry their source's own verdicts (external
labels), ``external_agreement`` compares ours with each source: confusion matrix (ours
pass / fail / unresolved against theirs pass / fail), Cohen's kappa with a cluster-bootstrap CI on
the cases both decided, and every disagreement with both sides' reasons.

Denominators: ``error`` rows are excluded from every rate and listed instead. ``pass_rate``
counts unresolved trajectories as not passed (conservative); ``pass_rate_if_unresolved_pass``
gives the other bound. Leaderboard (VAKRA): the mean of the capability scores, where a
capability score is its pass rate and, for the multi-source capability ("4"), multi-source
cases weigh 2x in a weighted mean.
"""

from __future__ import annotations

import sys
from array import array
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

import msgspec

from calibration import group_metrics
from calibration._exact import np_mean, np_sum
from judge import ERRORS_LISTED, EvidenceKind, InputErrorInfo, InputWarning, RunSummary, Scores, TrajectoryResult
from pipelines.config import GradingConfig
from pipelines.orchestration import OrchestrationTally

ERRORS_FILE = "errors.jsonl"  # every error, beside summary.json, when there are more than summary.json lists
BREAKDOWNS = ("capability", "domain", "hop_count", "hop_pattern", "policy_condition", "agent")
TIER = "tier"  # the difficulty tier (pipelines.orchestration.tiers): a breakdown like the others
SCORE_FIELDS = tuple(Scores.model_fields)

# Labels repeat across 100k rows (a domain, a capability, a hop count): each row holds the one
# shared object (sys.intern; one tuple per distinct set of unresolved stages), not a copy of its
# own (~50 B each, ~25 MB at 100k).
_STAGE_TUPLES: dict[tuple[str, ...], tuple[str, ...]] = {}


class Aggregator(msgspec.Struct):
    config: GradingConfig
    rows: dict[str, list[Any]] = msgspec.field(default_factory=lambda: defaultdict(list))
    errors: list[dict[str, Any]] = msgspec.field(default_factory=list)  # the first ERRORS_LISTED (memory stays flat with a million bad lines)
    error_counts: dict[str, dict[str, int]] = msgspec.field(default_factory=dict)  # scope -> kind -> count, of every error
    judge_calls: int = 0
    judge_cost: float = 0.0
    policy_not_audited: int = 0  # graded trajectories whose domain-wide policy document was judge context only
    judge_controls: dict[str, Any] = msgspec.field(default_factory=dict)  # set by the run (pipelines.controls): the judges' control items
    scores: dict[str, array] = msgspec.field(default_factory=dict)  # NaN = not applicable; 8 bytes a value
    warnings: dict[tuple[str, str], dict[str, Any]] = msgspec.field(default_factory=dict)  # (kind, field pattern) -> count, first
    external: dict[str, _External] = msgspec.field(default_factory=dict)  # label source -> what agreement needs
    orchestration: OrchestrationTally = msgspec.field(default_factory=OrchestrationTally)

    def add_warnings(self, warnings: list[InputWarning]) -> None:
        for w in warnings:
            key = (w.kind, w.field_pattern)
            entry = self.warnings.get(key)
            if entry is None:
                where = w.file + (f":{w.line}" if w.line is not None else "")
                self.warnings[key] = {"count": 1, "first": where, "message": w.message}
            else:
                entry["count"] += 1

    def add_task_error(self, info: InputErrorInfo, scope: str = "task") -> None:
        """An error outside the trajectories file (tasks, reference, labels): listed, never a row."""
        self._error({"scope": scope, "task_id": None, "trajectory_id": None, **info.model_dump(mode="json")})

    def _error(self, entry: dict[str, Any]) -> None:
        by_kind = self.error_counts.setdefault(entry["scope"], {})
        by_kind[entry["kind"]] = by_kind.get(entry["kind"], 0) + 1
        if len(self.errors) < ERRORS_LISTED:
            self.errors.append(entry)

    def error_total(self, scope: str | None = None) -> int:
        return sum(n for s, kinds in self.error_counts.items() if scope in (None, s) for n in kinds.values())

    def merge(self, other: Aggregator) -> None:
        """Append ``other``'s rows after this one's, as if its results had been added here next.

        Workers aggregate their shards; the run merges the partial aggregators in input order, so
        the summary is the one a single process would write. Every per-row field is a column
        (a list or an array, appended in order) or a count (summed); a new field of another kind
        must say how it merges here, or this raises instead of merging it wrongly. (A float
        accumulated per row would merge exactly only if added in the same order: keep per-row
        values as columns.)
        """
        for name in self.__struct_fields__:
            if name == "config":
                continue
            setattr(self, name, _merged(getattr(self, name), getattr(other, name), name))
        del self.errors[ERRORS_LISTED:]  # the first ones of the whole input stay listed

    def add(self, r: TrajectoryResult) -> None:
        if r.error is not None:
            self._error({"scope": "trajectory", "task_id": r.task_id, "trajectory_id": r.trajectory_id, **r.error.model_dump(mode="json")})
            return
        row = self.rows
        row["verdict"].append(r.verdict.value)
        row["stage"].append(r.failure_stage.value if r.failure_stage else None)
        row["decided_by"].append(sys.intern(str(r.decided_by)))
        row["task_id"].append(r.task_id)
        row["multi_source"].append(r.multi_source)
        for key in BREAKDOWNS:
            value = getattr(r, key)
            row[key].append("unknown" if value is None else sys.intern(str(value)))
        row[TIER].append(r.orchestration.tier if r.orchestration is not None else "unknown")
        self.orchestration.add(r)
        for key in SCORE_FIELDS:
            value = getattr(r.scores, key)
            self.scores.setdefault(key, array("d")).append(float("nan") if value is None else value)
        stages = tuple(s.value for s in r.unresolved_stages)
        row["unresolved_stages"].append(_STAGE_TUPLES.setdefault(stages, stages))
        self.judge_calls += r.judge_calls
        self.judge_cost += r.judge_cost_usd
        if any(e.kind == EvidenceKind.POLICY_NOT_AUDITED for t in r.turns for c in t.checks for e in c.evidence):
            self.policy_not_audited += 1
        for label in r.external_labels or ():
            self.external.setdefault(label.source, _External()).add(r, label)

    # -----------------------------------------------------------------------------------------
    def summary(self) -> RunSummary:
        orchestration = self.orchestration.start(self.config.seed)  # clustering runs meanwhile (a child process in large runs)
        rows = self.rows
        n = len(rows["verdict"])
        verdict = rows["verdict"]
        # task ids as integer codes in sorted id order: resampling clusters by code is resampling
        # them by id (same clusters, same order), without sorting 100k strings for every group.
        # Pure Python (numpy loads only for an interval whose draws matter: calibration._exact)
        code = {t: i for i, t in enumerate(sorted(set(rows["task_id"])))}
        tasks = [code[t] for t in rows["task_id"]]
        overall = self._group(None, verdict, tasks, with_scores=True)
        by = {key: self._breakdown(key, verdict, tasks) for key in (*BREAKDOWNS, TIER)}
        trajectory_errors = self.error_total("trajectory")
        out: dict[str, Any] = {
            "schema_version": 1,
            "counts": {
                "trajectories": n + trajectory_errors,
                "graded": n,
                "errors": trajectory_errors,
                "task_errors": self.error_total("task"),
                "label_errors": self.error_total("labels"),
                "policy_not_audited": self.policy_not_audited,
                **{v: overall[v] for v in ("pass", "fail", "unresolved")},
            },
            **overall,
            "decided_by": dict(sorted(Counter(rows["decided_by"]).items())),
            "unresolved_stages": dict(sorted(Counter(s for t in rows["unresolved_stages"] for s in t).items())),
            "by": by,
            "leaderboard": self._leaderboard(verdict, by["capability"]),
            "judges": {
                "calls": self.judge_calls,
                "cost_usd": round(self.judge_cost, 6),
                "calls_per_100_trajectories": round(100 * self.judge_calls / n, 2) if n else 0.0,
                **({"controls": self.judge_controls} if self.judge_controls else {}),
            },
            "errors": self.errors,
            "errors_by_kind": {scope: dict(sorted(kinds.items())) for scope, kinds in sorted(self.error_counts.items())} if self.error_counts else None,
            "errors_file": ERRORS_FILE if self.error_total() > len(self.errors) else None,
            "input_warnings": {
                kind: {pattern: self.warnings[(k, pattern)] for k, pattern in sorted(self.warnings) if k == kind}
                for kind in sorted({k for k, _ in self.warnings})
            },
        }
        if self.external:
            out["external_agreement"] = {source: ext.summary(self.config) for source, ext in sorted(self.external.items())}
        out["orchestration"] = orchestration.result()
        return RunSummary.model_validate(out)

    def _group(self, index: list[int] | None, verdict: list[str], tasks: list[int], with_scores: bool) -> dict[str, Any]:
        """``group_metrics`` of the rows at ``index`` (None: every row)."""
        cfg = self.config

        def pick(col: Sequence[Any]) -> Sequence[Any]:
            return col if index is None else list(map(col.__getitem__, index))

        scores = {key: pick(self._score(key)) for key in SCORE_FIELDS} if with_scores else None
        return group_metrics(
            pick(verdict),
            stages=pick(self.rows["stage"]),
            clusters=pick(tasks),
            crag=pick(self._score("crag")),
            scores=scores,
            samples=cfg.bootstrap_samples,
            seed=cfg.seed,
        )

    def _breakdown(self, key: str, verdict: list[str], tasks: list[int]) -> dict[str, dict[str, Any]]:
        col = self.rows[key]
        values = set(col)
        if len(values) == 1:  # one group of every row (often "unknown")
            return {value: self._group(None, verdict, tasks, with_scores=False) for value in values}
        groups: dict[str, list[int]] = defaultdict(list)
        for i, value in enumerate(col):
            groups[value].append(i)
        return {value: self._group(groups[value], verdict, tasks, with_scores=False) for value in sorted(groups, key=natural_order)}

    def _score(self, key: str) -> Sequence[float]:
        return self.scores[key] if key in self.scores else [float("nan")] * len(self.rows["verdict"])

    def _leaderboard(self, verdict: list[str], by_capability: dict[str, dict[str, Any]]) -> dict[str, Any]:
        """A capability's score is its pass rate (``by.capability``), except the multi-source
        capability's, where multi-source cases weigh ``multi_source_weight`` in a weighted mean."""
        cfg = self.config
        per_cap: dict[str, float] = {}
        for cap, group in by_capability.items():  # in natural order
            if cap == "unknown":
                continue
            if cap == cfg.multi_source_capability:
                index = [i for i, c in enumerate(self.rows["capability"]) if c == cap]
                multi = self.rows["multi_source"]
                w = [cfg.multi_source_weight if multi[i] else 1.0 for i in index]
                weighted = [wi * (1.0 if verdict[i] == "pass" else 0.0) for wi, i in zip(w, index, strict=True)]
                per_cap[cap] = round(np_sum(weighted) / np_sum(w), 6)
            else:
                per_cap[cap] = group["pass_rate"]
        return {
            "capabilities": per_cap,
            "score": round(np_mean(list(per_cap.values())), 6) if per_cap else None,
            "rule": f"mean of capability pass rates; capability {cfg.multi_source_capability} weighs multi-source cases {cfg.multi_source_weight:g}x",
        }


def _merged(mine: Any, theirs: Any, name: str) -> Any:
    if isinstance(mine, (list, array)):
        mine.extend(theirs)
        return mine
    if isinstance(mine, dict):
        for key, value in theirs.items():
            mine[key] = _merged(mine[key], value, f"{name}.{key}") if key in mine else value
        return mine
    if isinstance(mine, (int, float)) and not isinstance(mine, bool):
        return mine + theirs
    if isinstance(mine, str):  # a first-occurrence detail (where a warning was first seen): the earlier one stays
        return mine
    if isinstance(mine, msgspec.Struct):
        for sub in mine.__struct_fields__:
            setattr(mine, sub, _merged(getattr(mine, sub), getattr(theirs, sub), f"{name}.{sub}"))
        return mine
    raise TypeError(f"Aggregator.merge: field {name!r} of type {type(mine).__name__} has no merge rule")


class _External(msgspec.Struct):
    """Our verdicts beside one source's own (only what agreement needs; disagreements in full)."""

    ours: list[str] = msgspec.field(default_factory=list)  # pass | fail | unresolved
    theirs: list[str | None] = msgspec.field(default_factory=list)  # pass | fail | None (not a pass/fail value)
    tasks: list[str] = msgspec.field(default_factory=list)
    disagreements: list[dict[str, Any]] = msgspec.field(default_factory=list)

    def add(self, r: TrajectoryResult, label: Any) -> None:
        ours = r.verdict.value
        theirs = None if label.passed is None else ("pass" if label.passed else "fail")
        self.ours.append(ours)
        self.theirs.append(theirs)
        self.tasks.append(str(r.task_id))
        if theirs is not None and ours != "unresolved" and ours != theirs:  # an open case is no disagreement
            self.disagreements.append(
                {
                    "task_id": r.task_id,
                    "trajectory_id": r.trajectory_id,
                    "ours": {"verdict": ours, "failure_stage": r.failure_stage.value if r.failure_stage else None, "reason": _clip(r.reason)},
                    "theirs": {"verdict": theirs, "value": label.value, "reason": _clip(label.reason)},
                }
            )

    def summary(self, config: GradingConfig) -> dict[str, Any]:
        from calibration import LabelCoder, Resampler, agreement

        decided = [o if o != "unresolved" else None for o in self.ours]
        stats = agreement(self.theirs, decided, LabelCoder(["pass", "fail"]), Resampler(self.tasks, config.bootstrap_samples, config.seed))
        confusion = {ours: dict.fromkeys(("pass", "fail", "no verdict"), 0) for ours in ("pass", "fail", "unresolved")}
        for o, t in zip(self.ours, self.theirs, strict=True):
            confusion[o][t or "no verdict"] += 1
        kappa = stats.cohen_kappa
        return {
            "n": len(self.ours),
            "both_decided": stats.n,
            "confusion": confusion,
            "agreement": stats.accuracy.value,
            "cohen_kappa": {"value": kappa.value, "ci95": None if kappa.ci_low is None else [kappa.ci_low, kappa.ci_high]},
            "unresolved_by_us": sum(o == "unresolved" for o in self.ours),
            "disagreements": sorted(self.disagreements, key=lambda d: (str(d["task_id"]), str(d["trajectory_id"]))),
        }


def _clip(text: str | None, limit: int = 400) -> str | None:
    if text is None:
        return None
    return text if len(text) <= limit else text[: limit - 3] + "..."


def natural_order(value: str) -> tuple:
    """Group values in reading order: numbers as numbers (2 before 12), then the rest as text."""
    return (0, int(value), "") if value.isdigit() else (1, 0, value)
