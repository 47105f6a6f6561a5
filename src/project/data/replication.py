"""The age profiles of the published buffer-stock estimation (``data/replication/``).

``solvingmicrodsops_profiles.csv`` (written by ``data/replication/make_profiles.py`` with HARK
0.17.2; see data/README.md) has one row per transition from age 25 + t to 26 + t, t = 0..64:
permanent income growth, the permanent and transitory shocks' standard deviations, the
survival probability and the discount-factor profile. ``read_profiles`` checks it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from project.data.vendored import display_path
from project.errors import DataError

COLUMNS = (
    "period",
    "age",
    "income_growth",
    "permanent_shock_sd",
    "transitory_shock_sd",
    "survival",
    "discount_profile",
)
FIRST_AGE, N_TRANSITIONS = 25, 65


def read_profiles(path: Path) -> pd.DataFrame:
    """Return the profiles at ``path`` after checking columns, ages and ranges."""
    shown = display_path(path)
    frame = pd.read_csv(path)
    if tuple(frame.columns) != COLUMNS:
        msg = (
            f"{shown}: columns are {list(frame.columns)}, expected {list(COLUMNS)}. Restore "
            "the file from git or write it again with data/replication/make_profiles.py."
        )
        raise DataError(msg)
    values = frame.to_numpy(dtype=float)
    expected_ages = FIRST_AGE + np.arange(N_TRANSITIONS)
    problems = []
    if len(frame) != N_TRANSITIONS or not np.array_equal(frame["age"], expected_ages):
        problems.append(f"ages must run {FIRST_AGE}..{FIRST_AGE + N_TRANSITIONS - 1}, one row each")
    if not np.isfinite(values).all():
        problems.append("every cell must be a finite number")
    if not ((frame["survival"] > 0) & (frame["survival"] <= 1)).all():
        problems.append("survival must lie in (0, 1]")
    if not (frame[["permanent_shock_sd", "transitory_shock_sd"]] >= 0).all().all():
        problems.append("shock standard deviations must be >= 0")
    if not ((frame["income_growth"] > 0) & (frame["discount_profile"] > 0)).all():
        problems.append("income growth and discount factors must be > 0")
    if problems:
        msg = f"{shown}: " + "; ".join(problems) + ". Restore the file from git."
        raise DataError(msg)
    return frame
