"""Call the caller's moment simulator on the optimiser's param vector, checking every answer.

``CheckedSimulator(values)`` turns the vector into a dict of param name to float, calls
``simulate_moments``, counts the call (logging progress every ``PROGRESS_EVERY`` calls), and
raises ``EstimationError`` for moments of the wrong
shape or that are not finite, naming the moments and the params (and whether they are the
start params, the first call).
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
    ) -> None:
        self.simulate_moments = simulate_moments
        self.problem = problem
        self.space = space
        self.calls = 0
        self.started = time.perf_counter()

    def __call__(self, values: np.ndarray) -> np.ndarray:
        """Return the simulated moments at the param vector ``values`` (checked)."""
        params = self.space.as_dict(np.asarray(values, dtype=float))
        self.calls += 1
        if self.calls % PROGRESS_EVERY == 0:
            logger.info(
                "MSM: %d simulations in %.0f s (now at %s).",
                self.calls,
                time.perf_counter() - self.started,
                ", ".join(f"{name} = {value:.4g}" for name, value in params.items()),
            )
        moments = np.asarray(self.simulate_moments(params), dtype=float)
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
