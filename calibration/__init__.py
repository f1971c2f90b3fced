"""Calibration: how far each judge and each panel can be trusted, measured against human gold.

Public API:
- gold from your own runs: ``select_for_labelling`` (stratified draw), ``LabelItem`` labelling
  sets, ``labelling_page`` (offline HTML), ``merge_labels`` (label files -> gold, annotators kept);
- gold sets: ``GoldItem``/``GoldSet`` (native JSONL; schema via ``gold_item_json_schema``), the
  format registry (``load_gold``, ``detect_gold_format``, ``register_gold_format``; formats
  ``jsonl`` and ``thakur_csv``), ``write_gold_jsonl``;
- statistics: ``agreement`` -> ``AgreementStats`` (kappa, Scott's pi, Gwet's AC1, balanced accuracy,
  TPR/TNR, leniency, per-label P/R/F1, confusion, cluster-bootstrap CIs), ``krippendorff_alpha``,
  ``human_ceiling``, ``corrected_pass_rate`` (Rogan-Gladen, for reports);
- panels: ``plurality``/``unanimous`` vote rules, ``LogOddsPanel`` (weights file), ``LogisticPanel``,
  ``dawid_skene``, ``held_out_evaluation``, ``stratified_cluster_split``;
- ``run_calibration`` (files; live judges under one or more prompt versions, few-shot tuning,
  probes, the cheapest good-enough panel) / ``calibrate`` (objects) -> ``CalibrationReport``;
- prompt versions: ``PromptVersion``, ``compare_prompt_versions`` (per-version agreement with CIs,
  paired tests, winner only when significant, ``mcnemar_items_needed``);
- ``choose_panel`` / ``panel_config_toml``: the cheapest judge or panel meeting a held-out kappa target;
- ``tune_thresholds`` for the deterministic answer comparator;
- prompt calibration (``compare_raters``, ``compare_versions``, ``select_few_shot``,
  ``few_shot_experiment``) and bias probes (``run_bias_probes``, ``self_preference``).
"""

from calibration._agreement import (
    AgreementStats,
    Estimate,
    HumanCeiling,
    LabelCoder,
    LabelScores,
    Resampler,
    agreement,
    human_ceiling,
    krippendorff_alpha,
)
from calibration._compare import RaterComparison, compare_raters
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
from calibration._panel_choice import JudgeCost, PanelCandidate, PanelChoice, choose_panel, panel_config_toml
from calibration._panels import HeldOutEvaluation, SplitSpread, held_out_evaluation
from calibration._probes import INJECTION_ATTACKS, PROBE_NAMES, PROBES, FlipStats, ProbeResult, flip_stats, run_bias_probes, run_self_preference_probe
from calibration._prompts import FewShotExample, FewShotReport, FewShotResult, compare_versions, few_shot_experiment, select_few_shot
from calibration._report import CalibrationReport, HumanSummary, calibrate, conclusions, render_html, render_markdown
from calibration._self_preference import SelfPreference, model_family, self_preference
from calibration._split import stratified_cluster_split
from calibration._stats import corrected_pass_rate
from calibration._thresholds import GridPoint, ThresholdChoice, ThresholdItem, threshold_items, tune_thresholds, write_threshold_config
from calibration._versions import PromptVersionReport, SampleSize, VersionComparison, VersionStats, compare_prompt_versions, mcnemar_items_needed
from calibration._votes import LogisticPanel, LogOddsPanel, dawid_skene, plurality, unanimous, write_weights
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
    "ProbeResult",
    "PromptVersion",
    "PromptVersionReport",
    "RaterComparison",
    "Resampler",
    "SampleSize",
    "SelfPreference",
    "SplitSpread",
    "Stratum",
    "ThresholdChoice",
    "ThresholdItem",
    "VersionComparison",
    "VersionStats",
    "agreement",
    "allocate",
    "builtin_version",
    "calibrate",
    "candidate_of",
    "choose_panel",
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
    "plurality",
    "register_gold_format",
    "render_html",
    "render_markdown",
    "run_bias_probes",
    "run_calibration",
    "run_self_preference_probe",
    "select_few_shot",
    "select_for_labelling",
    "self_preference",
    "stratified_cluster_split",
    "threshold_items",
    "tune_thresholds",
    "unanimous",
    "with_examples",
    "write_gold_jsonl",
    "write_label_set",
    "write_threshold_config",
    "write_weights",
]
