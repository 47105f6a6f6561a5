"""The calibration's exception, part of the package's one hierarchy (``project.errors``).

Every message names the target (or the records) that is wrong and says what to do.
"""

from project.errors import ProjectError


class CalibrationError(ProjectError, ValueError):
    """Calibration inputs (targets, estimates, weights or settings) are invalid."""
