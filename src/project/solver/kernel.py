"""Build the period kernel: Q(s, a) = u(s, a) + beta * E[V_{t+1}(s')], maximised over actions.

One jitted kernel serves every period (``period`` and ``age`` are run-time arguments; the last
period discards the continuation), so the model compiles once and compile time does not grow
with the horizon. Sharing one kernel with the last period costs one period's continuation work
and saves compiling a second kernel (about 0.15-0.25 s per model on a 2-core CPU).
How V_{t+1} enters (pre-contracted W, kept outcomes, permanent axes) is set out in
``expectation.py``. With a mesh, V and the policy are sharded along the permanent states and the
kernel reads only the device's own block of V_{t+1}: it contains no all-gather.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding

from project.devices import value_spec
from project.grids import Grid
from project.model.spec import DISCOUNT_FACTOR, Model, transition_target
from project.solver.choice import best_action, use_blocks
from project.solver.expectation import ExpectationPlan, build_contraction, prepare_next_value
from project.solver.interpolation import interpolate_value
from project.solver.sweep import compose, sweep, weighted_sum

Kernel = Callable[..., tuple[jnp.ndarray, dict[str, jnp.ndarray]]]


def _joint_probabilities(probabilities: list[jnp.ndarray]) -> jnp.ndarray:
    joint = jnp.ones(())
    for p in probabilities:
        joint = jnp.multiply.outer(joint, p)
    return joint.ravel()


def build_q_function(model: Model) -> Callable[..., jnp.ndarray]:
    """Return ``q(state_values, expected, params, grid_points, period, age)`` -> Q over actions.

    Q is evaluated on the product of the action grids, or of ``action_points`` where given.

    ``expected`` is next period's V, already contracted over the pre-contracted stochastic states
    and sliced to this state point's sliced axes (see ``prepare_next_value``). In the last period
    Q is the utility alone: the continuation is computed (from a V of zeros) and discarded, so
    one compiled kernel serves every period.
    """
    plan = ExpectationPlan.for_model(model)
    contract = build_contraction(model)
    kept_targets = [transition_target(s) for s in plan.kept]
    last_period = model.n_periods - 1
    per_action = compose(model, ["utility", *model.constraints, *kept_targets])
    per_outcome = compose(model, [f"next_{s}" for s in model.deterministic_states])
    grids: dict[str, Grid] = dict(model.states)
    kept_sizes = [grids[s].n_points for s in plan.kept]
    remaining_axes = [(s, grids[s]) for s in plan.interpolation_axes(model)]

    def q_function(
        state_values: dict[str, jnp.ndarray],
        expected: jnp.ndarray | None,
        params: dict[str, jnp.ndarray],
        grid_points: dict[str, jnp.ndarray],
        period: jnp.ndarray,
        age: jnp.ndarray,
        action_points: dict[str, jnp.ndarray] | None = None,
    ) -> jnp.ndarray:
        env = {**params, **state_values, "period": period, "age": age}
        if plan.contract_in_sweep:
            expected = contract(expected, env)

        def action_value(action_values: dict[str, jnp.ndarray], _: Any) -> jnp.ndarray:
            env_action = env | action_values
            out = per_action(env_action)
            feasible = jnp.asarray(True)
            for constraint in model.constraints:
                feasible = feasible & out[constraint]

            def outcome_value(codes: jnp.ndarray) -> jnp.ndarray:
                outcomes = {s: codes[i] for i, s in enumerate(plan.kept)}
                env_outcome = env_action | {f"next_{s}": c for s, c in outcomes.items()}
                next_states = {k[5:]: v for k, v in per_outcome(env_outcome).items()}
                return interpolate_value(
                    values=expected,
                    axes=remaining_axes,
                    next_states=next_states | outcomes,
                    grid_points=grid_points,
                )

            if plan.kept:
                codes = jnp.stack(
                    [c.ravel() for c in jnp.indices(kept_sizes, dtype=jnp.int32)], axis=-1
                )
                joint = _joint_probabilities([out[transition_target(s)] for s in plan.kept])
                continuation = weighted_sum(joint, jax.vmap(outcome_value)(codes))
            else:
                continuation = outcome_value(jnp.zeros((0,), dtype=jnp.int32))
            q = out["utility"] + params[DISCOUNT_FACTOR] * continuation
            q = jnp.where(period == last_period, out["utility"], q)
            return jnp.where(feasible, q, -jnp.inf)

        points = grid_points if action_points is None else action_points
        action_axes = [(a, points[a], 0, False) for a in model.action_names]
        return sweep(action_value, action_axes)

    return q_function


def _state_axes(
    model: Model, *, grid_points: dict[str, jnp.ndarray], splay: bool = True
) -> list[tuple[str, jnp.ndarray, int, bool]]:
    sliced = ExpectationPlan.for_model(model).sliced
    return [
        (s, grid_points[s], g.batch_size if splay else 0, s in sliced)
        for s, g in model.states.items()
    ]


def _expected(
    model: Model,
    *,
    next_value: jnp.ndarray,
    params: dict[str, jnp.ndarray],
    grid_points: dict[str, jnp.ndarray],
    period: jnp.ndarray,
    age: jnp.ndarray,
    mesh: Mesh | None = None,
) -> jnp.ndarray:
    env = {**params, "period": period, "age": age}
    prepared = prepare_next_value(model, next_value=next_value, env=env, grid_points=grid_points)
    if mesh is None:
        return prepared
    plan = ExpectationPlan.for_model(model)
    axes = [*plan.sliced, *plan.interpolation_axes(model)]
    return jax.lax.with_sharding_constraint(
        prepared, NamedSharding(mesh, value_spec(model, axis_order=axes))
    )


def build_period_kernel(model: Model, *, mesh: Mesh | None = None) -> Kernel:
    """Return the jitted kernel ``(next_value, params, grid_points, period, age) -> (V, policy)``.

    The same compiled kernel serves every period; in the last one, pass a ``next_value`` of
    zeros (see ``build_q_function``). ``policy`` maps each action to the int32 index of its
    optimal grid point per state. With a ``mesh``, V and the policy come out sharded along the
    model's permanent states.
    """
    q_function = build_q_function(model)
    action_shape = tuple(g.n_points for g in model.actions.values())
    blocks = use_blocks(math.prod(g.n_points for g in (model.states | model.actions).values()))

    def kernel(next_value, params, grid_points, period, age):  # noqa: ANN001, ANN202
        expected = _expected(
            model,
            next_value=next_value,
            params=params,
            grid_points=grid_points,
            period=period,
            age=age,
            mesh=mesh,
        )

        def best(
            state_values: dict[str, jnp.ndarray], part: jnp.ndarray | None
        ) -> tuple[jnp.ndarray, jnp.ndarray]:
            def q_of(points: dict[str, jnp.ndarray]) -> jnp.ndarray:
                return q_function(
                    state_values, part, params, grid_points, period, age, action_points=points
                )

            return best_action(
                q_of=q_of,
                action_points={a: grid_points[a] for a in model.action_names},
                blocks=blocks,
            )

        axes = _state_axes(model, grid_points=grid_points)
        value, flat_index = sweep(best, axes, expected)
        indices = jnp.unravel_index(flat_index, action_shape) if action_shape else ()
        policy = {a: i.astype(jnp.int32) for a, i in zip(model.action_names, indices, strict=True)}
        if mesh is not None:
            sharding = NamedSharding(mesh, value_spec(model))
            value = jax.lax.with_sharding_constraint(value, sharding)
            policy = jax.lax.with_sharding_constraint(policy, sharding)
        return value, policy

    return jax.jit(kernel)


def build_q_kernel(model: Model) -> Callable[..., jnp.ndarray]:
    """Return a jitted function giving Q on the full state x action product (debugging only)."""
    q_function = build_q_function(model)

    def q_all(next_value, params, grid_points, period, age):  # noqa: ANN001, ANN202
        expected = _expected(
            model,
            next_value=next_value,
            params=params,
            grid_points=grid_points,
            period=period,
            age=age,
        )
        axes = _state_axes(model, grid_points=grid_points, splay=False)
        return sweep(
            lambda values, part: q_function(values, part, params, grid_points, period, age),
            axes,
            expected,
        )

    return jax.jit(q_all)
