"""Calibration: how far each judge and each panel can be trusted, measured against human gold.

Public API:
- gold from your own runs: ``select_for_labelling`` (stratified draw), ``LabelItem`` labelling
  sets, ``labelling_page`` (offline HTML), ``merge_labels`` (label files -> gold, annotators kept);
- gold sets: ``GoldItem``/``GoldSet`` (native JSONL; schema via ``gold_item_json_schema``), the
  format registry (``load_gold``, ``detect_gold_format``, ``register_gold_format``; formats
  ``jsonl`` and ``thakur_csv``), ``write_gold_jsonl``;
- statistics: ``agreement`` -> ``AgreementStats`` (kappa, Scott's pi, Gwet's AC1, balanced accuracy,
  TPR/TNR, leniency, per-label P/R/F1, confusion, cluster-bootstrap CIs), ``krippendorff_alpha``,
  ``human_ceiling``, ``corrected_pass_rate`` (Rogan-Gladen, for reports); the one statistics
  module (``cluster_bootstrap_ci``, ``percentile_ci``, ``wilson``, ``pass_at_k``, ``pass_hat_k``, ``pass_curves``);
- ``group_metrics``: the outcome figures of a group of graded rows (counts, pass rates, CI, stage
  counts, scores), the one function the aggregator (summary.json) and the reports call;
- panels: ``plurality``/``unanimous`` vote rules, ``LogOddsPanel`` (weights file), ``LogisticPanel``,
  ``dawid_skene``, ``held_out_evaluation``, ``stratified_cluster_split``;
- ``run_calibration`` (files; live judges under one or more prompt versions, few-shot tuning,
  probes, the cheapest good-enough panel) / ``calibrate`` (objects) -> ``CalibrationReport``; a gold
  set of several rubrics: ``calibrate_per_rubric`` -> ``PerRubricReport`` (one section each);
  ``select_subset`` (``--limit`` / ``--sample``, stratified) -> ``GoldSubset``;
- prompt versions: ``PromptVersion``, ``compare_prompt_versions`` (per-version agreement with CIs,
  paired tests, winner only when significant, ``mcnemar_items_needed``);
- ``choose_panel`` / ``panel_config_toml``: the cheapest judge or panel meeting a held-out kappa target;
- ``tune_thresholds`` for the deterministic answer comparator;
- prompt calibration (``compare_raters``, ``compare_versions``, ``select_few_shot``,
  ``few_shot_experiment``) and bias probes (``run_bias_probes``, ``self_preference``).

Names load lazily (PEP 562): ``from calibration import wilson`` imports only the statistics
module, so grading and reports do not pay for scikit-learn and the judge machinery.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judge import lazy_exports

_EXPORTS: dict[str, str] = {
    "AgreementStats": "calibration._agreement",
    "Estimate": "calibration._agreement",
    "HumanCeiling": "calibration._agreement",
    "LabelCoder": "calibration._agreement",
    "LabelScores": "calibration._agreement",
    "Resampler": "calibration._agreement",
    "agreement": "calibration._agreement",
    "human_ceiling": "calibration._agreement",
    "krippendorff_alpha": "calibration._agreement",
    "RaterComparison": "calibration._compare",
    "compare_raters": "calibration._compare",
    "GoldItem": "calibration._gold",
    "GoldSet": "calibration._gold",
    "HumanLabel": "calibration._gold",
    "MaterialRef": "calibration._gold",
    "POSITIVE_LABEL_FOR_RUBRIC": "calibration._gold",
    "gold_item_json_schema": "calibration._gold",
    "GOLD_FORMATS": "calibration._gold_io",
    "THAKUR_JUDGES": "calibration._gold_io",
    "detect_gold_format": "calibration._gold_io",
    "load_gold": "calibration._gold_io",
    "load_gold_jsonl": "calibration._gold_io",
    "load_thakur_csv": "calibration._gold_io",
    "register_gold_format": "calibration._gold_io",
    "write_gold_jsonl": "calibration._gold_io",
    "labelling_page": "calibration._label_page",
    "Candidate": "calibration._labelling",
    "LabelItem": "calibration._labelling",
    "LabelRecord": "calibration._labelling",
    "MergeSummary": "calibration._labelling",
    "RUN_PREFIX": "calibration._labelling",
    "Stratum": "calibration._labelling",
    "allocate": "calibration._labelling",
    "candidate_of": "calibration._labelling",
    "load_label_set": "calibration._labelling",
    "merge_labels": "calibration._labelling",
    "select_for_labelling": "calibration._labelling",
    "write_label_set": "calibration._labelling",
    "FewShotRubric": "calibration._live",
    "panel_judge_run": "calibration._live",
    "with_examples": "calibration._live",
    "JudgeCost": "calibration._panel_choice",
    "PanelCandidate": "calibration._panel_choice",
    "PanelChoice": "calibration._panel_choice",
    "choose_panel": "calibration._panel_choice",
    "panel_config_toml": "calibration._panel_choice",
    "HeldOutEvaluation": "calibration._panels",
    "SplitSpread": "calibration._panels",
    "held_out_evaluation": "calibration._panels",
    "FlipStats": "calibration._probes",
    "INJECTION_ATTACKS": "calibration._probes",
    "PROBES": "calibration._probes",
    "PROBE_NAMES": "calibration._probes",
    "ProbeResult": "calibration._probes",
    "flip_stats": "calibration._probes",
    "run_bias_probes": "calibration._probes",
    "run_self_preference_probe": "calibration._probes",
    "FewShotExample": "calibration._prompts",
    "FewShotReport": "calibration._prompts",
    "FewShotResult": "calibration._prompts",
    "compare_versions": "calibration._prompts",
    "few_shot_experiment": "calibration._prompts",
    "select_few_shot": "calibration._prompts",
    "CalibrationReport": "calibration._report",
    "HumanSummary": "calibration._report",
    "PerRubricReport": "calibration._report",
    "calibrate": "calibration._report",
    "calibrate_per_rubric": "calibration._report",
    "conclusions": "calibration._report",
    "render_html": "calibration._report",
    "render_markdown": "calibration._report",
    "SelfPreference": "calibration._self_preference",
    "model_family": "calibration._self_preference",
    "self_preference": "calibration._self_preference",
    "stratified_cluster_split": "calibration._split",
    "GoldSubset": "calibration._subset",
    "SubsetStratum": "calibration._subset",
    "proportional_allocation": "calibration._subset",
    "select_subset": "calibration._subset",
    "group_metrics": "calibration._metrics",
    "cluster_bootstrap_ci": "calibration._stats",
    "corrected_pass_rate": "calibration._stats",
    "pass_at_k": "calibration._stats",
    "pass_hat_k": "calibration._stats",
    "pass_curves": "calibration._stats",
    "percentile_ci": "calibration._stats",
    "wilson": "calibration._exact",
    "GridPoint": "calibration._thresholds",
    "ThresholdChoice": "calibration._thresholds",
    "ThresholdItem": "calibration._thresholds",
    "threshold_items": "calibration._thresholds",
    "tune_thresholds": "calibration._thresholds",
    "write_threshold_config": "calibration._thresholds",
    "PromptVersionReport": "calibration._versions",
    "SampleSize": "calibration._versions",
    "VersionComparison": "calibration._versions",
    "VersionStats": "calibration._versions",
    "compare_prompt_versions": "calibration._versions",
    "mcnemar_items_needed": "calibration._versions",
    "LogOddsPanel": "calibration._votes",
    "LogisticPanel": "calibration._votes",
    "dawid_skene": "calibration._votes",
    "per_rubric_weights": "calibration._votes",
    "plurality": "calibration._votes",
    "unanimous": "calibration._votes",
    "write_weights": "calibration._votes",
    "BUILTIN_VERSION": "calibration._workflow",
    "PromptVersion": "calibration._workflow",
    "builtin_version": "calibration._workflow",
    "few_shot_k_values": "calibration._workflow",
    "judge_live": "calibration._workflow",
    "run_calibration": "calibration._workflow",
}

if TYPE_CHECKING:
    from calibration._agreement import AgreementStats, Estimate, HumanCeiling, LabelCoder, LabelScores, Resampler, agreement, human_ceiling, krippendorff_alpha
    from calibration._compare import RaterComparison, compare_raters
    from calibration._exact import wilson
    from calibration._gold import POSITIVE_LABEL_FOR_RUBRIC, GoldItem, GoldSet, HumanLabel, MaterialRef, gold_item_json_schema
    from calibration._gold_io import (
        GOLD_FORMATS,
        THAKUR_JUDGES,
        detect_gold_format,
        load_gold,
        load_gold_jsonl,
        load_thakur_csv,
        register_gold_format,
        write_gold_jsonl,
    )
    from calibration._label_page import labelling_page
    from calibration._labelling import (
        RUN_PREFIX,
        Candidate,
        LabelItem,
        LabelRecord,
        MergeSummary,
        Stratum,
        allocate,
        candidate_of,
        load_label_set,
        merge_labels,
        select_for_labelling,
        write_label_set,
    )
    from calibration._live import FewShotRubric, panel_judge_run, with_examples
    from calibration._metrics import group_metrics
    from calibration._panel_choice import JudgeCost, PanelCandidate, PanelChoice, choose_panel, panel_config_toml
    from calibration._panels import HeldOutEvaluation, SplitSpread, held_out_evaluation
    from calibration._probes import INJECTION_ATTACKS, PROBE_NAMES, PROBES, FlipStats, ProbeResult, flip_stats, run_bias_probes, run_self_preference_probe
    from calibration._prompts import FewShotExample, FewShotReport, FewShotResult, compare_versions, few_shot_experiment, select_few_shot
    from calibration._report import CalibrationReport, HumanSummary, PerRubricReport, calibrate, calibrate_per_rubric, conclusions, render_html, render_markdown
    from calibration._self_preference import SelfPreference, model_family, self_preference
    from calibration._split import stratified_cluster_split
    from calibration._stats import cluster_bootstrap_ci, corrected_pass_rate, pass_at_k, pass_curves, pass_hat_k, percentile_ci
    from calibration._subset import GoldSubset, SubsetStratum, proportional_allocation, select_subset
    from calibration._thresholds import GridPoint, ThresholdChoice, ThresholdItem, threshold_items, tune_thresholds, write_threshold_config
    from calibration._versions import PromptVersionReport, SampleSize, VersionComparison, VersionStats, compare_prompt_versions, mcnemar_items_needed
    from calibration._votes import LogisticPanel, LogOddsPanel, dawid_skene, per_rubric_weights, plurality, unanimous, write_weights
    from calibration._workflow import BUILTIN_VERSION, PromptVersion, builtin_version, few_shot_k_values, judge_live, run_calibration

__all__ = [
    "BUILTIN_VERSION",
    "GOLD_FORMATS",
    "INJECTION_ATTACKS",
    "POSITIVE_LABEL_FOR_RUBRIC",
    "PROBES",
    "PROBE_NAMES",
    "RUN_PREFIX",
    "THAKUR_JUDGES",
    "AgreementStats",
    "CalibrationReport",
    "Candidate",
    "Estimate",
    "FewShotExample",
    "FewShotReport",
    "FewShotResult",
    "FewShotRubric",
    "FlipStats",
    "GoldItem",
    "GoldSet",
    "GoldSubset",
    "GridPoint",
    "HeldOutEvaluation",
    "HumanCeiling",
    "HumanLabel",
    "HumanSummary",
    "JudgeCost",
    "LabelCoder",
    "LabelItem",
    "LabelRecord",
    "LabelScores",
    "LogOddsPanel",
    "LogisticPanel",
    "MaterialRef",
    "MergeSummary",
    "PanelCandidate",
    "PanelChoice",
    "PerRubricReport",
    "ProbeResult",
    "PromptVersion",
    "PromptVersionReport",
    "RaterComparison",
    "Resampler",
    "SampleSize",
    "SelfPreference",
    "SplitSpread",
    "Stratum",
    "SubsetStratum",
    "ThresholdChoice",
    "ThresholdItem",
    "VersionComparison",
    "VersionStats",
    "agreement",
    "allocate",
    "builtin_version",
    "calibrate",
    "calibrate_per_rubric",
    "candidate_of",
    "choose_panel",
    "cluster_bootstrap_ci",
    "compare_prompt_versions",
    "compare_raters",
    "compare_versions",
    "conclusions",
    "corrected_pass_rate",
    "dawid_skene",
    "detect_gold_format",
    "few_shot_experiment",
    "few_shot_k_values",
    "flip_stats",
    "gold_item_json_schema",
    "group_metrics",
    "held_out_evaluation",
    "human_ceiling",
    "judge_live",
    "krippendorff_alpha",
    "labelling_page",
    "load_gold",
    "load_gold_jsonl",
    "load_label_set",
    "load_thakur_csv",
    "mcnemar_items_needed",
    "merge_labels",
    "model_family",
    "panel_config_toml",
    "panel_judge_run",
    "pass_at_k",
    "pass_curves",
    "pass_hat_k",
    "per_rubric_weights",
    "percentile_ci",
    "plurality",
    "proportional_allocation",
    "register_gold_format",
    "render_html",
    "render_markdown",
    "run_bias_probes",
    "run_calibration",
    "run_self_preference_probe",
    "select_few_shot",
    "select_for_labelling",
    "select_subset",
    "self_preference",
    "stratified_cluster_split",
    "threshold_items",
    "tune_thresholds",
    "unanimous",
    "wilson",
    "with_examples",
    "write_gold_jsonl",
    "write_label_set",
    "write_threshold_config",
    "write_weights",
]


__getattr__, __dir__ = lazy_exports("calibration", _EXPORTS, globals())
