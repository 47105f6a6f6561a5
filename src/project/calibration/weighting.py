"""Use calibrated weights downstream: attach them to a panel and take weighted means.

Contract: ``attach_weights(panel=..., weights=...)`` returns a copy of the panel with each row's
subject weight in a ``weight`` column (``weights``: ``subject_id``, ``weight``, as in
``CalibrationOutcome.weights`` or ``load_calibration(...).weights``); every subject of the panel
needs exactly one finite, non-negative weight. ``weighted_mean(panel=..., weights=...,
column=..., by=...)`` is the population mean of ``column`` among the living (rows whose
``regime`` is ``dead`` are dropped, as for the targets; ``living_only=False`` keeps them),
``sum_i w_i x_i / sum_i w_i`` over the rows, overall (a float) or per value of ``by`` (a
Series indexed by it). A boolean column gives a weighted share, e.g.
``panel.assign(retired=panel["regime"] == "retired")`` and ``column="retired"``. Rows where
``column`` is missing are left out of numerator and denominator alike.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from project.calibration.errors import CalibrationError
from project.calibration.panel import living_rows

WEIGHT = "weight"
SHOWN = 5


def attach_weights(*, panel: pd.DataFrame, weights: pd.DataFrame) -> pd.DataFrame:
    """Return a copy of ``panel`` with its subjects' weights in a ``weight`` column."""
    for frame, name in ((panel, "panel"), (weights, "weights")):
        needed = ["subject_id"] if name == "panel" else ["subject_id", WEIGHT]
        missing = [c for c in needed if c not in frame.columns]
        if missing:
            msg = f"The {name} lacks columns {missing}; it has {list(frame.columns)}."
            raise CalibrationError(msg)
    if WEIGHT in panel.columns:
        msg = "The panel already has a 'weight' column; drop it before attaching weights."
        raise CalibrationError(msg)
    if weights["subject_id"].duplicated().any():
        repeated = weights.loc[weights["subject_id"].duplicated(), "subject_id"].unique()
        msg = f"The weights list subjects {repeated[:SHOWN].tolist()} more than once."
        raise CalibrationError(msg)
    values = pd.to_numeric(weights[WEIGHT], errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(values) | (values < 0)
    if bad.any():
        ids = weights.loc[bad, "subject_id"].tolist()
        msg = f"The weights of subjects {ids[:SHOWN]} are not finite, non-negative numbers."
        raise CalibrationError(msg)
    by_id = pd.Series(values, index=weights["subject_id"].to_numpy())
    row_weights = panel["subject_id"].map(by_id)
    if row_weights.isna().any():
        absent = panel.loc[row_weights.isna(), "subject_id"].unique()
        msg = (
            f"The weights have no entry for subjects {absent[:SHOWN].tolist()} "
            f"({absent.size} in all) of the panel; use the weights calibrated on this panel."
        )
        raise CalibrationError(msg)
    return panel.assign(**{WEIGHT: row_weights.to_numpy(dtype=float)})


def weighted_mean(
    *,
    panel: pd.DataFrame,
    weights: pd.DataFrame,
    column: str,
    by: str | list[str] | None = None,
    living_only: bool = True,
) -> float | pd.Series:
    """Return the weighted mean of ``column`` over the (living) rows, overall or by ``by``."""
    if column not in panel.columns:
        msg = f"The panel has no column {column!r} to average; it has {list(panel.columns)}."
        raise CalibrationError(msg)
    rows = living_rows(panel=panel) if living_only else panel
    weighted = attach_weights(panel=rows, weights=weights)
    series = weighted[column]
    if isinstance(series.dtype, pd.CategoricalDtype) or not (
        pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series)
    ):
        msg = (
            f"Column {column!r} ({series.dtype}) is not numeric or boolean; average an "
            f"indicator instead, e.g. panel.assign(x=panel[{column!r}] == 'label')."
        )
        raise CalibrationError(msg)
    values = series.astype(float)
    present = values.notna()
    frame = pd.DataFrame(
        {
            "numerator": np.where(present, values.fillna(0.0) * weighted[WEIGHT], 0.0),
            "denominator": np.where(present, weighted[WEIGHT], 0.0),
        },
        index=weighted.index,
    )
    if by is None:
        total = frame["denominator"].sum()
        return float(frame["numerator"].sum() / total) if total > 0 else float("nan")
    keys = [by] if isinstance(by, str) else list(by)
    missing = [k for k in keys if k not in weighted.columns]
    if missing:
        msg = f"The panel has no columns {missing} to group by; it has {list(panel.columns)}."
        raise CalibrationError(msg)
    sums = frame.groupby([weighted[k] for k in keys], observed=True, sort=True).sum()
    means = sums["numerator"] / sums["denominator"].where(sums["denominator"] > 0)
    return means.rename(column)
