"""How sound a set of weights is, and which goals a calibration missed.

Contract: ``WeightSummary.of(weights)`` returns the number of subjects N, the Kish effective
sample size

    ESS = (sum_i w_i)^2 / sum_i w_i^2

(N for equal weights; the number of subjects an unweighted sample of the same precision for a
mean would need), ESS / N, the mean weight and the largest and smallest weight relative to the
mean. ``goal_failures`` returns one message per missed goal of ``CalibrationSettings``: ESS / N
below ``min_ess_share``, max weight / mean above ``max_weight_ratio``, or a fitted target
outside its tolerance (held-out targets are reported in the table, never a goal).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from project.calibration.errors import CalibrationError
from project.calibration.settings import CalibrationSettings

SHOWN = 5


def kish_effective_sample_size(weights: np.ndarray) -> float:
    """Return (sum w)^2 / sum w^2 of non-negative weights (0 when all are zero)."""
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 1 or not np.isfinite(w).all() or (w < 0).any():
        msg = "The effective sample size needs a vector of finite, non-negative weights."
        raise CalibrationError(msg)
    squares = float(np.sum(w**2))
    return float(np.sum(w)) ** 2 / squares if squares > 0 else 0.0


@dataclass(frozen=True)
class WeightSummary:
    """Size and dispersion of one set of weights (see the module docstring)."""

    n_subjects: int
    effective_sample_size: float
    effective_sample_share: float
    mean_weight: float
    max_weight_ratio: float
    min_weight_ratio: float

    @classmethod
    def of(cls, weights: np.ndarray) -> WeightSummary:
        """Return the summary of a vector of weights, one per subject."""
        w = np.asarray(weights, dtype=np.float64)
        ess = kish_effective_sample_size(w)
        if w.size == 0:
            msg = "The weights are empty; there is nothing to summarise."
            raise CalibrationError(msg)
        mean = float(w.mean())
        return cls(
            n_subjects=int(w.size),
            effective_sample_size=ess,
            effective_sample_share=ess / w.size,
            mean_weight=mean,
            max_weight_ratio=float(w.max()) / mean if mean > 0 else float("nan"),
            min_weight_ratio=float(w.min()) / mean if mean > 0 else float("nan"),
        )

    def as_dict(self) -> dict[str, Any]:
        """Return the fields as a JSON-ready dict."""
        return asdict(self)


def goal_failures(
    *, summary: WeightSummary, table: pd.DataFrame, settings: CalibrationSettings
) -> list[str]:
    """Return one message per missed goal (empty: every goal met)."""
    failures = []
    if not summary.effective_sample_share >= settings.min_ess_share:
        failures.append(
            f"Kish effective sample size {summary.effective_sample_size:,.0f} is "
            f"{summary.effective_sample_share:.1%} of the {summary.n_subjects:,} subjects, "
            f"below the goal min_ess_share={settings.min_ess_share:g}: the targets pull the "
            "weights far from the base weights; loosen or hold out the targets that cannot "
            "be met, or raise penalty_strength."
        )
    if not summary.max_weight_ratio <= settings.max_weight_ratio:
        failures.append(
            f"The largest weight is {summary.max_weight_ratio:.3g} times the mean weight, "
            f"above the goal max_weight_ratio={settings.max_weight_ratio:g}: a few subjects "
            "carry the fit; lower upper_bound, raise penalty_strength or revise the targets."
        )
    missed = table[~table["held_out"] & ~table["within_tolerance_after"]]
    if len(missed):
        shown = ", ".join(
            f"{row.target!r} misses by {row.relative_miss_after:+.2%} (tolerance "
            f"{row.tolerance:.2%})"
            for row in missed.head(SHOWN).itertuples()
        )
        more = f" and {len(missed) - SHOWN} more" if len(missed) > SHOWN else ""
        failures.append(
            f"{len(missed)} of {int((~table['held_out']).sum())} fitted targets are outside "
            f"their tolerance: {shown}{more}. Check that the targets are consistent and "
            "attainable, run more epochs, lower penalty_strength or widen the bounds."
        )
    return failures
