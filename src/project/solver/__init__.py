"""Backward-induction solve: period kernels, interpolation, expectation, splay and checks."""

from project.solver.backward import Solution, period_kernels, solve
from project.solver.checks import has_inf, has_nan

__all__ = ["Solution", "has_inf", "has_nan", "period_kernels", "solve"]
