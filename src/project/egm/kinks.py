"""Kinks of the policy, carried backwards so that the savings grid holds them exactly.

Where next period's borrowing limit starts to bind, at wealth ``m*_{t+1}`` (the endogenous point
of the lowest savings), next period's consumption has a kink. Today's Euler equation reads it at
``w' = a·s + b`` for every outcome and shock node, so today's consumption has a kink in savings at
each ``s = (m*_{t+1} - b) / a``, at wealth ``s + c_t(s)``; and every kink of ``c_{t+1}`` makes
one in ``c_t`` the same way. Linear interpolation across a kink that lies between two nodes cuts
the corner: the error shrinks only like 1/N, and it dominates the error away from the nodes.

Each period carries, per discrete context and choice, up to ``slots`` kink wealths with their
generation (1: the period's own limit kink; g + 1: mapped from a kink of generation g). The step
maps next period's kinks into savings, keeps the ``slots`` of lowest generation (the strongest:
a kink's jump in slope shrinks each time it is mapped back) and moves the base savings point
nearest each onto it. The grid keeps its size and order, so the program's shapes and cost stay
those of the plain grid; the lowest and highest savings points never move.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

KINK_SLOTS = 16
EMPTY = 2**20  # the generation of an empty slot


class Kinks(NamedTuple):
    """Per context and choice (leading axes), kink wealths (NaN: empty) and their generations."""

    wealth: jax.Array
    generation: jax.Array


def no_kinks(shape: tuple[int, ...], *, slots: int, dtype: jnp.dtype) -> Kinks:
    """Return empty kink slots of shape ``(*shape, slots)`` (the last period has no kinks)."""
    return Kinks(
        wealth=jnp.full((*shape, slots), jnp.nan, dtype=dtype),
        generation=jnp.full((*shape, slots), EMPTY, dtype=jnp.int32),
    )


def mapped_savings(
    following_kinks: Kinks,
    *,
    context: jnp.ndarray,
    wealth: jnp.ndarray,
    slope: jnp.ndarray,
    weight: jnp.ndarray,
    start: jnp.ndarray,
) -> tuple[jnp.ndarray, jnp.ndarray, jnp.ndarray]:
    """Return the savings that lead onto next period's kinks, their generations and weights.

    ``context``, ``weight`` (outcomes, nodes) and ``wealth``, ``slope`` (outcomes, nodes, 1):
    next context, probability, next wealth at savings ``start`` and its slope in savings.
    ``following_kinks`` hold next period's kinks per (context, choice, slot).
    """
    targets = following_kinks.wealth[context]
    generation = following_kinks.generation[context] + 1
    base, rate = wealth[..., 0, None, None], slope[..., 0, None, None]
    usable = jnp.isfinite(rate) & (rate != 0)
    savings = start + (targets - base) / jnp.where(usable, rate, 1.0)
    savings = jnp.where(usable, savings, jnp.nan)
    weights = jnp.broadcast_to(weight[..., None, None], savings.shape)
    return savings.ravel(), generation.ravel(), weights.ravel()


def with_kinks(
    savings: jnp.ndarray,
    candidates: jnp.ndarray,
    generation: jnp.ndarray,
    weight: jnp.ndarray,
    *,
    slots: int,
) -> tuple[jnp.ndarray, jnp.ndarray, jnp.ndarray]:
    """Return ``savings`` with up to ``slots`` candidates moved onto, where and which generation.

    Candidates strictly inside the grid are ranked by generation, then weight; the best
    ``slots`` replace base points (never the first or last), each the one nearest to it or, where
    an earlier kink took that one, the next free point above, so the grid stays increasing.
    Returns the grid, the replaced positions (``savings.size`` where none) and generations.
    """
    n, dtype = savings.shape[0], savings.dtype
    chosen, chosen_generation = best_candidates(
        savings, candidates, generation, weight, slots=slots
    )
    valid = jnp.isfinite(chosen)
    # A kink within a hair of the previous one would give two endogenous points that rounding
    # may put out of order: keep one.
    gap = 1e3 * jnp.finfo(dtype).eps * (1 + jnp.abs(chosen))
    previous = jnp.concatenate([savings[:1], chosen[:-1]])
    valid = valid & (chosen - previous > gap)
    safe = jnp.where(valid, chosen, savings[0])
    upper = jnp.clip(jnp.sum(savings[None, :] < safe[:, None], axis=1), 1, n - 1)
    nearer_lower = safe - savings[upper - 1] < savings[upper] - safe
    nearest = jnp.clip(jnp.where(nearer_lower, upper - 1, upper), 1, n - 2)
    # Strictly increasing positions over the valid kinks (sorted, valid first): each at its
    # nearest point or just above the previous one's.
    rank = jnp.cumsum(valid) - 1
    lifted = jax.lax.cummax(jnp.where(valid, nearest - rank, -n)) + rank
    kept = valid & (lifted <= n - 2)
    position = jnp.where(kept, lifted, n)
    grid = savings.at[position].set(jnp.where(kept, chosen, 0), mode="drop")
    return grid, position, jnp.where(kept, chosen_generation, EMPTY)


def best_candidates(
    savings: jnp.ndarray,
    candidates: jnp.ndarray,
    generation: jnp.ndarray,
    weight: jnp.ndarray,
    *,
    slots: int,
) -> tuple[jnp.ndarray, jnp.ndarray]:
    """Return the best ``slots`` candidates inside the grid in increasing order, and generations.

    Best: lowest generation, then highest weight, then lowest index; equal values keep the order
    of their index. Slots without a candidate hold inf (generation ``EMPTY``). Two stable
    sorts: ranking by pairwise comparisons instead costs (combinations x slots)^2, about 780,000
    comparisons per period at 98 shock combinations and 9 slots, most of a plain EGM solve.
    """
    dtype = savings.dtype
    short = slots - candidates.shape[0]
    if short > 0:  # fewer candidates than slots: pad with empty ones
        candidates = jnp.concatenate([candidates, jnp.full((short,), jnp.nan, dtype)])
        generation = jnp.concatenate([generation, jnp.full((short,), EMPTY, generation.dtype)])
        weight = jnp.concatenate([weight, jnp.zeros((short,), weight.dtype)])
    inside = jnp.isfinite(candidates) & (candidates > savings[0]) & (candidates < savings[-1])
    score = jnp.where(inside, generation.astype(dtype) - 0.5 * weight, jnp.inf)
    picked = jnp.sort(jnp.argsort(score, stable=True)[:slots])
    value = jnp.where(inside[picked], candidates[picked], jnp.inf)
    by_value = jnp.argsort(value, stable=True)
    chosen = value[by_value]
    return chosen, jnp.where(jnp.isfinite(chosen), generation[picked][by_value], EMPTY)


def kinks_found(
    wealth: jnp.ndarray,
    consumption: jnp.ndarray,
    *,
    position: jnp.ndarray,
    generation: jnp.ndarray,
    slots: int,
) -> Kinks:
    """Return this period's kinks from its endogenous grid (in savings order).

    The limit kink is the wealth of the lowest savings where it consumes something; the others
    are the wealths at the savings points moved onto mapped kinks.
    """
    n = wealth.shape[0]
    limit_wealth = jnp.where(consumption[0] > 0, wealth[0], jnp.nan)
    limit_generation = jnp.where(consumption[0] > 0, 1, EMPTY)
    found = jnp.where(position < n, wealth[jnp.minimum(position, n - 1)], jnp.nan)
    return Kinks(
        wealth=jnp.concatenate([limit_wealth[None], found])[:slots],
        generation=jnp.concatenate([limit_generation[None].astype(jnp.int32), generation])[:slots],
    )
