"""Structural estimation by the method of simulated moments (MSM).

Entry points: ``estimate_msm`` (a generic engine: any deterministic moment simulator, data
moments with their sampling variances, bounds; returns an ``MSMResult`` with sandwich standard
errors, the J-test and the moment fit) and ``lifecycle_moment_simulator`` (the life-cycle
model's moments: mean log wealth-to-income by age group). Invalid inputs, unidentified params
and non-finite moments raise ``EstimationError`` (a ``project.errors.ProjectError``).
"""

from project.estimation.errors import EstimationError
from project.estimation.lifecycle import (
    LifecycleMoments,
    age_group_means,
    age_group_names,
    lifecycle_moment_simulator,
    log_wealth_to_income,
    simulate_log_wealth_to_income,
)
from project.estimation.msm import estimate_msm
from project.estimation.result import MSMResult

__all__ = [
    "EstimationError",
    "LifecycleMoments",
    "MSMResult",
    "age_group_means",
    "age_group_names",
    "estimate_msm",
    "lifecycle_moment_simulator",
    "log_wealth_to_income",
    "simulate_log_wealth_to_income",
]
