"""Illustrative targets with a known answer: a panel's aggregates under a synthetic truth.

The shipped ``data/targets*.csv`` are not data. Their values are each variant's own simulated
aggregates (statistics of the living, see ``panel``) under the *synthetic truth* weights

    w*_i proportional to exp(WEALTH_TILT * z_i) * TYPE_FACTORS[pref_type_i],   mean 1,

where z_i is subject i's standardised log wealth in the first period: a population in which
wealthier (and, in a model with preference types, leisure-loving) households are more common
than in the simulated draw; a panel without ``pref_type`` is tilted by wealth alone. Targets
made so are attainable by construction (w* meets them exactly) and a held-out target has a
true value the fit can approach without seeing it. ``truth_weights(panel=...)`` returns w*;
``synthetic_targets(panel=..., template=..., variant=...)`` returns the template's rows of that
variant with ``value`` set to the weighted estimates under w*, rounded to 4 significant digits.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from project.calibration.errors import CalibrationError
from project.calibration.panel import PanelEstimates
from project.calibration.targets import parse_targets, targets_for_variant

WEALTH_TILT = 0.15
TYPE_FACTORS = {"leisure_loving": 1.15, "work_loving": 0.87}
DIGITS = 4


def truth_weights(*, panel: pd.DataFrame) -> pd.DataFrame:
    """Return the synthetic truth w* per subject (``subject_id``, ``weight``; mean 1)."""
    needed = ["subject_id", "period", "wealth"]
    missing = [c for c in needed if c not in panel.columns]
    if missing:
        msg = f"The panel lacks columns {missing} that the synthetic truth needs."
        raise CalibrationError(msg)
    first = panel.loc[panel["period"] == panel["period"].min()].sort_values("subject_id")
    if first["subject_id"].duplicated().any() or first["wealth"].isna().any():
        msg = "The panel's first period must hold one row with wealth per subject."
        raise CalibrationError(msg)
    log_wealth = np.log(first["wealth"].to_numpy(dtype=float))
    z = (log_wealth - log_wealth.mean()) / log_wealth.std()
    weights = np.exp(WEALTH_TILT * z)
    if "pref_type" in first.columns:
        types = first["pref_type"].astype(str)
        unknown = sorted(set(types) - set(TYPE_FACTORS))
        if unknown:
            msg = f"Preference types {unknown} have no factor; known are {sorted(TYPE_FACTORS)}."
            raise CalibrationError(msg)
        weights = weights * types.map(TYPE_FACTORS).to_numpy(dtype=float)
    return pd.DataFrame(
        {"subject_id": first["subject_id"].to_numpy(), "weight": weights / weights.mean()}
    )


def target_estimates(
    *,
    panel: pd.DataFrame,
    targets: pd.DataFrame,
    weights: pd.DataFrame | None = None,
    variant: str | None = None,
) -> pd.Series:
    """Return each target's weighted estimate on the panel (weights None: all ones)."""
    definitions, _ = parse_targets(targets=targets, variant=variant)
    estimates = PanelEstimates.from_panel(panel=panel, definitions=definitions)
    if weights is None:
        w = np.ones(estimates.n_records)
    else:
        by_id = weights.set_index("subject_id")["weight"]
        absent = np.setdiff1d(estimates.subject_ids, by_id.index.to_numpy())
        if absent.size:
            msg = f"The weights lack subjects {absent[:5].tolist()} ({absent.size} in all)."
            raise CalibrationError(msg)
        w = by_id.loc[estimates.subject_ids].to_numpy(dtype=float)
    values = w @ estimates(0, estimates.n_records)
    return pd.Series(values, index=[d.name for d in definitions], name="estimate")


def synthetic_targets(
    *, panel: pd.DataFrame, template: pd.DataFrame, variant: str | None = None
) -> pd.DataFrame:
    """Return the variant's template rows with values from the panel under the truth w*."""
    rows = targets_for_variant(targets=template, variant=variant)
    values = target_estimates(panel=panel, targets=rows, weights=truth_weights(panel=panel))
    rounded = [float(f"{v:.{DIGITS}g}") for v in values.to_numpy()]
    return rows.assign(value=rounded)
