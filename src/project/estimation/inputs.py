"""Validate the estimation's inputs: the data moments with their sampling design, and the params.

``MomentProblem`` holds K data moments, their sampling covariance Omega (a diagonal of variances
or a full matrix), the number of data observations behind each moment and the number of
simulated units, and derives from them the weighting matrix W (``diag(1 / variances)``, or
``inverse(covariance)`` for a full matrix; with ``weighting="efficient"`` the inverse of that
covariance corrected for simulation noise) and its root R (``R' R = W``), so that the objective
``g' W g`` is the sum of squares of ``R g``. ``ParameterSpace`` holds the estimated params'
names, start values and bounds. Both refuse invalid input with ``EstimationError`` naming the
culprit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import scipy.linalg

from project.estimation.errors import EstimationError

MIN_CORRELATION_EIGENVALUE = 1e-12
"""A covariance whose correlation matrix has a smaller eigenvalue counts as singular."""
BOUND_TOLERANCE = 1e-8
WEIGHTINGS = ("data", "efficient")
"""``MomentProblem.build``'s weightings: the data moments' covariance, or corrected for the
simulation noise (efficient)."""
SHOWN = 5


@dataclass(frozen=True)
class MomentProblem:
    """K data moments, their sampling covariance and design, and the weighting they imply."""

    names: tuple[str, ...]
    data: np.ndarray
    covariance: np.ndarray
    n_data: np.ndarray
    n_simulated: np.ndarray
    weighting: np.ndarray
    root: np.ndarray

    @classmethod
    def build(
        cls,
        *,
        data_moments: Sequence[float] | np.ndarray | pd.Series,
        data_variances: Sequence[float] | np.ndarray | pd.Series,
        n_data: float | Sequence[float] | np.ndarray,
        n_simulated: float | Sequence[float] | np.ndarray,
        moment_names: Sequence[str] | None = None,
        weighting: str = "data",
    ) -> MomentProblem:
        """Validate and return the moments; ``data_variances`` is (K,) or a (K, K) covariance.

        ``weighting``: ``"data"`` weighs by the inverse of the data moments' covariance Omega;
        ``"efficient"`` by the inverse of Omega_s, Omega corrected for the simulation noise
        (``corrected_covariance``), the optimal weighting under which J is chi-square.
        """
        if weighting not in WEIGHTINGS:
            msg = f"weighting must be one of {WEIGHTINGS}, got {weighting!r}."
            raise EstimationError(msg)
        if moment_names is None and isinstance(data_moments, pd.Series):
            moment_names = [str(name) for name in data_moments.index]
        data = np.asarray(data_moments, dtype=float)
        if data.ndim != 1 or data.size == 0:
            msg = f"data_moments must be a non-empty 1-D array, got shape {data.shape}."
            raise EstimationError(msg)
        k = data.size
        names = tuple(f"m{i}" for i in range(k)) if moment_names is None else tuple(moment_names)
        if len(names) != k or len(set(names)) != k:
            msg = (
                f"moment_names must be {k} unique names, one per data moment; got {len(names)} "
                f"names ({len(set(names))} unique)."
            )
            raise EstimationError(msg)
        _require(
            bad=~np.isfinite(data),
            names=names,
            problem="the data moment is not finite",
            remedy="give a finite value or drop the moment",
        )
        covariance = _covariance(data_variances, names=names)
        n_data = _counts(n_data, name="n_data", k=k, allow_inf=False)
        n_simulated = _counts(n_simulated, name="n_simulated", k=k, allow_inf=True)
        weighed = (
            covariance
            if weighting == "data"
            else corrected_for_simulation(
                covariance=covariance, n_data=n_data, n_simulated=n_simulated
            )
        )
        return cls(
            names=names,
            data=data,
            covariance=covariance,
            n_data=n_data,
            n_simulated=n_simulated,
            weighting=np.linalg.inv(weighed),
            root=_root_of_inverse(weighed),
        )

    @property
    def n_moments(self) -> int:
        """Return K, the number of moments."""
        return len(self.names)

    @property
    def corrected_covariance(self) -> np.ndarray:
        """Return Omega_s = D Omega D, D = diag(sqrt(1 + n_data / n_simulated))."""
        return corrected_for_simulation(
            covariance=self.covariance, n_data=self.n_data, n_simulated=self.n_simulated
        )

    def residuals(self, simulated: np.ndarray) -> np.ndarray:
        """Return the weighted residuals ``R (simulated - data)``; their sum of squares is g'Wg."""
        return self.root @ (simulated - self.data)


