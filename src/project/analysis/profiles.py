"""Aggregate a simulated panel of ``lifecycle_normalised`` into profiles by age.

The panel is ``SimulationResult.to_dataframe()`` with the pipeline's columns (``bld/<variant>/
simulation``): ``subject_id``, ``period``, ``age``, ``regime`` (working, retired, dead),
``wealth`` and ``consumption`` (over permanent income P working, over the pension B after the
claim), ``claim`` (working or claim; missing outside the working regime), ``wealth_to_income``
(m - c in the same unit: the SCF's statistic) and ``income_unit`` (the row's unit over
permanent income at 25; NaN for the dead). Discrete columns may be categoricals with labels or
integer codes (claim 1, missing -1); both are understood.

Statistics are of the living (``living`` drops the rows in regime "dead"). A household is
retired in regime "retired": a worker who claims at age t still works at t and is retired from
t + 1. Levels (``levels``) are wealth or consumption times ``income_unit``: multiples of
permanent income at 25, comparable across households and variants.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from project.calibration.panel import living_rows
from project.models.lifecycle_normalised import CLAIM_LAG, EARLIEST_CLAIM

REGIME_COLUMN = "regime"
RETIRED_LABEL = "retired"
WORKING_LABEL = "working"
CLAIM_COLUMN = "claim"
CLAIM_LABEL = "claim"
CLAIM_CODE = 1
UNIT_COLUMN = "income_unit"
RATIO_COLUMN = "wealth_to_income"

REQUIRED_COLUMNS = ("age", REGIME_COLUMN, "wealth", "consumption")
"""Columns every analysis of a panel needs (``check_panel``)."""

PROFILE_COLUMNS = (
    "mean_wealth",
    "median_wealth",
    "mean_consumption",
    "median_wealth_to_income",
    "share_retired",
    "n",
)
"""Columns of ``lifecycle_profiles`` besides the grouping columns and ``age``."""

HAZARD_COLUMNS = ("wealth_group", "n", "share_claiming", "mean_wealth")
"""Columns of ``retirement_hazard`` besides the grouping columns and ``age``."""


def check_panel(panel: pd.DataFrame, *, extra: Sequence[str] = ()) -> None:
    """Raise ``KeyError`` naming the columns the analysis needs that ``panel`` lacks."""
    _require(panel, columns=(*REQUIRED_COLUMNS, *extra))


def _require(panel: pd.DataFrame, *, columns: Sequence[str]) -> None:
    missing = [c for c in columns if c not in panel.columns]
    if missing:
        msg = (
            f"The panel lacks the columns {missing}; it has {list(panel.columns)}. Pass the "
            "simulated panel of lifecycle_normalised (bld/<variant>/simulation)."
        )
        raise KeyError(msg)


def living(panel: pd.DataFrame) -> pd.DataFrame:
    """Return the rows of the living (all rows of a panel without a ``regime`` column)."""
    return living_rows(panel=panel)


def is_retired(panel: pd.DataFrame) -> pd.Series:
    """Return 1.0 for the rows in regime "retired", else 0.0 (the claim year is still working)."""
    _require(panel, columns=(REGIME_COLUMN,))
    return (panel[REGIME_COLUMN].astype(str) == RETIRED_LABEL).astype(float)


def claims(panel: pd.DataFrame) -> pd.Series:
    """Return 1.0 where the claim choice is "claim" (label or code 1), else 0.0."""
    _require(panel, columns=(CLAIM_COLUMN,))
    claim = panel[CLAIM_COLUMN]
    if pd.api.types.is_numeric_dtype(claim.dtype):
        chosen = claim == CLAIM_CODE
    else:
        chosen = claim.astype(str) == CLAIM_LABEL
    return chosen.astype(float)


def at_risk_of_retiring(panel: pd.DataFrame) -> pd.Series:
    """Return True for the deciders: workers who may decide to claim, with a claim choice.

    That is the living rows in regime "working" from the age whose decision is a claim at
    ``EARLIEST_CLAIM`` (61: the pension starts the year after the decision, ``CLAIM_LAG``)
    whose ``claim`` is recorded (not missing, nor a negative code).
    """
    _require(panel, columns=("age", REGIME_COLUMN, CLAIM_COLUMN))
    claim = panel[CLAIM_COLUMN]
    chosen = claim.notna()
    if pd.api.types.is_numeric_dtype(claim.dtype):
        chosen &= claim >= 0
    working = panel[REGIME_COLUMN].astype(str) == WORKING_LABEL
    return chosen & working & (panel["age"].astype(float) + CLAIM_LAG >= EARLIEST_CLAIM)


def levels(panel: pd.DataFrame, *, column: str) -> pd.Series:
    """Return ``column`` times ``income_unit``: a multiple of permanent income at 25."""
    _require(panel, columns=(column, UNIT_COLUMN))
    return panel[column].astype(float) * panel[UNIT_COLUMN].astype(float)


def lifecycle_profiles(*, panel: pd.DataFrame, by: Sequence[str] = ()) -> pd.DataFrame:
    """Return, by age (and ``by``), statistics of the living: ``PROFILE_COLUMNS``.

    ``mean_wealth``, ``median_wealth`` and ``mean_consumption`` are levels (``levels``: multiples
    of permanent income at 25); ``median_wealth_to_income`` is the median of the ratio m - c
    (over P working, B retired); ``share_retired`` the share in regime "retired"; ``n`` the
    living. One row per group and age, sorted; groups keep the order of categoricals.
    """
    by = list(by)
    check_panel(panel, extra=(*by, UNIT_COLUMN, RATIO_COLUMN))
    panel = living(panel)
    frame = pd.DataFrame(
        {
            **{column: panel[column] for column in by},
            "age": panel["age"].astype(float),
            "wealth": levels(panel, column="wealth"),
            "consumption": levels(panel, column="consumption"),
            "ratio": panel[RATIO_COLUMN].astype(float),
            "retired": is_retired(panel),
        }
    )
    grouped = frame.groupby([*by, "age"], observed=True, sort=True)
    profiles = grouped.agg(
        mean_wealth=("wealth", "mean"),
        median_wealth=("wealth", "median"),
        mean_consumption=("consumption", "mean"),
        median_wealth_to_income=("ratio", "median"),
        share_retired=("retired", "mean"),
        n=("retired", "size"),
    )
    profiles["n"] = profiles["n"].astype(np.int64)
    return profiles.reset_index()


def retirement_hazard(
    *,
    panel: pd.DataFrame,
    by: Sequence[str] = (),
    n_groups: int = 3,
    wealth_column: str = "wealth",
) -> pd.DataFrame:
    """Return the share of deciders who claim by ``by``, age and wealth group.

    The deciders are ``at_risk_of_retiring`` (workers from 61); ``age`` is the claiming age of
    their decision (the age plus ``CLAIM_LAG``). Within each group of ``by`` and age they are
    split by ``wealth_column`` (default cash on hand m over permanent income P,
    the state they decide on) into ``n_groups`` groups of (nearly) equal size, ``wealth_group``
    0 the poorest: the i-th poorest of N (from 0; ties by row order) is in group
    floor(i n_groups / N). Columns: ``by``, ``age`` and ``HAZARD_COLUMNS`` (``n`` deciders,
    ``mean_wealth`` of ``wealth_column``); one row per non-empty cell, sorted.
    """
    by = list(by)
    if n_groups < 1:
        msg = f"retirement_hazard: n_groups must be at least 1, got {n_groups}."
        raise ValueError(msg)
    check_panel(panel, extra=(*by, wealth_column, CLAIM_COLUMN))
    rows = panel.loc[at_risk_of_retiring(panel)]
    frame = pd.DataFrame(
        {
            **{column: rows[column] for column in by},
            "age": rows["age"].astype(float) + CLAIM_LAG,  # the claiming age of the decision
            "wealth": rows[wealth_column].astype(float),
            "claiming": claims(rows),
        }
    )
    cells = frame.groupby([*by, "age"], observed=True, sort=False)
    position = cells["wealth"].rank(method="first").astype(np.int64) - 1
    size = cells["wealth"].transform("size")
    frame["wealth_group"] = (position * n_groups // size).astype(np.int64)
    grouped = frame.groupby([*by, "age", "wealth_group"], observed=True, sort=True)
    hazard = grouped.agg(
        n=("claiming", "size"),
        share_claiming=("claiming", "mean"),
        mean_wealth=("wealth", "mean"),
    )
    hazard["n"] = hazard["n"].astype(np.int64)
    return hazard.reset_index()


def age_bracket_start(age: pd.Series, *, width: int) -> pd.Series:
    """Return the first age of each age's bracket: ``width``-year brackets from multiples of it."""
    return (np.floor(age.astype(float) / width) * width).astype(np.int64)


