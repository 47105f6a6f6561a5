"""Checks of what a grid is given (knobs, bounds, points, categories) and of values against it.

Each raises ``GridInitializationError`` (or the given error) saying which grid, which value and
what to give instead.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from project.errors import GridInitializationError, StateOutsideGridError

if TYPE_CHECKING:
    from project.grids import ContinuousGrid

SHOWN = 5  # offending values named in an error message


def check_knobs(*, name: str, batch_size: Any, distributed: Any) -> None:
    """Raise for a batch size that is no int >= 0, or splay and sharding on one grid."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, int):
        msg = (
            f"{name}: batch_size must be a non-negative int, got {batch_size!r}. "
            "Use 0 for no splay or a positive chunk length."
        )
        raise GridInitializationError(msg)
    if batch_size < 0:
        msg = (
            f"{name}: batch_size must be >= 0, got {batch_size}. "
            "Use 0 for no splay or a positive chunk length."
        )
        raise GridInitializationError(msg)
    if not isinstance(distributed, bool):
        msg = f"{name}: distributed must be True or False, got {distributed!r}."
        raise GridInitializationError(msg)
    if distributed and batch_size > 0:
        msg = (
            f"{name}: batch_size={batch_size} and distributed=True on the same grid. Splay "
            "(batch_size) chunks an axis on one device to save memory; sharding (distributed) "
            "already gives each device one block of it. Choose one: drop batch_size here and "
            "splay another axis, or set distributed=False."
        )
        raise GridInitializationError(msg)


def categories_of(
    category_class: type, *, grid_name: str
) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """Return the labels and codes of a category class; raise unless codes are 0..n-1."""
    if dataclasses.is_dataclass(category_class):
        items = [(f.name, f.default) for f in dataclasses.fields(category_class)]
    else:
        items = [(k, v) for k, v in vars(category_class).items() if not k.startswith("_")]
    if not items:
        msg = (
            f"DiscreteGrid({grid_name}): the category class defines no categories. Give it one "
            "int attribute per category, e.g. `working: int = 0; retired: int = 1`."
        )
        raise GridInitializationError(msg)
    labels = tuple(label for label, _ in items)
    codes = tuple(code for _, code in items)
    bad = [label for label, code in items if isinstance(code, bool) or not isinstance(code, int)]
    if bad:
        msg = f"DiscreteGrid({grid_name}): categories {bad} are not int codes. Give each an int."
        raise GridInitializationError(msg)
    duplicated = sorted({c for c in codes if codes.count(c) > 1})
    if duplicated:
        msg = (
            f"DiscreteGrid({grid_name}): duplicate category codes {duplicated} in {dict(items)}. "
            "Give every category its own code."
        )
        raise GridInitializationError(msg)
    if sorted(codes) != list(range(len(codes))):
        msg = (
            f"DiscreteGrid({grid_name}): category codes must be 0..{len(codes) - 1} "
            f"(they index V), got {dict(items)}. Renumber them consecutively from 0."
        )
        raise GridInitializationError(msg)
    order = sorted(range(len(codes)), key=codes.__getitem__)
    return tuple(labels[i] for i in order), tuple(range(len(codes)))


def check_not_distributed(*, name: str, distributed: bool) -> None:
    """Raise for a continuous grid asked to be sharded."""
    if distributed:
        msg = (
            f"{name}: distributed=True on a continuous grid. Continuous axes cannot be sharded: "
            "every interpolation of next period's V reads arbitrary points along the axis, so "
            "each device would gather the whole V array. Shard a discrete state that never "
            f"transitions instead, or splay this axis with batch_size > 0 to save memory."
        )
        raise GridInitializationError(msg)


def is_real(value: Any) -> bool:
    """Say whether ``value`` is a real number (Python, NumPy or a 0-d array; no str or bool)."""
    if isinstance(value, str | bytes | bool | np.bool_) or value is None:
        return False
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


