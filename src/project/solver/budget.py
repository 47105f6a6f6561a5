"""The splay that fits a solve into its memory limit before it is compiled.

The limit is ``memory_limit_of``'s (``memory_limit.py``). ``fit_solve`` predicts the solve's
peak (``memory.py``): if the model's own batch sizes fit they are kept, else the largest that
fit are chosen, axis by axis (the continuous states the kernels sweep first, then the discrete
ones), and the plan runs on a copy of the model with those batch sizes. Splay is
value-identical, so the solution is too.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax

from project.errors import MemoryPlanError
from project.grids import Grid
from project.model.internal import table
from project.model.spec import Model
from project.points import float_dtype
from project.solver.facts import inherit_slope_guess, needs_slope_probe
from project.solver.memory import MemoryEstimate, format_bytes, predict_solve_memory
from project.solver.memory_limit import MemoryLimit, device_peak, memory_limit_of
from project.solver.plan import SolvePlan
from project.solver.program import action_block
from project.solver.selection import choose_kernels

logger = logging.getLogger("project.solver")

SMALL_PROGRAM_BYTES = 64 * 2**20
"""A compiled program with buffers up to this size is not checked against the default limit:
reading the free memory costs about a tenth of a millisecond, half a small DC-EGM solve's
Python work, and a host short of 80 MiB fails before any such check could help."""

SPLAYED = table("copies of the model with other batch sizes")
PREDICTIONS = table("the solve's memory predictions by kernels, batch sizes, block, shards")
UNCHECKED_FITS = table("small plans under the default limit, by structure, slopes and dtype")
_NOT_READ = MemoryLimit(
    bytes=None, source=f"not read: a plan of at most {format_bytes(SMALL_PROGRAM_BYTES)}"
)


def largest_fitting(
    predict: Any, *, axes: Mapping[str, int], start: Mapping[str, int], limit: int
) -> tuple[dict[str, int], MemoryEstimate]:
    """Return the largest chunk lengths per axis (in order) whose prediction fits ``limit``.

    ``predict(chunks)`` returns a ``MemoryEstimate``; ``axes`` maps each axis that may be
    chunked to its length, in the order to try; ``start`` holds the current chunk lengths (0:
    whole). Each axis in turn gets the fewest chunks of equal length (``ceil(n / k)``) that fit;
    an axis already down to length 1 passes on to the next. The last estimate is returned
    whether it fits or not.
    """
    chunks = {a: start.get(a, 0) for a in axes}
    estimate = predict(chunks)
    for axis, length in axes.items():
        if estimate.total <= limit:
            break
        current = min(chunks[axis] or length, length)
        low, high = -(-length // current), length  # numbers of chunks
        if low == high:
            continue
        trial = dict(chunks)
        trial[axis] = 1
        if predict(trial).total > limit:
            chunks = trial
            estimate = predict(chunks)
            continue
        while low < high:  # the fewest chunks that fit
            middle = (low + high) // 2
            trial[axis] = -(-length // middle)
            if predict(trial).total <= limit:
                high = middle
            else:
                low = middle + 1
        chunks[axis] = -(-length // low)
        estimate = predict(chunks)
    return chunks, estimate


def splayed_model(model: Model, batch_sizes: Mapping[str, int]) -> Model:
    """Return ``model`` with these state batch sizes (a cached copy; the model is untouched)."""
    changes = {n: b for n, b in batch_sizes.items() if model.states[n].batch_size != b}
    if not changes:
        return model
    key = tuple(sorted(changes.items()))
    per_model = SPLAYED.of(model)
    if key not in per_model:
        derived = copy.copy(model)
        derived.states = {n: _with_batch_size(g, changes.get(n)) for n, g in model.states.items()}
        per_model[key] = derived
    return per_model[key]


def _with_batch_size(grid: Grid, batch_size: int | None) -> Grid:
    if batch_size is None:
        return grid
    changed = copy.copy(grid)
    changed.batch_size = batch_size
    return changed


@dataclasses.dataclass(frozen=True)
class SolveMemory:
    """The plan a solve runs (its model splayed to fit), its predicted peak and the limit."""

    plan: SolvePlan
    estimate: MemoryEstimate
    limit: MemoryLimit
    devices: tuple[Any, ...]
    splayed: tuple[tuple[str, int, int], ...]  # (state, model's batch size, chosen one)

    def log(self, *, what: str) -> None:
        """Log the prediction, the splay chosen and the device's peak (progress level)."""
        changes = "".join(
            f"; {state} splayed in chunks of {new} to fit (its grid says batch_size={old})"
            for state, old, new in self.splayed
        )
        log_memory(
            what=what, estimate=self.estimate, limit=self.limit, devices=self.devices, note=changes
        )


