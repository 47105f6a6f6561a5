"""Random keys that depend only on (seed, global subject index, period, stochastic state).

Results are therefore identical for every ``subject_batch_size`` and any padding: a subject's
draws do not depend on which chunk it lands in.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from project.points import float_dtype


def subject_keys(*, seed: int, subject_ids: jnp.ndarray, period: jnp.ndarray) -> jnp.ndarray:
    """Return one key per subject for ``period``."""
    base = jax.random.key(seed)
    per_subject = jax.vmap(lambda i: jax.random.fold_in(base, i))(subject_ids)
    return jax.vmap(lambda k: jax.random.fold_in(k, period))(per_subject)


def draw_category(*, key: jnp.ndarray, probabilities: jnp.ndarray, stream: int) -> jnp.ndarray:
    """Draw a category code by inverting the CDF at one uniform number of stream ``stream``."""
    uniform = stream_uniform(key=key, stream=stream, dtype=probabilities.dtype)
    return category_at(uniform=uniform, probabilities=probabilities)


def stream_uniform(*, key: jnp.ndarray, stream: int, dtype: Any = None) -> jnp.ndarray:
    """Return the uniform number of stream ``stream`` of a subject's key (float by default)."""
    return jax.random.uniform(jax.random.fold_in(key, stream), dtype=dtype or float_dtype())


def category_at(*, uniform: jnp.ndarray, probabilities: jnp.ndarray) -> jnp.ndarray:
    """Return the category whose CDF interval holds ``uniform`` (``draw_category``'s inverse)."""
    cdf = jnp.cumsum(probabilities)
    return jnp.minimum(jnp.sum(uniform >= cdf[:-1] / cdf[-1]), probabilities.shape[0] - 1).astype(
        jnp.int32
    )
