"""The estimation's exception, part of the package's one hierarchy (``project.errors``).

Every message names the parameter, moment or input that is wrong and says what to do.
"""

from project.errors import ProjectError


class EstimationError(ProjectError, ValueError):
    """Estimation inputs are invalid, or the estimate is not identified or did not converge."""
