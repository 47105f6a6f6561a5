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

import jax.numpy as jnp
import numpy as np

from project._xla import jit
from project.errors import InvalidValueFunctionError, ProjectError

LogLevel = Literal["off", "warning", "progress", "debug"]
LOG_LEVELS: tuple[str, ...] = ("off", "warning", "progress", "debug")
OnInvalid = Literal["raise", "warn"]
ON_INVALID: tuple[str, ...] = ("raise", "warn")

logger = logging.getLogger("project.solver")


@jit
def has_nan(x: jnp.ndarray) -> jnp.ndarray:
    """Return whether ``x`` holds any NaN, as a scalar bool array."""
    return jnp.isnan(x).any()


@jit
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


def check_on_invalid(on_invalid: str) -> None:
    """Raise a clear error for an unknown ``on_invalid``."""
    if on_invalid not in ON_INVALID:
        msg = (
            f"on_invalid must be 'raise' (the default: NaN/+inf in V raises "
            f"InvalidValueFunctionError) or 'warn' (log a warning and continue), got "
            f"{on_invalid!r}."
        )
        raise ProjectError(msg)


def nan_locations(
    x: jnp.ndarray,
    *,
    axis_names: tuple[str, ...],
    limit: int = 5,
    points: dict[str, np.ndarray] | None = None,
) -> str:
    """Describe where NaNs sit: the affected indices along each named axis (failure path only).

    ``points`` (by axis name) adds the values at those indices, e.g. of a continuous state.
    """
    mask = np.asarray(jnp.isnan(x))
    parts = []
    for axis, name in enumerate(axis_names):
        other = tuple(i for i in range(mask.ndim) if i != axis)
        hit = np.flatnonzero(mask.any(axis=other)) if other else np.flatnonzero(mask)
        more = ", ..." if hit.size > limit else ""
        shown = ", ".join(str(i) for i in hit[:limit]) + more
        part = f"{name} at indices [{shown}] ({hit.size} of {mask.shape[axis]})"
        if points is not None and name in points:
            values = np.asarray(points[name])[hit[:limit]]
            part += " = [" + ", ".join(f"{float(v):.4g}" for v in values) + more + "]"
        parts.append(part)
    return "; ".join(parts)


def report_flags(
    flags: np.ndarray,
    *,
    log_level: str,
    describe: Callable[[int], str],
    on_invalid: str = "raise",
    what: str = "grid search",
) -> None:
    """Raise for (or, with ``on_invalid="warn"``, warn about) the periods whose V failed a check.

    ``flags`` holds ``value_flags`` per period; ``describe(period)`` returns the diagnosis of a
    failed period (where the NaNs are in V and Q), and is only called when one failed and the
    diagnosis is shown (always when raising; when warning, at "debug"). ``what`` names the
    solve in messages (e.g. "grid search", "grid search, regime 'retired'").
    """
    if not flags.any():
        return
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
    if not failed.size:
        return
    period = int(failed[-1])  # backward induction: the last failed period is the source
    kind = "NaN" if flags[period, 0] else "+inf"
    shown = on_invalid == "raise" or log_level == "debug"
    where = f"{describe(period)} " if shown and flags[period, 0] else ""
    others = f" (and so do periods {failed[:-1].tolist()})" if failed.size > 1 else ""
    if on_invalid == "raise":
        msg = (
            f"Solving by {what}: the value function of period {period} contains {kind} "
            f"values{others}. {where}Check the utility and laws of motion there (logs of "
            "non-positive numbers, divisions by zero, params) and the grids' bounds; "
            "solve(..., on_invalid='warn') continues with a warning instead."
        )
        raise InvalidValueFunctionError(msg)
    logger.warning(
        "Solving by %s: the value function of period %d contains %s values%s; continuing "
        "(on_invalid='warn'). %s",
        what,
        period,
        kind,
        others,
        where or "Solve with log_level='debug' to locate them.",
    )
