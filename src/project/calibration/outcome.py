"""Calibrate a simulated panel's subjects to a targets table: the pipeline's entry point.

Contract: ``calibrate_from_panel(panel=..., targets=..., settings=..., variant=...)`` selects the
variant's rows of the targets table (see ``targets``), builds each subject's contributions from
the panel's living rows batch by batch (see ``panel``), fits the weights (see ``optimize``)
starting from the base weights (all ones, or ``initial_weights``) and returns a
``CalibrationOutcome``:

- ``weights``: ``subject_id``, ``weight`` (ascending ``subject_id``);
- ``log``: ``epoch``, ``objective``, ``fit_loss``, ``penalty``, ``share_within_tolerance``;
- ``table``: one row per target: ``target``, ``held_out``, ``target_value``, ``tolerance``,
  ``estimate_before``, ``estimate_after``, ``relative_miss_before``, ``relative_miss_after``
  ((estimate - target) / d, d = |target| unless floored, see ``objective``),
  ``within_tolerance_before`` and ``within_tolerance_after`` (|relative miss| <= tolerance);
  held-out targets are evaluated the same way but not fitted (an out-of-sample check);
- ``weight_summary`` and ``base_summary`` (``diagnostics.WeightSummary``: Kish ESS, its share
  of the subjects, max and min weight / mean) of the fitted and of the base weights;
- ``warnings``: one message per missed goal (ESS share, max weight / mean, fitted targets
  within tolerance), each also logged as a warning of ``project.calibration``; with
  ``on_goal_failure="raise"`` a missed goal raises ``CalibrationError`` instead.

Everything is deterministic given ``settings["seed"]``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from project.calibration.diagnostics import WeightSummary, goal_failures
from project.calibration.errors import CalibrationError
from project.calibration.objective import TargetProblem, relative_misses
from project.calibration.optimize import CalibrationFit, calibrate_weights
from project.calibration.panel import PanelEstimates
from project.calibration.settings import CalibrationSettings
from project.calibration.targets import parse_targets

logger = logging.getLogger("project.calibration")


@dataclass(frozen=True)
class CalibrationOutcome:
    """Calibrated weights, the log, targets against estimates, diagnostics and warnings."""

    weights: pd.DataFrame
    log: pd.DataFrame
    table: pd.DataFrame
    settings: dict[str, Any]
    loss_before: float
    loss_after: float
    penalty_after: float
    weight_summary: WeightSummary
    base_summary: WeightSummary
    warnings: tuple[str, ...]
    variant: str | None = None

    @property
    def goals_met(self) -> bool:
        """Return whether every goal held (no warnings)."""
        return not self.warnings

    def summary(self) -> dict[str, Any]:
        """Return the diagnostics as a JSON-ready dict (the product's ``summary.json``)."""
        table = self.table
        fitted, held = table[~table["held_out"]], table[table["held_out"]]
        return {
            "variant": self.variant,
            "weights": self.weight_summary.as_dict(),
            "base_weights": self.base_summary.as_dict(),
            "fit_loss_before": self.loss_before,
            "fit_loss_after": self.loss_after,
            "penalty_after": self.penalty_after,
            "fitted_targets": len(fitted),
            "fitted_within_tolerance": int(fitted["within_tolerance_after"].sum()),
            "max_abs_relative_miss_fitted": _max_abs(fitted["relative_miss_after"]),
            "held_out_targets": len(held),
            "held_out_within_tolerance_before": int(held["within_tolerance_before"].sum()),
            "held_out_within_tolerance_after": int(held["within_tolerance_after"].sum()),
            "goals": {
                "min_ess_share": self.settings["min_ess_share"],
                "max_weight_ratio": self.settings["max_weight_ratio"],
                "fitted_targets_within_tolerance": True,
                "met": self.goals_met,
            },
            "warnings": list(self.warnings),
            "settings": self.settings,
        }


def calibrate_from_panel(
    *,
    panel: pd.DataFrame,
    targets: pd.DataFrame,
    settings: Mapping[str, Any] | None = None,
    variant: str | None = None,
    initial_weights: pd.DataFrame | None = None,
) -> CalibrationOutcome:
    """Return weights per subject fitted to the variant's targets, with diagnostics.

    ``settings``: keys of ``CalibrationSettings``. ``variant``: the variant whose rows of the
    targets table apply (needed when the table names variants). ``initial_weights``: optional
    base weights (``subject_id``, ``weight``); default all ones.
    """
    options = CalibrationSettings.from_mapping(settings)
    definitions, problem = parse_targets(targets=targets, variant=variant)
    estimates = PanelEstimates.from_panel(panel=panel, definitions=definitions)
    start = _initial_weights(ids=estimates.subject_ids, initial_weights=initial_weights)
    fit = calibrate_weights(weights=start, estimates=estimates, problem=problem, settings=options)
    table = targets_table(problem=problem, fit=fit)
    summary = WeightSummary.of(fit.weights)
    failures = goal_failures(summary=summary, table=table, settings=options)
    where = f"Calibration of variant {variant!r}" if variant else "Calibration"
    if failures and options.on_goal_failure == "raise":
        msg = f"{where} missed its goals: " + " ".join(failures)
        raise CalibrationError(msg)
    for failure in failures:
        logger.warning("%s: %s", where, failure)
    logger.info(
        "%s: ESS %.0f (%.1f%% of %d subjects), max weight %.3g x mean, %d of %d fitted "
        "targets within tolerance.",
        where, summary.effective_sample_size, 100 * summary.effective_sample_share,
        summary.n_subjects, summary.max_weight_ratio,
        int(table.loc[~table["held_out"], "within_tolerance_after"].sum()),
        int((~table["held_out"]).sum()),
    )  # fmt: skip
    return CalibrationOutcome(
        weights=pd.DataFrame({"subject_id": estimates.subject_ids, "weight": fit.weights}),
        log=fit.history,
        table=table,
        settings=asdict(options),
        loss_before=fit.loss_before,
        loss_after=fit.loss_after,
        penalty_after=fit.penalty_after,
        weight_summary=summary,
        base_summary=WeightSummary.of(start),
        warnings=tuple(failures),
        variant=variant,
    )


def targets_table(*, problem: TargetProblem, fit: CalibrationFit) -> pd.DataFrame:
    """Return the targets against the estimates before and after, with misses and tolerance."""
    misses = {
        when: relative_misses(estimates=estimates, problem=problem, denominators=fit.denominators)
        for when, estimates in (("before", fit.estimates_before), ("after", fit.estimates_after))
    }
    return pd.DataFrame(
        {
            "target": list(problem.names),
            "held_out": problem.held_out,
            "target_value": problem.values,
            "tolerance": problem.tolerances,
            "estimate_before": fit.estimates_before,
            "estimate_after": fit.estimates_after,
            "relative_miss_before": misses["before"],
            "relative_miss_after": misses["after"],
            "within_tolerance_before": np.abs(misses["before"]) <= problem.tolerances,
            "within_tolerance_after": np.abs(misses["after"]) <= problem.tolerances,
        }
    )


def _max_abs(values: pd.Series) -> float | None:
    return float(values.abs().max()) if len(values) else None


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
