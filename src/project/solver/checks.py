"""NaN/Inf checks: reductions inside the solve program, read back once per solve.

``value_flags`` runs inside the program for every period (under sharding the reductions run
where the shards live; only the small flags array leaves the devices). ``report_flags`` reads
them with one transfer and, only when a period failed, computes the diagnosis: where the NaNs
sit in V and in Q.
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


def value_flags(value: jnp.ndarray, *, unlocated: jnp.ndarray) -> jnp.ndarray:
    """Return int32 [any NaN, #+inf, #-inf, #unlocated policies] of one period (traceable).

    ``unlocated`` counts states with a finite or infinite (not NaN) V whose best action the
    search did not locate (see ``choice.running_best``); their policy index is set to 0.
    """
    return jnp.stack(
        [
            jnp.isnan(value).any().astype(jnp.int32),
            jnp.sum(jnp.isposinf(value), dtype=jnp.int32),
            jnp.sum(jnp.isneginf(value), dtype=jnp.int32),
            unlocated,
        ]
    )


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


def report_flags(
    flags: np.ndarray,
    *,
    log_level: str,
    describe: Callable[[int], str],
) -> None:
    """Warn about (or, at "debug", raise for) the periods whose V failed a check.

    ``flags`` holds ``value_flags`` per period; ``describe(period)`` returns the diagnosis of a
    failed period (where the NaNs are in V and Q), and is only called at "debug".
    """
    for period in np.flatnonzero(flags[:, 2]):
        logger.warning(
            "Period %d: %d states have no feasible action (V = -inf).",
            period,
            flags[period, 2],
        )
    for period in np.flatnonzero(flags[:, 3] > 0):
        logger.warning(
            "Period %d: the best action of %d states was not located in the second sweep (Q "
            "rounded differently beyond the tie tolerance); their policy index is 0. Their V "
            "is right; solve with exploit_structure=False to cross-check.",
            period,
            flags[period, 3],
        )
    failed = np.flatnonzero(flags[:, 0] | (flags[:, 1] > 0))
    for period in failed[::-1]:  # backward induction: the last failed period is the source
        what = "NaN" if flags[period, 0] else "+inf"
        if log_level == "debug":
            msg = (
                f"The value function of period {period} contains {what} values. "
                f"{describe(int(period)) if flags[period, 0] else ''} Check the utility and "
                "laws of motion there (logs of non-positive numbers, divisions by zero, params) "
                "and the grids' bounds."
            )
            raise InvalidValueFunctionError(msg)
        logger.warning(
            "Period %d: the value function contains %s values; continuing. Solve with "
            "log_level='debug' to locate them.",
            period,
            what,
        )
