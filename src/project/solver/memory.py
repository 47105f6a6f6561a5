"""Predict a grid solve's peak memory per device from the model's shapes, before compiling.

The solve program (``program.py``) holds for its whole run the *solution* (V as floats and one
int32 policy per action, for every period, stacked, and the small int32 report) and its
*arguments* (packed params and grid points): both counted exactly. Periods run one after
another, so the rest of the peak is the largest period's arrays: next period's V (the scan's
carry) and the search's running maximum and index are *held* throughout; the *search* (W, the
structure kernels' rows, one chunk of the splayed axes at a time) and ``finish`` (the choice
among the other actions, over states x other actions) do not overlap, so a period needs
``held + max(search, finish)``.

Each term counts arrays of a known extent: the state space, the positions one chunk searches
(swept states x other actions, splayed axes cut to their batch size), states x other actions,
the structure kernels' rows. How many arrays of each extent XLA keeps beyond the ones named in
``_period_bytes`` was read off XLA's buffer assignment (``compiled.memory_analysis()``, XLA:CPU
of jaxlib 0.10) for the shipped models (``_COUNTS``). Two facts of XLA shape the search:

- the grouped search (``choice._grouped``: row and general kernels) keeps each group's maximum
  (``n_groups`` floats per position), then evaluates each position's winning group of
  ``g ~ sqrt(n)`` points again: XLA:CPU materialises every gathered input of that evaluation
  (``pair_reads``) while ``g <= 32``; above that its tree-reduction rewrite fuses the reads
  and only Q and its positions remain;
- on an accelerator the search evaluates blocks of ``block`` loop-action points
  (``program.action_block``): the block's Q and positions per chunk position. This term was
  checked only on XLA:CPU compiling the block path, not on a GPU.

Across 450 compiled programs (every kernel, float32 and float64, splayed or not) the period's
arrays were within -33 % to +24 % of XLA's temporaries (docs/tuning.md). Not counted: the
process (Python, the JAX runtime, compiled code) and XLA's memory while compiling.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from project.model.params import n_packed_params
from project.model.spec import Model
from project.points import float_dtype
from project.solver.choice import search_by_groups
from project.solver.plan import SolvePlan

# XLA:CPU's tree-reduction rewrite splits reductions longer than this; the grouped search's
# gathered reads are then fused into the reduction instead of materialised.
FUSED_GROUP = 32
INT32 = 4


@dataclass(frozen=True)
class _Counts:
    """Arrays a kernel keeps besides those named in ``_period_bytes``: (floats, int32) each.

    ``search``: per searched position of one chunk (the running maximum's update, the masks
    and the first index found); ``finish``: per state and ``finish_full`` per state x other
    action (the broadcast maxima, the flat action order, the ties); ``block``: per pair of an
    accelerator's block of Q (its values and positions).
    """

    search: tuple[float, float]
    finish: tuple[float, float]
    finish_full: tuple[float, float]
    block: tuple[float, float]


_COUNTS = {
    "shift": _Counts(search=(1, 2), finish=(0.5, 0.5), finish_full=(0.5, 0.5), block=(2.25, 0)),
    "lattice": _Counts(search=(0, 0), finish=(0.5, 0.5), finish_full=(0.5, 0.5), block=(2.25, 0)),
    "row": _Counts(search=(0, 0.5), finish=(0, 0), finish_full=(0.5, 0), block=(2.75, 1)),
    "general": _Counts(search=(0, 0.75), finish=(0, 0.25), finish_full=(0.25, 0.5), block=(1, 4)),
}


@dataclass(frozen=True)
class MemoryEstimate:
    """A solve's predicted peak memory per device: named parts in bytes, and their total."""

    parts: tuple[tuple[str, int], ...]
    batch_sizes: tuple[tuple[str, int], ...]

    @property
    def total(self) -> int:
        """Return the predicted peak in bytes."""
        return sum(size for _, size in self.parts)

    def describe(self) -> str:
        """Return e.g. ``1.2 GiB (solution 1.0 GiB, row kernel 0.2 GiB, ...)``."""
        parts = ", ".join(f"{name} {format_bytes(size)}" for name, size in self.parts if size)
        return f"{format_bytes(self.total)} ({parts})"


