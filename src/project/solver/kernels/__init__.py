"""Period kernels: the general brute force and the structure kernels (shift, lattice).

``build_kernel`` returns the kernel a period uses, by name (see ``selection.py`` for the choice):

- ``general``: Q from the model's functions at every (state, action) pair;
- ``row``: one continuous state; each pair interpolates in one row per discrete context;
- ``shift`` and ``lattice``: exact structure of the savings law of motion (``plan.Structure``).
"""

from __future__ import annotations

from typing import Any

from project.solver.kernels.base import Kernel
from project.solver.kernels.general import build_general_kernel
from project.solver.kernels.lattice import lattice_continuation
from project.solver.kernels.row import row_continuation
from project.solver.kernels.shift import shift_continuation
from project.solver.kernels.structured import build_structured_kernel
from project.solver.plan import SolvePlan

KERNEL_NAMES = ("general", "row", "shift", "lattice")


def build_kernel(name: str, plan: SolvePlan, *, block: int, mesh: Any = None) -> Kernel:
    """Return the period kernel called ``name`` for ``plan``."""
    if name == "general":
        return build_general_kernel(plan, block=block, mesh=mesh)
    continuations = {
        "row": row_continuation,
        "shift": shift_continuation,
        "lattice": lattice_continuation,
    }
    return build_structured_kernel(
        plan, continuation=continuations[name](plan), block=block, mesh=mesh
    )


__all__ = ["KERNEL_NAMES", "Kernel", "build_kernel"]
