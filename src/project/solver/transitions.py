"""Check stochastic transitions on the grid: probabilities non-negative and summing to one.

Each transition is evaluated only on the grids of the states and actions it depends on, for
every period at once, and reduced on the device to one row per period. The solve program decides
validity per period (``facts.py``); only when a check fails are the figures for the message
computed again (``raise_for_invalid_transitions``).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from project._xla import jit
from project.errors import InvalidTransitionError, ModelSpecificationError
from project.model.internal import Fact
from project.model.names import transition_target
from project.model.spec import Model
from project.points import float_dtype
from project.solver.sweep import compose, sweep

STATS: Fact[Any] = Fact(
    "transition statistics program",
    build=lambda model: jit(
        lambda params, grid_points, periods, ages: transition_stats(
            model, params=params, grid_points=grid_points, periods=periods, ages=ages
        )
    ),
)


def transition_inputs(model: Model, state: str) -> list[str]:
    """Return the states and actions the transition of ``state`` depends on."""
    ancestors = model.ancestors(transition_target(state))
    return [n for n in (model.states | model.actions) if n in ancestors]


def transition_stats(
    model: Model,
    *,
    params: dict[str, jnp.ndarray],
    grid_points: dict[str, jnp.ndarray],
    periods: jnp.ndarray,
    ages: jnp.ndarray,
) -> dict[str, tuple[jnp.ndarray, jnp.ndarray]]:
    """Return, per stochastic state, the smallest probability and largest |sum - 1| per period.

    Raises ``ModelSpecificationError`` (at trace time) when a transition returns the wrong number
    of probabilities.
    """
    stats = {}
    for state in model.stochastic_transitions:
        target = transition_target(state)
        probabilities = compose(model, [target])
        inputs = transition_inputs(model, state)

        def per_period(period, age, probabilities=probabilities, inputs=inputs, target=target):  # noqa: ANN001, ANN202
            env = {**params, "period": period, "age": age}
            axes = [(n, grid_points[n], 0, False) for n in inputs]
            return sweep(lambda values, _: probabilities(env | values)[target], axes)

        stacked = jax.vmap(per_period)(periods, ages)
        n_categories = model.states[state].n_points
        if stacked.shape[-1] != n_categories:
            msg = (
                f"Model {model.name!r}: the transition of {state!r} returns "
                f"{stacked.shape[-1]} probabilities, but {state!r} has {n_categories} "
                "categories. Return one probability per category."
            )
            raise ModelSpecificationError(msg)
        flat = stacked.reshape(periods.shape[0], -1, n_categories)
        lowest = jnp.min(flat, axis=(1, 2))
        worst_sum = jnp.max(jnp.abs(flat.sum(axis=-1) - 1.0), axis=1)
        stats[state] = (lowest, worst_sum)
    return stats


def transitions_valid(lowest: Any, worst_sum: Any) -> Any:
    """Return, per period, whether no probability is below 0 and no sum strays from 1.

    Works on JAX arrays (inside the solve program) and NumPy arrays alike; the tolerance
    follows the precision: 1e-10 in float64, 1e-5 in float32.
    """
    tolerance = 1e-10 if np.dtype(lowest.dtype) == np.float64 else 1e-5
    return (lowest >= -tolerance) & (worst_sum <= tolerance)


def raise_for_invalid_transitions(
    model: Model, *, params: dict[str, Any], grid_points: dict[str, jnp.ndarray]
) -> None:
    """Raise ``InvalidTransitionError`` naming the state and period of the first bad vector."""
    stats = STATS.of(model)(
        params,
        grid_points,
        jnp.arange(model.n_periods, dtype=jnp.int32),
        np.asarray(model.ages, dtype=float_dtype()),
    )
    for state, (low, worst) in stats.items():
        lowest, worst_sum = np.asarray(low), np.asarray(worst)
        bad = np.flatnonzero(~transitions_valid(lowest, worst_sum))
        if bad.size:
            period = int(bad[0])
            inputs = transition_inputs(model, state)
            msg = (
                f"Model {model.name!r}: the transition probabilities of state {state!r} in "
                f"period {period} (age {model.ages[period]:g}) are invalid: smallest "
                f"{lowest[period]:.3g}, largest |sum - 1| {worst_sum[period]:.3g} over "
                f"{inputs or 'no inputs'}. Return a probability vector that is non-negative "
                "and sums to one on every grid point."
            )
            raise InvalidTransitionError(msg)
