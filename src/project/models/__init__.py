"""Shipped models: IJRS retirement, precautionary savings, iid income, the default life cycle.

The pipeline's model is ``lifecycle_normalised``: from 25 to 99, normalised by permanent income,
with the vendored income profiles and life table as its defaults (``default_params_of``).
``lifecycle_regimes`` (working, retired and dead as regimes, from 50, with a mandatory
retirement age) and ``lifecycle`` (the same economics without death, as one regime) are the
smaller models the tests and benchmarks use.
"""

from __future__ import annotations

from typing import Any

from project.errors import ParamsError
from project.models import (
    iid_income,
    ijrs,
    lifecycle,
    lifecycle_normalised,
    lifecycle_normalised_params,
    lifecycle_regimes,
    normalised_units,
    precautionary,
)

MODEL_BUILDERS = {
    "ijrs": ijrs.build_model,
    "iid_income": iid_income.build_model,
    "precautionary": precautionary.build_model,
    "lifecycle": lifecycle.build_model,
    "lifecycle_regimes": lifecycle_regimes.build_model,
    "lifecycle_normalised": lifecycle_normalised.build_model,
}
DEFAULT_PARAMS = {
    "ijrs": ijrs.DEFAULT_PARAMS,
    "iid_income": iid_income.DEFAULT_PARAMS,
    "precautionary": precautionary.DEFAULT_PARAMS,
    "lifecycle": lifecycle.DEFAULT_PARAMS,
}
"""Default params of the models whose params do not depend on how they are built."""
DEFAULT_TASTE_SHOCK_SCALES = {
    "lifecycle": lifecycle.DEFAULT_TASTE_SHOCK_SCALE,
    "lifecycle_regimes": lifecycle.DEFAULT_TASTE_SHOCK_SCALE,
    "lifecycle_normalised": lifecycle_normalised.DEFAULT_PARAMS["taste_shock_scale"],
}
"""The ``taste_shock_scale`` a model built with taste shocks gets by default (where it has one)."""


def income_params_of(*, name: str, calibration: str) -> dict[str, Any]:
    """Return the income params of the model ``name`` under another vendored calibration.

    Only ``lifecycle_normalised`` takes its income profiles from vendored files
    (``data/replication/profiles_<calibration>.csv``); other models raise ``ParamsError``.
    """
    if name != "lifecycle_normalised":
        msg = f"Model {name!r} has no vendored income profiles; only lifecycle_normalised has."
        raise ParamsError(msg)
    params = lifecycle_normalised_params.default_params(calibration=calibration)
    return {key: params[key] for key in lifecycle_normalised_params.INCOME_PARAMS}


def panel_columns_of(
    *, name: str, panel: Any, model: Any, params: dict[str, Any], seed: int
) -> dict[str, Any]:
    """Return the columns a reader of model ``name``'s simulated panel needs beyond its own.

    ``lifecycle_normalised`` states wealth and consumption in units of permanent income (of
    the pension after the claim): its ``income_unit`` turns them into levels
    (``normalised_units.income_units``). The other models need none.
    """
    if name != "lifecycle_normalised":
        return {}
    units = normalised_units.income_units(panel=panel, model=model, params=params, seed=seed)
    return {"income_unit": units}


def default_params_of(*, name: str, model: Any, female_share: float = 0.5) -> dict[str, Any]:
    """Return the shipped default params of the built model ``name`` (without taste shocks).

    ``lifecycle_regimes`` gets the params its options use (life-table survival probabilities of
    its ages, mixing men and women with ``female_share``); ``lifecycle`` those of its number
    of preference types; the others their ``DEFAULT_PARAMS``.
    """
    if name == "lifecycle_regimes":
        return lifecycle_regimes.params_for(model, female_share=female_share)
    if name == "lifecycle_normalised":
        params = lifecycle_normalised_params.default_params(female_share=female_share)
        return {key: value for key, value in params.items() if key in model.params_template}
    if name == "lifecycle":
        return lifecycle.default_params(n_types=model.states["pref_type"].n_points)
    return dict(DEFAULT_PARAMS[name])


__all__ = [
    "DEFAULT_PARAMS",
    "DEFAULT_TASTE_SHOCK_SCALES",
    "MODEL_BUILDERS",
    "default_params_of",
    "iid_income",
    "ijrs",
    "income_params_of",
    "lifecycle",
    "lifecycle_normalised",
    "lifecycle_regimes",
    "panel_columns_of",
    "precautionary",
]
