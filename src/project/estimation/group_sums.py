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

``ScannedGroupSums`` takes the same sums while a scan over the periods simulates them: each
period's values are added to their windows' running sums as the period ends, so no panel of
subject-years is kept (the estimation's panel was 37 x 60,000 numbers, written and read back at
every evaluation); the later levels, a few thousand numbers, are summed at the end.
"""

from __future__ import annotations

from typing import Any

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
        return _one_pass(padded, groups)
    rows = _group_rows(members, read=values.shape[0])
    return _reduce(level=values, rows=rows, sizes=(periods, values.shape[1]))


class ScannedGroupSums:
    """``group_sums`` of a panel taken period by period, as a scan over the periods runs.

    ``start`` gives the running sums, ``add`` adds one period's values (the period traced) and
    ``finish`` returns what ``group_sums`` returns for the whole panel, to the bit, without the
    panel: the first level's windows are summed as the periods arrive (each window's additions
    in the same order, a period's subjects after the earlier periods'), the later levels at the
    end. Where no dimension exceeds ``WINDOW`` it keeps the small panel and takes XLA's one-pass
    sum, as ``group_sums`` does; XLA's order there depends on the program around the sum, so
    the two agree to rounding, not always to the bit. ``members``: (periods, groups), static;
    ``read``: the periods the scan adds; ``subjects``: the subjects a period holds.
    """

    def __init__(self, *, members: np.ndarray, read: int, subjects: int) -> None:
        self.members = np.asarray(members, dtype=bool)
        self.sizes = (self.members.shape[0], int(subjects))
        self.one_pass = max(self.sizes) <= WINDOW
        self.windows = [_window(size, last=False) for size in self.sizes]
        rows = _group_rows(self.members, read=read)
        sequences, self.following = _sequences(rows, window=self.windows[0])
        self.n_sequences = len(sequences)
        by_period: list[list[int]] = [[] for _ in range(self.sizes[0])]
        for index, sequence in enumerate(sequences):
            for period in sequence:
                by_period[period].append(index)
        self.tables = layer_tables(by_period, scratch=len(sequences))

    def start(self, dtype: Any) -> jnp.ndarray:
        """Return the running sums before the first period."""
        if self.one_pass:
            return jnp.zeros(self.sizes, dtype)
        return jnp.zeros((self.n_sequences + 1, self.windows[1][2]), dtype)

    def add(self, sums: jnp.ndarray, *, values: jnp.ndarray, period: jnp.ndarray) -> jnp.ndarray:
        """Return ``sums`` with ``values`` (subjects,) of ``period`` added."""
        if self.one_pass:
            return sums.at[period].set(values)
        window, low, count = self.windows[1]
        padded = jnp.pad(values, (low, count * window - self.sizes[1] - low))
        columns = padded.reshape(count, window)
        for table in self.tables:
            row = jnp.asarray(table)[period]
            window_sum = sums[row]
            for j in range(window):  # in order: XLA does not reorder floating-point additions
                window_sum = window_sum + columns[:, j]
            sums = sums.at[row].set(window_sum)
        return sums

    def finish(self, sums: jnp.ndarray, *, groups: jnp.ndarray) -> jnp.ndarray:
        """Return every group's sum (``group_sums`` of the panel the periods added)."""
        if self.one_pass:
            return _one_pass(sums, groups)
        sizes = (self.windows[0][2], self.windows[1][2])
        return _reduce(level=sums[: self.n_sequences], rows=self.following, sizes=sizes)


def layer_tables(by_period: list[list[int]] | list[np.ndarray], *, scratch: int) -> np.ndarray:
    """Return (layers, periods): per layer, one of the rows each period adds to, else ``scratch``.

    ``by_period[p]``: the rows period p adds to (a group's, a sequence's). One layer where no
    period adds to two rows; a scan adds each layer's row and leaves the scratch row out.
    """
    depth = max([1, *(len(found) for found in by_period)])
    return np.array(
        [[f[k] if k < len(f) else scratch for f in by_period] for k in range(depth)],
        dtype=np.int32,
    )


def _one_pass(padded: jnp.ndarray, groups: jnp.ndarray) -> jnp.ndarray:
    """Return XLA's one-pass sum of each group's rows of the padded (periods, subjects) panel."""
    return jnp.where(groups[:, None, :], padded[:, :, None], 0.0).sum(axis=(0, 1))


def _group_rows(members: np.ndarray, *, read: int) -> list[list[tuple[int, int]]]:
    """Return each group's first-level (position, row) pairs: its periods among those read."""
    return [
        [(int(p), int(p)) for p in np.flatnonzero(members[:read, g])]
        for g in range(members.shape[1])
    ]


def _reduce(
    *, level: jnp.ndarray, rows: list[list[tuple[int, int]]], sizes: tuple[int, int]
) -> jnp.ndarray:
    """Return each group's sum from ``level``: XLA's windows, level after level, to the last.

    ``rows[g]``: group g's (position in the first dimension, row of ``level``) pairs, sorted;
    at first the group's periods among those read, later the windows' sums. ``sizes``: the
    dimensions the level stands for (periods or windows, subjects or windows).
    """
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


def _sequences(
    rows: list[list[tuple[int, int]]], *, window: tuple[int, int, int]
) -> tuple[list[list[int]], list[list[tuple[int, int]]]]:
    """Return the rows each (group, window of the first dimension) adds, and where each lands.

    ``rows[g]``: group g's (position in the first dimension, row) pairs; ``window``: that
    dimension's (window, low padding, windows). The second list gives, per group, its
    (window, sequence) pairs: the next level's rows.
    """
    size, low, _ = window
    sequences: list[list[int]] = []
    following = []
    for group_rows in rows:
        blocks: dict[int, list[int]] = {}
        for position, row in group_rows:
            blocks.setdefault((position + low) // size, []).append(row)
        following.append([(b, len(sequences) + i) for i, b in enumerate(sorted(blocks))])
        sequences.extend(blocks[b] for b in sorted(blocks))
    return sequences, following


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
    (window_1, low_1, count_1) = windows[1]
    sequences, following = _sequences(rows, window=windows[0])
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
