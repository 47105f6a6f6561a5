"""Inference at the MSM estimate: identification, sandwich covariance and the J-test.

With g(theta) = m_sim(theta) - m_data (K moments), weighting W and the Jacobian G = dm_sim/dtheta
(K x P) at the estimate, the estimate's covariance is the sandwich

    V = (G'WG)^-1 G'W Omega_s W G (G'WG)^-1,

where Omega_s is the data moments' covariance Omega scaled for simulation noise: simulating
the model with n_sim units adds a variance of n_data / n_sim times the data moment's own, so
Omega_s = D Omega D with D = diag(sqrt(1 + n_data / n_sim)) (McFadden 1989; Pakes and Pollard
1989; Gourieroux and Monfort, *Simulation-Based Econometric Methods*, 1996). With W proportional
to Omega_s^-1 (efficient weighting) V reduces to (G'Omega_s^-1 G)^-1.

The J-statistic of the over-identifying restrictions is J = g' Omega_s^-1 g, chi-square with
K - P degrees of freedom under correct specification (Hansen 1982). That distribution holds when
W is efficient (proportional to Omega_s^-1: a full covariance, or equal ``n_data / n_sim`` for
every moment); otherwise J is a conservative approximation and ``efficient_weighting`` says so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.stats

from project.estimation.errors import EstimationError

CONFIDENCE = 0.95
CRITICAL = float(scipy.stats.norm.ppf(0.5 + CONFIDENCE / 2))
"""The standard normal quantile of the two-sided ``CONFIDENCE`` interval (1.96)."""
FLAT_TOLERANCE = 1e-8
"""A param whose scaled Jacobian column is this small relative to the largest is unidentified."""
SHOWN = 3


@dataclass(frozen=True)
class Inference:
    """Covariance, standard errors and intervals of the estimate; the J-test; moment t-stats."""

    covariance: np.ndarray
    standard_errors: np.ndarray
    ci_lower: np.ndarray
    ci_upper: np.ndarray
    moment_standard_errors: np.ndarray
    moment_t_stats: np.ndarray
    j_statistic: float
    j_dof: int
    j_p_value: float
    efficient_weighting: bool
    condition_number: float


def check_identification(
    *,
    jacobian: np.ndarray,
    root: np.ndarray,
    estimates: np.ndarray,
    param_names: Sequence[str],
    moment_names: Sequence[str],
    max_condition: float,
) -> float:
    """Raise naming the params that the moments do not identify; return G'WG's scaled condition.

    Each param's column of R G (R' R = W) is scaled by the param's size ``max(|theta|, 0.1)``
    (the standardised change of the moments when the param changes by its own size), which
    makes the check free of units. A column that is (numerically) zero is a flat objective in
    that param; a condition number of the normalised G'WG above ``max_condition`` means params
    move the moments in (nearly) the same way and are not separately identified.
    """
    bad = ~np.isfinite(jacobian)
    if bad.any():
        rows, cols = np.nonzero(bad)
        pairs = [(moment_names[r], param_names[c]) for r, c in zip(rows, cols, strict=True)]
        msg = (
            f"The Jacobian of the simulated moments at the estimate is not finite for (moment, "
            f"param) pairs {pairs[:SHOWN]}: the simulator fails next to the estimate. Check the "
            "model at the estimate or tighten the bounds."
        )
        raise EstimationError(msg)
    scaled = (root @ jacobian) * np.maximum(np.abs(estimates), 0.1)
    norms = np.linalg.norm(scaled, axis=0)
    flat = norms <= FLAT_TOLERANCE * max(norms.max(), np.finfo(float).tiny)
    if flat.any():
        names = [param_names[j] for j in np.flatnonzero(flat)]
        msg = (
            f"Params {names} are not identified: the simulated moments do not change with "
            "them at the estimate (a flat objective; their Jacobian columns are zero). Fix "
            "them at a calibrated value or add moments that depend on them."
        )
        raise EstimationError(msg)
    _, singular_values, right = np.linalg.svd(scaled / norms, full_matrices=False)
    smallest = singular_values[-1]
    condition = float((singular_values[0] / smallest) ** 2) if smallest > 0 else float("inf")
    if not condition <= max_condition:
        weights = np.abs(right[-1])
        names = [param_names[j] for j in np.argsort(-weights) if weights[j] > 0.1]
        msg = (
            f"Params {names[:SHOWN]} are not separately identified: they move the moments in "
            f"nearly the same way (condition number of the normalised G'WG {condition:.3g} > "
            f"{max_condition:.3g}). Fix one of them or add moments that tell them apart."
        )
        raise EstimationError(msg)
    return condition


def infer(
    *,
    jacobian: np.ndarray,
    weighting: np.ndarray,
    corrected_covariance: np.ndarray,
    residuals: np.ndarray,
    estimates: np.ndarray,
    condition_number: float,
) -> Inference:
    """Return the sandwich covariance, standard errors, 95 % intervals, t-stats and J-test."""
    bread = np.linalg.inv(jacobian.T @ weighting @ jacobian)
    meat = jacobian.T @ weighting @ corrected_covariance @ weighting @ jacobian
    covariance = bread @ meat @ bread
    covariance = (covariance + covariance.T) / 2
    standard_errors = np.sqrt(np.diag(covariance))
    moment_standard_errors = np.sqrt(np.diag(corrected_covariance))
    j_statistic = float(residuals @ np.linalg.solve(corrected_covariance, residuals))
    dof = len(residuals) - len(estimates)
    p_value = float(scipy.stats.chi2.sf(j_statistic, dof)) if dof > 0 else float("nan")
    return Inference(
        covariance=covariance,
        standard_errors=standard_errors,
        ci_lower=estimates - CRITICAL * standard_errors,
        ci_upper=estimates + CRITICAL * standard_errors,
        moment_standard_errors=moment_standard_errors,
        moment_t_stats=residuals / moment_standard_errors,
        j_statistic=j_statistic,
        j_dof=dof,
        j_p_value=p_value,
        efficient_weighting=is_efficient(
            weighting=weighting, corrected_covariance=corrected_covariance
        ),
        condition_number=condition_number,
    )


def is_efficient(*, weighting: np.ndarray, corrected_covariance: np.ndarray) -> bool:
    """Return whether W is proportional to Omega_s^-1 (W Omega_s = c I)."""
    product = weighting @ corrected_covariance
    scale = np.trace(product) / len(product)
    return bool(np.allclose(product, scale * np.eye(len(product)), rtol=0, atol=1e-8 * scale))


def step_standard_errors(
    *, simulate_moments: Callable[[Mapping[str, float]], Any], result: Any, step: float
) -> dict[str, float]:
    """Return the efficient-weighting standard errors from central differences of ``step``.

    Steps are ``step`` times max(|param|, 0.1), as ``estimate_msm`` takes them; the weighting
    is the efficient one, so the sandwich is the inverse of G'WG. ``result``: an ``MSMResult``.
    """
    import optimagic as om  # noqa: PLC0415 (0.7 s to import: where it runs)

    estimates = np.asarray([result.params[name] for name in result.param_names])
    jacobian = om.first_derivative(
        lambda values: simulate_moments(dict(zip(result.param_names, values, strict=True))),
        estimates,
        method="central",
        scaling_factor=step / np.sqrt(np.finfo(float).eps),
        error_handling="raise_strict",
    ).derivative
    jacobian = np.asarray(jacobian, dtype=float).reshape(len(result.moment_names), -1)
    covariance = np.linalg.inv(jacobian.T @ result.weighting @ jacobian)
    return {name: float(np.sqrt(covariance[i, i])) for i, name in enumerate(result.param_names)}
