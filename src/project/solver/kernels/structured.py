"""The frame shared by the structure kernels (``row``, ``shift``, ``lattice``).

Models with one continuous state ``w`` and one continuous action ``c`` whose continuation
depends on the discrete context (discrete states and actions) only through one row of next
period's expected V along the ``w`` grid (``plan.Structure``). Per period the frame forms every
context's row (``context_rows.py``); the kernel-specific *continuation* turns a context's row
into, for a block of action points, the continuation of every state point. Q = u + beta *
continuation is masked by the constraints on (w, c) and searched with ``running_best``,
vectorised over the state grid. Splay on the state grid (``batch_size``) runs the search on
chunks of it with ``lax.map``.

The rows of all contexts are also handed over as one flat array per block of the permanent
(sharded) states, so that a continuation that reads rows point by point (the row kernel)
indexes a 1-D array: under ``vmap``, reading a context's own row is a 2-D gather whose index
array XLA rebuilds at every step of the search. Keeping the permanent axes apart keeps each
device on its own block.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

from project.model.names import DISCOUNT_FACTOR
from project.solver.choice import finish, running_best
from project.solver.kernels.base import Kernel, prepared_next_value
from project.solver.kernels.context_rows import build_row_function
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


@dataclass(frozen=True)
class Context:
    """What a continuation sees of one discrete context.

    ``env``: params, period, age and the context's discrete states and actions; ``row``: next
    period's expected V along the state grid; ``n_rows``: state points after padding to whole
    chunks of ``batch``; ``flat_rows``: the rows of all contexts of this block of the permanent
    states, one after the other, this one at ``position``.
    """

    env: dict[str, Any]
    row: jnp.ndarray
    grid_points: dict[str, jnp.ndarray]
    n_rows: int
    batch: int
    flat_rows: jnp.ndarray
    position: jnp.ndarray


Continuation = Callable[[Context], Windows]


def build_structured_kernel(
    plan: SolvePlan, *, continuation: Continuation, block: int, mesh: Any = None
) -> Kernel:
    """Return a period kernel that reads the continuation through ``continuation`` windows."""
    model, structure = plan.model, plan.structure
    state = structure.state
    contexts = [s for s in plan.swept_states if s != state]
    names = [*contexts, *plan.other_actions]
    permanent = [i for i, n in enumerate(names) if n in model.permanent_states]
    others = [i for i in range(len(names)) if i not in permanent]
    row_of = build_row_function(plan)
    search = _context_search(plan, continuation=continuation, block=block)

    def kernel(next_value, params, grid_points, period, age):  # noqa: ANN001, ANN202
        env = {**params, "period": period, "age": age}
        expected = prepared_next_value(
            plan, next_value=next_value, env=env, grid_points=grid_points, mesh=mesh
        )
        axes = [
            (n, grid_points[n], _batch_size(model, n), n in plan.expectation.sliced) for n in names
        ]
        rows = sweep(lambda values, part: row_of(env | values, part), axes, expected)
        by_block = jnp.moveaxis(rows, permanent, list(range(len(permanent))))
        other_shape = tuple(rows.shape[i] for i in others)

        def in_block(block_values: dict[str, jnp.ndarray], block_rows: jnp.ndarray) -> Any:
            flat_rows = block_rows.reshape(-1)

            def at_context(values: dict[str, jnp.ndarray], row: jnp.ndarray) -> Any:
                codes = tuple(values[names[i]] for i in others)
                context = (
                    jnp.ravel_multi_index(codes, other_shape, mode="clip")
                    if codes
                    else jnp.int32(0)
                )
                return search(
                    env | block_values | values,
                    grid_points,
                    row=row,
                    flat_rows=flat_rows,
                    position=context,
                )

            inner = [(*axes[i][:3], True) for i in others]
            return sweep(at_context, inner, block_rows)

        outer = [(*axes[i][:3], True) for i in permanent]
        best, index = sweep(in_block, outer, by_block)
        order = list(range(len(permanent)))
        best, index = jnp.moveaxis(best, order, permanent), jnp.moveaxis(index, order, permanent)
        position = plan.swept_states.index(state)
        best, index = jnp.moveaxis(best, -1, position), jnp.moveaxis(index, -1, position)
        return finish(plan, best=best, index=index, env=env, grid_points=grid_points)

    return kernel


def _batch_size(model: Any, name: str) -> int:
    """Return the splay chunk length of a state's axis (0 for actions and unsplayed states)."""
    return model.states[name].batch_size if name in model.states else 0


def _context_search(plan: SolvePlan, *, continuation: Continuation, block: int) -> Callable:
    """Return ``search(env, grid_points, row, flat_rows, context)`` -> (best, index) over w."""
    model, structure = plan.model, plan.structure
    state, action = structure.state, structure.action
    n_states, n_actions = model.states[state].n_points, model.actions[action].n_points
    batch = min(model.states[state].batch_size or n_states, n_states)
    n_chunks = -(-n_states // batch)
    tabulate = utility_is_tabulated(model)
    per_pair = compose(model, [*([] if tabulate else ["utility"]), *plan.loop_constraints])
    utility = compose(model, ["utility"])

    def search(env: dict[str, Any], grid_points: dict[str, jnp.ndarray], **rows: Any) -> Any:
        state_points = _padded(grid_points[state], n_chunks * batch)
        action_points = grid_points[action]
        beta = env[DISCOUNT_FACTOR]
        windows = continuation(
            Context(env=env, grid_points=grid_points, n_rows=n_chunks * batch, batch=batch, **rows)
        )
        table = None
        if tabulate:
            table = jax.vmap(lambda c: utility(env | {action: c})["utility"])(action_points)

        def q_value(out: dict[str, Any], continued: jnp.ndarray, indices: jnp.ndarray) -> Any:
            feasible = jnp.asarray(True)
            for constraint in plan.loop_constraints:
                feasible = feasible & out[constraint]
            reward = out["utility"] if table is None else table[indices]
            return jnp.where(feasible, reward + beta * continued, -jnp.inf)

        def pair(w: jnp.ndarray, c: jnp.ndarray) -> dict[str, jnp.ndarray]:
            return per_pair(env | {state: w, action: c})

        def chunk(offset: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
            points = jax.lax.dynamic_slice(state_points, (offset,), (batch,))

            def q_of_indices(indices: jnp.ndarray) -> jnp.ndarray:
                out = jax.vmap(jax.vmap(pair, in_axes=(None, 0)), in_axes=(0, None))(
                    points, action_points[indices]
                )
                return q_value(out, windows.block(indices, offset).T, indices)

            def q_at(indices: jnp.ndarray) -> jnp.ndarray:
                out = jax.vmap(jax.vmap(pair, in_axes=(None, 0)))(points, action_points[indices])
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

    return search


def _padded(points: jnp.ndarray, length: int) -> jnp.ndarray:
    """Return ``points`` padded to ``length`` with copies of its last point."""
    extra = length - points.shape[0]
    if extra == 0:
        return points
    return jnp.concatenate([points, jnp.repeat(points[-1:], extra)])
