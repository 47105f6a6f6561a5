"""The MSM estimate with its inference, moment fit and optimiser diagnostics, as tidy tables.

``MSMResult.to_frame(table="estimates")`` has one row per param (estimate, standard error, 95 %
interval, start, bounds, whether it ended at a bound); ``table="moments"`` one row per moment
(data, simulated, residual = simulated - data, the simulation-corrected standard error of the
data moment and the residual's t-stat, n_data, n_simulated); ``summary()`` the scalars (J-test,
convergence, evaluations) and the estimates' covariance (rows and columns in the order of
``param_names``) as a JSON-ready dict. Every table carries the ``converged`` flag, so
that a product written from an estimate that did not converge says so.

Counts: ``n_optimizer_evaluations`` is the number of simulator calls the optimiser made (its
finite differences included), ``n_simulations`` every call (the start check, the optimiser, the
estimate and its Jacobian). ``n_local_optimizations`` is 1 without multistart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from project.estimation.errors import EstimationError


@dataclass(frozen=True, eq=False)
class MSMResult:
    """A method-of-simulated-moments estimate: params, inference, moment fit, diagnostics."""

    param_names: tuple[str, ...]
    estimates: np.ndarray
    standard_errors: np.ndarray
    covariance: np.ndarray
    ci_lower: np.ndarray
    ci_upper: np.ndarray
    start_params: np.ndarray
    lower_bounds: np.ndarray
    upper_bounds: np.ndarray
    at_bound: np.ndarray
    moment_names: tuple[str, ...]
    data_moments: np.ndarray
    data_covariance: np.ndarray
    simulated_moments: np.ndarray
    residuals: np.ndarray
    moment_standard_errors: np.ndarray
    moment_t_stats: np.ndarray
    n_data: np.ndarray
    n_simulated: np.ndarray
    jacobian: np.ndarray
    weighting: np.ndarray
    objective: float
    j_statistic: float
    j_dof: int
    j_p_value: float
    efficient_weighting: bool
    condition_number: float
    converged: bool
    message: str
    algorithm: str
    n_optimizer_evaluations: int
    n_simulations: int
    n_local_optimizations: int
    local_searches: tuple[dict[str, Any], ...] = ()

    @property
    def params(self) -> dict[str, float]:
        """Return the estimates as a dict of param name to float."""
        return {n: float(v) for n, v in zip(self.param_names, self.estimates, strict=True)}

    def to_frame(self, *, table: Literal["estimates", "moments"] = "estimates") -> pd.DataFrame:
        """Return the estimates table (one row per param) or the moment-fit table."""
        if table == "estimates":
            return pd.DataFrame(
                {
                    "param": list(self.param_names),
                    "estimate": self.estimates,
                    "std_error": self.standard_errors,
                    "ci_lower": self.ci_lower,
                    "ci_upper": self.ci_upper,
                    "start": self.start_params,
                    "lower_bound": self.lower_bounds,
                    "upper_bound": self.upper_bounds,
                    "at_bound": self.at_bound,
                    "converged": self.converged,
                }
            )
        if table == "moments":
            return pd.DataFrame(
                {
                    "moment": list(self.moment_names),
                    "data": self.data_moments,
                    "simulated": self.simulated_moments,
                    "residual": self.residuals,
                    "data_std_error": np.sqrt(np.diag(self.data_covariance)),
                    "std_error": self.moment_standard_errors,
                    "t_stat": self.moment_t_stats,
                    "n_data": self.n_data,
                    "n_simulated": self.n_simulated,
                    "converged": self.converged,
                }
            )
        msg = f"table must be 'estimates' or 'moments', got {table!r}."
        raise EstimationError(msg)

    def summary(self) -> dict[str, Any]:
        """Return the scalar diagnostics (J-test, convergence, evaluations) as plain Python."""
        return {
            "converged": self.converged,
            "message": self.message,
            "algorithm": self.algorithm,
            "objective": self.objective,
            "j_statistic": self.j_statistic,
            "j_dof": self.j_dof,
            "j_p_value": None if np.isnan(self.j_p_value) else self.j_p_value,
            "efficient_weighting": self.efficient_weighting,
            "condition_number": self.condition_number,
            "n_moments": len(self.moment_names),
            "n_params": len(self.param_names),
            "n_optimizer_evaluations": self.n_optimizer_evaluations,
            "n_simulations": self.n_simulations,
            "n_local_optimizations": self.n_local_optimizations,
            "params_at_bound": [
                n for n, b in zip(self.param_names, self.at_bound, strict=True) if b
            ],
            "local_searches": [dict(search) for search in self.local_searches],
            "param_names": list(self.param_names),
            "covariance": np.asarray(self.covariance, dtype=np.float64).tolist(),
        }
