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

from project._xla import jit, quick_compile_options
from project.errors import SimulationError
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


def subject_keys(
    *, seed: int | DrawnAhead, subject_ids: jnp.ndarray, period: jnp.ndarray
) -> jnp.ndarray | DrawnAhead:
    """Return one key per subject for ``period``; numbers drawn ahead stand for them as given.

    ``seed`` may be a period's ``DrawnAhead`` (its rows the subjects ``subject_ids``): a step
    then reads each stream's number from it instead of hashing the key.
    """
    if isinstance(seed, DrawnAhead):
        return seed
    return fold_in(fold_in(root_key(seed), subject_ids), period)


def draw_category(*, key: jnp.ndarray, probabilities: jnp.ndarray, stream: int) -> jnp.ndarray:
    """Draw a category code by inverting the CDF at one uniform number of stream ``stream``."""
    uniform = stream_uniform(key=key, stream=stream, dtype=probabilities.dtype)
    return category_at(uniform=uniform, probabilities=probabilities)


def stream_uniform(*, key: jnp.ndarray, stream: int, dtype: Any = None) -> jnp.ndarray:
    """Return the uniform number in [0, 1) of stream ``stream`` of a subject's key.

    ``jax.random.uniform(fold_in(key, stream), dtype=dtype)`` (float by default); from
    ``DrawnAhead`` in place of a key, the number drawn ahead.
    """
    if isinstance(key, DrawnAhead):
        return key.uniform(stream=stream, dtype=jnp.dtype(dtype or float_dtype()))
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


COUNT_ROW = 16
"""The most CDF bounds ``category_at`` compares in one summed row."""


def category_at(*, uniform: jnp.ndarray, probabilities: jnp.ndarray) -> jnp.ndarray:
    """Return the category whose CDF interval holds ``uniform`` (``draw_category``'s inverse)."""
    cdf = jnp.cumsum(probabilities)
    bounds = cdf[:-1] / cdf[-1]
    # Count in rows of at most COUNT_ROW bounds (padded with +inf, which no uniform reaches):
    # XLA's CPU backend splits a longer sum into a reduce-window that cannot fuse with the
    # comparison, so the comparisons would be written out (subjects x categories) first. Fewer
    # bounds than a row are one row of their own (a regime transition's two bounds are not
    # compared sixteen times).
    width = max(1, min(COUNT_ROW, bounds.shape[-1]))
    rows = -(-bounds.shape[-1] // width)
    padded = jnp.pad(bounds, (0, rows * width - bounds.shape[-1]), constant_values=jnp.inf)
    above = uniform >= padded.reshape(rows, width)
    count = jnp.sum(jnp.sum(above, axis=-1, dtype=jnp.int32), dtype=jnp.int32)
    return jnp.minimum(count, probabilities.shape[0] - 1)


@jax.tree_util.register_pytree_node_class
class DrawnAhead:
    """Uniform numbers of some streams drawn ahead: ``stream_uniform``'s, bit for bit.

    ``values[i]`` holds stream ``streams[i]``'s numbers (periods, subjects, or one subject's
    scalars under ``vmap``). A program that simulates the same subjects many times (the
    estimation's, once per evaluation) draws them once (``draw_ahead``) and passes them where a
    step takes its seed (``subject_keys``), so no evaluation hashes a key.
    """

    def __init__(self, values: tuple[jnp.ndarray, ...], *, streams: tuple[int, ...]) -> None:
        self.values = tuple(values)
        self.streams = tuple(int(s) for s in streams)

    def tree_flatten(self) -> tuple[tuple[jnp.ndarray, ...], tuple[int, ...]]:
        """Return the numbers (the leaves) and the streams (static)."""
        return self.values, self.streams

    @classmethod
    def tree_unflatten(cls, streams: tuple[int, ...], values: Any) -> DrawnAhead:
        """Return the numbers ``values`` of ``streams``."""
        return cls(tuple(values), streams=streams)

    def uniform(self, *, stream: int, dtype: Any) -> jnp.ndarray:
        """Return stream ``stream``'s numbers; raise ``SimulationError`` where none were drawn."""
        if stream not in self.streams:
            msg = (
                f"No uniform numbers of stream {stream} were drawn ahead (streams "
                f"{list(self.streams)}): draw_ahead must be given every stream the model's "
                "steps draw from (draw_streams)."
            )
            raise SimulationError(msg)
        values = self.values[self.streams.index(stream)]
        if values.dtype != jnp.dtype(dtype):
            msg = (
                f"Stream {stream}'s numbers were drawn ahead in {values.dtype}, but a step asks "
                f"for {jnp.dtype(dtype)}: draw them in the precision the simulation runs in."
            )
            raise SimulationError(msg)
        return values


def draw_ahead(
    *, seed: int, subject_ids: jnp.ndarray, periods: jnp.ndarray, streams: tuple[int, ...]
) -> DrawnAhead:
    """Return the uniform numbers of ``streams`` of every subject in every period (traceable).

    Each is ``stream_uniform(key=subject_keys(...), stream=...)`` in the float precision in
    force; arrays of shape (periods, subjects).
    """

    def period_numbers(period: jnp.ndarray) -> tuple[jnp.ndarray, ...]:
        keys = subject_keys(seed=seed, subject_ids=subject_ids, period=period)
        return tuple(
            jax.vmap(lambda k, s=s: stream_uniform(key=k, stream=s))(keys) for s in streams
        )

    return DrawnAhead(jax.lax.map(period_numbers, periods), streams=streams)


def draw_ahead_compiled(
    *, seed: int, subject_ids: jnp.ndarray, periods: jnp.ndarray, streams: tuple[int, ...]
) -> DrawnAhead:
    """Return ``draw_ahead``'s numbers from one compiled program (the EGM programs' options).

    Integer hashing and an exact subtraction: the options change no bit, only the compile.
    """
    compiled = jit(draw_ahead, static_argnames="streams", compiler_options=quick_compile_options())
    return compiled(seed=seed, subject_ids=subject_ids, periods=periods, streams=streams)