@dataclass(frozen=True)
class _Sizes:
    """The extents a solve's arrays have on one device."""

    float_bytes: int
    axes: dict[str, int]  # per-device size of every state and action axis
    chunks: dict[str, int]  # per-device chunk length of every swept state axis
    sharded: bool = False

    def product(self, names: Iterable[str], *, chunked: bool = False) -> int:
        sizes = self.chunks if chunked else self.axes
        return math.prod(sizes.get(n, self.axes[n]) for n in names)


PERIOD_OUTPUT_BYTES = 2**24
"""Up to this size of V (all periods), the grid program also outputs each period's V apart: a
small solve's ``value_function`` then runs no second program (about 60 us of a 0.5 ms solve);
a larger V is not held twice, and is taken apart when first read."""


def outputs_periods(model: Model, *, float_bytes: int | None = None) -> bool:
    """Return whether the grid program outputs V of each period apart (``PERIOD_OUTPUT_BYTES``)."""
    f = float_bytes or np.dtype(float_dtype()).itemsize
    states = math.prod(g.n_points for g in model.states.values())
    return model.n_periods * states * f <= PERIOD_OUTPUT_BYTES


def predict_solve_memory(
    plan: SolvePlan,
    *,
    kernels: Iterable[str],
    batch_sizes: Mapping[str, int] | None = None,
    block: int = 1,
    shards: Mapping[str, int] | None = None,
    float_bytes: int | None = None,
    period_outputs: bool | None = None,
) -> MemoryEstimate:
    """Return the predicted peak memory per device of a solve running ``kernels``.

    ``batch_sizes`` overrides the state grids' splay (0: unsplayed); ``block`` is the number of
    loop-action points a search step evaluates (``program.action_block``); ``shards`` maps each
    sharded permanent state to the number of devices along it. ``period_outputs``: the program
    also outputs V of each period apart (``None``: as the grid program decides,
    ``outputs_periods``; the regime program does not).
    """
    model = plan.model
    batches = {s: g.batch_size for s, g in model.states.items()} | dict(batch_sizes or {})
    sizes = _sizes(model, batches=batches, shards=shards or {}, float_bytes=float_bytes)
    f = sizes.float_bytes
    if period_outputs is None:
        period_outputs = outputs_periods(model, float_bytes=f)
    states = sizes.product(model.state_names)
    copies_of_v = 2 if period_outputs else 1  # stacked, and each period apart
    solution = model.n_periods * states * (copies_of_v * f + INT32 * len(model.actions))
    report = model.n_periods * 8 * INT32
    grid_points = sum(
        g.n_points * (INT32 if g.is_discrete else f)
        for g in (model.states | model.actions).values()
    )
    params = n_packed_params(model) * f
    period = max(
        (
            (name, _period_bytes(plan, sizes, kernel=name, block=block, carry=not period_outputs))
            for name in set(kernels)
        ),
        key=lambda item: item[1],
    )
    parts = (
        ("solution", solution + report),
        ("arguments", grid_points + params),
        (f"{period[0]} kernel", period[1]),
    )
    return MemoryEstimate(parts=parts, batch_sizes=tuple(sorted(batches.items())))


