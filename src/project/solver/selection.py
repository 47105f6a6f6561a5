"""Choose each period's kernel, and say why.

Every period uses a structure kernel where the model has the structure (``plan.Structure``),
else the ``general`` kernel. The ``shift`` kernel also needs the savings slope to be exactly 1
in that period; where it is not, that period falls back to the ``row`` kernel. The last
period reads a next-period V of zeros, so Q = u there whatever the kernel: it takes its
neighbour's kernel, and the whole horizon usually compiles as one kernel in one loop.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from project.model.internal import table
from project.solver.plan import SolvePlan

logger = logging.getLogger("project.solver")

LAST_PERIOD = "the last period reads V = 0, so Q = u (any kernel is exact)"
CHOICES = table("each period's kernel by structure and slopes")


@dataclass(frozen=True)
class KernelChoice:
    """The kernel a period runs and the reason for it."""

    name: str
    reason: str


def choose_kernels(
    plan: SolvePlan, *, unit_slope: Sequence[bool] | None
) -> tuple[KernelChoice, ...]:
    """Return the kernel of every period, in period order.

    ``unit_slope``: per period, whether the savings slope is 1 (used by the shift kernel when
    the model does not fix it to 1 for all params). Chosen once per model, structure and slopes.
    """
    key = (plan.structure, None if unit_slope is None else tuple(unit_slope))
    chosen = CHOICES.of(plan.model)
    if key not in chosen:
        chosen[key] = _choose(plan, unit_slope=unit_slope)
    return chosen[key]


def _choose(plan: SolvePlan, *, unit_slope: Sequence[bool] | None) -> tuple[KernelChoice, ...]:
    structure = plan.structure
    n_periods = plan.model.n_periods
    choices = []
    for period in range(n_periods):
        if structure.kind is None:
            choice = KernelChoice("general", structure.reason)
        elif structure.kind != "shift" or structure.unit_slope:
            choice = KernelChoice(structure.kind, structure.reason)
        elif unit_slope is not None and unit_slope[period]:
            choice = KernelChoice("shift", structure.reason)
        else:
            choice = KernelChoice(
                "row",
                f"next_{structure.state} = a·({structure.state} - {structure.action}) + b with "
                f"a ≠ 1 here (no shift), and the {structure.state} step is not a whole multiple "
                f"of an evenly spaced {structure.action} grid's step (no lattice)",
            )
        choices.append(choice)
    if n_periods > 1:
        choices[-1] = KernelChoice(choices[-2].name, LAST_PERIOD)
    return tuple(choices)


def log_kernels(plan: SolvePlan, choices: tuple[KernelChoice, ...]) -> None:
    """Log, at progress level (INFO), which kernel each period used and why."""
    ages = plan.model.ages
    start = 0
    for period in range(1, len(choices) + 1):
        if period < len(choices) and choices[period] == choices[start]:
            continue
        span = (
            f"Period {start} (age {ages[start]:g})"
            if period - 1 == start
            else f"Periods {start}-{period - 1} (ages {ages[start]:g}-{ages[period - 1]:g})"
        )
        choice = choices[start]
        logger.info("%s: %s kernel: %s.", span, choice.name, choice.reason)
        start = period
