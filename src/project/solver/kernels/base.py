"""What every period kernel is: ``(next_value, params, grid_points, period, age) -> (V, policy)``.

``next_value`` is V of the next period (zeros in the last period); ``policy`` maps each action
to the int32 grid index of its optimal point per state. Kernels are traced inside the solve
program, so ``period`` and ``age`` are traced scalars.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding

from project.devices import value_spec
from project.solver.expectation import prepare_next_value
from project.solver.plan import SolvePlan

Kernel = Callable[..., tuple[jnp.ndarray, dict[str, jnp.ndarray]]]


def prepared_next_value(
    plan: SolvePlan,
    *,
    next_value: jnp.ndarray,
    env: dict[str, Any],
    grid_points: dict[str, jnp.ndarray],
    mesh: Mesh | None,
) -> jnp.ndarray:
    """Return next period's V prepared for the sweep (sliced axes first, then W's axes).

    With a mesh, the prepared array stays sharded along the permanent states, so each device
    reads only its own block of V.
    """
    model = plan.model
    prepared = prepare_next_value(model, next_value=next_value, env=env, grid_points=grid_points)
    if mesh is None:
        return prepared
    axes = [*plan.expectation.sliced, *plan.expectation.interpolation_axes(model)]
    return jax.lax.with_sharding_constraint(
        prepared, NamedSharding(mesh, value_spec(model, axis_order=axes))
    )
