"""Q(s, a) = u(s, a) + beta * E[V_{t+1}(s')] at one state point, over a product of action points.

A model's ``continuation_scale`` (``project.model.continuation``) multiplies each outcome's and
shock node's V_{t+1} inside the expectation.

The general kernel, the debugging Q kernel and the simulation all evaluate Q through this one
function, so they agree by construction. How next period's V enters (pre-contracted W, kept
outcomes, permanent axes) is set out in ``expectation.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp

from project._xla import jit
from project.grids import code_combinations
from project.model.continuation import CONTINUATION_SCALE, has_continuation_scale
from project.model.names import DISCOUNT_FACTOR, transition_target
from project.model.spec import Model
from project.shocks import shock_tables
from project.solver.expectation import (
    ExpectationPlan,
    build_contraction,
    for_actions,
    prepare_next_value,
)
from project.solver.interpolation import interpolate_value
from project.solver.sweep import compose, sweep, weighted_sum

QFunction = Callable[..., jnp.ndarray]


def joint_probabilities(probabilities: Sequence[jnp.ndarray]) -> jnp.ndarray:
    """Return the flattened outer product of independent probability vectors."""
    joint = jnp.ones(())
    for p in probabilities:
        joint = jnp.multiply.outer(joint, p)
    return joint.ravel()


def build_q_function(
    model: Model,
    *,
    constraints: Sequence[str] | None = None,
    continuation: bool = True,
) -> QFunction:
    """Return ``q(state_values, expected, params, grid_points, period, age, action_points)``.

    Q is evaluated on the product of ``action_points`` (one array per action, in the model's
    order; default: the action grids), infeasible actions get -inf. ``utility``, if given,
    holds the utility on that product (precomputed). ``constraints`` (default: all) are the
    constraints checked here. ``expected`` is next period's V prepared by
    ``prepare_next_value`` and sliced to this state point. With ``continuation=False`` (the last
    period) Q is the utility alone and ``expected`` is ignored.
    """
    plan = ExpectationPlan.for_model(model)
    contract = build_contraction(model)
    checked = list(model.constraints if constraints is None else constraints)
    kept_targets = [transition_target(s) for s in plan.kept] if continuation else []
    per_action = compose(model, ["utility", *checked, *kept_targets])
    without_utility = compose(model, [*checked, *kept_targets])
    expected_value = _outcome_expectation(model, plan)

    def q_function(
        state_values: dict[str, jnp.ndarray],
        expected: jnp.ndarray | None,
        params: dict[str, jnp.ndarray],
        grid_points: dict[str, jnp.ndarray],
        period: jnp.ndarray,
        age: jnp.ndarray,
        action_points: dict[str, jnp.ndarray] | None = None,
        utility: jnp.ndarray | None = None,
    ) -> jnp.ndarray:
        env = {**params, **state_values, "period": period, "age": age}
        if continuation and plan.contract_in_sweep:
            expected = contract(expected, env)
        shocks = shock_tables(model.shocks, params)[:2]  # values and weights of the nodes

        def action_value(action_values: dict[str, jnp.ndarray], given: Any) -> jnp.ndarray:
            env_action = env | action_values
            if utility is None:
                out = per_action(env_action)
            else:
                out = without_utility(env_action) | {"utility": given}
            feasible = jnp.asarray(True)
            for constraint in checked:
                feasible = feasible & out[constraint]
            if not continuation:
                return jnp.where(feasible, out["utility"], -jnp.inf)
            reading = for_actions(model, expected, env_action)
            value = expected_value(env_action, out, reading, grid_points, shocks)
            q = out["utility"] + params[DISCOUNT_FACTOR] * value
            return jnp.where(feasible, q, -jnp.inf)

        points = grid_points if action_points is None else action_points
        given = utility is not None
        action_axes = [(a, points[a], 0, given) for a in model.action_names]
        return sweep(action_value, action_axes, utility)

    return q_function


def _outcome_expectation(model: Model, plan: ExpectationPlan) -> Callable[..., jnp.ndarray]:
    """Return ``expected(env_action, out, reading, grid_points, shocks)``: E[scale · V'].

    Over every kept outcome (and shock node) of one action, weighted by its joint probability
    (``out``'s transition targets times the shocks' weights; ``shocks``: the nodes' values and
    weights); next period's V (``reading``) interpolated at the landing.
    """
    kept_sizes = [model.states[s].n_points for s in plan.kept]
    per_outcome = compose(model, [f"next_{s}" for s in model.deterministic_states])
    scale = compose(model, [CONTINUATION_SCALE]) if has_continuation_scale(model) else None
    remaining_axes = [(s, model.states[s]) for s in plan.interpolation_axes(model)]

    def expected(
        env_action: dict[str, Any],
        out: dict[str, Any],
        reading: jnp.ndarray,
        grid_points: dict[str, jnp.ndarray],
        shocks: tuple[dict[str, jnp.ndarray], jnp.ndarray],
    ) -> jnp.ndarray:
        shock_values, shock_weights = shocks

        def outcome_value(
            codes: jnp.ndarray, shocks: dict[str, jnp.ndarray] | None = None
        ) -> jnp.ndarray:
            outcomes = {s: codes[i] for i, s in enumerate(plan.kept)}
            env_outcome = env_action | {f"next_{s}": c for s, c in outcomes.items()}
            env_outcome |= shocks or {}
            next_states = {k[5:]: v for k, v in per_outcome(env_outcome).items()}
            value = interpolate_value(
                values=reading,
                axes=remaining_axes,
                next_states=next_states | outcomes,
                grid_points=grid_points,
            )
            if scale is None:
                return value
            return scale(env_outcome)[CONTINUATION_SCALE] * value

        if not (plan.kept or model.shocks):
            return outcome_value(jnp.zeros((0,), dtype=jnp.int32))
        codes = jnp.asarray(code_combinations(kept_sizes))
        joint = joint_probabilities([out[transition_target(s)] for s in plan.kept])
        if model.shocks:
            values = jax.vmap(lambda c: jax.vmap(lambda v: outcome_value(c, v))(shock_values))(
                codes
            ).ravel()
            joint = jnp.multiply.outer(joint, shock_weights).ravel()
        else:
            values = jax.vmap(outcome_value)(codes)
        return weighted_sum(joint, values)

    return expected


def build_q_kernel(model: Model, *, continuation: bool = True) -> Callable[..., jnp.ndarray]:
    """Return a jitted function giving Q on the full state x action product (debugging only).

    Its arguments are ``(next_value, params, grid_points, period, age)``.
    """
    q_function = build_q_function(model, continuation=continuation)
    sliced = ExpectationPlan.for_model(model).sliced if continuation else ()

    def q_all(next_value, params, grid_points, period, age):  # noqa: ANN001, ANN202
        env = {**params, "period": period, "age": age}
        expected = None
        if continuation:
            expected = prepare_next_value(
                model, next_value=next_value, env=env, grid_points=grid_points
            )
        axes = [(s, grid_points[s], 0, s in sliced) for s in model.state_names]
        return sweep(
            lambda values, part: q_function(values, part, params, grid_points, period, age),
            axes,
            expected,
        )

    return jit(q_all)


def utility_table(
    model: Model,
    *,
    env: dict[str, Any],
    action_points: dict[str, jnp.ndarray],
) -> jnp.ndarray:
    """Return the utility on the product of ``action_points`` (``env``: everything else)."""
    utility = compose(model, ["utility"])
    axes = [(a, action_points[a], 0, False) for a in model.action_names]
    return sweep(lambda values, _: utility(env | values)["utility"], axes)


def utility_is_tabulated(model: Model) -> bool:
    """Return whether utility is precomputed per action point (it ignores continuous states)."""
    continuous = {s for s, g in model.states.items() if not g.is_discrete}
    return not model.ancestors("utility") & continuous
