"""State a dynamic model as plain functions and grids; solve it with JAX.

Exports are imported lazily (see ``_lazy.py``), so ``import project.config`` stays light.
"""

from project._lazy import lazy_exports

_EXPORTS = {
    "ContinuousAction": "project.actions",
    **dict.fromkeys(
        (
            "BuildLockedError",
            "CheckpointError",
            "ConfigurationError",
            "DataError",
            "DiskFullError",
            "DistributedSolveError",
            "GridInitializationError",
            "InitialConditionsError",
            "InitialStateOutsideGridError",
            "InvalidStatesError",
            "InvalidTransitionError",
            "InvalidValueFunctionError",
            "MemoryPlanError",
            "ModelSpecificationError",
            "ParamsError",
            "ProjectError",
            "StateOutsideGridError",
        ),
        "project.errors",
    ),
    **dict.fromkeys(
        ("DiscreteGrid", "IrregSpacedGrid", "LinSpacedGrid", "LogSpacedGrid"), "project.grids"
    ),
    "Model": "project.model",
    "ProjectDeprecationWarning": "project.deprecation",
    **dict.fromkeys(
        ("default_savings_grid", "exponential_grid", "log1p_grid", "power_grid"),
        "project.savings_grids",
    ),
    **dict.fromkeys(("Solution", "has_inf", "has_nan"), "project.solver"),
    "solve": "project.dispatch",
}
__all__ = [
    "BuildLockedError",
    "CheckpointError",
    "ConfigurationError",
    "ContinuousAction",
    "DataError",
    "DiscreteGrid",
    "DiskFullError",
    "DistributedSolveError",
    "GridInitializationError",
    "InitialConditionsError",
    "InitialStateOutsideGridError",
    "InvalidStatesError",
    "InvalidTransitionError",
    "InvalidValueFunctionError",
    "IrregSpacedGrid",
    "LinSpacedGrid",
    "LogSpacedGrid",
    "MemoryPlanError",
    "Model",
    "ModelSpecificationError",
    "ParamsError",
    "ProjectDeprecationWarning",
    "ProjectError",
    "Solution",
    "StateOutsideGridError",
    "default_savings_grid",
    "exponential_grid",
    "has_inf",
    "has_nan",
    "log1p_grid",
    "power_grid",
    "solve",
]
__getattr__ = lazy_exports(__name__, _EXPORTS)
