"""The targets as numbers and the loss that scores how far estimates are from them.

Contract: a ``TargetProblem`` holds K targets t (names, finite values, non-negative
normalisation factors, held-out flags, relative tolerances, optional absolute floors).
``Objective.for_problem`` fixes one positive denominator per target,

    d_j = max(|t_j|, floor_j),   floor_j = max(absolute floor_j, relative_floor * scale_j),

with ``scale_j = sum_i |A_ij| / N`` the mean absolute contribution of one record to target j, so
a target at or near zero is scored in units of "one typical record's contribution" instead of
dividing by ~0. A target is *within tolerance* when |S_j - t_j| <= tol_j * d_j (a relative miss
for every target away from zero). The fit loss of estimates S (K) is the mean over fitted (not
held-out) targets of ``normalization_j * z_j ** 2`` with the miss in tolerances
``z_j = (S_j - t_j) / (tol_j * d_j)``: a loss of 1 means every target misses by one tolerance.
Held-out targets are reported but contribute exactly nothing (neither their value nor their
estimate enters the loss or its gradient). ``assess`` returns the loss, c = dL/dS exactly (JAX
autodiff of L in S) and the number of fitted targets within tolerance, in one compiled call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from project._xla import jit
from project.calibration.errors import CalibrationError
from project.points import float_dtype

DEFAULT_TOLERANCE = 0.01
"""The relative tolerance of a target that states none: a miss of 1 % of its denominator."""
SHOWN = 5


@dataclass(frozen=True)
class TargetProblem:
    """K aggregate targets: names, values, factors, held-out flags, tolerances, floors."""

    names: tuple[str, ...]
    values: np.ndarray
    normalization: np.ndarray
    held_out: np.ndarray
    tolerances: np.ndarray
    floors: np.ndarray

    @classmethod
    def build(
        cls,
        *,
        names: Sequence[str],
        values: Sequence[float] | np.ndarray,
        normalization: Sequence[float] | np.ndarray | None = None,
        held_out: Sequence[bool] | np.ndarray | None = None,
        tolerances: Sequence[float] | np.ndarray | None = None,
        floors: Sequence[float] | np.ndarray | None = None,
    ) -> TargetProblem:
        """Validate and return the targets; NaN tolerances take the default, NaN floors none."""
        names = _unique_names(names)
        k = len(names)
        values = _vector(values, name="values", k=k)
        normalization = _vector(
            np.ones(k) if normalization is None else normalization, name="normalization", k=k
        )
        tolerances = _vector(
            np.full(k, np.nan) if tolerances is None else tolerances, name="tolerances", k=k
        )
        floors = _vector(np.zeros(k) if floors is None else floors, name="floors", k=k)
        held_out = _flags(held_out, k=k)
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
        tolerances = np.where(np.isnan(tolerances), DEFAULT_TOLERANCE, tolerances)
        _require(
            bad=~np.isfinite(tolerances) | (tolerances <= 0) | (tolerances >= 1),
            names=names,
            problem="the tolerance is not a relative tolerance in (0, 1)",
            remedy=f"write e.g. 0.01 for 1 %, or leave it empty for {DEFAULT_TOLERANCE:g}",
        )
        floors = np.where(np.isnan(floors), 0.0, floors)
        _require(
            bad=~np.isfinite(floors) | (floors < 0),
            names=names,
            problem="the floor is negative or infinite",
            remedy="use a floor > 0 or leave it empty",
        )
        if held_out.all():
            msg = f"All {k} targets are held out; at least one target must be fitted."
            raise CalibrationError(msg)
        return cls(
            names=names,
            values=values,
            normalization=normalization,
            held_out=held_out,
            tolerances=tolerances,
            floors=floors,
        )

    @property
    def n_targets(self) -> int:
        """Return K, the number of targets (fitted and held out)."""
        return len(self.names)

    @property
    def fitted(self) -> np.ndarray:
        """Return a boolean mask of the targets that enter the loss."""
        return ~self.held_out


@dataclass(frozen=True)
class Objective:
    """The loss as device arrays: targets, scales (tol_j * d_j) and per-target factors."""

    targets: jnp.ndarray
    denominators: jnp.ndarray
    scales: jnp.ndarray
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
        # A held-out target gets a unit scale and a zero factor: its term is exactly 0.
        targets = np.where(fitted, problem.values, 0.0)
        dtype = float_dtype()
        return cls(
            targets=jnp.asarray(targets, dtype=dtype),
            denominators=jnp.asarray(d, dtype=dtype),
            scales=jnp.asarray(np.where(fitted, problem.tolerances * d, 1.0), dtype=dtype),
            factors=jnp.asarray(factors, dtype=dtype),
            fitted=jnp.asarray(fitted),
        )

    @property
    def n_fitted(self) -> int:
        """Return the number of fitted targets."""
        return int(np.sum(np.asarray(self.fitted)))

    def assess(self, estimates: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray, jnp.ndarray]:
        """Return the loss, c = dL/dS and the number of fitted targets within tolerance."""
        return _assess(estimates, self.targets, self.scales, self.factors, self.fitted)

    def loss(self, estimates: jnp.ndarray) -> jnp.ndarray:
        """Return the fit loss of the estimates S."""
        return self.assess(estimates)[0]

    def loss_and_gradient(self, estimates: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
        """Return the fit loss and c = dL/dS (zero for held-out targets)."""
        return self.assess(estimates)[:2]


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


def relative_misses(
    *, estimates: np.ndarray, problem: TargetProblem, denominators: np.ndarray
) -> np.ndarray:
    """Return (S_j - t_j) / d_j for every target, fitted and held out (NaN where d_j = 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(
            denominators > 0, (np.asarray(estimates) - problem.values) / denominators, np.nan
        )


def _loss(
    estimates: jnp.ndarray, targets: jnp.ndarray, scales: jnp.ndarray, factors: jnp.ndarray
) -> jnp.ndarray:
    return jnp.sum(factors * ((estimates - targets) / scales) ** 2)


@jit
def _assess(
    estimates: jnp.ndarray,
    targets: jnp.ndarray,
    scales: jnp.ndarray,
    factors: jnp.ndarray,
    fitted: jnp.ndarray,
) -> tuple[jnp.ndarray, jnp.ndarray, jnp.ndarray]:
    # Held-out estimates are replaced by their (zero) target so that not even a non-finite
    # held-out estimate reaches the loss or c.
    estimates = jnp.where(fitted, estimates, targets)
    loss, c = jax.value_and_grad(_loss)(estimates, targets, scales, factors)
    close = jnp.abs(estimates - targets) <= scales
    return loss, c, jnp.sum(close & fitted)


def _unique_names(names: Sequence[str]) -> tuple[str, ...]:
    """Return the target names as strings; refuse duplicates."""
    names = tuple(str(n) for n in names)
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        msg = f"Target names must be unique; {duplicated} appear more than once."
        raise CalibrationError(msg)
    return names


def _flags(held_out: Sequence[bool] | np.ndarray | None, *, k: int) -> np.ndarray:
    """Return the held-out flags, one per target (none held out by default)."""
    flags = np.zeros(k, dtype=bool) if held_out is None else np.asarray(held_out, bool)
    if flags.shape != (k,):
        msg = f"held_out has shape {flags.shape}; expected ({k},), one flag per target."
        raise CalibrationError(msg)
    return flags


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
