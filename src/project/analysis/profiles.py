"""Aggregate a simulated panel (one row per subject and period) into profiles by age.

The panel is ``SimulationResult.to_dataframe()``: columns ``age``, ``wealth``, ``consumption``,
``retirement`` and ``pref_type`` at least. Discrete columns may be categoricals with labels
("retired") or integer codes (1 = retired); both are understood. A panel of a model with regimes
has a ``regime`` column (labels): statistics are of the living (``living_rows`` of
``project.calibration.panel`` drops the rows in regime "dead"), and a household is retired in
regime "retired" or in the period it chooses to retire.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from project.calibration.panel import living_rows

RETIRED_LABEL = "retired"
RETIRED_CODE = 1
REGIME_COLUMN = "regime"

WORKING_LABEL = "working"

PROFILE_COLUMNS = ("mean_wealth", "median_wealth", "mean_consumption", "share_retired", "n")
"""Columns of ``lifecycle_profiles`` besides the grouping columns and ``age``."""

REQUIRED_COLUMNS = ("age", "wealth", "consumption", "retirement")

HAZARD_COLUMNS = ("wealth_group", "n", "share_retiring", "mean_wealth")
"""Columns of ``retirement_hazard`` besides the grouping columns and ``age``."""


def retired_indicator(retirement: pd.Series) -> pd.Series:
    """Return 1.0 where the retirement choice is "retired" (label or code 1), else 0.0."""
    if pd.api.types.is_numeric_dtype(retirement.dtype):
        is_retired = retirement == RETIRED_CODE
    else:
        is_retired = retirement.astype(str) == RETIRED_LABEL
    return is_retired.astype(float)


def is_retired(panel: pd.DataFrame) -> pd.Series:
    """Return 1.0 for households that are retired or retire this period, else 0.0."""
    retired = retired_indicator(panel["retirement"])
    if REGIME_COLUMN in panel.columns:
        in_retirement = (panel[REGIME_COLUMN].astype(str) == RETIRED_LABEL).astype(float)
        retired = np.maximum(retired, in_retirement)
    return retired


def check_panel(panel: pd.DataFrame, *, extra: Sequence[str] = ()) -> None:
    """Raise ``KeyError`` naming the columns the analysis needs that ``panel`` lacks."""
    missing = [c for c in (*REQUIRED_COLUMNS, *extra) if c not in panel.columns]
    if missing:
        msg = f"The panel lacks the columns {missing}; it has {list(panel.columns)}."
        raise KeyError(msg)


def lifecycle_profiles(*, panel: pd.DataFrame, by: Sequence[str] = ()) -> pd.DataFrame:
    """Return mean and median wealth, mean consumption, share retired and N (of the living).

    One row per group and age, sorted; groups keep the order of categoricals (else sorted).
    """
    by = list(by)
    check_panel(panel, extra=by)
    panel = living_rows(panel=panel)
    frame = pd.DataFrame(
        {
            **{column: panel[column] for column in by},
            "age": panel["age"].astype(float),
            "wealth": panel["wealth"].astype(float),
            "consumption": panel["consumption"].astype(float),
            "retired": is_retired(panel),
        }
    )
    grouped = frame.groupby([*by, "age"], observed=True, sort=True)
    profiles = grouped.agg(
        mean_wealth=("wealth", "mean"),
        median_wealth=("wealth", "median"),
        mean_consumption=("consumption", "mean"),
        share_retired=("retired", "mean"),
        n=("wealth", "size"),
    )
    profiles["n"] = profiles["n"].astype(np.int64)
    return profiles.reset_index()


def age_bracket_start(age: pd.Series, *, width: int) -> pd.Series:
    """Return the first age of each age's bracket: ``width``-year brackets from multiples of it."""
    return (np.floor(age.astype(float) / width) * width).astype(np.int64)


def age_bracket_label(start: int, *, width: int) -> str:
    """Return a bracket's label, e.g. "50-54" for ``start=50, width=5``."""
    return f"{start}-{start + width - 1}" if width > 1 else f"{start}"


