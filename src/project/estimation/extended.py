"""Estimate the model from age 25 (``lifecycle_normalised``) with its cost of working calibrated.

Contract: ``estimate_extended(model=..., specification=..., moments=..., settings=...)`` takes
the built model, its specification (params: the vendored profiles and life table, the
calibrated defaults) and the SCF moment table, and returns an ``EstimationOutcome`` whose
``calibrated`` records the calibration: the param, the fact it meets, every round (the cost,
the estimates there, the claiming share at them) and the share at the final estimates.

Procedure (``project.estimation.claiming``): from ``settings["calibration_start"]``, estimate
crra and beta by one local search (from the settings' start, later from the last estimates),
then set ``work_cost`` so that the share of 62-year-old workers who claim at the estimates meets
``CLAIMING_FACT``; repeat until the cost moves less than the tolerance. At the settled cost (the
last calibration, made at the last estimates) the
estimation runs once more as the status quo's does (the multistart, the criterion profiles, the
standard errors with the simulation noise, the J-test), and that is the estimate reported. The
simulated households of the claiming share are the estimation's own (same draws and seed), so
the calibration and the moments see one simulated population.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from project.estimation.claiming import calibrate_and_estimate, claim_share
from project.estimation.products import save_estimation
from project.estimation.variant import EstimationOutcome, estimate_variant
from project.models.lifecycle_normalised import CLAIMING_FACT
from project.points import precision
from project.regimes.spec import RegimeModel
from project.simulation import draw_initial_conditions

logger = logging.getLogger("project.estimation")

CALIBRATED = "work_cost"


def estimate_extended(
    *,
    model: RegimeModel,
    specification: Mapping[str, Any],
    moments: pd.DataFrame,
    settings: Mapping[str, Any],
) -> EstimationOutcome:
    """Estimate crra and beta with ``work_cost`` calibrated to the claiming fact (docstring)."""
    estimation = dict(settings["estimation"])
    distribution = settings["initial_distribution"]
    base = dict(specification["params"])
    with precision(x64=bool(estimation.get("x64", True))):
        initial = draw_initial_conditions(
            model=model,
            n_subjects=int(estimation["n_subjects"]),
            seed=int(estimation["seed"]),
            distribution=distribution,
        )
        last = {"start": dict(estimation["start"])}

        def estimate(cost: float, *, final: bool = False) -> EstimationOutcome:
            search = estimation if final else estimation | {"n_starts": 1, "profiles": False}
            search = search | {"start": last["start"]}
            outcome = estimate_variant(
                model=model,
                specification=dict(specification) | {"params": base | {CALIBRATED: cost}},
                moments=moments,
                initial_distribution=distribution,
                settings=search,
            )
            last["start"] = dict(outcome.result.params)
            return outcome

        def share_at(cost: float, estimates: Mapping[str, float]) -> float:
            return claim_share(
                model=model,
                params=base | dict(estimates) | {CALIBRATED: cost},
                initial_conditions=initial,
                seed=int(estimation["seed"]) + 1,
                age=int(CLAIMING_FACT["age"]),
            )

        rounds = calibrate_and_estimate(
            estimate=lambda cost: dict(estimate(cost).result.params),
            share_at=share_at,
            target=float(CLAIMING_FACT["share"]),
            start=float(settings["calibration_start"]),
            bounds=tuple(settings["calibration_bounds"]),
            tolerance=float(settings["calibration_tolerance"]),
            max_rounds=int(settings["max_rounds"]),
        )
        cost = rounds[-1].calibrated
        outcome = estimate(cost, final=True)
        calibrated = {
            "param": CALIBRATED,
            "value": cost,
            "fact": dict(CLAIMING_FACT),
            "share": share_at(cost, outcome.result.params),
            "rounds": [
                {
                    "value": r.param,
                    "estimates": r.estimates,
                    "share": r.share,
                    "calibrated": r.calibrated,
                }
                for r in rounds
            ],
            "settings": {k: v for k, v in settings.items() if k != "estimation"},
        }
    return replace(outcome, calibrated=calibrated)


def estimate_extended_into(
    *,
    model: RegimeModel,
    specification: Mapping[str, Any],
    moments_file: Path,
    settings: Mapping[str, Any],
    directory: Path,
) -> Path:
    """Estimate the model from age 25 on the SCF moment table and publish it to ``directory``."""
    outcome = estimate_extended(
        model=model,
        specification=specification,
        moments=pd.read_feather(moments_file),
        settings=settings,
    )
    return save_estimation(outcome, directory=directory)
