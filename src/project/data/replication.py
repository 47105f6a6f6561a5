"""The published buffer-stock estimation's inputs (``data/replication/``, see data/README.md).

``profiles_<calibration>.csv`` (written by ``data/replication/make_profiles.py`` with HARK
0.17.2) has one row per transition from age 25 + t to 26 + t, t = 0..64: permanent income
growth, the permanent and transitory shocks' standard deviations, the survival probability and
the discount-factor profile; ``read_profiles`` checks it.

``SCFdata.csv`` (the estimation's data as HARK distributed it) has one row per SCF household:
its ratio of net worth to permanent income, its age group (1..7 for 26-30 ... 56-60) and its
weight (weights sum to the group's household count); ``read_wealth_ratios`` checks it.
``weighted_medians`` gives each group's weighted median (the smallest ratio at which the
cumulated weight reaches half the group's) and ``bootstrap_median_variances`` their sampling
variances, from resampling households within each group with replacement.
"""

from __future__ import annotations

from collections.abc import Callable
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
RATIO_COLUMNS = ("wealth_income_ratio", "age_group", "weight")
AGE_GROUPS = ((25, 30), (30, 35), (35, 40), (40, 45), (45, 50), (50, 55), (55, 60))
"""The ages of ``age_group`` 1..7 as (first age - 1, last age], like the SCF moment table's."""


def read_profiles(path: Path) -> pd.DataFrame:
    """Return the profiles at ``path`` after checking columns, ages and ranges."""

    def problems(frame: pd.DataFrame) -> list[str]:
        found = []
        expected_ages = FIRST_AGE + np.arange(N_TRANSITIONS)
        if len(frame) != N_TRANSITIONS or not np.array_equal(frame["age"], expected_ages):
            found.append(
                f"ages must run {FIRST_AGE}..{FIRST_AGE + N_TRANSITIONS - 1}, one row each"
            )
        if not ((frame["survival"] > 0) & (frame["survival"] <= 1)).all():
            found.append("survival must lie in (0, 1]")
        if not (frame[["permanent_shock_sd", "transitory_shock_sd"]] >= 0).all().all():
            found.append("shock standard deviations must be >= 0")
        if not ((frame["income_growth"] > 0) & (frame["discount_profile"] > 0)).all():
            found.append("income growth and discount factors must be > 0")
        return found

    return _read_checked(
        path,
        columns=COLUMNS,
        problems=problems,
        restore="Restore it from git or write it again with data/replication/make_profiles.py.",
    )


def read_wealth_ratios(path: Path) -> pd.DataFrame:
    """Return the SCF households at ``path`` after checking columns, groups and weights."""

    def problems(frame: pd.DataFrame) -> list[str]:
        found = []
        groups = set(frame["age_group"].unique())
        if groups != set(range(1, len(AGE_GROUPS) + 1)):
            found.append(
                f"age_group must take the values 1..{len(AGE_GROUPS)}, got {sorted(groups)}"
            )
        if not (frame["weight"] > 0).all():
            found.append("weights must be > 0")
        return found

    return _read_checked(
        path, columns=RATIO_COLUMNS, problems=problems, restore="Restore the file from git."
    )


def _read_checked(
    path: Path,
    *,
    columns: tuple[str, ...],
    problems: Callable[[pd.DataFrame], list[str]],
    restore: str,
) -> pd.DataFrame:
    """Return the CSV at ``path`` after checking its columns, its numbers and ``problems``.

    Raises ``DataError`` naming what is wrong and how to ``restore`` the file.
    """
    shown = display_path(path)
    frame = pd.read_csv(path)
    if tuple(frame.columns) != columns:
        msg = f"{shown}: columns are {list(frame.columns)}, expected {list(columns)}. {restore}"
        raise DataError(msg)
    found = (
        []
        if np.isfinite(frame.to_numpy(dtype=float)).all()
        else ["every cell must be a finite number"]
    )
    found += problems(frame)
    if found:
        msg = f"{shown}: " + "; ".join(found) + f". {restore}"
        raise DataError(msg)
    return frame


def weighted_medians(frame: pd.DataFrame) -> np.ndarray:
    """Return each age group's weighted median ratio, groups in order."""
    return np.asarray(
        [
            _weighted_median(rows["wealth_income_ratio"].to_numpy(), rows["weight"].to_numpy())
            for _, rows in frame.groupby("age_group", sort=True)
        ]
    )


def bootstrap_median_variances(frame: pd.DataFrame, *, n_draws: int, seed: int) -> np.ndarray:
    """Return the variance of each group's weighted median over ``n_draws`` resamples.

    Each draw resamples a group's households with replacement (as many as it has), keeping
    their weights; the groups are independent samples.
    """
    rng = np.random.default_rng(seed)
    variances = []
    for _, rows in frame.groupby("age_group", sort=True):
        ratios, weights = rows["wealth_income_ratio"].to_numpy(), rows["weight"].to_numpy()
        draws = rng.integers(0, len(rows), size=(n_draws, len(rows)))
        medians = [_weighted_median(ratios[d], weights[d]) for d in draws]
        variances.append(float(np.var(medians, ddof=1)))
    return np.asarray(variances)


def _weighted_median(values: np.ndarray, weights: np.ndarray) -> float:
    order = np.argsort(values, kind="stable")
    cumulated = np.cumsum(weights[order])
    return float(values[order][np.searchsorted(cumulated, 0.5 * cumulated[-1])])
