"""The endogenous grid method: Euler-equation inversion on a grid of savings (post-decision states).

``project.solve(..., method="egm")`` runs it (``project.dispatch``); it is the default where a
model admits it (see ``structure.py``). These modules use the solver package's building blocks
(plans, composition, state validation), which is imported first.
"""

import project.solver  # noqa: F401  (import order: see above)
from project.egm.accuracy import euler_errors
from project.egm.solution import EGMSolution
from project.egm.solve import solve_egm

__all__ = ["EGMSolution", "euler_errors", "solve_egm"]
