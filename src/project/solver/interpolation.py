"""Evaluate next period's V at one (possibly off-grid) next state.

Discrete axes are indexed exactly. Continuous axes are interpolated linearly (multilinearly with
several continuous axes); outside a grid, V is extrapolated linearly from the outermost segment.
Called per state-action point inside ``vmap``, so the gathers below fuse with the rest of the
period kernel and no per-outcome stack of V arrays is materialised.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import jax.numpy as jnp

from project.grids import ContinuousGrid, Grid


def interpolate_value(
    *,
    values: jnp.ndarray,
    axes: Sequence[tuple[str, Grid]],
    next_states: Mapping[str, jnp.ndarray],
    grid_points: Mapping[str, jnp.ndarray],
) -> jnp.ndarray:
    """Return ``values`` (axes named by ``axes``) evaluated at ``next_states``.

    Args:
        values: Next period's V (or its expectation W over some stochastic axes).
        axes: The (state name, grid) of each axis of ``values``, in order.
        next_states: A scalar next-period value (or code) per axis name.
        grid_points: Grid points per state name.
    """
    corners: list[tuple[tuple[jnp.ndarray, ...], jnp.ndarray | float]] = [((), 1.0)]
    for name, grid in axes:
        target = next_states[name]
        if isinstance(grid, ContinuousGrid):
            lower, weight = grid.locate(target, points=grid_points[name])
            corners = [
                ((*index, position), corner_weight * axis_weight)
                for index, corner_weight in corners
                for position, axis_weight in ((lower, 1.0 - weight), (lower + 1, weight))
            ]
        else:
            code = jnp.clip(jnp.asarray(target).astype(jnp.int32), 0, grid.n_points - 1)
            corners = [((*index, code), w) for index, w in corners]
    total = None
    for index, weight in corners:
        term = values[index] * weight
        total = term if total is None else total + term
    return total
