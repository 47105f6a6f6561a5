"""Income units of the normalised life-cycle model's panels: each row's normaliser over P at 25.

Wealth and consumption times the unit are levels comparable across variants, which share every
shock (``lifecycle_normalised`` states them per unit of permanent income or of the pension).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from project.errors import ParamsError
from project.regimes import RegimeModel


def income_units(
    *, panel: pd.DataFrame, model: RegimeModel, params: Mapping[str, Any], seed: int
) -> np.ndarray:
    """Return each row's unit: its normaliser over permanent income at the first age.

    The panel (``SimulationResult.to_dataframe()`` of this model, simulated with ``seed``, one
    row per subject and period in that order) states wealth and consumption in units of
    permanent income P_t while working and of the pension B after the claim; the unit is P_t /
    P_25 or B / P_25, so wealth times unit is cash on hand in units of permanent income at 25.
    It multiplies the growth of the normaliser (``pension_units``) at the shocks the
    simulation drew (``project.simulation.realised``); the dead's rows get NaN.
    """
    from project.simulation.realised import realised_functions  # noqa: PLC0415

    order = panel[["subject_id", "period"]].to_numpy()
    if len(order) and not (np.lexsort((order[:, 1], order[:, 0])) == np.arange(len(order))).all():
        msg = "income_units needs the panel sorted by subject_id, then period (to_dataframe's)."
        raise ParamsError(msg)
    regime = panel["regime"].astype(str).to_numpy()
    working = regime == "working"
    rows = panel.loc[working]
    claim = rows["claim"]
    codes = claim.cat.codes.to_numpy() if isinstance(claim.dtype, pd.CategoricalDtype) else claim
    growth = realised_functions(
        model=model.regimes["working"],
        params=params,
        seed=seed,
        subject_ids=rows["subject_id"].to_numpy(),
        periods=rows["period"].to_numpy(),
        ages=rows["age"].to_numpy(),
        values={
            "wealth": rows["wealth"].to_numpy(),
            "consumption": rows["consumption"].to_numpy(),
            "claim": np.asarray(codes, dtype=np.int32),
        },
        targets=["pension_units"],
    )["pension_units"]
    factor = np.ones(len(panel))
    factor[working] = growth
    through = pd.Series(factor).groupby(panel["subject_id"].to_numpy()).cumprod().to_numpy()
    units = through / factor  # the product of the factors of the subject's earlier rows
    units[regime == "dead"] = np.nan
    return units
