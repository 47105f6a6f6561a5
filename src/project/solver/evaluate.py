"""Evaluate a grid solution at arbitrary (off-grid) states: the Bellman maximum at the exact state.

At a state ``x`` of period ``t`` the policy is the action on the action grid that maximises
``Q_t(x, a) = u(x, a) + beta·E[V_{t+1}(x')]`` with next period's V interpolated, and the value is
that maximum: the same Q the solver maximises on grid points (so V and the policy agree with the
solution there, to rounding) and the simulation maximises at each subject's state.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np

from project.model.spec import Model
from project.points import float_dtype
from project.solver.choice import best_choice
from project.solver.expectation import ExpectationPlan, prepare_next_value
from project.solver.grid_cache import grid_points_of
from project.solver.q import build_q_function

if TYPE_CHECKING:
    from project.solver.solution import Solution

_EVALUATORS: weakref.WeakKeyDictionary[Model, dict[bool, Callable[..., Any]]] = (
    weakref.WeakKeyDictionary()
)


def evaluate_grid_solution(
    solution: Solution, *, period: int, states: Mapping[str, np.ndarray]
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Return (value, optimal action values) at ``states`` (validated arrays) in ``period``."""
    model = solution.model
    terminal = period == model.n_periods - 1
    evaluate = _evaluator(model, terminal=terminal)
    params = {k: jnp.asarray(v, dtype=float_dtype()) for k, v in solution.params.items()}
    points = grid_points_of(model)
    next_value = (
        solution.values[period + 1] if not terminal else jnp.zeros_like(solution.values[period])
    )
    dtype = float_dtype()
    typed = {
        name: jnp.asarray(values, dtype=jnp.int32 if model.states[name].is_discrete else dtype)
        for name, values in states.items()
    }
    value, actions = evaluate(
        typed,
        next_value,
        params,
        points,
        jnp.int32(period),
        jnp.asarray(model.ages[period], dtype=dtype),
    )
    return np.asarray(value), {a: np.asarray(v) for a, v in actions.items()}


def _evaluator(model: Model, *, terminal: bool) -> Callable[..., Any]:
    cache = _EVALUATORS.setdefault(model, {})
    if terminal not in cache:
        cache[terminal] = _build(model, terminal=terminal)
    return cache[terminal]


def build_state_choice(model: Model, *, terminal: bool) -> Callable[..., Any]:
    """Return ``choose(state_values, expected, params, points, period, age)`` at one state.

    ``expected`` is next period's V as ``prepare_next_value`` returns it (whole; the sliced axes
    are indexed here). It returns the maximum of Q over the action grid and the maximising
    action values.
    """
    plan = ExpectationPlan.for_model(model)
    q_function = build_q_function(model, continuation=not terminal)
    action_shape = tuple(g.n_points for g in model.actions.values())

    def choose(state_values, expected, params, points, period, age):  # noqa: ANN001, ANN202
        part = expected
        for state in plan.sliced:
            part = part[state_values[state]]
        q = q_function(state_values, part, params, points, period, age).ravel()
        value, index = best_choice(q)
        positions = jnp.unravel_index(index, action_shape) if action_shape else ()
        actions = {a: points[a][i] for a, i in zip(model.action_names, positions, strict=True)}
        return value, actions

    return choose


def _build(model: Model, *, terminal: bool) -> Callable[..., Any]:
    choose = build_state_choice(model, terminal=terminal)

    def evaluate(states, next_value, params, points, period, age):  # noqa: ANN001, ANN202
        env = {**params, "period": period, "age": age}
        expected = prepare_next_value(model, next_value=next_value, env=env, grid_points=points)
        return jax.vmap(lambda s: choose(s, expected, params, points, period, age))(states)

    return jax.jit(evaluate)
