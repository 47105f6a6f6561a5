"""Random keys that depend only on (seed, global subject index, period, stochastic state).

Results are therefore identical for every ``subject_batch_size`` and any padding: a subject's
draws do not depend on which chunk it lands in.

A key is a pair of ``uint32`` (an array ``(..., 2)``), and every number is JAX's default
generator's: ``fold_in`` and ``stream_uniform`` give bit for bit what ``jax.random.fold_in`` and
``jax.random.uniform`` give on a ``jax.random.key`` (the Threefry-2x32 hash of Salmon et al. 2011,
"Parallel random numbers: as easy as 1, 2, 3", with JAX's partitionable counters; tested against
``jax.random``). The hash is written out here because JAX's CPU lowering runs its 20 rounds as a
loop of five steps, which copies every subject's state at each step: in the estimation's
program (60,000 subjects, 30 periods) those loops were about half of a simulated evaluation,
where the rounds written out fuse into one pass over the subjects.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from project.points import float_dtype

ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
"""Threefry-2x32's rotation distances, alternating between blocks of four rounds."""
PARITY = 0x1BD11BDA
"""Threefry's key-schedule constant."""


def threefry(key: jnp.ndarray, high: jnp.ndarray, low: jnp.ndarray) -> tuple[Any, Any]:
    """Return the Threefry-2x32 hash (20 rounds) of the counter (``high``, ``low``) by ``key``."""
    k0, k1 = key[..., 0], key[..., 1]
    schedule = (k0, k1, k0 ^ k1 ^ jnp.uint32(PARITY))
    x0, x1 = high + schedule[0], low + schedule[1]
    for block in range(5):
        for distance in ROTATIONS[block % 2]:
            x0 = x0 + x1
            x1 = (x1 << jnp.uint32(distance)) | (x1 >> jnp.uint32(32 - distance))
            x1 = x0 ^ x1
        x0 = x0 + schedule[(block + 1) % 3]
        x1 = x1 + schedule[(block + 2) % 3] + jnp.uint32(block + 1)
    return x0, x1


def root_key(seed: Any) -> jnp.ndarray:
    """Return the key of an integer seed (``jax.random.key``'s: its high and low 32 bits)."""
    seed = jnp.asarray(seed)
    high = (seed >> 32).astype(jnp.uint32) if seed.dtype.itemsize == 8 else jnp.uint32(0)
    return jnp.stack([jnp.asarray(high, jnp.uint32), seed.astype(jnp.uint32)])


def fold_in(key: jnp.ndarray, data: Any) -> jnp.ndarray:
    """Return the key of ``key`` and the integers ``data`` (``jax.random.fold_in``)."""
    low = jnp.asarray(data).astype(jnp.uint32)
    high = jnp.zeros(jnp.broadcast_shapes(low.shape, key.shape[:-1]), jnp.uint32)
    return jnp.stack(threefry(key, high, low), axis=-1)


def subject_keys(*, seed: int, subject_ids: jnp.ndarray, period: jnp.ndarray) -> jnp.ndarray:
    """Return one key per subject for ``period``."""
    return fold_in(fold_in(root_key(seed), subject_ids), period)


def draw_category(*, key: jnp.ndarray, probabilities: jnp.ndarray, stream: int) -> jnp.ndarray:
    """Draw a category code by inverting the CDF at one uniform number of stream ``stream``."""
    uniform = stream_uniform(key=key, stream=stream, dtype=probabilities.dtype)
    return category_at(uniform=uniform, probabilities=probabilities)


def stream_uniform(*, key: jnp.ndarray, stream: int, dtype: Any = None) -> jnp.ndarray:
    """Return the uniform number in [0, 1) of stream ``stream`` of a subject's key.

    ``jax.random.uniform(fold_in(key, stream), dtype=dtype)`` (float by default).
    """
    return _uniform(fold_in(key, stream), dtype=jnp.dtype(dtype or float_dtype()))


def _uniform(key: jnp.ndarray, *, dtype: Any) -> jnp.ndarray:
    """Return the uniform of ``key``: its first counter's bits as the mantissa of [1, 2) minus 1."""
    zero = jnp.zeros(key.shape[:-1], jnp.uint32)
    high, low = threefry(key, zero, zero)
    if dtype == jnp.float64:
        bits = (high.astype(jnp.uint64) << jnp.uint64(32)) | low.astype(jnp.uint64)
        one = (bits >> jnp.uint64(12)) | jnp.uint64(0x3FF0000000000000)
    else:
        one = ((high ^ low) >> jnp.uint32(9)) | jnp.uint32(0x3F800000)
        dtype = jnp.dtype(jnp.float32)
    return jax.lax.bitcast_convert_type(one, dtype) - jnp.asarray(1.0, dtype)


def category_at(*, uniform: jnp.ndarray, probabilities: jnp.ndarray) -> jnp.ndarray:
    """Return the category whose CDF interval holds ``uniform`` (``draw_category``'s inverse)."""
    cdf = jnp.cumsum(probabilities)
    count = jnp.sum(uniform >= cdf[:-1] / cdf[-1], dtype=jnp.int32)  # not int64: half the bytes
    return jnp.minimum(count, probabilities.shape[0] - 1)
