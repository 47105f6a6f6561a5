"""The MSM search: optimagic minimises the weighted residuals; the end point kept; the Jacobian.

``estimate_msm`` (``msm.py``) states the problem and assembles the result around these.
optimagic is imported where a search or a derivative runs: it takes 0.7 s, and a process that
only reads estimates, solves or simulates (a build's analysis tasks, a parallel build's workers
that run no estimation) never needs it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from project.errors import ProjectError
from project.estimation.errors import EstimationError
from project.estimation.inputs import MomentProblem, ParameterSpace
from project.estimation.simulator import CheckedSimulator

if TYPE_CHECKING:
    import optimagic as om

logger = logging.getLogger("project.estimation")


def search(
    *,
    simulator: CheckedSimulator,
    problem: MomentProblem,
    space: ParameterSpace,
    algorithm: str,
    algo_options: Mapping[str, Any] | None,
    multistart: bool | om.MultistartOptions,
    relative_step: float,
    on_failure: str,
) -> tuple[Any, np.ndarray, bool, str, int]:
    """Minimise the weighted squared residuals; return optimagic's result, the kept end point.

    Also whether it converged, optimagic's message and the optimiser's evaluations (raises
    ``EstimationError`` where it did not converge and ``on_failure`` is "raise").
    """
    import optimagic as om  # noqa: PLC0415

    derivatives = _exact_derivatives(simulator=simulator, algorithm=algorithm)
    # Fail early, naming the moments, where the start is infeasible (with exact derivatives as
    # the search will use them: a simulator compiles a program for each kind).
    (simulator.with_jacobian if derivatives else simulator)(space.start)

    @om.mark.least_squares
    def weighted_residuals(values: np.ndarray) -> np.ndarray:
        if derivatives:  # the optimiser asks for the Jacobian next: simulate both at once
            return problem.residuals(simulator.with_jacobian(values)[0])
        return problem.residuals(simulator(values))

    logger.info(
        "MSM: estimating %s from %d moments with %s (start %s).",
        list(space.names),
        problem.n_moments,
        algorithm,
        space.as_dict(space.start),
    )
    raw = run_optimagic(
        om.minimize,
        fun=weighted_residuals,
        params=space.start.copy(),
        algorithm=algorithm,
        bounds=om.Bounds(lower=space.lower, upper=space.upper),
        algo_options=None if algo_options is None else dict(algo_options),
        numdiff_options=om.NumdiffOptions(
            method="central", scaling_factor=relative_step / np.sqrt(np.finfo(float).eps)
        ),
        multistart=multistart,
        **derivatives,
    )
    n_evaluations = simulator.calls - 1
    estimates, converged, message = best_end_point(
        raw, criterion=lambda values: float(np.sum(problem.residuals(simulator(values)) ** 2))
    )
    if not converged:
        _not_converged(
            f"The optimiser {algorithm} did not converge ({message}) after "
            f"{n_evaluations} evaluations; last params {space.as_dict(estimates)}. Try "
            "another start, algorithm, multistart, or a larger relative_step.",
            on_failure=on_failure,
        )
    return raw, estimates, converged, message, n_evaluations


def _not_converged(text: str, *, on_failure: str) -> None:
    """Raise ``EstimationError`` with ``text`` (``on_failure="raise"``), else log it."""
    if on_failure == "raise":
        raise EstimationError(text)
    logger.warning("%s The result is kept with converged=False.", text)


def moments_and_jacobian_at(
    *,
    simulator: CheckedSimulator,
    problem: MomentProblem,
    space: ParameterSpace,
    estimates: np.ndarray,
    relative_step: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Return the simulated moments at the estimates and their Jacobian (exact or central)."""
    if simulator.has_jacobian:
        return simulator.with_jacobian(estimates)
    import optimagic as om  # noqa: PLC0415

    simulated = simulator(estimates)
    jacobian = run_optimagic(
        om.first_derivative,
        simulator,
        estimates,
        bounds=om.Bounds(lower=space.lower, upper=space.upper),
        method="central",
        scaling_factor=relative_step / np.sqrt(np.finfo(float).eps),
        f0=simulated,
        error_handling="raise_strict",
    ).derivative
    return simulated, np.asarray(jacobian, dtype=float).reshape(problem.n_moments, space.n_params)


def bounded_intervals(
    *, inference: Any, space: ParameterSpace, estimates: np.ndarray
) -> dict[str, Any]:
    """Return the standard errors and intervals: none at a bound, none beyond one."""
    at_bound = space.at_bound(estimates)
    if at_bound.any():
        logger.warning(
            "MSM: params %s ended at a bound; their standard errors assume an interior "
            "estimate and are not valid there. Widen the bounds or fix those params.",
            [n for n, b in zip(space.names, at_bound, strict=True) if b],
        )
    return {
        "at_bound": at_bound,
        "standard_errors": np.where(at_bound, np.nan, inference.standard_errors),
        "ci_lower": np.where(at_bound, np.nan, np.maximum(inference.ci_lower, space.lower)),
        "ci_upper": np.where(at_bound, np.nan, np.minimum(inference.ci_upper, space.upper)),
    }


