"""Call the caller's moment simulator on the optimiser's param vector, checking every answer.

``CheckedSimulator(values)`` turns the vector into a dict of param name to float, calls
``simulate_moments``, counts the call (logging progress every ``PROGRESS_EVERY`` calls), and
raises ``EstimationError`` for moments of the wrong
shape or that are not finite, naming the moments and the params (and whether they are the
start params, the first call).

``with_jacobian(values)`` does the same with the caller's ``moments_and_jacobian`` (the moments
and their exact (K, P) Jacobian, checked alike) and keeps the last answer, so that an optimiser
asking for the moments and then the Jacobian at one point simulates once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from project.estimation.errors import EstimationError
from project.estimation.inputs import MomentProblem, ParameterSpace

SHOWN = 5
PROGRESS_EVERY = 10
"""Log progress (calls, seconds) every this many simulations: a search takes minutes."""

logger = logging.getLogger("project.estimation")


class CheckedSimulator:
    """Call the caller's simulator with a params dict; check and count its moments."""

    def __init__(
        self,
        *,
        simulate_moments: Callable[[dict[str, float]], Any],
        problem: MomentProblem,
        space: ParameterSpace,
        moments_and_jacobian: Callable[[dict[str, float]], tuple[Any, Any]] | None = None,
    ) -> None:
        self.simulate_moments = simulate_moments
        self.moments_and_jacobian = moments_and_jacobian
        self.problem = problem
        self.space = space
        self.calls = 0
        self.started = time.perf_counter()
        self._last: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    @property
    def has_jacobian(self) -> bool:
        """Return whether the caller gave exact derivatives (``moments_and_jacobian``)."""
        return self.moments_and_jacobian is not None

    def __call__(self, values: np.ndarray) -> np.ndarray:
        """Return the simulated moments at the param vector ``values`` (checked)."""
        values = np.asarray(values, dtype=float)
        if self._last is not None and np.array_equal(self._last[0], values):
            return self._last[1].copy()
        params = self._count(values)
        return self._checked_moments(self.simulate_moments(params), params=params)

    def with_jacobian(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return the simulated moments and their (K, P) Jacobian at ``values`` (checked)."""
        if self.moments_and_jacobian is None:
            msg = "Exact derivatives need moments_and_jacobian; none was given to estimate_msm."
            raise EstimationError(msg)
        values = np.asarray(values, dtype=float)
        if self._last is None or not np.array_equal(self._last[0], values):
            params = self._count(values)
            moments, jacobian = self.moments_and_jacobian(params)
            moments = self._checked_moments(moments, params=params)
            self._last = (values.copy(), moments, self._checked_jacobian(jacobian, params=params))
        return self._last[1].copy(), self._last[2].copy()

    def _count(self, values: np.ndarray) -> dict[str, float]:
        """Count a simulation at ``values``, log progress, and return its params dict."""
        params = self.space.as_dict(values)
        self.calls += 1
        if self.calls % PROGRESS_EVERY == 0:
            logger.info(
                "MSM: %d simulations in %.0f s (now at %s).",
                self.calls,
                time.perf_counter() - self.started,
                ", ".join(f"{name} = {value:.4g}" for name, value in params.items()),
            )
        return params

    def _checked_moments(self, moments: Any, *, params: dict[str, float]) -> np.ndarray:
        """Return the moments as floats; raise for a wrong shape or a value that is not finite."""
        moments = np.asarray(moments, dtype=float)
        k = self.problem.n_moments
        if moments.shape != (k,):
            msg = (
                f"simulate_moments returned shape {moments.shape} at params {params}; it must "
                f"return one value per data moment, shape ({k},), in the order "
                f"{list(self.problem.names)}."
            )
            raise EstimationError(msg)
        bad = ~np.isfinite(moments)
        if bad.any():
            names = [self.problem.names[i] for i in np.flatnonzero(bad)]
            where = "the start params" if self.calls == 1 else "params"
            msg = (
                f"Simulated moments {names[:SHOWN]} are not finite (NaN or inf) at {where} "
                f"{params}. Check the model at these params, or tighten the bounds to keep the "
                "search where the model is defined."
            )
            raise EstimationError(msg)
        return moments

    def _checked_jacobian(self, jacobian: Any, *, params: dict[str, float]) -> np.ndarray:
        """Return the Jacobian as floats; raise for a wrong shape or an entry that is not finite."""
        jacobian = np.asarray(jacobian, dtype=float)
        shape = (self.problem.n_moments, self.space.n_params)
        if jacobian.shape != shape:
            msg = (
                f"moments_and_jacobian returned a Jacobian of shape {jacobian.shape} at params "
                f"{params}; it must be {shape}: one row per moment {list(self.problem.names)}, "
                f"one column per param {list(self.space.names)}."
            )
            raise EstimationError(msg)
        bad = np.argwhere(~np.isfinite(jacobian))
        if bad.size:
            pairs = [(self.problem.names[i], self.space.names[j]) for i, j in bad[:SHOWN]]
            msg = (
                f"The Jacobian of the moments is not finite at params {params} for (moment, "
                f"param) pairs {pairs}. Check the derivative of the simulator there, or estimate "
                "without moments_and_jacobian (finite differences)."
            )
            raise EstimationError(msg)
        return jacobian
