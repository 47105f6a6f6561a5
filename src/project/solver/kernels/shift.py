"""The shift kernel: w' = (w - c) + b on an evenly spaced grid of w (step h).

The grid coordinate of w' for state point i and action point j is i + k_j + f_j, where the
integer shift k_j and the weight f_j depend on the action alone (and the context's b). So the
continuation of action j for all states is the window starting at k_j of the row's linear
interpolant: ``level[k_j + i] + f_j * slope[k_j + i]``, two contiguous reads per pair and no
per-pair index arithmetic. Outside the grid the row is extended linearly, as the general kernel
extrapolates; windows that start further out than one grid length lie wholly in the linear
extension and are read from its edge plus an exact offset, so the arrays stay of static size.
From ``choice.GROUPED_MIN_PAIRS`` pairs, in float64, the continuation is also read per element
(``at``), so that the search sweeps once by groups and re-reads each state's winning group.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from project.solver.choice import search_by_groups
from project.solver.kernels.structured import Context, Windows
from project.solver.plan import SolvePlan
from project.solver.sweep import compose

# Shifts are clipped here before the integer cast (windows beyond the padding are linear).
_SHIFT_LIMIT = 2**30


def shift_continuation(plan: SolvePlan) -> Any:
    """Return the shift continuation for ``build_structured_kernel``."""
    model, structure = plan.model, plan.structure
    state, action = structure.state, structure.action
    grid = model.states[state]
    n_states = grid.n_points
    pad = n_states + 1
    inverse_step = (n_states - 1) / (grid.stop - grid.start)
    law = compose(model, [f"next_{state}"])
    n_actions = model.actions[action].n_points

    def continuation(context: Context) -> Windows:
        env, row, grid_points = context.env, context.row, context.grid_points
        first = grid_points[state][0]
        landing = jax.vmap(lambda c: law(env | {state: first, action: c})[f"next_{state}"])(
            grid_points[action]
        )
        coordinate = (landing - grid.start) * inverse_step
        lower = jnp.clip(jnp.floor(coordinate), -_SHIFT_LIMIT, _SHIFT_LIMIT)
        weight = coordinate - lower
        lower = lower.astype(jnp.int32)
        start = jnp.clip(lower, -pad, pad)
        low_slope, high_slope = row[1] - row[0], row[-1] - row[-2]
        offset = (lower - start).astype(row.dtype) * jnp.where(lower < 0, low_slope, high_slope)
        positions = jnp.arange(-pad, context.n_rows + pad + 1)
        below = row[0] + positions * low_slope
        above = row[-1] + (positions - (n_states - 1)) * high_slope
        inside = row[jnp.clip(positions, 0, n_states - 1)]
        level = jnp.where(positions < 0, below, jnp.where(positions > n_states - 1, above, inside))
        slope = level[1:] - level[:-1]
        first_read = start + pad

        def block(indices: jnp.ndarray, chunk: jnp.ndarray) -> jnp.ndarray:
            begin = first_read[indices] + chunk
            size = (context.batch,)
            levels = jax.vmap(lambda b: jax.lax.dynamic_slice(level, (b,), size))(begin)
            slopes = jax.vmap(lambda b: jax.lax.dynamic_slice(slope, (b,), size))(begin)
            return levels + offset[indices][:, None] + weight[indices][:, None] * slopes

        def at(indices: jnp.ndarray, chunk: jnp.ndarray) -> jnp.ndarray:
            reads = first_read[indices] + chunk + jnp.arange(context.batch)[:, None]
            return level[reads] + offset[indices] + weight[indices] * slope[reads]

        float_bytes = row.dtype.itemsize
        grouped = search_by_groups(n_states=n_states, n_points=n_actions, float_bytes=float_bytes)
        return Windows(block=block, at=at if grouped else None)

    return continuation
