"""Calibrate a simulated panel's subjects to a targets table: the pipeline's entry point.

Contract: ``calibrate_from_panel(panel=..., targets=..., settings=...)`` reads the targets table
(see ``targets``), builds each subject's contributions batch by batch from the panel (see
``panel``), fits the weights (see ``optimize``) starting from all ones (or ``initial_weights``)
and returns a ``CalibrationOutcome``: the weights (``subject_id``, ``weight``, ascending
``subject_id``), the per-epoch log (``epoch``, ``loss``, ``share_within_10pct``) and the table of
targets against estimates (``target``, ``target_value``, ``estimate_before``,
``estimate_after``, ``excluded``). Everything is deterministic given ``settings["seed"]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from project.calibration.errors import CalibrationError
from project.calibration.optimize import CalibrationSettings, calibrate_weights
from project.calibration.panel import PanelEstimates
from project.calibration.targets import parse_targets


@dataclass(frozen=True)
class CalibrationOutcome:
    """Calibrated weights, the per-epoch log, targets against estimates, and the settings."""

    weights: pd.DataFrame
    log: pd.DataFrame
    table: pd.DataFrame
    settings: dict[str, Any]
    loss_before: float
    loss_after: float


def calibrate_from_panel(
    *,
    panel: pd.DataFrame,
    targets: pd.DataFrame,
    settings: Mapping[str, Any] | None = None,
    initial_weights: pd.DataFrame | None = None,
) -> CalibrationOutcome:
    """Return weights per subject fitted to the targets, with the log and the targets table.

    ``settings``: keys of ``CalibrationSettings`` (epochs, learning_rate, seed, dropout,
    batch_size, relative_floor). ``initial_weights``: optional ``subject_id``, ``weight``.
    """
    options = CalibrationSettings.from_mapping(settings)
    definitions, problem = parse_targets(targets=targets)
    estimates = PanelEstimates.from_panel(panel=panel, definitions=definitions)
    start = _initial_weights(ids=estimates.subject_ids, initial_weights=initial_weights)
    fit = calibrate_weights(weights=start, estimates=estimates, problem=problem, settings=options)
    table = pd.DataFrame(
        {
            "target": list(problem.names),
            "target_value": problem.values,
            "estimate_before": fit.estimates_before,
            "estimate_after": fit.estimates_after,
            "excluded": problem.excluded,
        }
    )
    weights = pd.DataFrame({"subject_id": estimates.subject_ids, "weight": fit.weights})
    return CalibrationOutcome(
        weights=weights,
        log=fit.history,
        table=table,
        settings=asdict(options),
        loss_before=fit.loss_before,
        loss_after=fit.loss_after,
    )


def _initial_weights(*, ids: np.ndarray, initial_weights: pd.DataFrame | None) -> np.ndarray:
    if initial_weights is None:
        return np.ones(ids.size)
    missing = [c for c in ("subject_id", "weight") if c not in initial_weights.columns]
    if missing:
        msg = f"initial_weights lacks columns {missing}; it needs subject_id and weight."
        raise CalibrationError(msg)
    if initial_weights["subject_id"].duplicated().any():
        msg = "initial_weights lists some subject_id more than once."
        raise CalibrationError(msg)
    by_id = initial_weights.set_index("subject_id")["weight"]
    absent = np.setdiff1d(ids, by_id.index.to_numpy())
    if absent.size:
        msg = (
            f"initial_weights has no weight for subjects {absent[:5].tolist()} "
            f"({absent.size} in all) of the panel."
        )
        raise CalibrationError(msg)
    return by_id.loc[ids].to_numpy(dtype=float)
