"""Sums of a panel's values by age group, in the order XLA's CPU backend sums the padded panel.

The drawn moments' totals were first written as one sum over a (periods, subjects, groups)
array that is zero outside each group's periods: ``jnp.where(member, values, 0).sum((0, 1))``.
On the CPU, XLA splits a sum over more than ``WINDOW`` elements of a dimension into windows of
``WINDOW`` (``TreeReductionRewriter``): each window is summed in row-major order, then the
windows' sums in windows again, until every summed dimension is at most ``WINDOW`` long, and
those are summed last, in row-major order too. That array is periods x subjects x groups
(75 x 60,000 x 7 in the pipeline's estimation), written out and read back at every
evaluation, although each subject-year belongs to one group at most.

``group_sums`` adds the same numbers in the same order but reads only each group's periods:
adding an exact zero changes no sum, so skipping the zeros leaves every partial sum, and the
result, the same to the bit (tested against XLA's own sum in ``tests/test_group_sums.py``).
Each window's additions run in a ``lax.scan``, one after the other, which XLA does not reorder.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

WINDOW = 32
"""The window of XLA's tree reduction on the CPU (``TreeReductionRewriter``)."""


def group_sums(*, values: jnp.ndarray, members: np.ndarray, groups: jnp.ndarray) -> jnp.ndarray:
    """Return ``jnp.where(groups[:, None, :], values[:, :, None], 0).sum(axis=(0, 1))``'s bits.

    ``values``: (periods read, subjects), zero where a subject-year counts for no moment (and
    never -0.0); ``members``: (periods, groups) booleans, a static array with at least as many
    periods as ``values`` (the periods after those read are padding that counts for no group);
    ``groups``: the same array as a program's input. Where no dimension exceeds ``WINDOW``,
    XLA sums in one pass: so does this, over the padded array.
    """
    periods = members.shape[0]
    if max(periods, values.shape[1]) <= WINDOW:
        padded = jnp.pad(values, ((0, periods - values.shape[0]), (0, 0)))
        return jnp.where(groups[:, None, :], padded[:, :, None], 0.0).sum(axis=(0, 1))
    # Each group's rows of the current level (sorted), as (position, row of ``level``) pairs:
    # at first the group's periods among those read, later the windows' sums.
    rows = [
        [(int(p), int(p)) for p in np.flatnonzero(members[: values.shape[0], g])]
        for g in range(members.shape[1])
    ]
    level, sizes = values, (periods, values.shape[1])
    while True:
        last = max(sizes) <= WINDOW  # then XLA sums what is left in one row-major pass
        windows = [_window(size, last=last) for size in sizes]
        level, rows = _sum_windows(level=level, rows=rows, windows=windows, size=sizes[1])
        if last:  # one window per group with rows; a group without any sums to zero
            return jnp.stack([level[r[0][1], 0] if r else jnp.zeros((), level.dtype) for r in rows])
        sizes = (windows[0][2], windows[1][2])


def _window(size: int, *, last: bool) -> tuple[int, int, int]:
    """Return (window, low padding, windows) of a dimension of ``size`` at one level.

    A dimension of at most ``WINDOW`` is one window; at the last level every dimension is.
    """
    if size <= WINDOW or last:
        return size, 0, 1
    count = -(-size // WINDOW)
    return WINDOW, (count * WINDOW - size) // 2, count


def _sum_windows(
    *,
    level: jnp.ndarray,
    rows: list[list[tuple[int, int]]],
    windows: list[tuple[int, int, int]],
    size: int,
) -> tuple[jnp.ndarray, list[list[tuple[int, int]]]]:
    """Return every window's row-major sum (one row per group and window of the first dimension).

    ``rows[g]``: group g's (position in the first dimension, row of ``level``) pairs.
    """
    (window_0, low_0, _), (window_1, low_1, count_1) = windows
    sequences, following = [], []
    for group_rows in rows:
        blocks: dict[int, list[int]] = {}
        for position, row in group_rows:
            blocks.setdefault((position + low_0) // window_0, []).append(row)
        following.append([(b, len(sequences) + i) for i, b in enumerate(sorted(blocks))])
        sequences.extend(blocks[b] for b in sorted(blocks))
    if not sequences:  # no group has a row: every sum is zero
        return jnp.zeros((len(rows), count_1), level.dtype), [[] for _ in rows]
    zero_row = level.shape[0]
    longest = max(len(s) for s in sequences)
    index = np.array([s + [zero_row] * (longest - len(s)) for s in sequences])
    padding = ((0, 1), (low_1, count_1 * window_1 - size - low_1))
    padded = jnp.pad(level, padding).reshape(level.shape[0] + 1, count_1, window_1)
    # (sequence, row, window, element) -> (row, element, sequence, window): the order of addition.
    terms = padded[index].transpose(1, 3, 0, 2).reshape(-1, len(sequences), count_1)
    zeros = jnp.zeros((len(sequences), count_1), level.dtype)
    sums, _ = jax.lax.scan(lambda acc, term: (acc + term, None), zeros, terms)
    return sums, following