def real_points(points: Any, *, name: str) -> tuple[float, ...]:
    """Return ``points`` as floats; raise ``GridInitializationError`` naming a bad one."""
    if isinstance(points, str | bytes) or not hasattr(points, "__iter__"):
        msg = f"{name}: points must be a sequence of numbers, got {points!r}."
        raise GridInitializationError(msg)
    converted = []
    for position, point in enumerate(points):
        if not is_real(point):
            msg = (
                f"{name}: point {position} is {point!r} ({type(point).__name__}), not a real "
                "number. Give numbers only."
            )
            raise GridInitializationError(msg)
        converted.append(float(point))
    return tuple(converted)


def check_continuous(
    *, name: str, start: float, stop: float, n_points: int, batch_size: int, distributed: bool
) -> None:
    """Raise for bounds that are not finite reals with start < stop, or n_points < 2."""
    check_knobs(name=name, batch_size=batch_size, distributed=distributed)
    check_not_distributed(name=name, distributed=distributed)
    for bound, value in (("start", start), ("stop", stop)):
        if not is_real(value):
            msg = f"{name}: {bound} must be a real number, got {value!r} ({type(value).__name__})."
            raise GridInitializationError(msg)
    if isinstance(n_points, bool) or not isinstance(n_points, int) or n_points < 2:
        msg = f"{name}: n_points must be an int >= 2, got {n_points!r}. Use at least 2 points."
        raise GridInitializationError(msg)
    if not (math.isfinite(start) and math.isfinite(stop)):
        msg = f"{name}: start and stop must be finite, got start={start}, stop={stop}."
        raise GridInitializationError(msg)
    if start >= stop:
        msg = f"{name}: start must be < stop, got start={start}, stop={stop}. Swap or widen them."
        raise GridInitializationError(msg)


def check_within_grid(
    *,
    name: str,
    grid: ContinuousGrid,
    values: Any,
    what: str,
    index_name: str = "entries",
    error: type[StateOutsideGridError] = StateOutsideGridError,
    method: str = "grid",
) -> None:
    """Raise ``error`` naming the values of state ``name`` outside ``grid``'s range (or NaN).

    Values are compared in the working precision, as the solver holds the points: a value given
    exactly at a grid's start or stop is inside. ``what`` says what the values are (e.g.
    "Initial state"), ``index_name`` what their positions are (e.g. "subjects"). ``method``
    ("grid", "egm" or "dcegm") words why the range is the domain of the solution.
    """
    points = np.asarray(grid.to_jax())
    try:
        given = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exception:
        msg = f"{what} {name!r} must be numeric to lie on grid {grid.name!r}: {exception}."
        raise error(msg) from exception
    working = given.astype(points.dtype)
    lower, upper = float(points[0]), float(points[-1])
    outside = ~((working >= points[0]) & (working <= points[-1]))
    if not outside.any():
        return
    hits = np.argwhere(outside)
    more = ", ..." if len(hits) > SHOWN else ""
    shown = [tuple(int(i) for i in hit) for hit in hits[:SHOWN]]
    positions = ", ".join(str(i[0]) if len(i) == 1 else str(i) for i in shown)
    offending = ", ".join(repr(float(given[i])) for i in shown)
    msg = (
        f"{what} {name!r}: {index_name} [{positions}{more}] ({len(hits)} in all) have values "
        f"[{offending}{more}] outside the range [{lower!r}, {upper!r}] of grid {grid.name!r} "
        f"(its first and last points in {points.dtype}). {_domain(method)}"
    )
    raise error(msg)


def _domain(method: str) -> str:
    """Return why a solution by ``method`` is only evaluated within its state grid's range."""
    if method in ("egm", "dcegm"):
        return (
            f"A solution by {method.upper()} is evaluated on the range of the state's grid (its "
            "evaluation domain; the endogenous grid of wealth is only trusted there): move the "
            "values into that range, or widen the state grid and solve again (without a "
            "post_decision_grid the default savings grid reaches the grid's last point)."
        )
    return (
        "The solution is only trusted on the grid (outside it V is extrapolated linearly): move "
        "the values into that range or widen the grid."
    )
