"""Estimate the model from age 25 (``lifecycle_normalised``) with its cost of working calibrated.

Contract: ``estimate_extended(model=..., specification=..., moments=..., settings=...)`` takes
the built model, its specification (params: the vendored profiles and life table, the
calibrated defaults) and the SCF moment table, and returns an ``EstimationOutcome`` whose
``calibrated`` records the calibration: the param, the fact it meets, every round (the cost,
the estimates there, the claiming share at them) and the share at the final estimates.

Standard errors: the reported ones let the cost follow the estimates, as the calibration makes
it (``claiming.calibrated_covariance``: the moments' slope in the cost and the calibrated cost's
slope in each estimate, by central differences); ``calibrated["fixed_cost_standard_errors"]``
holds those with the cost fixed. The fact itself is taken as exact.

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
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from project.estimation.claiming import (
    calibrate,
    calibrate_and_estimate,
    calibrated_covariance,
    claim_share,
    claiming_ages,
    claiming_table,
)
from project.estimation.inference import CRITICAL
from project.estimation.lifecycle import LifecycleMoments
from project.estimation.products import save_estimation
from project.estimation.result import MSMResult
from project.estimation.variant import EstimationOutcome, estimate_variant
from project.models.lifecycle_normalised import CLAIMING_FACT
from project.points import precision
from project.regimes.spec import RegimeModel
from project.simulation import draw_initial_conditions

logger = logging.getLogger("project.estimation")

CALIBRATED = "work_cost"


@dataclass
class _Problem:
    """The estimation and the calibration of the model from age 25, on one simulated population."""

    model: RegimeModel
    specification: Mapping[str, Any]
    moments: pd.DataFrame
    settings: Mapping[str, Any]
    initial: dict[str, np.ndarray] = field(init=False)
    start: dict[str, float] = field(init=False)
    tables: dict[tuple[Any, ...], pd.DataFrame] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.initial = draw_initial_conditions(
            model=self.model,
            n_subjects=int(self.estimation["n_subjects"]),
            seed=int(self.estimation["seed"]),
            distribution=self.settings["initial_distribution"],
        )
        self.start = dict(self.estimation["start"])

    @property
    def estimation(self) -> dict[str, Any]:
        return dict(self.settings["estimation"])

    @property
    def seed(self) -> int:
        """Return the simulation's seed (the estimation's: ``estimate_variant`` adds one)."""
        return int(self.estimation["seed"]) + 1

    def params(self, cost: float, estimates: Mapping[str, float] | None = None) -> dict[str, Any]:
        return dict(self.specification["params"]) | dict(estimates or {}) | {CALIBRATED: cost}

    def estimate(self, cost: float, *, final: bool = False) -> EstimationOutcome:
        """Return the estimate at ``cost``: one local search, or the full one (``final``)."""
        search = self.estimation if final else self.estimation | {"n_starts": 1, "profiles": False}
        outcome = estimate_variant(
            model=self.model,
            specification=dict(self.specification) | {"params": self.params(cost)},
            moments=self.moments,
            initial_distribution=self.settings["initial_distribution"],
            settings=search | {"start": self.start},
        )
        self.start = dict(outcome.result.params)
        return outcome

    def claims(self, cost: float, estimates: Mapping[str, float]) -> pd.DataFrame:
        """Return the claiming table at ``cost`` and ``estimates``, simulated once per point.

        ``calibrate`` reads the bounds' shares and ``brentq`` reads them again; the rounds read
        the share where they were estimated: each point is solved and simulated once.
        """
        key = (float(cost), *sorted((k, float(v)) for k, v in estimates.items()))
        if key not in self.tables:
            self.tables[key] = claiming_table(
                model=self.model,
                params=self.params(cost, estimates),
                initial_conditions=self.initial,
                seed=self.seed,
            )
        return self.tables[key]

    def share_at(self, cost: float, estimates: Mapping[str, float]) -> float:
        return claim_share(self.claims(cost, estimates), age=int(CLAIMING_FACT["age"]))

    def calibrated(self, estimates: Mapping[str, float]) -> float:
        """Return the cost that meets the claiming fact at ``estimates`` (tightly, for slopes)."""
        return calibrate(
            share_at=lambda cost: self.share_at(cost, estimates),
            target=float(CLAIMING_FACT["share"]),
            bounds=tuple(self.settings["calibration_bounds"]),
            tolerance=SLOPE_TOLERANCE,
        )

    def cost_slope(self, cost: float, estimates: Mapping[str, float], *, step: float) -> np.ndarray:
        """Return the moments' slope in the cost at ``estimates`` (central differences)."""
        simulator = LifecycleMoments(
            model=self.model,
            base_params=self.params(cost, estimates),
            initial_conditions=self.initial,
            seed=self.seed,
            age_groups=[tuple(g) for g in self.estimation["age_groups"]],
            estimated=(CALIBRATED,),
            compiled=False,
        )
        h = step * cost
        return (simulator({CALIBRATED: cost + h}) - simulator({CALIBRATED: cost - h})) / (2 * h)


