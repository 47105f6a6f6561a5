"""Moments with some of their estimated params held fixed: a calibrated param's estimation.

``HeldMoments(moments, held={"work_cost": 0.6})`` turns ``LifecycleMoments`` of (crra, beta,
work_cost) into moments of (crra, beta) at that cost, sharing the same random numbers and, where
it runs, the same compiled program and memo: the estimation at a held value of a calibrated
param and the calibration of that param (``project.estimation.calibrated``) then share every
evaluation and one compile.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from project.estimation.errors import EstimationError


class HeldMoments:
    """``LifecycleMoments`` with some of its estimated params held at fixed values.

    The others vary: ``held(params)`` is ``moments(params | held)``, with the same random
    numbers and (where it runs) the same compiled program and memo, so that an estimation at a
    held value of a calibrated param and the calibration itself share every evaluation.
    """

    def __init__(self, moments: Any, *, held: Mapping[str, float]) -> None:
        unknown = sorted(set(held) - set(moments.estimated))
        if unknown or len(held) >= len(moments.estimated):
            msg = (
                f"Held params {sorted(held)} must be some, not all, of the moments' estimated "
                f"params {list(moments.estimated)} (unknown: {unknown})."
            )
            raise EstimationError(msg)
        self.moments = moments
        self.held = {name: float(value) for name, value in held.items()}
        self.estimated = tuple(n for n in moments.estimated if n not in self.held)
        self.moment_names = moments.moment_names
        self.age_groups = moments.age_groups

    @property
    def n_subjects(self) -> int:
        """Return the number of simulated subjects."""
        return self.moments.n_subjects

    def _all(self, params: Mapping[str, float]) -> dict[str, float]:
        given = set(params)
        if given != set(self.estimated):
            msg = (
                f"These moments take exactly the params {list(self.estimated)} (the others are "
                f"held at {self.held}); got {sorted(given)}."
            )
            raise EstimationError(msg)
        return {**{n: float(v) for n, v in params.items()}, **self.held}

    def __call__(self, params: Mapping[str, float]) -> np.ndarray:
        """Return the moments at ``params`` and the held values."""
        return self.moments(self._all(params))

    def living_subjects(self, params: Mapping[str, float]) -> np.ndarray:
        """Return the simulated subjects alive in each age group at ``params``."""
        return self.moments.living_subjects(self._all(params))

    def choice_counts(self, params: Mapping[str, float]) -> np.ndarray:
        """Return the choice count (deciding, choosing) at ``params``."""
        return self.moments.choice_counts(self._all(params))

    def batch(self, points: Sequence[Mapping[str, float]]) -> np.ndarray:
        """Return the moments at every point (rows)."""
        return self.moments.batch([self._all(point) for point in points])

    def jacobian(self, params: Mapping[str, float]) -> tuple[np.ndarray, np.ndarray]:
        """Return the moments and their Jacobian in the params that vary."""
        moments, jacobian = self.moments.jacobian(self._all(params))
        columns = [self.moments.estimated.index(name) for name in self.estimated]
        return moments, jacobian[:, columns]