def fit_solve(
    plan: SolvePlan,
    *,
    memory_limit: Any,
    mesh: Any,
    slopes: Sequence[bool] | None,
    log_level: str = "warning",
) -> SolveMemory:
    """Return the plan that fits ``memory_limit``: the model's batch sizes, else smaller ones.

    ``slopes``: the shift kernel's known slope pattern for these params (``facts.py``); when
    unknown, the plan covers every kernel the solve may run. Raises ``MemoryPlanError`` when
    even batch size 1 on every splayable axis does not fit. Under the default limit, a plan of
    at most ``SMALL_PROGRAM_BYTES`` on one device is not checked (the free memory is not read)
    unless ``log_level`` logs the plan; a mesh's devices share the host, so its plans are.
    Predictions are kept with the model (``PREDICTIONS``).
    """
    model = plan.model
    quiet = log_level not in ("progress", "debug")
    unchecked = memory_limit is None and quiet and mesh is None
    key = (plan.structure, None if slopes is None else tuple(slopes), float_dtype())
    fitted = UNCHECKED_FITS.of(model).get(key) if unchecked else None
    if fitted is not None and fitted.estimate.total <= SMALL_PROGRAM_BYTES:
        return fitted  # the same small plan again: nothing to read or predict
    devices = tuple(mesh.devices.flat) if mesh is not None else tuple(jax.devices()[:1])
    patterns = [slopes] if slopes is not None or not needs_slope_probe(plan) else [True, False]
    kernels = {
        c.name
        for pattern in patterns
        for c in choose_kernels(
            plan,
            unit_slope=(pattern,) * model.n_periods if isinstance(pattern, bool) else pattern,
        )
    }
    block = action_block(plan, backend=devices[0].platform)
    shards = dict(mesh.shape) if mesh is not None else {}

    def predict(chunks: Mapping[str, int]) -> MemoryEstimate:
        return _prediction(plan, kernels=kernels, chunks=chunks, block=block, shards=shards)

    start = {s: g.batch_size for s, g in model.states.items()}
    estimate = predict(start)
    if unchecked and estimate.total <= SMALL_PROGRAM_BYTES:
        fit = UNCHECKED_FITS.of(model)[key] = SolveMemory(plan, estimate, _NOT_READ, devices, ())
        return fit
    limit = memory_limit_of(memory_limit, devices=devices)
    if limit.bytes is None:
        return SolveMemory(plan, estimate, limit, devices, ())
    axes = splay_axes(plan, shards=shards)
    chunks, estimate = largest_fitting(predict, axes=axes, start=start, limit=limit.bytes)
    if estimate.total > limit.bytes:
        raise MemoryPlanError(_does_not_fit(model, estimate=estimate, limit=limit, axes=axes))
    chosen = {**start, **chunks}
    derived = splayed_model(model, chosen)
    splayed = tuple((s, start[s], chosen[s]) for s in model.states if chosen[s] != start[s])
    if derived is not model:
        inherit_slope_guess(derived, base=model)
        plan = dataclasses.replace(plan, model=derived)
    return SolveMemory(plan, estimate, limit, devices, splayed)


def _prediction(
    plan: SolvePlan,
    *,
    kernels: set[str],
    chunks: Mapping[str, int],
    block: int,
    shards: Mapping[str, int],
) -> MemoryEstimate:
    """Return ``predict_solve_memory``'s estimate, made once per model and arguments."""
    key = (
        plan.structure.kind,
        frozenset(kernels),
        tuple(sorted(chunks.items())),
        block,
        tuple(sorted(shards.items())),
        float_dtype(),
    )
    predictions = PREDICTIONS.of(plan.model)
    if key not in predictions:
        predictions[key] = predict_solve_memory(
            plan, kernels=kernels, batch_sizes=chunks, block=block, shards=shards
        )
    return predictions[key]


