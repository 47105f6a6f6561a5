"""One exception hierarchy for the whole package.

Every message says what was wrong, where (grid, state, function or period) and what to do.
"""


class ProjectError(Exception):
    """Base class of every error raised on purpose by this package."""


class GridInitializationError(ProjectError, ValueError):
    """A grid was constructed with invalid points or knobs."""


class ModelSpecificationError(ProjectError, ValueError):
    """A model's functions, states, actions or horizon are inconsistent."""


class ParamsError(ProjectError, ValueError):
    """Parameters are missing, unexpected or wrongly shaped."""


class InvalidTransitionError(ProjectError, ValueError):
    """A stochastic transition returned probabilities that are negative or do not sum to one."""


class InvalidValueFunctionError(ProjectError, FloatingPointError):
    """A value function contains NaN (or +inf) values."""


class CheckpointError(ProjectError, OSError):
    """A persisted product is missing, partial or corrupted."""


class InitialConditionsError(ProjectError, ValueError):
    """Initial conditions for a simulation are missing, unknown, invalid or infeasible."""


class StateOutsideGridError(ProjectError, ValueError):
    """A continuous state's value lies outside its grid's range, where V is only extrapolated."""


class InitialStateOutsideGridError(InitialConditionsError, StateOutsideGridError):
    """An initial state of a simulation lies outside its grid's range."""


class InvalidStatesError(ProjectError, ValueError):
    """States given to evaluate a solution are missing, unknown or not valid codes or numbers."""


class MemoryPlanError(ProjectError, ValueError):
    """A memory limit is invalid, or no plan of a solve or simulation fits within it."""


class ConfigurationError(ProjectError, ValueError):
    """The pipeline's configuration (variants, profile) names something unknown or unsafe."""


class DataError(ProjectError, ValueError):
    """A data file is missing, altered or malformed."""


class PaperError(ProjectError, RuntimeError):
    """The paper did not compile: a missing generated input, a broken reference, a Typst error."""


class DiskFullError(CheckpointError):
    """The disk filled up while a product was saved (nothing was published; the old one stays)."""


class BuildLockedError(ProjectError, RuntimeError):
    """Another build holds the build root's lock (two builds would race on every product)."""


class DistributedSolveError(ProjectError, RuntimeError):
    """A process of a multi-process solve failed (the message holds the processes' output)."""


class SimulationError(ProjectError, RuntimeError):
    """A simulation was asked for random numbers it was not given."""
