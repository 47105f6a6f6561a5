"""The row kernel: the continuation of a pair is an interpolation in one precomputed row.

For models with one continuous state ``w`` (any grid) and one continuous action ``c``, where the
other laws of motion and all transition probabilities ignore ``w`` and ``c`` and no realised
outcome enters ``next_w``: next period's expected V of a discrete context is one row along the
``w`` grid (``context_rows.py``), so a pair costs evaluating ``next_w``, locating it on the grid
and one interpolation in that row (two reads of a 1-D array), whatever form ``next_w`` has.
The general kernel instead reads next period's V through all its axes per pair.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from project.solver.kernels.structured import Context, Windows
from project.solver.plan import SolvePlan
from project.solver.sweep import compose


def row_continuation(plan: SolvePlan) -> Any:
    """Return the row continuation for ``build_structured_kernel``."""
    model, structure = plan.model, plan.structure
    state, action = structure.state, structure.action
    grid = model.states[state]
    n_states = grid.n_points
    law = compose(model, [f"next_{state}"])

    def continuation(context: Context) -> Windows:
        env, grid_points, flat_rows = context.env, context.grid_points, context.flat_rows
        n_rows, batch = context.n_rows, context.batch
        points = grid_points[state]
        padded = jnp.concatenate([points, jnp.repeat(points[-1:], n_rows - n_states)])
        # Index the rows of all contexts as one flat array: under vmap over the contexts, a
        # read of the context's own row is a 2-D gather whose index array XLA builds anew
        # (concatenated, materialised) at every step of the search.
        flat_slopes = jnp.concatenate([flat_rows[1:] - flat_rows[:-1], flat_rows[-1:] * 0])
        base = context.position * n_states

        def interpolate(landings: jnp.ndarray) -> jnp.ndarray:
            lower, weight = grid.locate(landings, points=points)
            return flat_rows[base + lower] + weight * flat_slopes[base + lower]

        def landing(w: jnp.ndarray, c: jnp.ndarray) -> jnp.ndarray:
            return law(env | {state: w, action: c})[f"next_{state}"]

        def block(indices: jnp.ndarray, chunk: jnp.ndarray) -> jnp.ndarray:
            states = jax.lax.dynamic_slice(padded, (chunk,), (batch,))
            actions = grid_points[action][indices]
            return interpolate(jax.vmap(jax.vmap(landing, (0, None)), (None, 0))(states, actions))

        def at(indices: jnp.ndarray, chunk: jnp.ndarray) -> jnp.ndarray:
            states = jax.lax.dynamic_slice(padded, (chunk,), (batch,))
            actions = grid_points[action][indices]
            return interpolate(jax.vmap(jax.vmap(landing, (None, 0)))(states, actions))

        return Windows(block=block, at=at)

    return continuation
