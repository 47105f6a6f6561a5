"""Estimate preferences with one param calibrated jointly to a fact about a choice.

Contract: ``estimate_calibrated(model=..., specification=..., moments=...,
initial_distribution=..., settings=...)`` takes what ``estimate_variant`` takes, with
``settings["calibration"]`` a ``project.config.CalibrationTarget`` as a dict (the param, the
choice whose simulated share must meet ``share`` at ``age - lag``, the start, the bounds, the
tolerance and the most rounds), and returns an ``EstimationOutcome`` whose ``calibrated``
records the calibration: the param and its settled value, the fact (and ``decision_age``, where
its choice is made), every round (the value the estimates were made at, the estimates, the share
there, the value calibrated at them), the share and the claiming ages (by the fact's ages: the
choice's plus the lag) at the final estimates, the slopes behind the standard errors and the
standard errors with the param held fixed.

Procedure (``project.estimation.claiming.calibrate_and_estimate``): from the calibration's start,
estimate the settings' params by one local search (from the settings' start, later from the last
estimates), then set the calibrated param so that the simulated share at the estimates meets the
fact (``claiming.calibrate``, a bracket around the last value widened until it holds the target,
then ``brentq``); repeat until the param moves less than the tolerance. At the settled value
the estimation runs once more with the settings as given (for the status quo: the multistart,
the criterion slices, the standard errors with the simulation noise, the J-test), and that is
the estimate reported. One simulated population and one compiled program serve every step:
the moments of the estimated params and the calibrated one together (``LifecycleMoments`` with
a ``ChoiceCount``), held at the calibrated value for each search (``HeldMoments``), so the
searches, the calibration and the slopes share evaluations.

Standard errors let the calibrated param k follow the estimates, as the calibration makes it
(``claiming.calibrated_covariance``): the moments' slope in k, and k's slope in each estimate
by the implicit function theorem, dk/dθ = -(∂s/∂θ) / (∂s/∂k) for the simulated share s, all by
central differences of ``relative_step`` times the value (at least 0.1), the estimation's own
steps. The fact is taken as exact, and the share's simulation noise is left out.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from project.estimation.choice_count import ChoiceCount
from project.estimation.claiming import (
    calibrate,
    calibrate_and_estimate,
    calibrated_covariance,
    claim_share,
    claiming_ages,
    claiming_table,
    claiming_table_of_counts,
)
from project.estimation.errors import EstimationError
from project.estimation.held import HeldMoments
from project.estimation.inference import CRITICAL
from project.estimation.lifecycle import LifecycleMoments
from project.estimation.result import MSMResult
from project.estimation.variant import EstimationOutcome, estimate_variant, moments_of
from project.model.spec import Model
from project.points import precision
from project.regimes.spec import RegimeModel

logger = logging.getLogger("project.estimation")

STEP_FLOOR = 0.1
"""Central differences step ``relative_step * max(|value|, STEP_FLOOR)``, as ``estimate_msm``'s."""


@dataclass
class _Problem:
    """The estimation and the calibration on one simulated population and one program."""

    model: Model | RegimeModel
    specification: Mapping[str, Any]
    data: pd.DataFrame
    initial_distribution: Mapping[str, Any]
    settings: Mapping[str, Any]
    moments: LifecycleMoments = field(init=False)
    start: dict[str, float] = field(init=False)

    def __post_init__(self) -> None:
        target = self.target
        param = str(target["param"])
        if param in self.settings["estimated"] or param not in self.specification["params"]:
            msg = (
                f"The calibrated param {param!r} must be a param of the model that is not "
                f"estimated (estimated: {list(self.settings['estimated'])})."
            )
            raise EstimationError(msg)
        self.moments = moments_of(
            model=self.model,
            params=self.specification["params"],
            initial_distribution=self.initial_distribution,
            settings=self.settings,
            estimated=(*self.settings["estimated"], param),
            choice=ChoiceCount(
                regime=str(target["regime"]),
                action=str(target["action"]),
                label=str(target["label"]),
                age=float(self.decision_age),
            ),
        )
        self.start = dict(self.settings["start"])

    @property
    def target(self) -> dict[str, Any]:
        return dict(self.settings["calibration"])

    @property
    def param(self) -> str:
        return str(self.target["param"])

    @property
    def decision_age(self) -> int:
        """Return the age of the choice the fact is about (its age less the lag)."""
        return int(self.target["age"]) - int(self.target.get("lag", 0))

    def share_at(self, value: float, estimates: Mapping[str, float]) -> float:
        """Return the simulated share choosing the label at ``value`` and ``estimates``."""
        deciding, choosing = self.moments.choice_counts({**estimates, self.param: value})
        if not deciding > 0:
            msg = (
                f"No simulated subject of regime {self.target['regime']!r} is alive at age "
                f"{self.decision_age} at {self.param} = {value:.4g} and {dict(estimates)} "
                "(or the solve failed there): the calibration's share is undefined."
            )
            raise EstimationError(msg)
        return float(choosing / deciding)

    def estimate(self, value: float, *, final: bool = False) -> EstimationOutcome:
        """Return the estimate at ``value``: one local search, or as the settings say (final)."""
        search = dict(self.settings)
        if not final:
            search |= {"n_starts": 1, "profiles": False, "alternative_steps": []}
        outcome = estimate_variant(
            model=self.model,
            specification=dict(self.specification)
            | {"params": dict(self.specification["params"]) | {self.param: value}},
            moments=self.data,
            initial_distribution=self.initial_distribution,
            settings=search | {"start": self.start},
            simulator=HeldMoments(self.moments, held={self.param: value}),
        )
        self.start = dict(outcome.result.params)
        return outcome

    def claims(self, params: Mapping[str, float]) -> pd.DataFrame:
        """Return ``claiming_table`` at the estimated and calibrated ``params``.

        From the moments' own program where they have one (one more compile, and no table of
        every subject-year), else from a solve and a simulation.
        """
        moments, target = self.moments, self.target
        if moments.program is None:
            return claiming_table(
                model=self.model,
                params=moments.full_params(params),
                initial_conditions=moments.initial_conditions,
                seed=moments.seed,
                chooser=str(target["regime"]),
                action=str(target["action"]),
                label=str(target["label"]),
            )
        full = moments.full_params(params)
        values = np.array([full[name] for name in moments.estimated])
        counts = moments.program.choice_table(values)
        return claiming_table_of_counts(ages=np.asarray(self.model.ages), counts=counts)

    def step(self, value: float) -> float:
        return float(self.settings["relative_step"]) * max(abs(float(value)), STEP_FLOOR)


