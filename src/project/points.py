"""Grid points in the working precision, from as few compiled programs as possible.

``jnp.linspace`` compiles one small program per distinct grid size and bound type, about 0.1 s
each the first time in a process. ``evenly_spaced`` computes any number of lin- and log-spaced
grids in one jitted call, shared by every model with the same grid sizes. The values are those
of ``jnp.linspace`` (and ``jnp.exp`` of it for log grids), bit for bit (``tests/test_grids.py``),
except that every grid's first and last points are exactly its ``start`` and ``stop`` as the
working dtype rounds them: ``exp(log(0.1))`` is 0.10000000000000002, and a state given exactly at
a grid's bound must lie on the grid.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import jax
import jax.numpy as jnp
import numpy as np

from project._xla import jit

# (kind, start, stop, n_points), kind "linspace" or "logspace".
Spec = tuple[str, float, float, int]


def float_dtype() -> np.dtype:
    """Return the working float dtype (float64 with ``jax_enable_x64``, else float32)."""
    return np.dtype(jax.dtypes.canonicalize_dtype(np.float64))


@contextmanager
def precision(*, x64: bool) -> Iterator[None]:
    """Compute in float64 (``x64``) or float32 inside; restore the process's precision after."""
    previous = bool(jax.config.jax_enable_x64)
    jax.config.update("jax_enable_x64", x64)
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", previous)


def evenly_spaced(specs: Sequence[Spec]) -> list[jax.Array]:
    """Return the points of every evenly spaced grid in ``specs``, in one compiled call."""
    if not specs:
        return []
    layout = tuple((kind, n_points) for kind, _, _, n_points in specs)
    bounds = tuple(
        (start, stop) if kind == "linspace" else (math.log(start), math.log(stop))
        for kind, start, stop, _ in specs
    )
    points = _evenly_spaced(layout, bounds)
    # A linspace is exact at both ends (start * (1 - 0) + stop * 0, and stop appended); exp(log
    # start) is not. The ends are set on the host: in the jitted program, XLA fuses the
    # exponentials with a scatter or slice differently, one ulp off jnp's eager values inside.
    return [
        spaced if kind == "linspace" else _with_ends(spaced, start=start, stop=stop)
        for (kind, start, stop, _), spaced in zip(specs, points, strict=True)
    ]


def _with_ends(points: jax.Array, *, start: float, stop: float) -> jax.Array:
    """Return ``points`` with the first and last replaced by start and stop (rounded once)."""
    host = np.array(points)
    host[[0, -1]] = start, stop
    return jax.device_put(host)


@functools.partial(jit, static_argnums=0)
def _evenly_spaced(
    layout: tuple[tuple[str, int], ...], bounds: tuple[tuple[float, float], ...]
) -> tuple[jax.Array, ...]:
    # The bounds are traced arguments, as in an eager ``jnp.linspace`` call: as constants, XLA
    # would fold the points at compile time and could round them differently.
    points = []
    for (kind, n_points), (start, stop) in zip(layout, bounds, strict=True):
        spaced = jnp.linspace(start, stop, n_points)
        points.append(spaced if kind == "linspace" else jnp.exp(spaced))
    return tuple(points)
