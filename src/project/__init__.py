"""State a dynamic model as plain functions and grids; solve it with JAX.

Exports are imported lazily (see ``_lazy.py``), so ``import project.config`` stays light.
"""

from project._lazy import lazy_exports
from project._xla import configure_xla_flags

configure_xla_flags()

_EXPORTS = {
    **dict.fromkeys(
        (
            "CheckpointError",
            "ConfigurationError",
            "DataError",
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
    **dict.fromkeys(("Solution", "has_inf", "has_nan", "solve"), "project.solver"),
}
__all__ = [
    "CheckpointError",
    "ConfigurationError",
    "DataError",
    "DiscreteGrid",
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
    "ProjectError",
    "Solution",
    "StateOutsideGridError",
    "has_inf",
    "has_nan",
    "solve",
]
__getattr__ = lazy_exports(__name__, _EXPORTS)