def estimate_calibrated(
    *,
    model: Model | RegimeModel,
    specification: Mapping[str, Any],
    moments: pd.DataFrame,
    initial_distribution: Mapping[str, Any],
    settings: Mapping[str, Any],
) -> EstimationOutcome:
    """Estimate ``settings["estimated"]`` with the calibrated param set jointly (docstring)."""
    with precision(x64=bool(settings.get("x64", True))):
        problem = _Problem(
            model=model,
            specification=specification,
            data=moments,
            initial_distribution=initial_distribution,
            settings=settings,
        )
        target = problem.target
        rounds = calibrate_and_estimate(
            estimate=lambda value: dict(problem.estimate(value).result.params),
            share_at=problem.share_at,
            target=float(target["share"]),
            start=float(target["start"]),
            bounds=tuple(float(b) for b in target["bounds"]),
            tolerance=float(target["tolerance"]),
            max_rounds=int(target["max_rounds"]),
        )
        value = rounds[-1].calibrated
        outcome = problem.estimate(value, final=True)
        result, slopes = _following(problem, result=outcome.result, value=value)
        claims = problem.claims({**outcome.result.params, problem.param: value})
        lag = int(target.get("lag", 0))
        calibrated = {
            "param": problem.param,
            "value": value,
            "fact": {"age": int(target["age"]), "share": float(target["share"])},
            "decision_age": problem.decision_age,
            "share": claim_share(claims, age=problem.decision_age),
            "claiming_ages": {age + lag: share for age, share in claiming_ages(claims).items()},
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
            "settings": target,
        }
    return replace(outcome, result=result, calibrated=calibrated)


def _following(
    problem: _Problem, *, result: MSMResult, value: float
) -> tuple[MSMResult, dict[str, Any]]:
    """Return the result with standard errors that let the calibrated param follow them.

    The moments' slope in the param and the param's slope in each estimate (implicit function
    theorem on the simulated share), by central differences (module docstring).
    """
    params, name = result.params, problem.param
    h = problem.step(value)
    sides = [{**params, name: value + sign * h} for sign in (1, -1)]
    moment_slope = (problem.moments(sides[0]) - problem.moments(sides[1])) / (2 * h)
    share_slope = (problem.share_at(value + h, params) - problem.share_at(value - h, params)) / (
        2 * h
    )
    if share_slope == 0:
        msg = (
            f"The simulated share does not move with {name} at {value:.4g} (steps of {h:.2g}): "
            "the calibration cannot tell its slope. Raise the estimation's relative_step."
        )
        raise EstimationError(msg)
    share_gradient, gradient = {}, []
    for estimate, at in params.items():
        dx = problem.step(at)
        up, down = ({**params, estimate: at + sign * dx} for sign in (1, -1))
        share_gradient[estimate] = (problem.share_at(value, up) - problem.share_at(value, down)) / (
            2 * dx
        )
        gradient.append(-share_gradient[estimate] / share_slope)
    covariance = calibrated_covariance(
        result=result, cost_slope=moment_slope, cost_gradient=np.asarray(gradient)
    )
    errors = np.sqrt(np.diag(covariance))
    corrected = replace(
        result,
        covariance=covariance,
        standard_errors=errors,
        ci_lower=result.estimates - CRITICAL * errors,
        ci_upper=result.estimates + CRITICAL * errors,
    )
    return corrected, {
        "cost_slope": dict(zip(result.moment_names, moment_slope.tolist(), strict=True)),
        "cost_gradient": dict(zip(result.param_names, gradient, strict=True)),
        "share_slope": {name: share_slope, **share_gradient},
        "step": float(problem.settings["relative_step"]),
    }


def calibrated_value(summary: Mapping[str, Any]) -> dict[str, float]:
    """Return the calibrated param and its value recorded in an estimation's summary (or none)."""
    calibrated = summary.get("calibrated") or {}
    if not calibrated:
        return {}
    return {str(calibrated["param"]): float(calibrated["value"])}


__all__ = ["calibrate", "calibrated_value", "estimate_calibrated"]