def simulation_variance_share(*, n_data: Any, n_simulated: Any) -> np.ndarray:
    """Return each simulated moment's sampling variance over its data moment's: n_data / n_sim.

    The simulated statistic of n_sim households has the data's dispersion over n_sim where the
    data's has it over n_data.
    """
    return np.asarray(n_data, dtype=float) / np.asarray(n_simulated, dtype=float)


def largest_simulation_share(moments: pd.DataFrame) -> float:
    """Return the largest ``simulation_variance_share`` of a saved moment table's moments."""
    shares = simulation_variance_share(
        n_data=moments["n_data"].to_numpy(), n_simulated=moments["n_simulated"].to_numpy()
    )
    return float(shares.max())


def corrected_for_simulation(
    *, covariance: np.ndarray, n_data: np.ndarray, n_simulated: np.ndarray
) -> np.ndarray:
    """Return D Omega D with D = diag(sqrt(1 + n_data / n_simulated)) (simulation noise added)."""
    scale = np.sqrt(1.0 + simulation_variance_share(n_data=n_data, n_simulated=n_simulated))
    return covariance * np.outer(scale, scale)


@dataclass(frozen=True)
class ParameterSpace:
    """The estimated params: names (in order), start values and bounds."""

    names: tuple[str, ...]
    start: np.ndarray
    lower: np.ndarray
    upper: np.ndarray

    @classmethod
    def build(
        cls,
        *,
        start_params: Mapping[str, float],
        bounds: Mapping[str, tuple[float, float]] | None,
    ) -> ParameterSpace:
        """Validate and return the params; a param without bounds is unbounded."""
        if not isinstance(start_params, Mapping) or not start_params:
            msg = (
                "start_params must be a non-empty mapping of param name to start value, e.g. "
                f"{{'crra': 2.0, 'beta': 0.95}}; got {start_params!r}."
            )
            raise EstimationError(msg)
        names = tuple(str(name) for name in start_params)
        start = np.array([_number(start_params[n], what=f"start value of {n!r}") for n in names])
        bounds = {} if bounds is None else dict(bounds)
        unknown = sorted(set(bounds) - set(names))
        if unknown:
            msg = (
                f"bounds name params {unknown} that are not estimated; the estimated params "
                f"are {list(names)}. Drop those bounds or add the params to start_params."
            )
            raise EstimationError(msg)
        lower, upper = np.full(len(names), -np.inf), np.full(len(names), np.inf)
        for i, name in enumerate(names):
            if name not in bounds:
                continue
            pair = bounds[name]
            if isinstance(pair, str) or not isinstance(pair, Sequence) or len(pair) != 2:
                msg = f"bounds[{name!r}] must be a pair (lower, upper), got {pair!r}."
                raise EstimationError(msg)
            lower[i], upper[i] = (float(b) for b in pair)
            if np.isnan(lower[i]) or np.isnan(upper[i]) or not lower[i] < upper[i]:
                msg = (
                    f"bounds[{name!r}] = {pair!r}: the lower bound must be below the upper bound "
                    "(use -inf or inf for no bound)."
                )
                raise EstimationError(msg)
            if not lower[i] <= start[i] <= upper[i]:
                msg = (
                    f"The start value of {name!r}, {start[i]:g}, lies outside its bounds "
                    f"[{lower[i]:g}, {upper[i]:g}]. Give a start value inside the bounds."
                )
                raise EstimationError(msg)
        return cls(names=names, start=start, lower=lower, upper=upper)

    @property
    def n_params(self) -> int:
        """Return P, the number of estimated params."""
        return len(self.names)

    def at_bound(self, values: np.ndarray) -> np.ndarray:
        """Return whether each value lies on (within 1e-8 relative of) one of its bounds."""
        tolerance = BOUND_TOLERANCE * np.maximum(1.0, np.abs(values))
        return (np.abs(values - self.lower) <= tolerance) | (
            np.abs(values - self.upper) <= tolerance
        )

    def as_dict(self, values: np.ndarray) -> dict[str, float]:
        """Return ``values`` (P,) as a dict of param name to float."""
        return {name: float(v) for name, v in zip(self.names, values, strict=True)}


