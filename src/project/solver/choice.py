"""Pick the best action per state: the max of Q over the action grid and its first argmax.

A plain ``argmax`` over a long action axis is slow on CPU: XLA emits the (value, index) pair
reduction as a scalar loop and materialises Q for it. ``best_action`` splits the last action
axis into blocks instead: one fused, vectorised ``max`` per block (Q is never stored), an
``argmax`` over the few block maxima, and Q recomputed on the winning block only, where the
first argmax is read. The result is the first argmax of Q over the whole grid, as before.

The block search compiles a second copy of the Q computation (about 0.3 s more XLA compile on
a 2-core CPU) and saves about half of each period's run time, so ``solve`` uses it only when Q
has at least ``MIN_Q_POINTS_FOR_BLOCKS`` points per period (IJRS 500 x 2000: 21 instead of
46 ms per period); smaller models compile faster with the plain argmax.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import jax
import jax.numpy as jnp

# Below this many Q points per period (states x actions), the plain argmax compiles faster by
# more than the block search saves at run time.
MIN_Q_POINTS_FOR_BLOCKS = 2**20
# Below this many points on the last action axis, one plain argmax is cheaper than blocks.
MIN_POINTS_FOR_BLOCKS = 64
# XLA:CPU splits reductions over more than 32 elements into a reduce-window and a reduce, and
# then stores Q in full between the two; blocks of at most 32 keep Q fused into the block max
# (IJRS 500 x 2000: 21 instead of 46 ms per regular period).
MAX_BLOCK = 32


def best_choice(q: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
    """Return (max, first argmax) of a flat Q, reading the max through the index.

    Reading the max through the index keeps splayed and unsplayed solves value-identical: a
    separately fused ``jnp.max`` may round Q differently in the last bit.
    """
    index = jnp.argmax(q)
    return q[index], index.astype(jnp.int32)


def use_blocks(n_q_points: int) -> bool:
    """Return whether a model with ``n_q_points`` Q points per period uses the block search."""
    return n_q_points >= MIN_Q_POINTS_FOR_BLOCKS


def block_size(n_points: int) -> int:
    """Return the block length for an action axis of ``n_points`` (0: do not split it)."""
    if n_points < MIN_POINTS_FOR_BLOCKS:
        return 0
    return min(MAX_BLOCK, math.isqrt(n_points - 1) + 1)


def best_action(
    *,
    q_of: Callable[[dict[str, jnp.ndarray]], jnp.ndarray],
    action_points: Mapping[str, jnp.ndarray],
    blocks: bool = True,
) -> tuple[jnp.ndarray, jnp.ndarray]:
    """Return (max Q, flat int32 index of its first argmax) over the product of ``action_points``.

    ``q_of(points)`` returns Q on the product of the given points per action (in the order of
    ``action_points``). With ``blocks=False``, or a short last action axis, Q is searched with
    one plain argmax. Otherwise the last action axis is padded with copies of its last point to
    whole blocks; a copy never wins because the first argmax prefers the original.
    """
    names = list(action_points)
    if not names:
        return best_choice(q_of({}).ravel())
    last = names[-1]
    points = action_points[last]
    n_points = points.shape[0]
    size = block_size(n_points) if blocks else 0
    if not size:
        return best_choice(q_of(dict(action_points)).ravel())
    n_blocks = -(-n_points // size)
    padded = jnp.concatenate([points, jnp.repeat(points[-1:], n_blocks * size - n_points)])
    q = q_of({**action_points, last: padded})
    rest_shape = q.shape[:-1]
    block_max = q.reshape(*rest_shape, n_blocks, size).max(axis=-1)
    *rest_index, block = jnp.unravel_index(jnp.argmax(block_max.ravel()), block_max.shape)
    start = block * size
    chosen = {a: action_points[a][i][None] for a, i in zip(names[:-1], rest_index, strict=True)}
    chosen[last] = jax.lax.dynamic_slice(padded, (start,), (size,))
    value, offset = best_choice(q_of(chosen).ravel())
    flat_index = jnp.ravel_multi_index(
        (*rest_index, start + offset), (*rest_shape, n_points), mode="clip"
    )
    return value, flat_index.astype(jnp.int32)