def age_bracket_label(start: int, *, width: int) -> str:
    """Return a bracket's label, e.g. "50-54" for ``start=50, width=5``."""
    return f"{start}-{start + width - 1}" if width > 1 else f"{start}"


def wealth_upper_bound(
    *,
    panel: pd.DataFrame,
    ages: Sequence[float] | None = None,
    regime: str | None = None,
    quantile: float = 0.99,
) -> float:
    """Return the ``quantile`` of the living's ``wealth`` at ``ages`` (all ages if None).

    With ``regime``, of the living in that regime only (wealth is then in that regime's unit:
    P working, B retired). NaN if no row.
    """
    return wealth_quantiles(panel=panel, ages=ages, regime=regime, quantiles=(quantile,))[0]


def wealth_quantiles(
    *,
    panel: pd.DataFrame,
    ages: Sequence[float] | None = None,
    regime: str | None = None,
    quantiles: Sequence[float] = (0.01, 0.99),
) -> tuple[float, ...]:
    """Return ``quantiles`` of the living's ``wealth`` (in ``regime``, at ``ages``); NaN if none."""
    rows = living(panel)
    if regime is not None:
        _require(rows, columns=(REGIME_COLUMN,))
        rows = rows.loc[rows[REGIME_COLUMN].astype(str) == regime]
    if ages is not None:
        rows = rows.loc[np.isin(rows["age"].astype(float), np.asarray(ages, dtype=float))]
    wealth = rows["wealth"].astype(float).dropna()
    if not len(wealth):
        return tuple(float("nan") for _ in quantiles)
    return tuple(float(wealth.quantile(q)) for q in quantiles)
