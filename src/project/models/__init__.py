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

__all__ = ["DEFAULT_PARAMS", "MODEL_BUILDERS", "iid_income", "ijrs", "lifecycle", "precautionary"]
