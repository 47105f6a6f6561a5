"""Evaluate a grid solution at arbitrary (off-grid) states: the Bellman maximum at the exact state.

At a state ``x`` of period ``t`` the policy is the action on the action grid that maximises
``Q_t(x, a) = u(x, a) + beta·E[V_{t+1}(x')]`` with next period's V interpolated, and the value is
that maximum: the same Q the solver maximises on grid points (so V and the policy agree with the
solution there, to rounding) and the simulation maximises at each subject's state. With taste
shocks each discrete choice's value is its maximum over the continuous actions, V is their
log-sum and the choices have logit probabilities (``project.taste_shocks``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from project._xla import jit
from project.model.internal import table
from project.model.spec import Model
from project.points import float_dtype
from project.solver.choice import best_choice, choice_values, first_argmax
from project.solver.expectation import ExpectationPlan, prepare_next_value
from project.solver.grid_cache import grid_points_of
from project.solver.q import build_q_function
from project.taste_shocks import TASTE_SHOCK_SCALE, log_sum_and_probabilities

if TYPE_CHECKING:
    from project.solver.solution import Solution

EVALUATORS = table("grid evaluators, terminal or not")


class StateChoice(NamedTuple):
    """The choice at one state: V, the maximiser, the discrete choices' probabilities and Q.

    ``value``: the maximum of Q, or with taste shocks the log-sum over the discrete choices of
    their best values. ``actions``: the maximising action values (with taste shocks the most
    likely discrete choice and the best continuous actions given it). ``probabilities``: over
    the discrete choices (``choice.choice_values`` order); without taste shocks one-hot at the
    maximiser's choice. ``q``: Q on the action product (model order).
    """

    value: jnp.ndarray
    actions: dict[str, jnp.ndarray]
    probabilities: jnp.ndarray
    q: jnp.ndarray


def evaluate_grid_solution(
    solution: Solution, *, period: int, states: Mapping[str, np.ndarray]
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Return (value, optimal action values) at ``states`` (validated arrays) in ``period``."""
    value, actions, _ = _evaluate(solution, period=period, states=states)
    return value, actions


def evaluate_choice_probabilities(
    solution: Solution, *, period: int, states: Mapping[str, np.ndarray]
) -> np.ndarray:
    """Return the discrete choices' probabilities at ``states``, shape (n_states, n_choices)."""
    return _evaluate(solution, period=period, states=states)[2]


def _evaluate(
    solution: Solution, *, period: int, states: Mapping[str, np.ndarray]
) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray]:
    """Return (value, optimal action values, choice probabilities) at ``states``."""
    model = solution.model
    terminal = period == model.n_periods - 1
    evaluate = _evaluator(model, terminal=terminal)
    params = {k: jnp.asarray(v, dtype=float_dtype()) for k, v in solution.params.items()}
    points = grid_points_of(model)
    next_value = solution.next_value(period)
    dtype = float_dtype()
    typed = {
        name: jnp.asarray(values, dtype=jnp.int32 if model.states[name].is_discrete else dtype)
        for name, values in states.items()
    }
    value, actions, probabilities = evaluate(
        typed,
        next_value,
        params,
        points,
        jnp.int32(period),
        jnp.asarray(model.ages[period], dtype=dtype),
    )
    return (
        np.asarray(value),
        {a: np.asarray(v) for a, v in actions.items()},
        np.asarray(probabilities),
    )


def _evaluator(model: Model, *, terminal: bool) -> Callable[..., Any]:
    cache = EVALUATORS.of(model)
    if terminal not in cache:
        cache[terminal] = _build(model, terminal=terminal)
    return cache[terminal]


def build_state_choice(model: Model, *, terminal: bool) -> Callable[..., StateChoice]:
    """Return ``choose(state_values, expected, params, points, period, age)`` at one state.

    ``expected`` is next period's V as ``prepare_next_value`` returns it (whole; the sliced axes
    are indexed here). It returns the ``StateChoice``: V, the maximiser of Q over the action
    grid (first in the model's flat action order, as the solver breaks ties), the discrete
    choices' probabilities and Q itself (for ``actions_given_choice``).
    """
    plan = ExpectationPlan.for_model(model)
    q_function = build_q_function(model, continuation=not terminal)
    action_shape = tuple(g.n_points for g in model.actions.values())
    discrete_shape = tuple(model.actions[a].n_points for a in model.discrete_actions)

    def choose(state_values, expected, params, points, period, age):  # noqa: ANN001, ANN202
        part = expected
        for state in plan.sliced:
            part = part[state_values[state]]
        q = q_function(state_values, part, params, points, period, age)
        highest, index = best_choice(q.ravel())
        positions = jnp.unravel_index(index, action_shape) if action_shape else ()
        codes = dict(zip(model.action_names, positions, strict=True))
        actions = {a: points[a][i] for a, i in codes.items()}
        if model.taste_shocks:
            per_choice = choice_values(q, model=model, actions=model.action_names, lead=0)
            value, probabilities = log_sum_and_probabilities(
                per_choice, scale=params[TASTE_SHOCK_SCALE]
            )
        else:
            chosen = (
                jnp.ravel_multi_index(
                    tuple(codes[a] for a in model.discrete_actions), discrete_shape, mode="clip"
                )
                if discrete_shape
                else jnp.int32(0)
            )
            value = highest
            probabilities = jax.nn.one_hot(chosen, math.prod(discrete_shape), dtype=q.dtype)
        return StateChoice(value=value, actions=actions, probabilities=probabilities, q=q)

    return choose


def actions_given_choice(
    model: Model, *, q: jnp.ndarray, choice: jnp.ndarray, points: dict[str, jnp.ndarray]
) -> dict[str, jnp.ndarray]:
    """Return the action values of discrete choice ``choice`` and the best continuous ones.

    ``q`` is Q on the action product at one state (model order); the continuous actions
    maximise it given the choice (first maximiser in their flat order).
    """
    discrete = [model.action_names.index(a) for a in model.discrete_actions]
    rows = jnp.moveaxis(q, discrete, list(range(len(discrete))))
    continuous = rows.shape[len(discrete) :]
    row = rows.reshape(-1, math.prod(continuous))[choice]
    discrete_shape = rows.shape[: len(discrete)]
    codes = dict(
        zip(model.discrete_actions, jnp.unravel_index(choice, discrete_shape), strict=True)
    )
    others = [a for a in model.action_names if a not in codes]
    if others:
        best = first_argmax(row, axis=-1)
        codes |= dict(zip(others, jnp.unravel_index(best, continuous), strict=True))
    return {a: points[a][codes[a]] for a in model.action_names}


def _build(model: Model, *, terminal: bool) -> Callable[..., Any]:
    choose = build_state_choice(model, terminal=terminal)

    def evaluate(states, next_value, params, points, period, age):  # noqa: ANN001, ANN202
        env = {**params, "period": period, "age": age}
        expected = prepare_next_value(model, next_value=next_value, env=env, grid_points=points)

        def at(state_values: dict[str, jnp.ndarray]) -> Any:
            chosen = choose(state_values, expected, params, points, period, age)
            return chosen.value, chosen.actions, chosen.probabilities

        return jax.vmap(at)(states)

    return jit(evaluate)
