"""Grids for states and actions, with their two knobs: ``batch_size`` (splay) and ``distributed``.

A grid only stores plain Python numbers, so constructing one never touches JAX. Points are made
with ``to_jax()`` in the working precision when a model is solved. ``batch_size > 0`` chunks the
state sweep along the grid's axis with ``jax.lax.map`` (a memory knob, value-identical to no
splay); ``distributed=True`` shards a discrete axis that never transitions over devices (the speed
knob). The two never go on the same axis.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from project.errors import GridInitializationError, StateOutsideGridError
from project.points import Spec, evenly_spaced, float_dtype

__all__ = [
    "ContinuousGrid",
    "DiscreteGrid",
    "Grid",
    "IrregSpacedGrid",
    "LinSpacedGrid",
    "LogSpacedGrid",
    "check_within_grid",
]

SHOWN = 5  # offending values named in an error message


def _check_knobs(*, name: str, batch_size: Any, distributed: Any) -> None:
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


class Grid:
    """Common interface of all grids."""

    name: str
    batch_size: int
    distributed: bool
    has_points: bool = True
    """False for ``project.actions.ContinuousAction``: an action EGM computes, with no points."""

    @property
    def n_points(self) -> int:
        """Return the number of points."""
        raise NotImplementedError

    @property
    def is_discrete(self) -> bool:
        """Return whether the grid holds categories rather than numbers."""
        return isinstance(self, DiscreteGrid)

    def to_jax(self) -> jnp.ndarray:
        """Return the points (codes for discrete grids) as a JAX array."""
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        """Return a JSON-serialisable description (``grid_from_description`` rebuilds it)."""
        raise NotImplementedError


class ContinuousGrid(Grid):
    """A grid of real numbers; V is interpolated linearly between its points."""

    def locate(self, x: jnp.ndarray, *, points: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
        """Return the segment ``i`` in ``0..n_points-2`` holding ``x`` and the weight of point i+1.

        The weight is ``(x - points[i]) / (points[i+1] - points[i])``: linear in ``x`` on every
        grid kind. Values outside ``[points[0], points[-1]]`` use the outermost segment with a
        weight below 0 or above 1, so V is extrapolated linearly.
        """
        raise NotImplementedError


class DiscreteGrid(Grid):
    """Categories taken from a user-defined class whose attributes are the int codes 0..n-1.

    Example::

        @dataclass(frozen=True)
        class RetirementStatus:
            working: int = 0
            retired: int = 1

        DiscreteGrid(RetirementStatus)
    """

    def __init__(
        self, category_class: type, *, batch_size: int = 0, distributed: bool = False
    ) -> None:
        self.name = getattr(category_class, "__name__", repr(category_class))
        if not isinstance(category_class, type):
            msg = (
                f"DiscreteGrid takes a class whose fields are the categories' int codes, got "
                f"{category_class!r} ({type(category_class).__name__}). Define e.g. "
                "@dataclass(frozen=True) class Status: working: int = 0; retired: int = 1."
            )
            raise GridInitializationError(msg)
        _check_knobs(
            name=f"DiscreteGrid({self.name})", batch_size=batch_size, distributed=distributed
        )
        self.category_class = category_class
        self.batch_size = batch_size
        self.distributed = distributed
        self.labels, self.codes = _categories_of(category_class, grid_name=self.name)

    @property
    def n_points(self) -> int:
        """Return the number of categories."""
        return len(self.codes)

    def to_jax(self) -> jnp.ndarray:
        """Return the int32 codes."""
        return jax.device_put(np.asarray(self.codes, dtype=np.int32))

    def describe(self) -> dict[str, Any]:
        """Return kind, labels and knobs."""
        return {
            "kind": "discrete",
            "name": self.name,
            "labels": list(self.labels),
            "batch_size": self.batch_size,
            "distributed": self.distributed,
        }


def _categories_of(
    category_class: type, *, grid_name: str
) -> tuple[tuple[str, ...], tuple[int, ...]]:
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


RESOLUTION_ULPS = 4
"""The smallest step of an evenly spaced grid, in units in the last place of its largest bound."""


class _EvenlySpacedGrid(ContinuousGrid):
    """``n_points`` points from ``start`` to ``stop`` (both included), evenly spaced in ``kind``."""

    kind: str

    def __init__(
        self,
        *,
        start: float,
        stop: float,
        n_points: int,
        batch_size: int = 0,
        distributed: bool = False,
        name: str | None = None,
    ) -> None:
        name = name or f"{type(self).__name__}(start={start}, stop={stop}, n_points={n_points})"
        self.name = name
        _check_continuous(
            name=name,
            start=start,
            stop=stop,
            n_points=n_points,
            batch_size=batch_size,
            distributed=distributed,
        )
        self.start, self.stop, self._n_points = float(start), float(stop), int(n_points)
        self.batch_size, self.distributed = batch_size, distributed
        self._check_bounds()
        self._check_resolution()

    def _check_bounds(self) -> None:
        """Raise for bounds this kind of grid cannot hold (beyond start < stop)."""

    def _check_resolution(self) -> None:
        """Raise when neighbouring points are too close to stay distinct in working precision.

        Points are computed in the working precision (float32 unless x64 is enabled when the
        grid is built); a step below a few units in the last place would round points onto
        each other or out of order.
        """
        dtype = np.dtype(float_dtype())
        if self.kind == "linspace":
            step = (self.stop - self.start) / (self.n_points - 1)
            resolution = float(np.spacing(dtype.type(max(abs(self.start), abs(self.stop)))))
        else:
            step = math.expm1((math.log(self.stop) - math.log(self.start)) / (self.n_points - 1))
            resolution = float(np.finfo(dtype).eps)
        if step < RESOLUTION_ULPS * resolution:
            msg = (
                f"{self.name}: {self.n_points} points are too dense for {dtype.name} (step "
                f"{step:.3g}{' relative' if self.kind != 'linspace' else ''}, precision "
                f"{resolution:.3g}): they would round onto each other. Use fewer points, a range "
                "nearer zero, or enable x64 (jax.config.update('jax_enable_x64', True)) before "
                "building the grid."
            )
            raise GridInitializationError(msg)

    @property
    def spec(self) -> Spec:
        """Return (kind, start, stop, n_points), what ``evenly_spaced`` computes points from."""
        return (self.kind, self.start, self.stop, self.n_points)

    def to_jax(self) -> jnp.ndarray:
        """Return the points in the working precision (``jnp.linspace``, in logs for log grids).

        The first and last points are exactly ``start`` and ``stop`` in the working dtype.
        """
        return evenly_spaced([self.spec])[0]

    @property
    def n_points(self) -> int:
        """Return the number of points."""
        return self._n_points

    def describe(self) -> dict[str, Any]:
        """Return kind, bounds, size and knobs."""
        return {
            "kind": self.kind,
            "name": self.name,
            "start": self.start,
            "stop": self.stop,
            "n_points": self.n_points,
            "batch_size": self.batch_size,
            "distributed": self.distributed,
        }


class LinSpacedGrid(_EvenlySpacedGrid):
    """``n_points`` evenly spaced points from ``start`` to ``stop`` (both included)."""

    kind = "linspace"

    def locate(self, x: jnp.ndarray, *, points: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
        """Locate ``x`` in closed form (no search)."""
        del points
        coordinate = (x - self.start) * ((self.n_points - 1) / (self.stop - self.start))
        lower = jnp.clip(jnp.floor(coordinate), 0, self.n_points - 2)
        return lower.astype(jnp.int32), coordinate - lower


class LogSpacedGrid(_EvenlySpacedGrid):
    """``n_points`` points evenly spaced in logs from ``start > 0`` to ``stop``."""

    kind = "logspace"

    def _check_bounds(self) -> None:
        if self.start <= 0:
            msg = (
                f"{self.name}: a log-spaced grid needs start > 0, got start={self.start:g}. Use "
                "a LinSpacedGrid or shift the variable so that it is positive."
            )
            raise GridInitializationError(msg)

    def locate(self, x: jnp.ndarray, *, points: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
        """Locate the segment in logs; the weight is linear in ``x`` (``x <= 0``: first segment)."""
        step = (math.log(self.stop) - math.log(self.start)) / (self.n_points - 1)
        safe = jnp.where(x > 0, x, self.start)
        lower = jnp.clip(
            jnp.floor((jnp.log(safe) - math.log(self.start)) / step), 0, self.n_points - 2
        ).astype(jnp.int32)
        return lower, (x - points[lower]) / (points[lower + 1] - points[lower])


class IrregSpacedGrid(ContinuousGrid):
    """Explicit, strictly increasing, finite points."""

    def __init__(
        self,
        *,
        points: Sequence[float],
        batch_size: int = 0,
        distributed: bool = False,
        name: str | None = None,
    ) -> None:
        points = _real_points(points, name=name or "IrregSpacedGrid")
        name = name or f"IrregSpacedGrid(n_points={len(points)})"
        self.name = name
        _check_knobs(name=name, batch_size=batch_size, distributed=distributed)
        _check_not_distributed(name=name, distributed=distributed)
        if len(points) < 2:
            msg = f"{name}: needs at least 2 points, got {len(points)}. Add points."
            raise GridInitializationError(msg)
        if not all(math.isfinite(p) for p in points):
            msg = f"{name}: points must be finite, got {points}. Remove NaN/inf points."
            raise GridInitializationError(msg)
        if any(b <= a for a, b in itertools.pairwise(points)):
            msg = (
                f"{name}: points must be strictly increasing, got {points}. Sort them and "
                "drop duplicates."
            )
            raise GridInitializationError(msg)
        self.points, self.batch_size, self.distributed = points, batch_size, distributed

    @property
    def n_points(self) -> int:
        """Return the number of points."""
        return len(self.points)

    def to_jax(self) -> jnp.ndarray:
        """Return the points in the working precision."""
        return jax.device_put(np.asarray(self.points, dtype=float_dtype()))

    def locate(self, x: jnp.ndarray, *, points: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
        """Locate the segment with a sorted search."""
        upper = jnp.clip(jnp.searchsorted(points, x, side="right"), 1, self.n_points - 1)
        lower = (upper - 1).astype(jnp.int32)
        return lower, (x - points[lower]) / (points[upper] - points[lower])

    def describe(self) -> dict[str, Any]:
        """Return kind, points and knobs."""
        return {
            "kind": "irregular",
            "name": self.name,
            "points": list(self.points),
            "batch_size": self.batch_size,
            "distributed": self.distributed,
        }


def _check_not_distributed(*, name: str, distributed: bool) -> None:
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


def _real_points(points: Any, *, name: str) -> tuple[float, ...]:
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


def _check_continuous(
    *, name: str, start: float, stop: float, n_points: int, batch_size: int, distributed: bool
) -> None:
    _check_knobs(name=name, batch_size=batch_size, distributed=distributed)
    _check_not_distributed(name=name, distributed=distributed)
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


def grid_from_description(description: dict[str, Any]) -> Grid:
    """Rebuild a continuous grid (or a ``ContinuousAction``) from ``Grid.describe()`` output.

    Discrete grids are not rebuilt (their category class is not described).
    """
    kind = description["kind"]
    if kind == "continuous_action":
        from project.actions import ContinuousAction  # noqa: PLC0415 (actions imports grids)

        return ContinuousAction(name=description["name"])
    knobs = {
        "batch_size": description["batch_size"],
        "distributed": description["distributed"],
        "name": description["name"],
    }
    if kind == "linspace":
        return LinSpacedGrid(
            start=description["start"],
            stop=description["stop"],
            n_points=description["n_points"],
            **knobs,
        )
    if kind == "logspace":
        return LogSpacedGrid(
            start=description["start"],
            stop=description["stop"],
            n_points=description["n_points"],
            **knobs,
        )
    if kind == "irregular":
        return IrregSpacedGrid(points=description["points"], **knobs)
    msg = (
        f"Cannot rebuild a grid of kind {kind!r}; expected linspace, logspace, irregular or "
        "continuous_action."
    )
    raise GridInitializationError(msg)


def categories(name: str, labels: Sequence[str]) -> type:
    """Return a frozen dataclass with one int field per label (codes 0..n-1)."""
    fields = [(label, int, dataclasses.field(default=code)) for code, label in enumerate(labels)]
    return dataclasses.make_dataclass(name, fields, frozen=True)


def code_combinations(sizes: Sequence[int]) -> np.ndarray:
    """Return every combination of codes of categories with ``sizes`` (rows, C order).

    The result has shape (prod(sizes), len(sizes)); with no sizes it is one empty row.
    """
    if not sizes:
        return np.zeros((1, 0), dtype=np.int32)
    return np.stack([c.ravel() for c in np.indices(tuple(sizes), dtype=np.int32)], axis=-1)


def grid_points(grids: dict[str, Grid]) -> dict[str, jnp.ndarray]:
    """Return every grid's points (codes for discrete grids); evenly spaced ones in one call.

    Grids without points (``ContinuousAction``) are left out.
    """
    spaced = {n: g for n, g in grids.items() if isinstance(g, _EvenlySpacedGrid)}
    computed = dict(zip(spaced, evenly_spaced([g.spec for g in spaced.values()]), strict=True))
    return {
        n: computed[n] if n in computed else g.to_jax() for n, g in grids.items() if g.has_points
    }
