"""Figures and tables of the paper, as pure functions from solutions and panels to files."""

from project.analysis.figures import (
    plot_lifecycle_profiles,
    plot_policy_functions,
    plot_variant_comparison,
)
from project.analysis.profiles import lifecycle_profiles
from project.analysis.tables import parameter_table, summary_statistics, write_table

__all__ = [
    "lifecycle_profiles",
    "parameter_table",
    "plot_lifecycle_profiles",
    "plot_policy_functions",
    "plot_variant_comparison",
    "summary_statistics",
    "write_table",
]
