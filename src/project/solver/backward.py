"""Backward induction over the horizon, one jitted kernel call per period."""

from __future__ import annotations

import logging
import time
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh

from project.devices import (
    check_permanent_states,
    place,
    replicate,
    state_mesh,
    value_sharding,
)
from project.grids import grid_points
from project.model.params import validate_params
from project.model.spec import Model
from project.points import float_dtype
from project.solver.checks import (
    LogLevel,
    check_log_level,
    nan_locations,
    validate_value_function,
)
from project.solver.kernel import Kernel, build_period_kernel, build_q_kernel
from project.solver.transitions import check_transition_probabilities

logger = logging.getLogger("project.solver")


@dataclass(frozen=True)
class Solution:
    """V and the optimal policy (grid indices per action) for every period."""

    model: Model
    params: dict[str, jnp.ndarray]
    value_function: tuple[jnp.ndarray, ...]
    policy: tuple[dict[str, jnp.ndarray], ...]

    def policy_values(self, *, period: int) -> dict[str, jnp.ndarray]:
        """Return the optimal action values (grid points, or codes) per state in ``period``."""
        return {
            action: self.model.actions[action].to_jax()[indices]
            for action, indices in self.policy[period].items()
        }


@dataclass
class PeriodKernels:
    """The compiled kernel of a model: one for every period, the last included."""

    kernel: Kernel

    def n_compiled(self) -> int:
        """Return how many distinct executables have been compiled so far."""
        return self.kernel._cache_size()


_KERNELS: weakref.WeakKeyDictionary[Model, dict[Any, PeriodKernels]] = weakref.WeakKeyDictionary()


def period_kernels(model: Model, *, mesh: Mesh | None = None) -> PeriodKernels:
    """Return the model's kernels for ``mesh``, built once and reused by every solve."""
    per_mesh = _KERNELS.setdefault(model, {})
    key = (
        None
        if mesh is None
        else (mesh.axis_names, mesh.devices.shape, tuple(d.id for d in mesh.devices.flat))
    )
    if key not in per_mesh:
        per_mesh[key] = PeriodKernels(kernel=build_period_kernel(model, mesh=mesh))
    return per_mesh[key]


def grid_points_of(model: Model) -> dict[str, jnp.ndarray]:
    """Return every state and action grid's points in the working precision."""
    return grid_points(model.states | model.actions)


def solve(
    *,
    model: Model,
    params: Mapping[str, Any],
    log_level: LogLevel = "warning",
    devices: Sequence[Any] | None = None,
) -> Solution:
    """Solve ``model`` by backward induction and return V and the policy of every period.

    States marked ``distributed`` are sharded over all devices (see ``project.devices``); V
    is returned materialised and still sharded.

    ``log_level``: "off" (no checks, no per-period host synchronisation), "warning" (warn about
    NaN/inf and continue), "progress" (also log each period with its time), "debug" (raise
    ``InvalidValueFunctionError`` locating NaNs). ``devices``: the devices to shard over
    (default: all).
    """
    check_log_level(log_level)
    params = validate_params(model=model, params=params)
    grid_points = grid_points_of(model)
    if log_level != "off" and model.stochastic_transitions:
        check_transition_probabilities(model=model, params=params, grid_points=grid_points)
    mesh = state_mesh(model, devices=devices)
    if mesh is not None:
        check_permanent_states(model=model, grid_points=grid_points)
        params, grid_points = replicate((params, grid_points), mesh=mesh)
    kernels = period_kernels(model, mesh=mesh)
    working_dtype = float_dtype()
    values: list[jnp.ndarray] = [None] * model.n_periods
    policies: list[dict[str, jnp.ndarray]] = [None] * model.n_periods
    next_value = _zero_value(model, dtype=working_dtype, mesh=mesh)
    started = time.perf_counter()
    for period in reversed(range(model.n_periods)):
        period_started = time.perf_counter()
        arguments = (
            next_value,
            params,
            grid_points,
            # device_put of NumPy values: jnp.asarray would compile a small program per shape.
            jax.device_put(np.int32(period)),
            jax.device_put(np.asarray(model.ages[period], dtype=working_dtype)),
        )
        next_value, policies[period] = kernels.kernel(*arguments)
        values[period] = next_value
        validate_value_function(
            value=next_value,
            period=period,
            state_names=model.state_names,
            log_level=log_level,
            describe_actions=lambda arguments=arguments: _locate_q_nans(
                model=model, arguments=arguments
            ),
        )
        if log_level in ("progress", "debug"):
            jax.block_until_ready(next_value)
            logger.info(
                "Solved period %d (age %g) in %.3f s.",
                period,
                model.ages[period],
                time.perf_counter() - period_started,
            )
    jax.block_until_ready(values)
    if log_level in ("progress", "debug"):
        logger.info(
            "Solved %r: %d periods in %.3f s.",
            model.name,
            model.n_periods,
            time.perf_counter() - started,
        )
    return Solution(
        model=model, params=params, value_function=tuple(values), policy=tuple(policies)
    )


def _zero_value(model: Model, *, dtype: Any, mesh: Mesh | None) -> jax.Array:
    """Return the V of zeros that the last period's kernel call reads (and discards)."""
    zeros = np.zeros(tuple(g.n_points for g in model.states.values()), dtype=dtype)
    if mesh is None:
        return jax.device_put(zeros)
    return place(zeros, sharding=value_sharding(model, mesh=mesh))


def _locate_q_nans(*, model: Model, arguments: tuple[Any, ...]) -> str:
    q = build_q_kernel(model)(*arguments)
    names = (*model.state_names, *model.action_names)
    return f"Q(state, action) is NaN at: {nan_locations(q, axis_names=names)}."
