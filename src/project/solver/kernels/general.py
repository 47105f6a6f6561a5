"""The general kernel: Q from the model's functions at every (state, action) pair.

It makes no assumption about the model beyond what ``Model`` validates, so every model can use
it and the structure kernels are tested against it. States are swept with ``vmap`` (or ``lax.map``
in chunks on splayed axes); at each state point the loop action is searched block by block
(``choice.running_best``), vectorised over the other actions.
"""

from __future__ import annotations

import math
from collections.abc import Callable
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
    sliced = plan.expectation.sliced

    def kernel(next_value, params, grid_points, period, age):  # noqa: ANN001, ANN202
        env = {**params, "period": period, "age": age}
        expected = prepared_next_value(
            plan, next_value=next_value, env=env, grid_points=grid_points, mesh=mesh
        )

        def q_of(state_values: dict[str, jnp.ndarray], part: Any, points: Any, utility: Any):  # noqa: ANN202
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

        at_state = _state_search(plan, q_of, env=env, grid_points=grid_points, block=block)
        axes = [
            (s, grid_points[s], model.states[s].batch_size, s in sliced) for s in plan.swept_states
        ]
        best, index = sweep(at_state, axes, expected)
        return finish(plan, best=best, index=index, env=env, grid_points=grid_points)

    return kernel


def _state_search(
    plan: SolvePlan,
    q_of: Callable[..., jnp.ndarray],
    *,
    env: dict[str, Any],
    grid_points: dict[str, jnp.ndarray],
    block: int,
) -> Callable[[dict[str, jnp.ndarray], Any], Any]:
    """Return ``at_state(state_values, part)``: (best Q, index) over the loop action there.

    ``q_of(state_values, part, points, utility)`` gives Q on the product of ``points``.
    """
    model, loop = plan.model, plan.loop_action
    tabulate = utility_is_tabulated(model)

    def at_state(state_values: dict[str, jnp.ndarray], part: Any) -> Any:
        table = None
        if tabulate:
            table = utility_table(
                model,
                env=env | state_values,
                action_points={a: grid_points[a] for a in model.action_names},
            )
        if loop is None:
            # No loop action (no action, or only taste-shocked discrete ones): Q on the
            # whole action product; ``finish`` reduces it.
            q = q_of(state_values, part, {a: grid_points[a] for a in model.action_names}, table)
            return q, jnp.zeros(q.shape, dtype=jnp.int32)
        position = model.action_names.index(loop)

        def q_of_indices(indices: jnp.ndarray) -> jnp.ndarray:
            points = {a: grid_points[a] for a in model.action_names}
            points[loop] = grid_points[loop][indices]
            utility = None if table is None else jnp.take(table, indices, axis=position)
            return jnp.moveaxis(q_of(state_values, part, points, utility), position, -1)

        q_at = _pointwise_q(
            plan,
            lambda points, utility: q_of(state_values, part, points, utility),
            table=table,
            grid_points=grid_points,
        )
        return running_best(
            q_of_indices, n_points=model.actions[loop].n_points, block=block, q_at=q_at
        )

    return at_state


def _pointwise_q(
    plan: SolvePlan,
    q_of: Callable[..., jnp.ndarray],
    *,
    table: jnp.ndarray | None,
    grid_points: dict[str, jnp.ndarray],
) -> Callable[[jnp.ndarray], jnp.ndarray]:
    """Return ``q_at(indices)``: Q at per-element loop-action indices (``running_best``)."""
    model, loop = plan.model, plan.loop_action

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

    return q_at
