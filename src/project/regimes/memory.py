"""Plan the memory of a regime solve on the grids: predict its peak, splay regimes to fit.

The regime program (``grid.py``) holds every regime's solution and arguments for its whole run,
counted per regime as ``solver.memory`` counts a single model's. Per period it holds every
regime's next V (the scan's carry) and continuation ``W_r`` (with its continuation-action
axes); the regimes' kernels run one after another, so only the largest regime's period arrays
count on top. Against XLA's buffer assignment of the regime programs of the shipped models
(row and general kernels, one to two regimes) this was within -18 % to -3 %
(``tests/test_regimes.py``). Splay works as for one model (``solver.budget``): each regime's
state axes may be chunked, the largest regime's first, on copies of the regimes' models.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import jax
import numpy as np

from project.errors import MemoryPlanError
from project.points import float_dtype
from project.regimes.continuation import RegimeContinuation
from project.regimes.spec import RegimeModel
from project.solver.budget import largest_fitting, log_memory, splay_axes, splayed_model
from project.solver.memory import MemoryEstimate, format_bytes, predict_solve_memory
from project.solver.memory_limit import MemoryLimit, memory_limit_of
from project.solver.plan import SolvePlan
from project.solver.program import action_block

SEPARATOR = ":"  # axis keys are "<regime>:<state>"


@dataclasses.dataclass(frozen=True)
class RegimeMemory:
    """The plans a regime solve runs (splayed to fit), its predicted peak and the limit."""

    plans: dict[str, SolvePlan]
    estimate: MemoryEstimate
    limit: MemoryLimit
    devices: tuple[Any, ...]
    splayed: tuple[tuple[str, str, int, int], ...]  # (regime, state, model's, chosen)

    def log(self, *, what: str) -> None:
        """Log the prediction, the splay chosen and the device's peak (progress level)."""
        note = "".join(
            f"; {regime}'s {state} splayed in chunks of {new} (its grid says batch_size={old})"
            for regime, state, old, new in self.splayed
        )
        log_memory(
            what=what, estimate=self.estimate, limit=self.limit, devices=self.devices, note=note
        )


def predict_regime_memory(
    model: RegimeModel,
    plans: Mapping[str, SolvePlan],
    kernels: Mapping[str, str],
    *,
    batch_sizes: Mapping[str, Mapping[str, int]] | None = None,
    float_bytes: int | None = None,
) -> MemoryEstimate:
    """Return the predicted peak of the regime program (see the module docstring)."""
    f = float_bytes or np.dtype(float_dtype()).itemsize
    backend = jax.default_backend()
    batch_sizes = batch_sizes or {}
    solution = arguments = held = 0
    periods = {}
    for regime, plan in plans.items():
        parts = dict(
            predict_solve_memory(
                plan,
                kernels=[kernels[regime]],
                batch_sizes=batch_sizes.get(regime),
                block=action_block(plan, backend=backend),
                float_bytes=f,
                period_outputs=False,
            ).parts
        )
        solution += parts["solution"]
        arguments += parts["arguments"]
        periods[regime] = parts[f"{kernels[regime]} kernel"]
        carried = math.prod(g.n_points for g in plan.model.states.values()) * f
        held += carried + math.prod(RegimeContinuation(model, source=regime).shape) * f
    largest = max(periods, key=periods.__getitem__)
    chunks = tuple(
        (f"{r}{SEPARATOR}{s}", b) for r, sizes in batch_sizes.items() for s, b in sizes.items()
    )
    return MemoryEstimate(
        parts=(
            ("solution", solution),
            ("arguments", arguments),
            ("continuations", held),
            (f"{largest}'s {kernels[largest]} kernel", periods[largest]),
        ),
        batch_sizes=chunks,
    )


def fit_regimes(
    model: RegimeModel,
    plans: Mapping[str, SolvePlan],
    kernels: Mapping[str, str],
    *,
    memory_limit: Any,
) -> RegimeMemory:
    """Return the plans that fit ``memory_limit``: the regimes' batch sizes, else smaller ones.

    Raises ``MemoryPlanError`` when even batch size 1 on every splayable axis does not fit.
    """
    devices = (jax.devices()[0],)
    limit = memory_limit_of(memory_limit, devices=devices)
    start = {r: {s: g.batch_size for s, g in p.model.states.items()} for r, p in plans.items()}

    def split(chunks: Mapping[str, int]) -> dict[str, dict[str, int]]:
        sizes = {r: dict(s) for r, s in start.items()}
        for key, size in chunks.items():
            regime, state = key.split(SEPARATOR)
            sizes[regime][state] = size
        return sizes

    def predict(chunks: Mapping[str, int]) -> MemoryEstimate:
        return predict_regime_memory(model, plans, kernels, batch_sizes=split(chunks))

    if limit.bytes is None:
        return RegimeMemory(dict(plans), predict({}), limit, devices, ())
    whole = predict({})
    order = sorted(plans, key=lambda r: -math.prod(plans[r].state_shape))
    axes = {
        f"{r}{SEPARATOR}{s}": n for r in order for s, n in splay_axes(plans[r], shards={}).items()
    }
    flat_start = {f"{r}{SEPARATOR}{s}": b for r, sizes in start.items() for s, b in sizes.items()}
    chunks, estimate = (
        ({}, whole)
        if whole.total <= limit.bytes
        else largest_fitting(predict, axes=axes, start=flat_start, limit=limit.bytes)
    )
    if estimate.total > limit.bytes:
        msg = (
            f"Model {model.name!r}: the regime solve needs about {estimate.describe()} per "
            f"device even with every regime's swept states splayed to batch_size=1, above the "
            f"memory limit {format_bytes(limit.bytes)} ({limit.source}). Raise memory_limit, "
            "use fewer grid points or periods."
        )
        raise MemoryPlanError(msg)
    chosen = split(chunks)
    fitted, splayed = {}, []
    for regime, plan in plans.items():
        derived = splayed_model(plan.model, chosen[regime])
        fitted[regime] = plan if derived is plan.model else dataclasses.replace(plan, model=derived)
        splayed.extend(
            (regime, s, start[regime][s], b)
            for s, b in chosen[regime].items()
            if b != start[regime][s]
        )
    return RegimeMemory(fitted, estimate, limit, devices, tuple(splayed))
