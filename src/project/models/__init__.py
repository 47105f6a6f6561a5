"""Shipped models: IJRS retirement, precautionary savings, iid income, the default life cycle."""

from project.models import iid_income, ijrs, lifecycle, precautionary

MODEL_BUILDERS = {
    "ijrs": ijrs.build_model,
    "iid_income": iid_income.build_model,
    "precautionary": precautionary.build_model,
    "lifecycle": lifecycle.build_model,
}
DEFAULT_PARAMS = {
    "ijrs": ijrs.DEFAULT_PARAMS,
    "iid_income": iid_income.DEFAULT_PARAMS,
    "precautionary": precautionary.DEFAULT_PARAMS,
    "lifecycle": lifecycle.DEFAULT_PARAMS,
}
DEFAULT_TASTE_SHOCK_SCALES = {"lifecycle": lifecycle.DEFAULT_TASTE_SHOCK_SCALE}
"""The ``taste_shock_scale`` a model built with taste shocks gets by default (where it has one)."""

__all__ = [
    "DEFAULT_PARAMS",
    "DEFAULT_TASTE_SHOCK_SCALES",
    "MODEL_BUILDERS",
    "iid_income",
    "ijrs",
    "lifecycle",
    "precautionary",
]
