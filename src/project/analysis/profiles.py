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

PROFILE_COLUMNS = ("mean_wealth", "median_wealth", "mean_consumption", "share_retired", "n")
"""Columns of ``lifecycle_profiles`` besides the grouping columns and ``age``."""

REQUIRED_COLUMNS = ("age", "wealth", "consumption", "retirement")


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