def splay_axes(plan: SolvePlan, *, shards: Mapping[str, int]) -> dict[str, int]:
    """Return the state axes splay can cut, in the order to try, with their lengths.

    The continuous states the kernels sweep come first (the largest first), then the discrete
    ones; folded states are never swept and distributed ones are sharded instead.
    """
    model = plan.model
    swept = [s for s in plan.swept_states if s not in model.permanent_states]
    ordered = sorted(swept, key=lambda s: (model.states[s].is_discrete, -model.states[s].n_points))
    return {s: model.states[s].n_points // shards.get(s, 1) for s in ordered}


def _does_not_fit(
    model: Model, *, estimate: MemoryEstimate, limit: MemoryLimit, axes: Mapping[str, int]
) -> str:
    splay = (
        f"even with {', '.join(axes)} splayed to batch_size=1"
        if axes
        else "and no state axis is left to splay"
    )
    largest, size = max(estimate.parts, key=lambda part: part[1])
    culprit = (
        f"The solution (V and the policies of all {model.n_periods} periods) alone takes "
        f"{format_bytes(size)}, which splay cannot reduce"
        if largest == "solution"
        else f"Its largest part is the {largest}'s per-period arrays, {format_bytes(size)}"
    )
    return (
        f"Model {model.name!r}: the solve needs about {estimate.describe()} per device "
        f"{splay}, above the memory limit {format_bytes(limit.bytes or 0)} ({limit.source}). "
        f"{culprit}. Raise memory_limit, use fewer grid points or periods, or shard a "
        "permanent state over more devices (distributed=True)."
    )


def log_memory(
    *,
    what: str,
    estimate: MemoryEstimate,
    limit: MemoryLimit,
    devices: Sequence[Any],
    note: str = "",
    log: logging.Logger = logger,
) -> None:
    """Log (at progress level) the predicted peak, the limit and the device's own peak."""
    peak = device_peak(devices)
    platform = getattr(devices[0], "platform", "this") if devices else "this"
    measured = (
        f"the device's peak so far is {format_bytes(peak)} (memory_stats)"
        if peak is not None
        else f"the {platform.upper()} backend reports no device peak"
    )
    bound = format_bytes(limit.bytes) if limit.bytes is not None else "none"
    log.info(
        "Memory of %s: predicted peak %s per device; limit %s (%s)%s; %s.",
        what,
        estimate.describe(),
        bound,
        limit.source,
        note,
        measured,
    )


def compiled_within(
    cache: dict[Any, tuple[Any, MemoryEstimate | None]],
    key: Any,
    *,
    lower: Callable[[], Any],
    memory_limit: Any,
    what: str,
    log_level: str,
) -> Any:
    """Return the program ``lower()`` compiles (once per ``key`` in ``cache``), memory checked.

    For programs without a knob to turn ((DC-)EGM): XLA's buffer assignment is read once per
    program and checked against ``memory_limit`` at every call (the limit may change).
    """
    if key not in cache:
        compiled = lower().compile()
        cache[key] = (compiled, compiled_buffers(compiled))
    compiled, buffers = cache[key]
    check_buffers(buffers, memory_limit=memory_limit, what=what, log_level=log_level)
    return compiled


def compiled_buffers(compiled: Any) -> MemoryEstimate | None:
    """Return XLA's buffer assignment of a compiled program (None where not reported).

    Outputs, arguments and temporaries of ``compiled.memory_analysis()`` (a few milliseconds:
    read it once per program).
    """
    analysis = compiled.memory_analysis()
    if analysis is None:
        return None
    return MemoryEstimate(
        parts=(
            ("outputs", int(analysis.output_size_in_bytes)),
            ("arguments", int(analysis.argument_size_in_bytes)),
            ("temporaries", int(analysis.temp_size_in_bytes)),
        ),
        batch_sizes=(),
    )


def check_buffers(
    buffers: MemoryEstimate | None, *, memory_limit: Any, what: str, log_level: str
) -> None:
    """Raise ``MemoryPlanError`` when a compiled program's buffers exceed ``memory_limit``.

    For programs without a knob to turn ((DC-)EGM): ``buffers`` is XLA's own figure
    (``compiled_buffers``), known before the program runs. It is logged at "progress". Under
    the default limit, programs of at most ``SMALL_PROGRAM_BYTES`` are not checked.
    """
    if buffers is None:  # a backend without buffer statistics: nothing to check
        return
    quiet = log_level not in ("progress", "debug")
    if memory_limit is None and quiet and buffers.total <= SMALL_PROGRAM_BYTES:
        return
    devices = tuple(jax.devices()[:1])
    limit = memory_limit_of(memory_limit, devices=devices)
    if limit.bytes is not None and buffers.total > limit.bytes:
        msg = (
            f"{what} needs {buffers.describe()} per device (XLA's buffer assignment of the "
            f"compiled program), above the memory limit {format_bytes(limit.bytes)} "
            f"({limit.source}). It has no batch size to splay: use fewer savings points, "
            "periods or discrete states, or raise memory_limit."
        )
        raise MemoryPlanError(msg)
    if log_level in ("progress", "debug"):
        log_memory(
            what=what,
            estimate=buffers,
            limit=limit,
            devices=devices,
            note="; XLA's buffer assignment of the compiled program",
        )