def _covariance(data_variances: Any, *, names: tuple[str, ...]) -> np.ndarray:
    """Return the (K, K) covariance of the data moments; refuse a singular one by name."""
    k = len(names)
    values = np.asarray(data_variances, dtype=float)
    if values.shape not in {(k,), (k, k)}:
        msg = (
            f"data_variances has shape {values.shape}; give ({k},), the sampling variance of "
            f"each of the {k} data moments, or ({k}, {k}), their covariance matrix."
        )
        raise EstimationError(msg)
    variances = values if values.ndim == 1 else np.diag(values)
    _require(
        bad=~np.isfinite(variances) | (variances <= 0),
        names=names,
        problem=(
            "the sampling variance is zero, negative or not finite, so the weighting matrix "
            "(the inverse of the covariance) does not exist"
        ),
        remedy="give each moment's variance (> 0) or drop the moment",
    )
    if values.ndim == 1:
        return np.diag(values)
    if not np.isfinite(values).all() or not np.allclose(values, values.T, rtol=1e-10, atol=0):
        msg = (
            "The covariance of the data moments (data_variances, 2-D) must be finite and "
            "symmetric. Give the moments' sampling covariance matrix."
        )
        raise EstimationError(msg)
    scale = np.sqrt(variances)
    correlation = values / np.outer(scale, scale)
    eigenvalues, eigenvectors = np.linalg.eigh(correlation)
    if eigenvalues[0] <= MIN_CORRELATION_EIGENVALUE:
        involved = [names[i] for i in np.argsort(-np.abs(eigenvectors[:, 0]))[:SHOWN]]
        msg = (
            "The covariance of the data moments is not positive definite (smallest eigenvalue "
            f"of its correlation matrix {eigenvalues[0]:.3g}), so the weighting matrix (its "
            f"inverse) does not exist; the moments most involved are {involved}. Drop "
            "redundant moments or give a positive definite covariance."
        )
        raise EstimationError(msg)
    return values


def _root_of_inverse(covariance: np.ndarray) -> np.ndarray:
    """Return R with R' R = inverse(covariance): R = L^-1 for the Cholesky factor L."""
    lower = np.linalg.cholesky(covariance)
    return scipy.linalg.solve_triangular(lower, np.eye(len(covariance)), lower=True)


def _counts(value: Any, *, name: str, k: int, allow_inf: bool) -> np.ndarray:
    """Return a count per moment (> 0; ``inf`` where allowed), broadcasting a scalar."""
    counts = np.asarray(value, dtype=float)
    if counts.ndim == 0:
        counts = np.full(k, float(counts))
    if counts.shape != (k,):
        msg = f"{name} must be one number or one per moment ({k}), got shape {counts.shape}."
        raise EstimationError(msg)
    bad = np.isnan(counts) | (counts <= 0) | (np.isinf(counts) & (not allow_inf))
    if bad.any():
        allowed = "> 0 (inf: a moment function without simulation noise)" if allow_inf else "> 0"
        msg = f"{name} must be {allowed} for every moment; got {counts[bad].tolist()}."
        raise EstimationError(msg)
    return counts


def _number(value: Any, *, what: str) -> float:
    """Return ``value`` as a finite float or raise naming ``what``."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = np.nan
    if not np.isfinite(number):
        msg = f"The {what} must be a finite number, got {value!r}."
        raise EstimationError(msg)
    return number


def _require(*, bad: np.ndarray, names: Sequence[str], problem: str, remedy: str) -> None:
    """Raise naming the first few moments where ``bad`` holds."""
    if not bad.any():
        return
    culprits = [names[i] for i in np.flatnonzero(bad)]
    more = f" and {len(culprits) - SHOWN} more" if len(culprits) > SHOWN else ""
    msg = f"Moments {culprits[:SHOWN]}{more}: {problem}; {remedy}."
    raise EstimationError(msg)