SLOPE_TOLERANCE = 1e-6
"""The calibration's tolerance where its slope in the estimates is taken (the share is a step
function with steps of one simulated worker: about 2e-5 in the cost at 5,000 households)."""


def estimate_extended(
    *,
    model: RegimeModel,
    specification: Mapping[str, Any],
    moments: pd.DataFrame,
    settings: Mapping[str, Any],
) -> EstimationOutcome:
    """Estimate crra and beta with ``work_cost`` calibrated to the claiming fact (docstring)."""
    with precision(x64=bool(settings["estimation"].get("x64", True))):
        problem = _Problem(
            model=model, specification=specification, moments=moments, settings=settings
        )
        rounds = calibrate_and_estimate(
            estimate=lambda cost: dict(problem.estimate(cost).result.params),
            share_at=problem.share_at,
            target=float(CLAIMING_FACT["share"]),
            start=float(settings["calibration_start"]),
            bounds=tuple(settings["calibration_bounds"]),
            tolerance=float(settings["calibration_tolerance"]),
            max_rounds=int(settings["max_rounds"]),
        )
        cost = rounds[-1].calibrated
        outcome = problem.estimate(cost, final=True)
        result, slopes = _following_the_cost(problem, outcome=outcome, cost=cost)
        claims = problem.claims(cost, outcome.result.params)
        calibrated = {
            "param": CALIBRATED,
            "value": cost,
            "fact": dict(CLAIMING_FACT),
            "share": claim_share(claims, age=int(CLAIMING_FACT["age"])),
            "claiming_ages": claiming_ages(claims),
            "rounds": [
                {
                    "value": r.param,
                    "estimates": r.estimates,
                    "share": r.share,
                    "calibrated": r.calibrated,
                }
                for r in rounds
            ],
            "fixed_cost_standard_errors": dict(
                zip(result.param_names, outcome.result.standard_errors.tolist(), strict=True)
            ),
            **slopes,
            "settings": {k: v for k, v in settings.items() if k != "estimation"},
        }
    return replace(outcome, result=result, calibrated=calibrated)


def _following_the_cost(
    problem: _Problem, *, outcome: EstimationOutcome, cost: float
) -> tuple[MSMResult, dict[str, Any]]:
    """Return the result with standard errors that let the cost follow the estimates.

    Central differences of ``relative_step`` (the estimation's): the moments in the cost, and
    the calibrated cost in each estimate (``claiming.calibrated_covariance``).
    """
    result = outcome.result
    step = float(problem.estimation["relative_step"])
    params = result.params
    slope = problem.cost_slope(cost, params, step=step)
    gradient = []
    for name, value in params.items():
        dx = step * abs(value)
        costs = [problem.calibrated(params | {name: value + s * dx}) for s in (1, -1)]
        gradient.append((costs[0] - costs[1]) / (2 * dx))
    covariance = calibrated_covariance(
        result=result, cost_slope=slope, cost_gradient=np.asarray(gradient)
    )
    errors = np.sqrt(np.diag(covariance))
    corrected = replace(
        result,
        covariance=covariance,
        standard_errors=errors,
        ci_lower=result.estimates - CRITICAL * errors,
        ci_upper=result.estimates + CRITICAL * errors,
    )
    names = list(result.param_names)
    return corrected, {
        "cost_slope": dict(zip(result.moment_names, slope.tolist(), strict=True)),
        "cost_gradient": dict(zip(names, gradient, strict=True)),
    }


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
