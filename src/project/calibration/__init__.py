"""Reweight simulated subjects to aggregate targets with exact batched gradients (JAX, optax).

Entry points: ``calibrate_from_panel`` (panel + targets table + variant -> ``CalibrationOutcome``
with the weights, the targets table before/after, the Kish effective sample size, the largest
weight relative to the mean and a warning per missed goal), ``save_calibration`` (one verified
directory product) and ``load_calibration`` (reads it back, verified); downstream,
``attach_weights`` and ``weighted_mean`` use the weights for population statistics of the
living and ``target_estimates`` evaluates a targets table under any weights;
``targets_for_variant`` picks a variant's rows of a targets table. The building blocks
are ``calibrate_weights`` (base weights, an estimate matrix or batch function, a
``TargetProblem``), ``PanelEstimates``, ``parse_targets`` and ``WeightSummary``. Invalid inputs
raise ``CalibrationError`` (a ``project.errors.ProjectError``).
"""

from project.calibration.diagnostics import WeightSummary, kish_effective_sample_size
from project.calibration.errors import CalibrationError
from project.calibration.objective import DEFAULT_TOLERANCE, Objective, TargetProblem
from project.calibration.optimize import CalibrationFit, calibrate_weights
from project.calibration.outcome import CalibrationOutcome, calibrate_from_panel
from project.calibration.panel import PanelEstimates, living_rows
from project.calibration.passes import dropout_mask
from project.calibration.products import SavedCalibration, load_calibration, save_calibration
from project.calibration.settings import CalibrationSettings
from project.calibration.synthetic import target_estimates
from project.calibration.targets import TargetDefinition, parse_targets, targets_for_variant
from project.calibration.weighting import attach_weights, weighted_mean

__all__ = [
    "DEFAULT_TOLERANCE",
    "CalibrationError",
    "CalibrationFit",
    "CalibrationOutcome",
    "CalibrationSettings",
    "Objective",
    "PanelEstimates",
    "SavedCalibration",
    "TargetDefinition",
    "TargetProblem",
    "WeightSummary",
    "attach_weights",
    "calibrate_from_panel",
    "calibrate_weights",
    "dropout_mask",
    "kish_effective_sample_size",
    "living_rows",
    "load_calibration",
    "parse_targets",
    "save_calibration",
    "target_estimates",
    "targets_for_variant",
    "weighted_mean",
]
