"""The element-wise search both EGM reads use: binary lifting, one index carried.

``lift(start, steps=..., passes=...)`` returns, per element, the largest ``start + k`` with
``0 <= k < 2**steps`` such that ``passes`` holds at every index from ``start + 1`` to it, where
``passes`` holds for a prefix of those indices (a sorted row read against a threshold). Each
of the ``steps`` steps tries the next smaller power of two and keeps it where ``passes`` holds:
one gather and one select per step, where a bisection carries and copies two bounds.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp


def lift(
    start: jnp.ndarray,
    *,
    steps: int,
    passes: Callable[[jnp.ndarray], jnp.ndarray],
    unroll: bool = False,
) -> jnp.ndarray:
    """Return the largest index from ``start`` up to which ``passes`` holds (module docstring).

    ``unroll`` writes the steps out (a longer compile, and slower where the search fuses into
    each of its readers).
    """

    def raise_index(i: jnp.ndarray, at: jnp.ndarray) -> jnp.ndarray:
        candidate = at + jnp.left_shift(jnp.ones_like(at), steps - 1 - i)
        return jnp.where(passes(candidate), candidate, at)

    return jax.lax.fori_loop(0, steps, raise_index, start, unroll=unroll)
