"""Grid search, and the infrastructure that every method shares.

The grid method: plan, kernels (general, shift, lattice), one program, checks (``solve.py``).
The shared part: composition, checks, memory budgets, grid points, states. The public
``solve`` sits above every method, in ``project.dispatch``.
"""

from project.solver.checks import has_inf, has_nan
from project.solver.grid_cache import grid_points_of
from project.solver.solution import Solution
from project.solver.solve import solve_grid

__all__ = ["Solution", "grid_points_of", "has_inf", "has_nan", "solve_grid"]
