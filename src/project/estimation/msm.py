"""Estimate params by the method of simulated moments (MSM) with optimagic.

Contract: ``estimate_msm`` minimises g(theta)' W g(theta), g = m_sim(theta) - m_data, over the
estimated params within their bounds, then returns an ``MSMResult`` with sandwich standard
errors, 95 % intervals, the J-test (see ``inference``) and the moment fit.

``simulate_moments(params) -> (K,) array`` must be deterministic: the caller fixes its random
numbers (the seed of the simulated shocks and initial conditions) once, so that the same params
always give the same moments (common random numbers). Otherwise the objective is noisy, the
optimiser cannot converge and finite-difference derivatives are meaningless.

Derivatives (the optimiser's gradient and the Jacobian G for the standard errors) are central
finite differences with steps ``relative_step * max(|theta|, 0.1)``. A smooth simulator works
with the default; a simulator whose moments jump when a simulated subject changes a discrete
choice needs a step well above those jumps (e.g. 1e-3 to 1e-2). A simulator with exact
derivatives passes ``moments_and_jacobian(params) -> (moments (K,), Jacobian (K, P))`` (the same
moments as ``simulate_moments``): then G is exact, and an optimiser that uses derivatives
(``scipy_ls_trf``, ``scipy_lbfgsb``, ...) gets the exact Jacobian of the weighted residuals (or
the gradient of the criterion) at every point it evaluates, the moments and Jacobian computed in
one call (a multistart's sampled points too, whose Jacobian it does not need). A
derivative-free optimiser (``pounders``) simulates the moments alone.

Failures are raised as ``EstimationError``, naming the culprit: invalid inputs, more params than
moments, simulated moments that are not finite (at the start or during the search), params the
moments do not identify at the estimate. An optimiser that does not report success raises too
(``on_failure="raise"``, the default); with ``on_failure="warn"`` the result is returned with
``converged=False``, a logged warning, and the flag in every table of the result.

Multistart: ``multistart=om.MultistartOptions(...)`` (or True) runs optimagic's TikTak
multistart; it samples within the bounds, which must then be finite for every param.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import numpy as np
import pandas as pd

from project.estimation.errors import EstimationError
from project.estimation.inference import check_identification, infer
from project.estimation.inputs import MomentProblem, ParameterSpace
from project.estimation.result import MSMResult
from project.estimation.search import (
    bounded_intervals,
    local_searches,
    moments_and_jacobian_at,
    search,
)
from project.estimation.simulator import CheckedSimulator

if TYPE_CHECKING:
    import optimagic as om

logger = logging.getLogger("project.estimation")

MAX_CONDITION = 1e10
DEFAULT_RELATIVE_STEP = 1e-6


def estimate_msm(
    *,
    simulate_moments: Callable[[dict[str, float]], Any],
    data_moments: Sequence[float] | np.ndarray | pd.Series,
    data_variances: Sequence[float] | np.ndarray | pd.Series,
    n_data: float | Sequence[float] | np.ndarray,
    n_simulated: float | Sequence[float] | np.ndarray,
    start_params: Mapping[str, float],
    bounds: Mapping[str, tuple[float, float]] | None = None,
    moment_names: Sequence[str] | None = None,
    algorithm: str = "scipy_lbfgsb",
    algo_options: Mapping[str, Any] | None = None,
    multistart: bool | om.MultistartOptions = False,
    relative_step: float = DEFAULT_RELATIVE_STEP,
    on_failure: Literal["raise", "warn"] = "raise",
    max_condition: float = MAX_CONDITION,
    moments_and_jacobian: Callable[[dict[str, float]], tuple[Any, Any]] | None = None,
    weighting: Literal["data", "efficient"] = "data",
) -> MSMResult:
    """Estimate ``start_params``' params by MSM; see the module docstring for the contract.

    ``data_variances``: the sampling variance of each data moment (K,), giving the weighting
    W = diag(1 / variances), or their (K, K) covariance, giving W = its inverse; with
    ``weighting="efficient"``, W is the inverse of that covariance corrected for simulation
    noise (``MomentProblem.corrected_covariance``), so that J is chi-square. ``n_data``:
    data observations per moment; ``n_simulated``: simulated units behind each simulated
    moment (one number or one per moment; ``inf`` for a moment function without simulation
    noise). ``bounds``: (lower, upper) per param name (missing: unbounded). ``algorithm`` and
    ``algo_options``: an optimagic algorithm name and its options. ``moments_and_jacobian``:
    exact derivatives (module docstring).
    """
    problem = MomentProblem.build(
        data_moments=data_moments,
        data_variances=data_variances,
        n_data=n_data,
        n_simulated=n_simulated,
        moment_names=moment_names,
        weighting=weighting,
    )
    space = ParameterSpace.build(start_params=start_params, bounds=bounds)
    settings = {"multistart": multistart, "relative_step": relative_step, "on_failure": on_failure}
    _check_settings(problem=problem, space=space, **settings)
    simulator = CheckedSimulator(
        simulate_moments=simulate_moments,
        problem=problem,
        space=space,
        moments_and_jacobian=moments_and_jacobian,
    )
    return _estimate(
        simulator=simulator,
        problem=problem,
        space=space,
        algorithm=algorithm,
        algo_options=algo_options,
        max_condition=max_condition,
        settings=settings,
    )


def _estimate(
    *,
    simulator: CheckedSimulator,
    problem: MomentProblem,
    space: ParameterSpace,
    algorithm: str,
    algo_options: Mapping[str, Any] | None,
    max_condition: float,
    settings: dict[str, Any],
) -> MSMResult:
    """Search, then return the result with its inference at the estimates (and log it)."""
    raw, estimates, converged, message, n_optimizer_evaluations = search(
        simulator=simulator,
        problem=problem,
        space=space,
        algorithm=algorithm,
        algo_options=algo_options,
        **settings,
    )
    fit = _fit_at(
        simulator=simulator,
        problem=problem,
        space=space,
        estimates=estimates,
        relative_step=settings["relative_step"],
        max_condition=max_condition,
    )
    result = _result(
        fit,
        problem=problem,
        space=space,
        simulator=simulator,
        raw=raw,
        converged=converged,
        message=message,
        algorithm=str(algorithm),
        n_optimizer_evaluations=n_optimizer_evaluations,
    )
    _log_result(result, inference=fit.inference, space=space, simulations=simulator.calls)
    return result


def _log_result(
    result: MSMResult, *, inference: Any, space: ParameterSpace, simulations: int
) -> None:
    """Log the estimates, their standard errors, the J-test and the simulations it took."""
    logger.info(
        "MSM: estimates %s, standard errors %s, J = %.4g (dof %d, p = %.4g), %d simulations.",
        result.params,
        dict(zip(space.names, inference.standard_errors.round(6).tolist(), strict=True)),
        inference.j_statistic,
        inference.j_dof,
        inference.j_p_value,
        simulations,
    )


class _Fit(NamedTuple):
    """The moments, their Jacobian and the inference at the estimates."""

    estimates: np.ndarray
    simulated: np.ndarray
    jacobian: np.ndarray
    residuals: np.ndarray
    objective: float
    inference: Any
    interval: dict[str, Any]


def _fit_at(
    *,
    simulator: CheckedSimulator,
    problem: MomentProblem,
    space: ParameterSpace,
    estimates: np.ndarray,
    relative_step: float,
    max_condition: float,
) -> _Fit:
    """Return the moments, their Jacobian and the inference at ``estimates``."""
    simulated, jacobian = moments_and_jacobian_at(
        simulator=simulator,
        problem=problem,
        space=space,
        estimates=estimates,
        relative_step=relative_step,
    )
    condition = check_identification(
        jacobian=jacobian,
        root=problem.root,
        estimates=estimates,
        param_names=space.names,
        moment_names=problem.names,
        max_condition=max_condition,
    )
    residuals = simulated - problem.data
    inference = infer(
        jacobian=jacobian,
        weighting=problem.weighting,
        corrected_covariance=problem.corrected_covariance,
        residuals=residuals,
        estimates=estimates,
        condition_number=condition,
    )
    return _Fit(
        estimates=estimates,
        simulated=simulated,
        jacobian=jacobian,
        residuals=residuals,
        objective=float(np.sum(problem.residuals(simulated) ** 2)),
        inference=inference,
        interval=bounded_intervals(inference=inference, space=space, estimates=estimates),
    )


def _result(
    fit: _Fit,
    *,
    problem: MomentProblem,
    space: ParameterSpace,
    simulator: CheckedSimulator,
    raw: Any,
    converged: bool,
    message: str,
    algorithm: str,
    n_optimizer_evaluations: int,
) -> MSMResult:
    """Return the estimation's result: the fit, the search and the data it used."""
    inference, estimates = fit.inference, fit.estimates

    def criterion_at(values: np.ndarray) -> float:
        if np.array_equal(values, estimates):  # simulated there already
            return fit.objective
        return float(np.sum(problem.residuals(simulator(values)) ** 2))

    return MSMResult(
        param_names=space.names,
        estimates=estimates,
        covariance=inference.covariance,
        **fit.interval,
        start_params=space.start,
        lower_bounds=space.lower,
        upper_bounds=space.upper,
        moment_names=problem.names,
        data_moments=problem.data,
        data_covariance=problem.covariance,
        simulated_moments=fit.simulated,
        residuals=fit.residuals,
        moment_standard_errors=inference.moment_standard_errors,
        moment_t_stats=inference.moment_t_stats,
        n_data=problem.n_data,
        n_simulated=problem.n_simulated,
        jacobian=fit.jacobian,
        weighting=problem.weighting,
        objective=fit.objective,
        j_statistic=inference.j_statistic,
        j_dof=inference.j_dof,
        j_p_value=inference.j_p_value,
        efficient_weighting=inference.efficient_weighting,
        condition_number=inference.condition_number,
        converged=converged,
        message=message,
        algorithm=algorithm,
        n_optimizer_evaluations=n_optimizer_evaluations,
        n_simulations=simulator.calls,
        n_local_optimizations=(
            1 if raw.multistart_info is None else len(raw.multistart_info.local_optima)
        ),
        local_searches=local_searches(raw, space=space, criterion=criterion_at),
    )


