"""The upper envelope of DC-EGM: drop endogenous grid points that are not optimal.

With a discrete choice next period, the Euler equation has several solutions at some wealth
levels and the endogenous grid ``x_j = s_j + c_j`` folds back on itself. We use the segment
method of Iskhakov, Jorgensen, Rust and Schjerning (2017), restated so that it vectorises:

1. **Backward runs go.** Along the Euler curve ``dx/ds = (u'' + W'') / u''`` (``W`` the
   discounted expected value of savings), so the grid runs backwards exactly where the second-order
   condition fails: those points are local minima of the Bellman objective, never optimal.
2. **Forward runs compete.** The remaining points form increasing runs ``[start_r, end_r]``;
   a point is kept unless another run, linearly interpolated at its wealth, has a higher value
   (or, below the first endogenous point, consuming down to the borrowing limit is better).
   Runs are compared with their ``window`` nearest neighbours in savings order, found by a
   vectorised binary search inside each run: O(window·n·log n) with no sequential scan.
3. **Exactness is checked, not assumed**: a prefix maximum of the runs' upper ends tells whether
   any run overlaps one farther away than the window. The solve then re-runs with a wider
   window (``solve.py``), so the envelope is exact for any number of folds.

Why not FUES (Dobrescu and Shanker), which ``dcegm`` uses: it decides point by point in a
sequential scan over the sorted grid, which on an accelerator or XLA:CPU costs one loop step per
grid point and period. The segment method's comparisons are independent, so they run as wide
vector operations; step 1 removes most candidates by a sign test. Both keep the same points up to
the linear interpolation at the crossings, which lie within one grid step of the true kink.

``compact`` moves the kept points to the front, in increasing wealth, and pads the tail by
extrapolating the last kept segment, so arrays keep their static length and interpolation stays
a plain sorted search.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from project.egm.search import lift

WINDOW = 1
TOLERANCE_ULPS = 64


class Envelope(NamedTuple):
    """Which points are kept, and whether the window saw every overlapping run."""

    kept: jnp.ndarray
    exact: jnp.ndarray
    n_runs: jnp.ndarray


def clean_grids(
    grids: tuple[jnp.ndarray, ...],
    value: jnp.ndarray,
    constrained_value: jnp.ndarray,
    *,
    window: int,
) -> tuple[tuple[jnp.ndarray, ...], jnp.ndarray, jnp.ndarray]:
    """Return the ``grids`` (wealth first) after the upper envelope, whether it was exact, runs.

    Every array has a leading axis of grids. Grids run one after another, and the envelope runs
    only where a grid folds back (with one feasible choice next period nothing folds):
    ``lax.cond`` skips the rest.
    """

    def fold(args: tuple[Any, ...]) -> tuple[Any, ...]:
        arrays, v, bound = args
        envelope = upper_envelope(arrays[0], v, constrained_value=bound, window=window)
        return compact(envelope.kept, *arrays), envelope.exact, envelope.n_runs

    def keep(args: tuple[Any, ...]) -> tuple[Any, ...]:
        return args[0], jnp.asarray(True), jnp.ones((), jnp.int32)

    def one(args: tuple[Any, ...]) -> tuple[Any, ...]:
        return jax.lax.cond(jnp.any(jnp.diff(args[0][0]) < 0), fold, keep, args)

    return jax.lax.map(one, (grids, value, constrained_value))


def upper_envelope(
    wealth: jnp.ndarray,
    value: jnp.ndarray,
    *,
    constrained_value: jnp.ndarray,
    window: int = WINDOW,
) -> Envelope:
    """Return the points of the endogenous grid that lie on the upper envelope.

    ``wealth`` and ``value`` are in savings order; ``constrained_value`` is the value of
    consuming down to the borrowing limit at each point's wealth (``-inf`` where not relevant).
    """
    wealth, value = jnp.asarray(wealth), jnp.asarray(value)
    constrained_value = jnp.asarray(constrained_value)
    n = wealth.shape[0]
    forward = jnp.diff(wealth) >= 0
    starts = forward & jnp.concatenate([jnp.ones((1,), bool), ~forward[:-1]])
    run_of_segment = jnp.where(forward, jnp.cumsum(starts) - 1, -1)
    before = jnp.concatenate([jnp.full((1,), -1), run_of_segment])
    after = jnp.concatenate([run_of_segment, jnp.full((1,), -1)])
    run = jnp.where(after >= 0, after, before)
    n_runs = jnp.sum(starts)
    max_runs = n // 2 + 1
    indices = jnp.arange(n)
    segment_ids = jnp.where(run >= 0, run, max_runs)
    first = jax.ops.segment_min(indices, segment_ids, num_segments=max_runs + 1)[:max_runs]
    last = jax.ops.segment_max(indices, segment_ids, num_segments=max_runs + 1)[:max_runs]
    valid = jnp.arange(max_runs) < n_runs
    first, last = jnp.where(valid, first, 0), jnp.where(valid, last, 0)

    offsets = jnp.array([d for d in range(-window, window + 1) if d != 0])
    other = run[None, :] + offsets[:, None]
    usable = (run[None, :] >= 0) & (other >= 0) & (other < n_runs)
    other = jnp.clip(other, 0, max_runs - 1)
    lo, hi = first[other], last[other]
    covered = usable & (wealth[lo] <= wealth[None, :]) & (wealth[None, :] <= wealth[hi])
    rival = _interpolate_in_runs(wealth, value, lo=lo, hi=hi, query=wealth[None, :])
    best_rival = jnp.max(jnp.where(covered, rival, -jnp.inf), axis=0, initial=-jnp.inf)
    best_rival = jnp.maximum(best_rival, constrained_value)
    tolerance = TOLERANCE_ULPS * jnp.finfo(value.dtype).eps * (1 + jnp.abs(value))
    kept = (run >= 0) & ~(best_rival > value + tolerance)

    upper_ends = jnp.where(valid, wealth[last], -jnp.inf)
    reach = jax.lax.cummax(upper_ends)
    shifted = jnp.concatenate([jnp.full((window + 1,), -jnp.inf), reach])[:max_runs]
    far_overlap = valid & (shifted > wealth[first])
    return Envelope(kept=kept, exact=~jnp.any(far_overlap), n_runs=n_runs.astype(jnp.int32))


def _interpolate_in_runs(
    wealth: jnp.ndarray,
    value: jnp.ndarray,
    *,
    lo: jnp.ndarray,
    hi: jnp.ndarray,
    query: jnp.ndarray,
) -> jnp.ndarray:
    """Return ``value`` interpolated at ``query`` within increasing runs ``[lo, hi]``.

    The segment's left end is found from ``lo`` by ``search.lift``: the last point of the run
    at most ``query``. Where ``wealth[lo] <= query`` (the only queries the envelope reads) that
    is the bisection of ``[lo, max(hi, lo + 1)]``'s segment, to the index.
    """
    end = jnp.maximum(hi, lo + 1)

    def passes(index: jnp.ndarray) -> jnp.ndarray:
        return (index < end) & (wealth[jnp.minimum(index, wealth.shape[0] - 1)] <= query)

    steps = max(1, math.ceil(math.log2(wealth.shape[0])))
    left = lift(lo, steps=steps, passes=passes)
    right = jnp.minimum(left + 1, hi)
    left = jnp.minimum(left, jnp.maximum(right - 1, lo))
    x0, x1 = wealth[left], wealth[right]
    width = x1 - x0
    share = jnp.where(width > 0, (query - x0) / jnp.where(width > 0, width, 1), 0)
    return value[left] + share * (value[right] - value[left])


def compact(kept: jnp.ndarray, *arrays: jnp.ndarray) -> tuple[jnp.ndarray, ...]:
    """Return ``arrays`` (wealth first) with kept points first, the tail extrapolated.

    Optimal savings never fall as wealth rises (``u(w - s)`` has increasing differences in
    ``(w, s)``), so the kept points are already in increasing wealth in savings order; a kept
    point at or below an earlier one (a tie at a crossing, up to rounding) is dropped as well.
    """
    wealth = arrays[0]
    earlier = jax.lax.cummax(jnp.where(kept, wealth, -jnp.inf))
    earlier = jnp.concatenate([jnp.full((1,), -jnp.inf, wealth.dtype), earlier[:-1]])
    kept = kept & (wealth > earlier)
    n = wealth.shape[0]
    slot = jnp.where(kept, jnp.cumsum(kept) - 1, n)
    n_kept = jnp.sum(kept)
    last = jnp.maximum(n_kept - 1, 0)
    previous = jnp.maximum(n_kept - 2, 0)
    packed = [jnp.zeros_like(a).at[slot].set(a, mode="drop") for a in arrays]
    x = packed[0]
    step = x[last] - x[previous]
    step = jnp.where(step > 0, step, jnp.maximum(jnp.abs(x[last]), 1.0))
    beyond = jnp.arange(n) - last
    padded = [jnp.where(beyond > 0, x[last] + beyond * step, x)]
    for a in packed[1:]:
        slope = jnp.where(n_kept > 1, (a[last] - a[previous]) / step, 0.0)
        padded.append(jnp.where(beyond > 0, a[last] + beyond * slope * step, a))
    return tuple(padded)