def _sizes(
    model: Model, *, batches: Mapping[str, int], shards: Mapping[str, int], float_bytes: int | None
) -> _Sizes:
    f = float_bytes or np.dtype(float_dtype()).itemsize
    axes = {n: g.n_points // shards.get(n, 1) for n, g in (model.states | model.actions).items()}
    chunks = {s: min(batches.get(s) or axes[s], axes[s]) for s in model.states}
    sharded = any(n > 1 for n in shards.values())
    return _Sizes(float_bytes=f, axes=axes, chunks=chunks, sharded=sharded)


def _bytes(count: tuple[float, float], extent: int, *, f: int) -> int:
    return int(extent * (count[0] * f + count[1] * INT32))


def _period_bytes(plan: SolvePlan, sizes: _Sizes, *, kernel: str, block: int, carry: bool) -> int:
    """Return the peak of one period of ``kernel``: held + max(search, finish).

    ``carry``: next period's V is held apart; where each period's V is an output, XLA:CPU keeps
    it in that output's buffer (jaxlib 0.10, the six cases of ``tests/test_memory.py``).
    """
    model, f = plan.model, sizes.float_bytes
    counts = _COUNTS[kernel]
    states = sizes.product(model.state_names)
    others = sizes.product(plan.other_actions)
    swept = [*plan.swept_states]
    chunk = sizes.product(swept, chunked=True) * others
    # Next period's V (the scan's carry) and the search's result: maximum and index.
    held = states * f * int(carry) + sizes.product(swept) * others * (f + INT32)
    search = _prepared_bytes(plan, sizes) + _bytes(counts.search, chunk, f=f)
    n_loop = sizes.axes[plan.loop_action] if plan.loop_action else 1
    if block > 1:
        reads = pair_reads(plan)[0] if kernel == "general" else 0
        search += _bytes((counts.block[0] + reads, counts.block[1]), chunk * block, f=f)
    elif kernel in ("row", "general"):
        search += chunk * _grouped_bytes(
            plan, n_loop=n_loop, f=f, kernel=kernel, sharded=sizes.sharded
        )
    elif kernel == "shift" and search_by_groups(
        n_states=sizes.axes[plan.structure.state], n_points=n_loop, float_bytes=f
    ):
        search += _shift_grouped_bytes(plan, sizes, n_loop=n_loop)
    if kernel in ("shift", "lattice", "row"):
        search += _rows_bytes(plan, sizes, kernel=kernel, n_loop=n_loop)
    finish = _bytes(counts.finish, states, f=f)
    if plan.other_actions:
        finish += _bytes(counts.finish_full, states * others, f=f)
        finish += states * (len(model.states) + 1) * INT32  # take_along_axis's indices
    return held + max(search, finish)


def _grouped_bytes(plan: SolvePlan, *, n_loop: int, f: int, kernel: str, sharded: bool) -> int:
    """Return the grouped search's bytes per searched position (``choice._grouped``).

    Per pair of the winning group: while ``g <= 32`` every gathered input of Q, else (fused)
    Q and its position. Exceptions, as XLA:CPU assigns them: in a sharded program the row
    kernel's reads of the flat rows are not fused (four floats and two int32 gather indices
    per pair, two floats when fused); summed outcomes keep their gathers, and kept outcomes
    their gather indices, also when fused.
    """
    group = max(1, math.isqrt(n_loop - 1) + 1)
    maxima = -(-n_loop // group) * f
    fused = group > FUSED_GROUP
    if kernel == "row":
        floats, ints = ((2, 2) if fused else (4, 2)) if sharded else ((1, 1) if fused else (1, 0))
        return max(maxima, group * (floats * f + ints * INT32))
    reads, outcomes = pair_reads(plan)
    if not fused:
        return max(maxima, reads * group * f)
    if outcomes == 1:
        return max(maxima, group * (f + INT32))
    kept = math.prod(plan.model.states[s].n_points for s in plan.expectation.kept)
    indices = len(plan.expectation.interpolation_axes(plan.model)) * kept if kept > 1 else 0
    return max(maxima, group * (reads * f + indices * INT32))


def _shift_grouped_bytes(plan: SolvePlan, sizes: _Sizes, *, n_loop: int) -> int:
    """Return the bytes of the shift kernel's grouped search (``shift.at``).

    Per point of the kernel's state and pair of its winning group, as XLA:CPU (jaxlib 0.10)
    assigns them for the shipped models (float64; float32 fitted too): two floats and four int32
    (reads and their indices), and a float and an int32 more for every further context the
    search sweeps (the income nodes of ``precautionary``); within 11 % of XLA's figure.
    """
    state, f = plan.structure.state, sizes.float_bytes
    group = max(1, math.isqrt(n_loop - 1) + 1)
    contexts = sizes.product([s for s in plan.swept_states if s != state], chunked=True)
    per_pair = 2 * f + 4 * INT32 + (contexts - 1) * (f + INT32)
    return sizes.chunks[state] * group * per_pair


def pair_reads(plan: SolvePlan) -> tuple[int, int]:
    """Return the general kernel's arrays per pair of Q, and the outcomes a pair sums over.

    Every corner of the interpolation in next period's W (two per continuous axis) for every
    kept outcome and shock node, the loop action's points and the utility; a shock node also
    moves the landing, which is located anew (three arrays per node).
    """
    model = plan.model
    axes = plan.expectation.interpolation_axes(model)
    corners = 2 ** sum(not model.states[s].is_discrete for s in axes)
    nodes = math.prod(shock.n_nodes for shock in model.shocks.values())
    outcomes = math.prod(model.states[s].n_points for s in plan.expectation.kept) * nodes
    return corners * outcomes + 2 + (3 * nodes if nodes > 1 else 0), outcomes


def prepared_value_bytes(plan: SolvePlan, *, float_bytes: int) -> int:
    """Return the bytes of next period's V as ``expectation.prepare_next_value`` returns it."""
    return _prepared_bytes(plan, _sizes(plan.model, batches={}, shards={}, float_bytes=float_bytes))


def _prepared_bytes(plan: SolvePlan, sizes: _Sizes) -> int:
    """Return the bytes of W, next period's V with the pre-contracted outcomes summed out.

    W keeps an axis for every state the pre-contracted probabilities depend on (the current
    income node for a Markov income), so it is often as large as V.
    """
    model, expectation = plan.model, plan.expectation
    if not expectation.precontracted or expectation.contract_in_sweep:
        return sizes.product(model.state_names) * sizes.float_bytes
    names = {*expectation.sliced, *expectation.interpolation_axes(model)}
    return sizes.product(names) * sizes.float_bytes


def _rows_bytes(plan: SolvePlan, sizes: _Sizes, *, kernel: str, n_loop: int) -> int:
    """Return the structure kernels' per-context rows and per-action arrays."""
    model, structure, f = plan.model, plan.structure, sizes.float_bytes
    state = structure.state
    names = [s for s in plan.swept_states if s != state] + [*plan.other_actions]
    contexts = sizes.product(names)
    chunked = sizes.product(names, chunked=True)
    n_states = sizes.axes[state]
    batch = sizes.chunks[state]
    n_rows = -(-n_states // batch) * batch
    law = model.ancestors(f"next_{state}")
    law_contexts = sizes.product([n for n in names if n in law])
    if kernel == "row":
        return 2 * contexts * n_rows * f  # flat rows and their slopes
    if kernel == "shift":
        length = n_rows + 2 * (n_states + 1) + 1
        # level and slope of every context's extended row, the positions, per-action shifts
        return 2 * chunked * length * f + length * (2 * f + 6) + law_contexts * n_loop * (3 * f + 5)
    ratio = structure.step_ratio
    lattice = ratio * (n_states - 1) + n_loop
    lines = (n_rows + (n_loop - 1) // ratio + 1) * ratio
    return chunked * lines * f + contexts * lattice * (3 * f + 4 * INT32)


def format_bytes(size: float) -> str:
    """Return ``size`` bytes as e.g. ``512 KiB`` or ``1.50 GiB``."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(size) < 1024:
            return f"{size:.0f} {unit}" if unit in ("B", "KiB") else f"{size:.2f} {unit}"
        size /= 1024
    return f"{size:.2f} TiB"
