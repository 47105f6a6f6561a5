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

from project.errors import GridInitializationError
from project.grid_checks import (
    categories_of,
    check_continuous,
    check_knobs,
    check_not_distributed,
    check_within_grid,
    real_points,
)
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
        check_knobs(
            name=f"DiscreteGrid({self.name})", batch_size=batch_size, distributed=distributed
        )
        self.category_class = category_class
        self.batch_size = batch_size
        self.distributed = distributed
        self.labels, self.codes = categories_of(category_class, grid_name=self.name)

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
        check_continuous(
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
        largest, highest = max(abs(self.start), abs(self.stop)), float(np.finfo(dtype).max)
        if largest > highest:
            msg = (
                f"{self.name}: the bound {largest:.3g} exceeds the range of {dtype.name} "
                f"({highest:.3g}): its points would be infinite. Use a range "
                "nearer zero, or enable x64 (jax.config.update('jax_enable_x64', True)) before "
                "building the grid."
            )
            raise GridInitializationError(msg)
        if self.kind == "linspace":
            step = (self.stop - self.start) / (self.n_points - 1)
            resolution = float(np.spacing(dtype.type(largest)))
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
        points = real_points(points, name=name or "IrregSpacedGrid")
        name = name or f"IrregSpacedGrid(n_points={len(points)})"
        self.name = name
        check_knobs(name=name, batch_size=batch_size, distributed=distributed)
        check_not_distributed(name=name, distributed=distributed)
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
