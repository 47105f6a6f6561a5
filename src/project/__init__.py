"""State a dynamic model as plain functions and grids; solve it with JAX."""

from project._xla import configure_xla_flags

configure_xla_flags()

from project.errors import (  # noqa: E402
    CheckpointError,
    GridInitializationError,
    InitialConditionsError,
    InvalidTransitionError,
    InvalidValueFunctionError,
    ModelSpecificationError,
    ParamsError,
    ProjectError,
)
from project.grids import (  # noqa: E402
    DiscreteGrid,
    IrregSpacedGrid,
    LinSpacedGrid,
    LogSpacedGrid,
)
from project.model import Model  # noqa: E402
from project.solver import Solution, has_inf, has_nan, solve  # noqa: E402

__all__ = [
    "CheckpointError",
    "DiscreteGrid",
    "GridInitializationError",
    "InitialConditionsError",
    "InvalidTransitionError",
    "InvalidValueFunctionError",
    "IrregSpacedGrid",
    "LinSpacedGrid",
    "LogSpacedGrid",
    "Model",
    "ModelSpecificationError",
    "ParamsError",
    "ProjectError",
    "Solution",
    "has_inf",
    "has_nan",
    "solve",
]
