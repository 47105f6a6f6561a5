"""Reweight simulated subjects to aggregate targets with exact batched gradients (JAX, optax).

Entry points: ``calibrate_from_panel`` (panel + targets table -> ``CalibrationOutcome``),
``save_calibration`` (one verified directory product) and ``load_calibration`` (reads it back,
verified); the building blocks are ``calibrate_weights`` (weights, an estimate matrix or batch
function, a ``TargetProblem``), ``PanelEstimates`` and ``parse_targets``. Invalid inputs raise
``CalibrationError`` (a ``project.errors.ProjectError``).
"""

from project.calibration.errors import CalibrationError
from project.calibration.objective import Objective, TargetProblem
from project.calibration.optimize import CalibrationFit, CalibrationSettings, calibrate_weights
from project.calibration.outcome import CalibrationOutcome, calibrate_from_panel
from project.calibration.panel import PanelEstimates
from project.calibration.passes import dropout_mask
from project.calibration.products import SavedCalibration, load_calibration, save_calibration
from project.calibration.targets import TargetDefinition, parse_targets

__all__ = [
    "CalibrationError",
    "CalibrationFit",
    "CalibrationOutcome",
    "CalibrationSettings",
    "Objective",
    "PanelEstimates",
    "SavedCalibration",
    "TargetDefinition",
    "TargetProblem",
    "calibrate_from_panel",
    "calibrate_weights",
    "dropout_mask",
    "load_calibration",
    "parse_targets",
    "save_calibration",
]
