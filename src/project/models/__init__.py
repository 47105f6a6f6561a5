"""Shipped models: IJRS retirement, precautionary savings, and the default life-cycle model."""

from project.models import ijrs, lifecycle, precautionary

MODEL_BUILDERS = {
    "ijrs": ijrs.build_model,
    "precautionary": precautionary.build_model,
    "lifecycle": lifecycle.build_model,
}
DEFAULT_PARAMS = {
    "ijrs": ijrs.DEFAULT_PARAMS,
    "precautionary": precautionary.DEFAULT_PARAMS,
    "lifecycle": lifecycle.DEFAULT_PARAMS,
}

__all__ = ["DEFAULT_PARAMS", "MODEL_BUILDERS", "ijrs", "lifecycle", "precautionary"]
