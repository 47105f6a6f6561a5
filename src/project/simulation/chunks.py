"""Plan the simulation's chunk of subjects so that it fits a memory limit.

Per chunk of ``k`` subjects the simulation holds (``forward.py``, ``steps.py``): the states,
each step's temporaries, and the chunk's history of every period (states, actions, V) on the
device until it moves to the host, where on a CPU it is copied once more. A grid step
maximises Q over the whole action product per subject: one float and one int32 per action
(XLA fuses the rest), or, where kept outcomes or shock nodes are summed, every interpolation
corner of every outcome (``memory.pair_reads``). A (DC-)EGM step reads each choice's
endogenous grid: two floats per node. Besides the chunk: next period's prepared V for every
simulated period, and on a CPU the result's columns (host and device memory are one there).
Results never depend on the chunk (keys depend on subject and period only), so the chunk is
free to choose: the given ``subject_batch_size`` (0: all subjects) if it fits, else the
largest multiple of the device count that does.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from project.errors import MemoryPlanError
from project.model.spec import Model
from project.points import float_dtype
from project.solver.budget import log_memory
from project.solver.memory import (
    INT32,
    MemoryEstimate,
    format_bytes,
    pair_reads,
    prepared_value_bytes,
)
from project.solver.memory_limit import MemoryLimit, memory_limit_of
from project.solver.plan import general_plan


@dataclass(frozen=True)
class ChunkPlan:
    """The chunk of subjects a simulation runs, its predicted peak and the limit."""

    chunk: int
    estimate: MemoryEstimate
    limit: MemoryLimit
    devices: tuple[Any, ...]

    def log(self, *, what: str) -> None:
        """Log the prediction and the device's peak (progress level)."""
        log_memory(
            what=what,
            estimate=self.estimate,
            limit=self.limit,
            devices=self.devices,
            log=logging.getLogger("project.simulation"),
        )


def plan_chunk(
    *,
    solution: Any,
    n_subjects: int,
    n_periods: int,
    subject_batch_size: int,
    devices: Sequence[Any],
    memory_limit: Any,
) -> ChunkPlan:
    """Return the chunk of subjects to simulate at a time (a multiple of the device count).

    Raises ``MemoryPlanError`` when not even one subject per device fits ``memory_limit``.
    """
    model: Model = solution.model
    limit = memory_limit_of(memory_limit, devices=devices)
    per_subject, fixed = _subject_bytes(
        solution, n_subjects=n_subjects, n_periods=n_periods, devices=devices
    )
    n_devices = len(devices)
    wanted = -(-(subject_batch_size or n_subjects) // n_devices) * n_devices
    chunk = wanted
    if limit.bytes is not None and fixed + chunk * per_subject // n_devices > limit.bytes:
        per_device = (limit.bytes - fixed) // per_subject if limit.bytes > fixed else 0
        chunk = per_device * n_devices
        if chunk < n_devices:
            msg = (
                f"Model {model.name!r}: simulating needs {format_bytes(fixed)} besides the "
                f"subjects (next period's V for {n_periods} periods"
                + (" and the result's columns" if _on_cpu(devices) else "")
                + f") and {format_bytes(per_subject)} per subject (Q over "
                f"{_actions(model)} actions and the subject's history), above the memory limit "
                f"{format_bytes(limit.bytes)} ({limit.source}) even for one subject per device. "
                "Raise memory_limit, simulate fewer subjects or periods, or use coarser "
                "action grids."
            )
            raise MemoryPlanError(msg)
    parts = (("fixed", fixed), (f"{chunk} subjects", chunk * per_subject // n_devices))
    return ChunkPlan(
        chunk=chunk,
        estimate=MemoryEstimate(parts=parts, batch_sizes=(("subjects", chunk),)),
        limit=limit,
        devices=tuple(devices),
    )


def _subject_bytes(
    solution: Any, *, n_subjects: int, n_periods: int, devices: Sequence[Any]
) -> tuple[int, int]:
    """Return (bytes per subject of a chunk, bytes that do not depend on the chunk).

    With regimes every subject runs every regime's step (its own regime's result is kept):
    the regimes' figures add up, an upper bound for the histories and columns they share.
    """
    if solution.regimes:
        parts = [
            _subject_bytes(s, n_subjects=n_subjects, n_periods=n_periods, devices=devices)
            for s in solution.regimes.values()
        ]
        return sum(p[0] for p in parts), sum(p[1] for p in parts)
    model: Model = solution.model
    f = np.dtype(float_dtype()).itemsize
    on_cpu = _on_cpu(devices)
    row = (len(model.states) + len(model.actions) + 1) * f  # states, actions and V
    if solution.method == "grid":
        plan = general_plan(model)
        reads, outcomes = pair_reads(plan)
        step = _actions(model) * (f + INT32 if outcomes == 1 else reads * f)
        expected = n_periods * prepared_value_bytes(plan, float_bytes=f)
    else:
        wealth = solution.arrays.wealth
        step = 2 * f * (wealth.size // (wealth.shape[0] * solution.structure.n_contexts))
        leaves = jax.tree.leaves(solution.arrays)
        expected = sum(leaf.nbytes for leaf in leaves) // wealth.shape[0] * n_periods
    history = n_periods * row * (2 if on_cpu else 1)  # on the device, and its host copy
    columns = n_subjects * n_periods * row if on_cpu else 0  # the result, in host memory
    return step + row + history, expected + columns


def _actions(model: Model) -> int:
    return math.prod(g.n_points for g in model.actions.values())


def _on_cpu(devices: Sequence[Any]) -> bool:
    return all(getattr(d, "platform", "") == "cpu" for d in devices)