def _check_settings(
    *,
    problem: MomentProblem,
    space: ParameterSpace,
    multistart: bool | om.MultistartOptions,
    relative_step: float,
    on_failure: str,
) -> None:
    """Raise for more params than moments, a bad step, failure mode or multistart setting."""
    if space.n_params > problem.n_moments:
        msg = (
            f"{space.n_params} params {list(space.names)} cannot be estimated from "
            f"{problem.n_moments} moments {list(problem.names)}: MSM needs at least as many "
            "moments as params. Add moments or fix some params."
        )
        raise EstimationError(msg)
    if not (isinstance(relative_step, float | int) and 0 < relative_step < 1):
        msg = f"relative_step must be a number in (0, 1), got {relative_step!r}."
        raise EstimationError(msg)
    if on_failure not in {"raise", "warn"}:
        msg = f"on_failure must be 'raise' or 'warn', got {on_failure!r}."
        raise EstimationError(msg)
    if multistart is not False and multistart is not None:
        unbounded = [
            name
            for name, lo, hi in zip(space.names, space.lower, space.upper, strict=True)
            if not (np.isfinite(lo) and np.isfinite(hi))
        ]
        if unbounded:
            msg = (
                f"Multistart samples start values within the bounds, but params {unbounded} "
                "have an infinite bound. Give finite bounds for every param or drop multistart."
            )
            raise EstimationError(msg)
