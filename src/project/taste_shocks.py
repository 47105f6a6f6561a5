"""Extreme-value (EV1) taste shocks over discrete choices: the log-sum and the logit probabilities.

With an additive EV1 shock of scale ``sigma`` on each discrete choice's value ``v_d``, the
expected maximum is ``sigma·log Σ_d exp(v_d / sigma)`` (plus a constant, dropped) and choice ``d``
is taken with probability ``exp((v_d - V) / sigma)``. Both are computed from the maximum down, so
they are stable for any scale, and at ``sigma = 0`` they are exactly the hard maximum and the
first maximiser (not a limit of divisions by zero). Infeasible choices carry ``-inf``: they get
probability zero, and a state with no feasible choice has V = -inf.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax.numpy as jnp
import numpy as np

from project.errors import ParamsError

TASTE_SHOCK_SCALE = "taste_shock_scale"


def log_sum(values: jnp.ndarray, *, scale: jnp.ndarray, axis: int = -1) -> jnp.ndarray:
    """Return ``scale·log Σ exp(values / scale)`` along ``axis``; the maximum at scale 0."""
    best = jnp.max(values, axis=axis, keepdims=True)
    finite_best = jnp.where(jnp.isfinite(best), best, 0.0)
    positive = scale > 0
    safe_scale = jnp.where(positive, scale, 1.0)
    spread = jnp.sum(jnp.exp(_gaps(values, finite_best, safe_scale)), axis=axis, keepdims=True)
    finite = jnp.isfinite(best)
    smooth = finite_best + safe_scale * jnp.log(jnp.where(finite, spread, 1.0))
    smooth = jnp.where(finite, smooth, best)
    return jnp.squeeze(jnp.where(positive, smooth, best), axis=axis)


def log_sum_and_probabilities(
    values: jnp.ndarray, *, scale: jnp.ndarray, axis: int = -1
) -> tuple[jnp.ndarray, jnp.ndarray]:
    """Return the log-sum and the logit probabilities of the choices along ``axis``.

    At scale 0 the first maximiser gets probability one. A state with no feasible choice (all
    ``-inf``) gets all its mass on the first choice, so that probabilities always sum to one;
    its V is ``-inf`` and the solver's checks report it.
    """
    axis = axis % values.ndim
    total = log_sum(values, scale=scale, axis=axis)
    expanded = jnp.expand_dims(total, axis)
    safe_scale = jnp.where(scale > 0, scale, 1.0)
    finite_total = jnp.where(jnp.isfinite(expanded), expanded, 0.0)
    logit = jnp.exp(_gaps(values, finite_total, safe_scale))
    positions = jnp.arange(values.shape[axis]).reshape(
        [-1 if i == axis else 1 for i in range(values.ndim)]
    )
    hit = (values == jnp.max(values, axis=axis, keepdims=True)) | jnp.isnan(values)
    first = jnp.min(jnp.where(hit, positions, values.shape[axis]), axis=axis, keepdims=True)
    hard = (positions == jnp.minimum(first, values.shape[axis] - 1)).astype(values.dtype)
    smooth = jnp.where(jnp.isfinite(expanded), logit, hard)
    return total, jnp.where(scale > 0, smooth, hard)


def _gaps(values: jnp.ndarray, reference: jnp.ndarray, scale: jnp.ndarray) -> jnp.ndarray:
    """Return ``(values - reference) / scale``: ``-inf`` (with zero derivative) where infeasible.

    Computed directly, an infeasible choice's ``-inf`` would give the derivative
    ``-inf · 0 = NaN`` in the scale, and NaN times its zero probability spoils every
    derivative it enters (``jax.jvp`` of the objective).
    """
    infeasible = jnp.isneginf(values)
    finite = jnp.where(infeasible, reference, values)
    return jnp.where(infeasible, -jnp.inf, (finite - reference) / scale)


def check_taste_shock_scale(*, model_name: str, params: Mapping[str, Any]) -> None:
    """Raise ``ParamsError`` unless ``taste_shock_scale`` is a finite number >= 0."""
    scale = np.asarray(params[TASTE_SHOCK_SCALE], dtype=float)
    if not np.all(np.isfinite(scale)) or np.any(scale < 0):
        msg = (
            f"Model {model_name!r}: {TASTE_SHOCK_SCALE} must be a finite number >= 0 (0 gives "
            f"the hard maximum over discrete choices), got {scale.tolist()!r}."
        )
        raise ParamsError(msg)
