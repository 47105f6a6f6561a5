"""Backward-induction solve: plan, kernels (general, shift, lattice), one program, checks."""

from project.solver.checks import has_inf, has_nan
from project.solver.grid_cache import grid_points_of
from project.solver.solution import Solution
from project.solver.solve import solve

__all__ = ["Solution", "grid_points_of", "has_inf", "has_nan", "solve"]
