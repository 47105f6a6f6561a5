"""Identification evidence at an MSM estimate: criterion slices and moment sensitivities.

``criterion_profiles`` evaluates the criterion g'Wg along each estimated param through the
estimate, the other params held at theirs (a slice, not a re-optimised profile): a criterion
that is flat along a param, or whose minimum is not at the estimate, shows weak or failed
identification at a glance. ``sensitivity`` is the local sensitivity of the estimates to the
data moments, ``(G'WG)^-1 G'W``: how much each estimate moves when one data moment rises by one
unit, the other moments fixed (Andrews, Gentzkow and Shapiro 2017, QJE; their Lambda is its
negative, for moment conditions m - d).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from project.estimation.result import MSMResult

N_POINTS = 9
WIDTH = 2.5
"""A slice spans the estimate plus and minus this many standard errors (within the bounds)."""
FALLBACK_SHARE = 0.05
"""Without a valid standard error (an estimate at a bound), a slice spans 5 % of the estimate."""


def criterion_profiles(
    *,
    simulate_moments: Callable[[Mapping[str, float]], Any],
    result: MSMResult,
    n_points: int = N_POINTS,
    width: float = WIDTH,
) -> dict[str, dict[str, list[float]]]:
    """Return, per param, the points of its slice and the criterion g'Wg at each.

    Where the moments are not finite (the model's solution failed there, as it does within
    about 0.005 of crra = 1), the criterion is ``None``: a gap in the slice, not a number.
    Each slice has ``n_points`` evenly spaced values over the estimate plus and minus
    ``width`` standard errors, cut at the param's bounds, and the estimate itself (in place of
    the middle point where the bounds do not cut the slice: it is the estimate up to rounding).
    """
    profiles = {}
    for index, name in enumerate(result.param_names):
        estimate = float(result.estimates[index])
        error = float(result.standard_errors[index])
        valid = np.isfinite(error) and error > 0
        half = width * error if valid else FALLBACK_SHARE * max(abs(estimate), 0.1)
        low = max(estimate - half, float(result.lower_bounds[index]))
        high = min(estimate + half, float(result.upper_bounds[index]))
        values = _slice_points(low, high, n_points=n_points, estimate=estimate)
        criterion = []
        for value in values:
            moments = np.asarray(simulate_moments(result.params | {name: float(value)}), float)
            gap = moments - result.data_moments
            value_there = float(gap @ result.weighting @ gap)
            criterion.append(value_there if np.isfinite(value_there) else None)
        profiles[name] = {"values": values.tolist(), "criterion": criterion}
    return profiles


def _slice_points(low: float, high: float, *, n_points: int, estimate: float) -> np.ndarray:
    """Return ``n_points`` evenly spaced in [low, high] with ``estimate`` among them, sorted.

    A point within a millionth of the slice's width of the estimate is the estimate (a
    simulation of its rounding error would show nothing and cost as much as any other).
    """
    values = np.linspace(low, high, n_points)
    nearest = int(np.argmin(np.abs(values - estimate)))
    if abs(values[nearest] - estimate) <= 1e-6 * max(high - low, np.finfo(float).tiny):
        values[nearest] = estimate
    return np.unique(np.append(values, estimate))


def sensitivity(result: MSMResult) -> np.ndarray:
    """Return d(estimates)/d(data moments) = (G'WG)^-1 G'W (params x moments) at the estimate."""
    jacobian, weighting = np.asarray(result.jacobian), np.asarray(result.weighting)
    return np.linalg.solve(jacobian.T @ weighting @ jacobian, jacobian.T @ weighting)