def living(panel: pd.DataFrame) -> pd.DataFrame:
    """Return the rows of the living (all rows of a panel without a ``regime`` column)."""
    return living_rows(panel=panel)


def at_risk_of_retiring(panel: pd.DataFrame) -> pd.Series:
    """Return True for the rows of living households who may still choose to retire.

    That is regime "working" where the panel has regimes; else a lagged retirement status of
    "working" (label or code 0); else (needs ``subject_id``) every row up to and including a
    subject's first choice of "retired". Rows with a missing retirement choice are never at risk.
    """
    chosen = panel["retirement"].notna()
    if pd.api.types.is_numeric_dtype(panel["retirement"].dtype):
        chosen &= panel["retirement"] >= 0
    if REGIME_COLUMN in panel.columns:
        return chosen & (panel[REGIME_COLUMN].astype(str) == WORKING_LABEL)
    if "lagged_retirement" in panel.columns:
        return chosen & (retired_indicator(panel["lagged_retirement"]) == 0.0)
    if "subject_id" not in panel.columns:
        msg = "Without regime or lagged_retirement columns the panel needs subject_id."
        raise KeyError(msg)
    order = panel.sort_values(["subject_id", "age"], kind="stable")
    retired = retired_indicator(order["retirement"])
    before = retired.groupby(order["subject_id"]).cumsum() - retired
    return chosen & (before == 0).reindex(panel.index)


def retirement_hazard(
    *, panel: pd.DataFrame, by: Sequence[str] = ("pref_type",), n_groups: int = 3
) -> pd.DataFrame:
    """Return the share choosing to retire by ``by``, age and wealth group, of those at risk.

    Those at risk are ``at_risk_of_retiring``. Within each group of ``by`` and age they are
    split by wealth into ``n_groups`` groups of (nearly) equal size, ``wealth_group`` 0 the
    poorest: the i-th poorest of N (from 0; ties by row order) is in group floor(i n_groups / N).
    Columns: ``by``, ``age``, ``wealth_group``, ``n`` (at risk), ``share_retiring`` and
    ``mean_wealth``; one row per non-empty cell, sorted.
    """
    by = list(by)
    if n_groups < 1:
        msg = f"n_groups must be at least 1, got {n_groups}."
        raise ValueError(msg)
    check_panel(panel, extra=by)
    rows = panel.loc[at_risk_of_retiring(panel)]
    frame = pd.DataFrame(
        {
            **{column: rows[column] for column in by},
            "age": rows["age"].astype(float),
            "wealth": rows["wealth"].astype(float),
            "retiring": retired_indicator(rows["retirement"]),
        }
    )
    cells = frame.groupby([*by, "age"], observed=True, sort=False)
    position = cells["wealth"].rank(method="first").astype(np.int64) - 1
    size = cells["wealth"].transform("size")
    frame["wealth_group"] = (position * n_groups // size).astype(np.int64)
    grouped = frame.groupby([*by, "age", "wealth_group"], observed=True, sort=True)
    hazard = grouped.agg(
        n=("retiring", "size"),
        share_retiring=("retiring", "mean"),
        mean_wealth=("wealth", "mean"),
    )
    hazard["n"] = hazard["n"].astype(np.int64)
    return hazard.reset_index()


def wealth_upper_bound(
    *,
    panel: pd.DataFrame,
    ages: Sequence[float] | None = None,
    regime: str | None = None,
    quantile: float = 0.99,
) -> float:
    """Return the ``quantile`` of the living's wealth at ``ages`` (all ages if None).

    With ``regime`` and a panel with regimes, of the living in that regime only. NaN if no row.
    """
    rows = living(panel)
    if regime is not None and REGIME_COLUMN in rows.columns:
        rows = rows.loc[rows[REGIME_COLUMN].astype(str) == regime]
    if ages is not None:
        rows = rows.loc[np.isin(rows["age"].astype(float), np.asarray(ages, dtype=float))]
    wealth = rows["wealth"].astype(float).dropna()
    return float(wealth.quantile(quantile)) if len(wealth) else float("nan")
