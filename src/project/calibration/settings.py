"""How to calibrate: the optimiser, the regularisation and the goals a result must meet.

Contract: ``CalibrationSettings`` (frozen, validated on construction, ``CalibrationError``
naming the setting, its value and what it must be) and ``from_mapping`` (a dict, e.g. the
pipeline's JSON settings; unknown keys are refused with the list of known ones). Defaults:

- optimiser: ``epochs`` 1000 Adam steps with ``learning_rate`` 0.01, cosine-decayed to
  ``final_learning_rate_share`` of it over the epochs (default 1: constant), ``seed`` 0,
  ``dropout`` 0 (a rate in [0, 1)), ``batch_size`` None (one batch), ``relative_floor`` 1
  (see ``objective``);
- regularisation (see ``regularize``): every weight within [``lower_bound``, ``upper_bound``]
  = [0.2, 5] times its base weight and a ``penalty`` ("entropy": KL divergence, or "chi2")
  toward the base weights of ``penalty_strength`` 0.05 (0 switches it off);
- goals (see ``diagnostics``): Kish effective sample size at least ``min_ess_share`` 0.5 of the
  subjects, largest weight at most ``max_weight_ratio`` 10 times the mean weight, and every
  fitted target within its tolerance. ``on_goal_failure`` "warn" (default) records each missed
  goal in the outcome's ``warnings`` and logs it; "raise" raises ``CalibrationError`` instead.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from project.calibration.errors import CalibrationError
from project.calibration.regularize import PENALTIES, Regularization

ON_GOAL_FAILURE = ("warn", "raise")


@dataclass(frozen=True)
class CalibrationSettings:
    """The optimiser, the regularisation and the goals (see the module docstring)."""

    epochs: int = 1000
    learning_rate: float = 0.01
    final_learning_rate_share: float = 1.0
    seed: int = 0
    dropout: float = 0.0
    batch_size: int | None = None
    relative_floor: float = 1.0
    penalty: str = "entropy"
    penalty_strength: float = 0.05
    lower_bound: float = 0.2
    upper_bound: float = 5.0
    min_ess_share: float = 0.5
    max_weight_ratio: float = 10.0
    on_goal_failure: str = "warn"

    def __post_init__(self) -> None:
        checks = {
            "epochs": (isinstance(self.epochs, int) and self.epochs >= 0, "an integer >= 0"),
            "learning_rate": (
                _number(self.learning_rate) and self.learning_rate > 0,
                "a number > 0",
            ),
            "final_learning_rate_share": (
                _number(self.final_learning_rate_share) and 0 < self.final_learning_rate_share <= 1,
                "a share in (0, 1] (1: a constant learning rate)",
            ),
            "seed": (
                isinstance(self.seed, int) and 0 <= self.seed < 2**31,
                "an integer in [0, 2**31)",
            ),
            "dropout": (_number(self.dropout) and 0 <= self.dropout < 1, "a rate in [0, 1)"),
            "batch_size": (
                self.batch_size is None
                or (isinstance(self.batch_size, int) and self.batch_size >= 1),
                "None (full batch) or an integer >= 1",
            ),
            "relative_floor": (
                _number(self.relative_floor) and self.relative_floor >= 0,
                "a number >= 0",
            ),
            "penalty": (self.penalty in PENALTIES, f"one of {list(PENALTIES)}"),
            "penalty_strength": (
                _number(self.penalty_strength) and self.penalty_strength >= 0,
                "a number >= 0 (0: no penalty, only the bounds)",
            ),
            "lower_bound": (
                _number(self.lower_bound) and 0 < self.lower_bound < 1,
                "a factor in (0, 1): the smallest weight as a multiple of its base weight",
            ),
            "upper_bound": (
                _number(self.upper_bound) and self.upper_bound > 1,
                "a finite factor > 1: the largest weight as a multiple of its base weight",
            ),
            "min_ess_share": (
                _number(self.min_ess_share) and 0 <= self.min_ess_share <= 1,
                "a share in [0, 1] of the subjects",
            ),
            "max_weight_ratio": (
                _number(self.max_weight_ratio) and self.max_weight_ratio >= 1,
                "a ratio >= 1 of the largest to the mean weight",
            ),
            "on_goal_failure": (
                self.on_goal_failure in ON_GOAL_FAILURE,
                f"one of {list(ON_GOAL_FAILURE)}",
            ),
        }
        for name, (ok, wanted) in checks.items():
            if not ok:
                msg = (
                    f"Calibration setting {name}={getattr(self, name)!r} must be {wanted}; "
                    "fix it in the calibration settings (CALIBRATION in src/project/config.py "
                    "for the pipeline)."
                )
                raise CalibrationError(msg)

    @classmethod
    def from_mapping(cls, settings: Mapping[str, Any] | None) -> CalibrationSettings:
        """Return settings from a dict, rejecting unknown keys."""
        settings = dict(settings or {})
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(settings) - known)
        if unknown:
            msg = f"Unknown calibration settings {unknown}; known are {sorted(known)}."
            raise CalibrationError(msg)
        return cls(**settings)

    @property
    def regularization(self) -> Regularization:
        """Return the bounds and the penalty as the passes use them."""
        return Regularization(
            lower=float(self.lower_bound),
            upper=float(self.upper_bound),
            penalty=self.penalty,
            strength=float(self.penalty_strength),
        )


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
