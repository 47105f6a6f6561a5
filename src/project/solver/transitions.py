"""Check stochastic transitions on the grid: probabilities non-negative and summing to one.

Each transition is evaluated only on the grids of the states and actions it depends on, for
every period at once, and reduced on the device to one row per period.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from project.errors import InvalidTransitionError, ModelSpecificationError
from project.model.spec import Model, transition_target
from project.points import float_dtype
from project.solver.sweep import compose, sweep

_CHECKERS: weakref.WeakKeyDictionary[Model, dict[str, Callable[..., Any]]] = (
    weakref.WeakKeyDictionary()
)


def _probability_checker(model: Model, state: str) -> Callable[..., Any]:
    """Return the jitted (periods, ages, params, grid_points) -> probabilities, built once."""
    checkers = _CHECKERS.setdefault(model, {})
    if state not in checkers:
        target = transition_target(state)
        inputs = [n for n in (model.states | model.actions) if n in model.ancestors(target)]
        probabilities = compose(model, [target])

        def stacked(periods, ages, params, grid_points):  # noqa: ANN001, ANN202
            def per_period(period, age):  # noqa: ANN001, ANN202
                env = {**params, "period": period, "age": age}
                axes = [(n, grid_points[n], 0, False) for n in inputs]
                return sweep(lambda values, _: probabilities(env | values)[target], axes)

            return jax.vmap(per_period)(periods, ages)

        checkers[state] = (jax.jit(stacked), inputs)
    return checkers[state]


def check_transition_probabilities(
    *,
    model: Model,
    params: dict[str, jnp.ndarray],
    grid_points: dict[str, jnp.ndarray],
) -> None:
    """Raise ``InvalidTransitionError`` naming the state and period of the first bad vector."""
    tolerance = 1e-10 if float_dtype() == np.float64 else 1e-5
    periods = jnp.arange(model.n_periods, dtype=jnp.int32)
    ages = jax.device_put(np.asarray(model.ages, dtype=float_dtype()))
    for state in model.stochastic_transitions:
        checker, inputs = _probability_checker(model, state)
        stacked = checker(periods, ages, params, grid_points)
        n_categories = model.states[state].n_points
        if stacked.shape[-1] != n_categories:
            msg = (
                f"Model {model.name!r}: the transition of {state!r} returns "
                f"{stacked.shape[-1]} probabilities, but {state!r} has {n_categories} "
                "categories. Return one probability per category."
            )
            raise ModelSpecificationError(msg)
        flat = stacked.reshape(model.n_periods, -1, n_categories)
        lowest = np.asarray(jnp.min(flat, axis=(1, 2)))
        worst_sum = np.asarray(jnp.max(jnp.abs(flat.sum(axis=-1) - 1.0), axis=1))
        bad = np.flatnonzero(~(lowest >= -tolerance) | ~(worst_sum <= tolerance))
        if bad.size:
            period = int(bad[0])
            msg = (
                f"Model {model.name!r}: the transition probabilities of state {state!r} in "
                f"period {period} (age {model.ages[period]:g}) are invalid: smallest "
                f"{lowest[period]:.3g}, largest |sum - 1| {worst_sum[period]:.3g} over "
                f"{inputs or 'no inputs'}. Return a probability vector that is non-negative "
                "and sums to one on every grid point."
            )
            raise InvalidTransitionError(msg)
