"""Shipped models: IJRS retirement, precautionary savings, iid income, the default life cycle.

The pipeline's default is ``lifecycle_regimes`` (working, retired and dead as regimes) with
life-table survival; ``lifecycle`` is the same economics without death, as one regime;
``lifecycle_normalised`` is the model from 25 to 99 normalised by permanent income, with the
vendored income profiles and life table as its defaults (``default_params_of``).
"""

from __future__ import annotations

from typing import Any

from project.models import (
    iid_income,
    ijrs,
    lifecycle,
    lifecycle_normalised,
    lifecycle_regimes,
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


def default_params_of(*, name: str, model: Any, female_share: float = 0.5) -> dict[str, Any]:
    """Return the shipped default params of the built model ``name`` (without taste shocks).

    ``lifecycle_regimes`` gets the params its options use (life-table survival probabilities of
    its ages, mixing men and women with ``female_share``); ``lifecycle`` those of its number
    of preference types; the others their ``DEFAULT_PARAMS``.
    """
    if name == "lifecycle_regimes":
        return lifecycle_regimes.params_for(model, female_share=female_share)
    if name == "lifecycle_normalised":
        params = lifecycle_normalised.default_params(female_share=female_share)
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
    "lifecycle",
    "lifecycle_normalised",
    "lifecycle_regimes",
    "precautionary",
]
