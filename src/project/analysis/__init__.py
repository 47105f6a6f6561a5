"""Figures, tables and the paper's numbers, from solutions, panels and estimates to files.

Most are pure functions of saved products. Two solve the model again, through
``project.dispatch.solve``: the validation (finer savings grids, ``validation.py``) and the
welfare measure's delta method (the estimates moved by a step, ``welfare.py``).
"""

from project._lazy import lazy_exports

_EXPORTS = {
    **dict.fromkeys(
        (
            "plot_lifecycle_profiles",
            "plot_policy_functions",
            "plot_retirement_policy",
            "plot_variant_comparison",
        ),
        "project.analysis.figures",
    ),
    **dict.fromkeys(("lifecycle_profiles", "retirement_hazard"), "project.analysis.profiles"),
    **dict.fromkeys(("parameter_table", "summary_statistics"), "project.analysis.tables"),
    "write_table": "project.analysis.table_output",
}
__all__ = [
    "lifecycle_profiles",
    "parameter_table",
    "plot_lifecycle_profiles",
    "plot_policy_functions",
    "plot_retirement_policy",
    "plot_variant_comparison",
    "retirement_hazard",
    "summary_statistics",
    "write_table",
]
__getattr__ = lazy_exports(__name__, _EXPORTS)
