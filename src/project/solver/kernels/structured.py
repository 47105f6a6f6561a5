"""The frame shared by the structure kernels (``shift``, ``lattice``).

Models with one continuous state ``w`` (evenly spaced) whose law of motion is ``a·(w - c) + b``
in the one continuous action ``c`` (see ``plan.Structure``). Per discrete context the kernel
forms one row of next period's expected V (``rows.py``); the kernel-specific *continuation*
turns the row into, for a block of action points, the continuation of every state point as
contiguous windows (no per-pair interpolation). Q = u + beta * continuation is masked by the
constraints on (w, c) and searched with ``running_best``, vectorised over the state grid.
Splay on the state grid (``batch_size``) runs the search on chunks of it with ``lax.map``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

from project.model.spec import DISCOUNT_FACTOR
from project.solver.choice import finish, running_best
from project.solver.kernels.base import Kernel, prepared_next_value
from project.solver.kernels.rows import build_row_function
from project.solver.plan import SolvePlan
from project.solver.q import utility_is_tabulated
from project.solver.sweep import compose, sweep


@dataclass(frozen=True)
class Windows:
    """The continuation of one context for the state points ``offset .. offset + batch``.

    ``block(indices, offset)``: shape (len(indices), batch), one window per action index. A
    continuation whose pairs are expensive also gives ``at(indices, offset)``: per state point
    its own action indices, shape (batch, k), so the search evaluates again only each state's
    winning group instead of sweeping twice (``choice.running_best``).
    """

    block: Callable[[jnp.ndarray, jnp.ndarray], jnp.ndarray]
    at: Callable[[jnp.ndarray, jnp.ndarray], jnp.ndarray] | None = None


# (env, row, grid_points, n_rows=chunks x batch, batch=chunk length, flat_rows=every context's
# row one after the other, context=this context's position there) -> Windows of one context.
Continuation = Callable[..., Windows]


def build_structured_kernel(
    plan: SolvePlan, *, continuation: Continuation, block: int, mesh: Any = None
) -> Kernel:
    """Return a period kernel that reads the continuation through ``continuation`` windows."""
    model, structure = plan.model, plan.structure
    state, action = structure.state, structure.action
    n_states, n_actions = model.states[state].n_points, model.actions[action].n_points
    batch = min(model.states[state].batch_size or n_states, n_states)
    n_chunks = -(-n_states // batch)
    row_of = build_row_function(plan)
    tabulate = utility_is_tabulated(model)
    per_pair = compose(model, [*([] if tabulate else ["utility"]), *plan.loop_constraints])
    utility = compose(model, ["utility"])
    contexts = [s for s in plan.swept_states if s != state]
    sliced = plan.expectation.sliced

    def kernel(next_value, params, grid_points, period, age):  # noqa: ANN001, ANN202
        env = {**params, "period": period, "age": age}
        expected = prepared_next_value(
            plan, next_value=next_value, env=env, grid_points=grid_points, mesh=mesh
        )
        state_points = _padded(grid_points[state], n_chunks * batch)
        action_points = grid_points[action]
        beta = params[DISCOUNT_FACTOR]

        axes = [(s, grid_points[s], model.states[s].batch_size, s in sliced) for s in contexts] + [
            (a, grid_points[a], 0, False) for a in plan.other_actions
        ]
        rows = sweep(lambda values, part: row_of(env | values, part), axes, expected)
        context_shape = rows.shape[:-1]
        flat_rows = rows.reshape(-1)

        def at_context(values: dict[str, jnp.ndarray], row: jnp.ndarray) -> Any:
            context_env = env | values
            names = [*contexts, *plan.other_actions]
            context = (
                jnp.ravel_multi_index(tuple(values[n] for n in names), context_shape, mode="clip")
                if names
                else jnp.int32(0)
            )
            windows = continuation(
                context_env,
                row,
                grid_points,
                n_rows=n_chunks * batch,
                batch=batch,
                flat_rows=flat_rows,
                context=context,
            )

            table = None
            if tabulate:
                table = jax.vmap(lambda c: utility(context_env | {action: c})["utility"])(
                    action_points
                )

            def q_value(
                out: dict[str, jnp.ndarray], continuation: jnp.ndarray, indices: jnp.ndarray
            ) -> jnp.ndarray:
                feasible = jnp.asarray(True)
                for constraint in plan.loop_constraints:
                    feasible = feasible & out[constraint]
                reward = out["utility"] if table is None else table[indices]
                return jnp.where(feasible, reward + beta * continuation, -jnp.inf)

            def pair(w: jnp.ndarray, c: jnp.ndarray) -> dict[str, jnp.ndarray]:
                return per_pair(context_env | {state: w, action: c})

            def chunk(offset: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
                points = jax.lax.dynamic_slice(state_points, (offset,), (batch,))

                def q_of_indices(indices: jnp.ndarray) -> jnp.ndarray:
                    out = jax.vmap(jax.vmap(pair, in_axes=(None, 0)), in_axes=(0, None))(
                        points, action_points[indices]
                    )
                    return q_value(out, windows.block(indices, offset).T, indices)

                def q_at(indices: jnp.ndarray) -> jnp.ndarray:
                    out = jax.vmap(jax.vmap(pair, in_axes=(None, 0)))(
                        points, action_points[indices]
                    )
                    return q_value(out, windows.at(indices, offset), indices)

                return running_best(
                    q_of_indices,
                    n_points=n_actions,
                    block=block,
                    q_at=None if windows.at is None else q_at,
                )

            if n_chunks == 1:
                return chunk(jnp.int32(0))
            offsets = jnp.arange(n_chunks, dtype=jnp.int32) * batch
            best, index = jax.lax.map(chunk, offsets)
            return best.reshape(-1)[:n_states], index.reshape(-1)[:n_states]

        row_axes = [(name, points, size, True) for name, points, size, _ in axes]
        best, index = sweep(at_context, row_axes, rows)
        position = plan.swept_states.index(state)
        best, index = jnp.moveaxis(best, -1, position), jnp.moveaxis(index, -1, position)
        return finish(plan, best=best, index=index, env=env, grid_points=grid_points)

    return kernel


def _padded(points: jnp.ndarray, length: int) -> jnp.ndarray:
    """Return ``points`` padded to ``length`` with copies of its last point."""
    extra = length - points.shape[0]
    if extra == 0:
        return points
    return jnp.concatenate([points, jnp.repeat(points[-1:], extra)])
