"""The lattice kernel: w' = a·(w - c) + b with the w step a whole multiple k of the c step.

Savings w_i - c_j then lie on a lattice of step h_c: point m = k·i - j + (n_c - 1) of
k·(n_w - 1) + n_c points. The row of next period's expected V is interpolated once per lattice
point, and the continuation of pair (i, j) is that lattice value: for action j, the states read
the lattice with stride k from offset n_c - 1 - j, one contiguous (strided) read per pair. Any
slope a works, so interest rates other than zero keep the structure.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from project.solver.kernels.structured import Context, Windows
from project.solver.plan import SolvePlan
from project.solver.sweep import compose


def lattice_continuation(plan: SolvePlan) -> Any:
    """Return the lattice continuation for ``build_structured_kernel``."""
    model, structure = plan.model, plan.structure
    state, action = structure.state, structure.action
    state_grid, action_grid = model.states[state], model.actions[action]
    ratio = structure.step_ratio
    n_actions = action_grid.n_points
    n_lattice = ratio * (state_grid.n_points - 1) + n_actions
    action_step = (action_grid.stop - action_grid.start) / (n_actions - 1)
    law = compose(model, [f"next_{state}"])

    def continuation(context: Context) -> Windows:
        env, row, grid_points = context.env, context.row, context.grid_points
        n_rows, batch = context.n_rows, context.batch
        steps = jnp.arange(n_lattice, dtype=row.dtype) - (n_actions - 1)
        savings = (state_grid.start - action_grid.start) + steps * action_step
        zero = jnp.zeros((), dtype=row.dtype)
        landing = jax.vmap(lambda s: law(env | {state: s, action: zero})[f"next_{state}"])(savings)
        lower, weight = state_grid.locate(landing, points=grid_points[state])
        values = row[lower] * (1 - weight) + row[lower + 1] * weight
        n_lines = n_rows + (n_actions - 1) // ratio + 1
        flat = jnp.concatenate([values, jnp.repeat(values[-1:], n_lines * ratio - n_lattice)])
        lines = flat.reshape(n_lines, ratio)

        def block(indices: jnp.ndarray, chunk: jnp.ndarray) -> jnp.ndarray:
            def window(o: jnp.ndarray) -> jnp.ndarray:
                start = (chunk + (o // ratio).astype(chunk.dtype), (o % ratio).astype(chunk.dtype))
                return jax.lax.dynamic_slice(lines, start, (batch, 1))[:, 0]

            return jax.vmap(window)((n_actions - 1 - indices).astype(jnp.int32))

        return Windows(block=block)

    return continuation
