"""The general kernel: Q from the model's functions at every (state, action) pair.

It makes no assumption about the model beyond what ``Model`` validates, so every model can use
it and the structure kernels are tested against it. States are swept with ``vmap`` (or ``lax.map``
in chunks on splayed axes); at each state point the loop action is searched block by block
(``choice.running_best``), vectorised over the other actions.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp

from project.solver.choice import finish, running_best
from project.solver.kernels.base import Kernel, prepared_next_value
from project.solver.plan import SolvePlan
from project.solver.q import build_q_function, utility_is_tabulated, utility_table
from project.solver.sweep import sweep


def build_general_kernel(plan: SolvePlan, *, block: int, mesh: Any = None) -> Kernel:
    """Return the general period kernel ``(next_value, params, grid_points, period, age)``."""
    model = plan.model
    q_function = build_q_function(model, constraints=plan.loop_constraints)
    loop = plan.loop_action
    sliced = plan.expectation.sliced
    tabulate = utility_is_tabulated(model)

    def kernel(next_value, params, grid_points, period, age):  # noqa: ANN001, ANN202
        env = {**params, "period": period, "age": age}
        expected = prepared_next_value(
            plan, next_value=next_value, env=env, grid_points=grid_points, mesh=mesh
        )

        def at_state(state_values: dict[str, jnp.ndarray], part: Any) -> Any:
            table = None
            if tabulate:
                table = utility_table(
                    model,
                    env=env | state_values,
                    action_points={a: grid_points[a] for a in model.action_names},
                )

            def q_of(points: dict[str, jnp.ndarray], utility: Any = None) -> jnp.ndarray:
                return q_function(
                    state_values,
                    part,
                    params,
                    grid_points,
                    period,
                    age,
                    action_points=points,
                    utility=utility,
                )

            if loop is None:
                # No loop action (no action, or only taste-shocked discrete ones): Q on the
                # whole action product; ``finish`` reduces it.
                q = q_of({a: grid_points[a] for a in model.action_names}, table)
                return q, jnp.zeros(q.shape, dtype=jnp.int32)
            position = model.action_names.index(loop)

            def q_of_indices(indices: jnp.ndarray) -> jnp.ndarray:
                points = {a: grid_points[a] for a in model.action_names}
                points[loop] = grid_points[loop][indices]
                utility = None if table is None else jnp.take(table, indices, axis=position)
                return jnp.moveaxis(q_of(points, utility), position, -1)

            def q_at(indices: jnp.ndarray) -> jnp.ndarray:
                other_shape, width = indices.shape[:-1], indices.shape[-1]
                combos = jnp.unravel_index(jnp.arange(math.prod(other_shape)), other_shape)

                def one(combo: tuple[jnp.ndarray, ...], loop_indices: jnp.ndarray) -> Any:
                    chosen = dict(zip(plan.other_actions, combo, strict=True))
                    chosen[loop] = loop_indices
                    points = {a: grid_points[a][chosen[a]].reshape(-1) for a in model.action_names}
                    utility = None
                    if table is not None:
                        shape = [width if a == loop else 1 for a in model.action_names]
                        utility = table[tuple(chosen[a] for a in model.action_names)].reshape(shape)
                    return q_of(points, utility).reshape(width)

                flat = jax.vmap(one)(combos, indices.reshape(-1, width))
                return flat.reshape(*other_shape, width)

            return running_best(
                q_of_indices, n_points=model.actions[loop].n_points, block=block, q_at=q_at
            )

        axes = [
            (s, grid_points[s], model.states[s].batch_size, s in sliced) for s in plan.swept_states
        ]
        best, index = sweep(at_state, axes, expected)
        return finish(plan, best=best, index=index, env=env, grid_points=grid_points)

    return kernel
