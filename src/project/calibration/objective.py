"""The targets as numbers and the loss that scores how far estimates are from them.

Contract: a ``TargetProblem`` holds K targets t (names, finite values, non-negative
normalisation factors, excluded flags, optional absolute floors). ``Objective.for_problem`` fixes
one positive denominator per target,

    d_j = max(|t_j|, floor_j),   floor_j = max(absolute floor_j, relative_floor * scale_j),

with ``scale_j = sum_i |A_ij| / N`` the mean absolute contribution of one record to target j, so
a target at or near zero is scored in units of "one typical record's contribution" instead of
dividing by ~0. The loss of estimates S (K) is the mean over fitted (not excluded) targets of
``normalization_j * ((S_j - t_j) / d_j) ** 2``; excluded targets are reported but contribute
nothing. ``assess`` returns L, c = dL/dS exactly (JAX autodiff of L in S) and the number of
fitted targets within 10 % (|S_j - t_j| <= 0.1 d_j), in one compiled call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from project.calibration.errors import CalibrationError
from project.points import float_dtype

WITHIN_TOLERANCE = 0.1
SHOWN = 5


@dataclass(frozen=True)
class TargetProblem:
    """K aggregate targets: names, values, normalisation factors, excluded flags, floors."""

    names: tuple[str, ...]
    values: np.ndarray
    normalization: np.ndarray
    excluded: np.ndarray
    floors: np.ndarray

    @classmethod
    def build(
        cls,
        *,
        names: Sequence[str],
        values: Sequence[float] | np.ndarray,
        normalization: Sequence[float] | np.ndarray | None = None,
        excluded: Sequence[bool] | np.ndarray | None = None,
        floors: Sequence[float] | np.ndarray | None = None,
    ) -> TargetProblem:
        """Validate and return the targets; ``floors`` NaN or None means no absolute floor."""
        names = tuple(str(n) for n in names)
        duplicated = sorted({n for n in names if names.count(n) > 1})
        if duplicated:
            msg = f"Target names must be unique; {duplicated} appear more than once."
            raise CalibrationError(msg)
        k = len(names)
        values = _vector(values, name="values", k=k)
        normalization = _vector(
            np.ones(k) if normalization is None else normalization, name="normalization", k=k
        )
        floors = _vector(np.zeros(k) if floors is None else floors, name="floors", k=k)
        excluded = np.zeros(k, dtype=bool) if excluded is None else np.asarray(excluded, bool)
        if excluded.shape != (k,):
            msg = f"excluded has shape {excluded.shape}; expected ({k},), one flag per target."
            raise CalibrationError(msg)
        _require(
            bad=~np.isfinite(values),
            names=names,
            problem="the target value is not finite (NaN or inf)",
            remedy="give a finite target or drop the row",
        )
        _require(
            bad=~np.isfinite(normalization) | (normalization < 0),
            names=names,
            problem="the normalisation factor is negative or not finite",
            remedy="use a finite factor >= 0 (1 = plain weight)",
        )
        floors = np.where(np.isnan(floors), 0.0, floors)
        _require(
            bad=~np.isfinite(floors) | (floors < 0),
            names=names,
            problem="the floor is negative or infinite",
            remedy="use a floor > 0 or leave it empty",
        )
        if excluded.all():
            msg = f"All {k} targets are excluded; at least one target must be fitted."
            raise CalibrationError(msg)
        return cls(
            names=names,
            values=values,
            normalization=normalization,
            excluded=excluded,
            floors=floors,
        )

    @property
    def n_targets(self) -> int:
        """Return K, the number of targets (fitted and excluded)."""
        return len(self.names)

    @property
    def fitted(self) -> np.ndarray:
        """Return a boolean mask of the targets that enter the loss."""
        return ~self.excluded


@dataclass(frozen=True)
class Objective:
    """The loss as device arrays: targets, denominators and per-target factors."""

    targets: jnp.ndarray
    denominators: jnp.ndarray
    factors: jnp.ndarray
    fitted: jnp.ndarray

    @classmethod
    def for_problem(
        cls, *, problem: TargetProblem, column_scale: np.ndarray, relative_floor: float
    ) -> Objective:
        """Return the objective with d_j = max(|t_j|, floor_j) (see the module docstring)."""
        d = denominators(problem=problem, column_scale=column_scale, relative_floor=relative_floor)
        fitted = problem.fitted
        factors = np.where(fitted, problem.normalization, 0.0) / fitted.sum()
        dtype = float_dtype()
        return cls(
            targets=jnp.asarray(problem.values, dtype=dtype),
            denominators=jnp.asarray(d, dtype=dtype),
            factors=jnp.asarray(factors, dtype=dtype),
            fitted=jnp.asarray(fitted),
        )

    @property
    def n_fitted(self) -> int:
        """Return the number of fitted targets."""
        return int(np.sum(np.asarray(self.fitted)))

    def assess(self, estimates: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray, jnp.ndarray]:
        """Return the loss, c = dL/dS and the number of fitted targets within 10 %."""
        return _assess(estimates, self.targets, self.denominators, self.factors, self.fitted)

    def loss(self, estimates: jnp.ndarray) -> jnp.ndarray:
        """Return the loss of the estimates S."""
        return self.assess(estimates)[0]

    def loss_and_gradient(self, estimates: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
        """Return the loss and c = dL/dS (zero for excluded targets)."""
        return self.assess(estimates)[:2]

    def share_within(self, estimates: jnp.ndarray) -> float:
        """Return the share of fitted targets with |S_j - t_j| <= 0.1 * d_j."""
        return int(self.assess(estimates)[2]) / self.n_fitted


def denominators(
    *, problem: TargetProblem, column_scale: np.ndarray, relative_floor: float
) -> np.ndarray:
    """Return d_j = max(|t_j|, absolute floor_j, relative_floor * scale_j) for every target."""
    scale = np.asarray(column_scale, dtype=float)
    floor = np.maximum(problem.floors, relative_floor * scale)
    d = np.maximum(np.abs(problem.values), floor)
    _require(
        bad=(d <= 0) & problem.fitted,
        names=problem.names,
        problem="the target is 0 and there is neither an absolute floor nor a positive relative "
        "floor (all-zero column or relative_floor = 0), so a miss has no scale",
        remedy="give the target a positive floor",
    )
    return d


def _loss(
    estimates: jnp.ndarray, targets: jnp.ndarray, denominators: jnp.ndarray, factors: jnp.ndarray
) -> jnp.ndarray:
    return jnp.sum(factors * ((estimates - targets) / denominators) ** 2)


@jax.jit
def _assess(
    estimates: jnp.ndarray,
    targets: jnp.ndarray,
    denominators: jnp.ndarray,
    factors: jnp.ndarray,
    fitted: jnp.ndarray,
) -> tuple[jnp.ndarray, jnp.ndarray, jnp.ndarray]:
    loss, c = jax.value_and_grad(_loss)(estimates, targets, denominators, factors)
    close = jnp.abs(estimates - targets) <= WITHIN_TOLERANCE * denominators
    return loss, c, jnp.sum(close & fitted)


def _vector(values: Sequence[float] | np.ndarray, *, name: str, k: int) -> np.ndarray:
    try:
        vector = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as error:
        msg = f"Target {name} must be numbers: {error}."
        raise CalibrationError(msg) from error
    if vector.shape != (k,):
        msg = f"Target {name} has shape {vector.shape}; expected ({k},), one entry per target."
        raise CalibrationError(msg)
    return vector


def _require(*, bad: np.ndarray, names: Sequence[str], problem: str, remedy: str) -> None:
    """Raise naming the targets where ``bad`` holds."""
    if np.any(bad):
        named = [names[i] for i in np.flatnonzero(bad)]
        shown = ", ".join(repr(n) for n in named[:SHOWN])
        more = f" and {len(named) - SHOWN} more" if len(named) > SHOWN else ""
        verb = "Target" if len(named) == 1 else "Targets"
        msg = f"{verb} {shown}{more}: {problem}; {remedy}."
        raise CalibrationError(msg)
