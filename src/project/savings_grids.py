"""Savings (post-decision) grids for EGM and DC-EGM: dense near the borrowing limit.

The policy of a consumption-savings model curves most, and next period's borrowing limit leaves
its kinks, at low savings; far from the limit it is nearly linear. A grid even in ``log(1 + a)``
(``log1p_grid``, the default) puts most points where they matter and still reaches far. With
500 points to the top of the wealth grid it matches a 40,000-point solution to about 1e-4 in
consumption everywhere (``benchmarks/savings_grids.py``, ``docs/savings_grids.md``); an evenly
spaced grid needs many times more points for the same accuracy.

Every constructor is keyword-only and returns an ``IrregSpacedGrid`` whose first point is
exactly ``start`` (the borrowing limit) and last exactly ``stop``, strictly increasing in the
working precision. No JAX runs here: the points are plain Python floats.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from project.errors import GridInitializationError
from project.grid_checks import is_real
from project.grids import IrregSpacedGrid
from project.points import float_dtype

__all__ = ["default_savings_grid", "exponential_grid", "log1p_grid", "power_grid"]

DEFAULT_N_POINTS = 500


def log1p_grid(
    *, stop: float, n_points: int, start: float = 0.0, name: str = "savings"
) -> IrregSpacedGrid:
    """Return ``n_points`` from ``start`` to ``stop`` evenly spaced in ``log(1 + a - start)``."""
    _check(name=name, start=start, stop=stop, n_points=n_points)
    unit = np.linspace(0.0, math.log1p(stop - start), n_points)
    return _grid(np.expm1(unit), start=start, stop=stop, name=name)


def power_grid(
    *,
    stop: float,
    n_points: int,
    exponent: float = 2.0,
    start: float = 0.0,
    name: str = "savings",
) -> IrregSpacedGrid:
    """Return ``start + (stop - start)·u**exponent`` for ``u`` evenly spaced in [0, 1].

    ``exponent > 1`` crowds points near ``start``; 1 is evenly spaced.
    """
    _check(name=name, start=start, stop=stop, n_points=n_points)
    if not _is_positive_real(exponent):
        msg = (
            f"{name}: exponent must be a real number > 0, got {exponent!r}. Use e.g. 2 or 3 "
            "(larger crowds more points near start)."
        )
        raise GridInitializationError(msg)
    unit = np.linspace(0.0, 1.0, n_points) ** float(exponent)
    return _grid((stop - start) * unit, start=start, stop=stop, name=name)


def exponential_grid(
    *,
    stop: float,
    n_points: int,
    n_nests: int = 3,
    start: float = 0.0,
    name: str = "savings",
    n_refined: int = 0,
    smallest: float = 1e-7,
) -> IrregSpacedGrid:
    """Return HARK's multi-exponential grid: even in ``log(1 + ·)`` applied ``n_nests`` times.

    ``n_nests=1`` is ``log1p_grid``; each further nest crowds more points near ``start``.
    ``n_refined`` of the ``n_points`` subdivide the first interval geometrically from
    ``start + smallest``: where a chance of a year without income makes the marginal value of
    saving steep just above the limit (``lifecycle_normalised``: the largest Euler errors fall
    from about 1e-0.1 to 1e-1.3 with 12 such points of 150).
    """
    _check(name=name, start=start, stop=stop, n_points=n_points)
    if isinstance(n_refined, bool) or not isinstance(n_refined, int):
        msg = f"{name}: n_refined must be an int >= 0, got {n_refined!r}."
        raise GridInitializationError(msg)
    if n_refined:
        return _refined(
            exponential_grid(
                stop=stop, n_points=n_points - n_refined, n_nests=n_nests, start=start, name=name
            ),
            n_refined=n_refined,
            smallest=smallest,
        )
    if isinstance(n_nests, bool) or not isinstance(n_nests, int) or n_nests < 1:
        msg = (
            f"{name}: n_nests must be an int >= 1, got {n_nests!r}. HARK's default is 3; 1 "
            "gives log1p_grid."
        )
        raise GridInitializationError(msg)
    top = stop - start
    for _ in range(n_nests):
        top = math.log1p(top)
    unit = np.linspace(0.0, top, n_points)
    for _ in range(n_nests):
        unit = np.expm1(unit)
    return _grid(unit, start=start, stop=stop, name=name)


def _refined(grid: IrregSpacedGrid, *, n_refined: int, smallest: float) -> IrregSpacedGrid:
    """Return ``grid`` with ``n_refined`` geometric points added below its second point."""
    points = np.asarray(grid.points, dtype=np.float64)
    start, first = points[0], points[1]
    if not 0 < smallest < first - start or n_refined < 0 or len(points) < 2:
        msg = (
            f"{grid.name}: the refinement needs 0 < smallest < the first step "
            f"({first - start:.3g}), got smallest={smallest!r}, n_refined={n_refined!r}."
        )
        raise GridInitializationError(msg)
    refined = start + np.geomspace(smallest, first - start, n_refined + 1)[:-1]
    offsets = np.concatenate([[0.0], refined - start, points[1:] - start])
    return _grid(offsets, start=float(start), stop=float(points[-1]), name=grid.name)


def default_savings_grid(
    *, stop: float, n_points: int = DEFAULT_N_POINTS, start: float = 0.0
) -> IrregSpacedGrid:
    """Return the EGM default: ``log1p_grid`` from the borrowing limit ``start`` to ``stop``."""
    return log1p_grid(stop=stop, n_points=n_points, start=start, name="savings")


def _grid(offsets: np.ndarray, *, start: float, stop: float, name: str) -> IrregSpacedGrid:
    """Return the grid ``start + offsets`` with its ends exactly ``start`` and ``stop``."""
    points = float(start) + np.asarray(offsets, dtype=np.float64)
    points[0], points[-1] = float(start), float(stop)
    working = points.astype(float_dtype())
    if np.any(np.diff(working) <= 0) or np.any(np.diff(points) <= 0):
        step = float(np.min(np.diff(points)))
        msg = (
            f"{name}: {points.size} points from {start:g} to {stop:g} are too dense near "
            f"{start:g} for {np.dtype(float_dtype()).name} (smallest step {step:.3g}): they "
            "would round onto each other. Use fewer points, a less crowding grid (log1p_grid), "
            "or enable x64 (jax.config.update('jax_enable_x64', True)) before building it."
        )
        raise GridInitializationError(msg)
    return IrregSpacedGrid(points=points.tolist(), name=name)


def _check(*, name: str, start: Any, stop: Any, n_points: Any) -> None:
    """Raise ``GridInitializationError`` for a bad size or bounds."""
    if isinstance(n_points, bool) or not isinstance(n_points, int) or n_points < 2:
        msg = f"{name}: n_points must be an int >= 2, got {n_points!r}. Use at least 2 points."
        raise GridInitializationError(msg)
    for bound, value in (("start", start), ("stop", stop)):
        if not is_real(value) or not math.isfinite(float(value)):
            msg = (
                f"{name}: {bound} must be a finite real number, got {value!r}. Give the "
                "borrowing limit as start and the largest savings as stop."
            )
            raise GridInitializationError(msg)
    if not float(stop) > float(start):
        msg = (
            f"{name}: stop must be > start, got start={start!r}, stop={stop!r}. start is the "
            "borrowing limit, stop the largest savings (e.g. the top of the wealth grid)."
        )
        raise GridInitializationError(msg)


def _is_positive_real(value: Any) -> bool:
    return is_real(value) and math.isfinite(float(value)) and float(value) > 0
