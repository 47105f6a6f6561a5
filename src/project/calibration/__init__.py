"""Reweight simulated subjects to aggregate targets with exact batched gradients (JAX, optax).

Entry points: ``calibrate_from_panel`` (panel + targets table -> ``CalibrationOutcome``) and
``write_calibration_products``; the building blocks are ``calibrate_weights`` (weights, an
estimate matrix or batch function, a ``TargetProblem``), ``PanelEstimates`` and
``parse_targets``. Invalid inputs raise ``CalibrationError`` (a ``project.errors.ProjectError``).
"""

from project.calibration.errors import CalibrationError
from project.calibration.objective import Objective, TargetProblem
from project.calibration.optimize import CalibrationFit, CalibrationSettings, calibrate_weights
from project.calibration.outcome import CalibrationOutcome, calibrate_from_panel
from project.calibration.panel import PanelEstimates
from project.calibration.passes import dropout_mask
from project.calibration.products import write_calibration_products
from project.calibration.targets import TargetDefinition, parse_targets

__all__ = [
    "CalibrationError",
    "CalibrationFit",
    "CalibrationOutcome",
    "CalibrationSettings",
    "Objective",
    "PanelEstimates",
    "TargetDefinition",
    "TargetProblem",
    "calibrate_from_panel",
    "calibrate_weights",
    "dropout_mask",
    "parse_targets",
    "write_calibration_products",
]