def _exact_derivatives(*, simulator: CheckedSimulator, algorithm: Any) -> dict[str, Any]:
    """Return ``fun_and_jac`` for ``om.minimize`` from the exact Jacobian, or nothing.

    Nothing without ``moments_and_jacobian`` or for an optimiser that uses no derivatives; the
    weighted residuals and their Jacobian R G for a least-squares optimiser; the criterion
    g' W g and its gradient 2 (R G)' R g for a scalar one.
    """
    if not simulator.has_jacobian:
        return {}
    import optimagic as om  # noqa: PLC0415
    from optimagic.algorithms import ALL_ALGORITHMS  # noqa: PLC0415
    from optimagic.typing import AggregationLevel  # noqa: PLC0415

    info = getattr(ALL_ALGORITHMS.get(algorithm, algorithm), "algo_info", None)
    if info is None or not info.needs_jac:
        return {}
    problem = simulator.problem

    def weighted(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        moments, jacobian = simulator.with_jacobian(values)
        return problem.residuals(moments), problem.root @ jacobian

    if info.solver_type == AggregationLevel.LEAST_SQUARES:
        return {"fun_and_jac": om.mark.least_squares(weighted)}
    if info.solver_type == AggregationLevel.SCALAR:

        @om.mark.scalar
        def criterion_and_gradient(values: np.ndarray) -> tuple[float, np.ndarray]:
            residuals, jacobian = weighted(values)
            return float(residuals @ residuals), 2.0 * jacobian.T @ residuals

        return {"fun_and_jac": criterion_and_gradient}
    msg = (
        f"The optimiser {algorithm} works on a {info.solver_type.value} criterion; exact "
        "derivatives of the MSM criterion serve least-squares optimisers (scipy_ls_trf) and "
        "scalar ones (scipy_lbfgsb). Choose one of those, or drop moments_and_jacobian."
    )
    raise EstimationError(msg)


def run_optimagic(function: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """Call an optimagic function; re-raise the package's errors from inside it unwrapped."""
    try:
        return function(*args, **kwargs)
    except ProjectError:
        raise
    except Exception as error:
        cause = error.__cause__
        while cause is not None and not isinstance(cause, ProjectError):
            cause = cause.__cause__
        if cause is not None:
            raise cause from error
        msg = (
            f"optimagic failed in {function.__name__}: {type(error).__name__}: {error}. Check "
            "the algorithm, algo_options (e.g. a trust region larger than the bounds allow) and "
            "multistart settings."
        )
        raise EstimationError(msg) from error


def best_end_point(
    raw: om.OptimizeResult, *, criterion: Callable[[np.ndarray], float]
) -> tuple[np.ndarray, bool, str]:
    """Return the end point with the lowest ``criterion``, whether it converged, its message.

    Without a multistart, the optimiser's result. A multistart's own choice goes by each local
    search's last reported value, which need not be the criterion at its end point (pounders
    reported 5.2643 at a point whose criterion is 5.2604), so it could keep a search whose end
    is worse than another's: the end points are compared by the criterion itself here.
    """
    info = raw.multistart_info
    best = raw
    if info is not None:
        found = list(info.local_optima)
        values = [criterion(np.asarray(f.params, dtype=float)) for f in found]
        best = found[int(np.argmin([v if np.isfinite(v) else np.inf for v in values]))]
    message = str(best.message) if best.message is not None else "no message"
    return np.asarray(best.params, dtype=float), bool(best.success), message


def local_searches(
    raw: om.OptimizeResult, *, space: ParameterSpace, criterion: Callable[[np.ndarray], float]
) -> tuple[dict[str, Any], ...]:
    """Return each local search's start, end point and criterion ``g'Wg`` (one without multistart).

    A reader sees where every search went, not only the best. The criterion is evaluated at each
    end point (``criterion``): the optimiser's own last value (``fun``) need not be the one at
    its end point (pounders reported 5.2643 at a point whose criterion is 5.2604).
    """
    info = raw.multistart_info
    pairs = (
        [(space.start, raw)]
        if info is None
        else list(zip(info.start_parameters, info.local_optima, strict=True))
    )
    return tuple(
        {
            "start": space.as_dict(np.asarray(start, dtype=float)),
            "end": space.as_dict(np.asarray(found.params, dtype=float)),
            "objective": criterion(np.asarray(found.params, dtype=float)),
            "converged": bool(found.success),
        }
        for start, found in pairs
    )
