"""The endogenous grid method: Euler-equation inversion on a grid of savings (post-decision states).

``project.solver.solve(..., method="egm")`` runs it; it is the default where a model admits it
(see ``structure.py``). The solver package is imported first: its ``solve`` dispatches here, and
these modules use its building blocks (plans, composition, state validation).
"""

import project.solver  # noqa: F401  (import order: see above)
from project.egm.accuracy import euler_errors
from project.egm.solution import EGMSolution
from project.egm.solve import solve_egm

__all__ = ["EGMSolution", "euler_errors", "solve_egm"]
