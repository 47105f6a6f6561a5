"""NaN/Inf checks as jitted reductions that return one scalar and never gather V.

Under sharding the reductions run where the shards live and return a replicated scalar; only
that scalar reaches the host.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np

from project.errors import InvalidValueFunctionError, ProjectError

LogLevel = Literal["off", "warning", "progress", "debug"]
LOG_LEVELS: tuple[str, ...] = ("off", "warning", "progress", "debug")

logger = logging.getLogger("project.solver")


@jax.jit
def has_nan(x: jnp.ndarray) -> jnp.ndarray:
    """Return whether ``x`` holds any NaN, as a scalar bool array."""
    return jnp.isnan(x).any()


@jax.jit
def has_inf(x: jnp.ndarray) -> jnp.ndarray:
    """Return whether ``x`` holds any +inf or -inf, as a scalar bool array."""
    return jnp.isinf(x).any()


@jax.jit
def count_infeasible(x: jnp.ndarray) -> jnp.ndarray:
    """Return the number of -inf entries (states without a feasible action)."""
    return jnp.sum(jnp.isneginf(x))


@jax.jit
def count_positive_inf(x: jnp.ndarray) -> jnp.ndarray:
    """Return the number of +inf entries."""
    return jnp.sum(jnp.isposinf(x))


def check_log_level(log_level: str) -> None:
    """Raise a clear error for an unknown log level."""
    if log_level not in LOG_LEVELS:
        msg = f"log_level must be one of {LOG_LEVELS}, got {log_level!r}."
        raise ProjectError(msg)


def nan_locations(x: jnp.ndarray, *, axis_names: tuple[str, ...], limit: int = 5) -> str:
    """Describe where NaNs sit: the affected indices along each named axis (debug path only)."""
    mask = np.asarray(jnp.isnan(x))
    parts = []
    for axis, name in enumerate(axis_names):
        other = tuple(i for i in range(mask.ndim) if i != axis)
        hit = np.flatnonzero(mask.any(axis=other)) if other else np.flatnonzero(mask)
        shown = ", ".join(str(i) for i in hit[:limit]) + (", ..." if hit.size > limit else "")
        parts.append(f"{name} at indices [{shown}] ({hit.size} of {mask.shape[axis]})")
    return "; ".join(parts)


def validate_value_function(
    *,
    value: jnp.ndarray,
    period: int,
    state_names: tuple[str, ...],
    log_level: str,
    describe_actions: Callable[[], str] | None = None,
) -> None:
    """Check V of one period according to ``log_level`` ("off" does nothing and never syncs)."""
    if log_level == "off":
        return
    nan = bool(has_nan(value))
    n_positive_inf = int(count_positive_inf(value)) if bool(has_inf(value)) else 0
    n_infeasible = int(count_infeasible(value)) if bool(has_inf(value)) else 0
    if n_infeasible:
        logger.warning(
            "Period %d: %d states have no feasible action (V = -inf).", period, n_infeasible
        )
    if not nan and not n_positive_inf:
        return
    what = "NaN" if nan else "+inf"
    if log_level == "debug":
        where = nan_locations(value, axis_names=state_names) if nan else ""
        actions = describe_actions() if (nan and describe_actions is not None) else ""
        msg = (
            f"The value function of period {period} contains {what} values. States: {where}. "
            f"{actions} Check the utility and laws of motion there (logs of non-positive "
            "numbers, divisions by zero, params) and the grids' bounds."
        )
        raise InvalidValueFunctionError(msg)
    logger.warning(
        "Period %d: the value function contains %s values; continuing. Solve with "
        "log_level='debug' to locate them.",
        period,
        what,
    )
