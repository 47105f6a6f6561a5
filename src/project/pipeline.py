"""Engine entry points that the pipeline's tasks call (no pytask in here)."""

from __future__ import annotations

import jax

from project.config import Variant
from project.model.spec import Model
from project.models import DEFAULT_PARAMS, MODEL_BUILDERS
from project.solver.backward import Solution, solve


def variant_specification(variant: Variant) -> dict:
    """Return the complete, JSON-serialisable specification of a variant (model, grids, params)."""
    model = build_variant_model(model=variant.model, sizes=variant.sizes)
    params = DEFAULT_PARAMS[variant.model] | variant.params
    unknown = sorted(set(variant.params) - set(DEFAULT_PARAMS[variant.model]))
    if unknown:
        msg = f"Variant {variant.name!r} overrides unknown params {unknown}."
        raise KeyError(msg)
    return {
        "name": variant.name,
        "model": variant.model,
        "sizes": dict(sorted(variant.sizes.items())),
        "params": dict(sorted(params.items())),
        "log_level": variant.log_level,
        "x64": variant.x64,
        "description": model.describe(),
    }


def build_variant_model(*, model: str, sizes: dict[str, int]) -> Model:
    """Return the shipped model ``model`` built with ``sizes``."""
    return MODEL_BUILDERS[model](**sizes)


def solve_specification(specification: dict) -> Solution:
    """Solve the model that ``variant_specification`` described."""
    jax.config.update("jax_enable_x64", specification["x64"])
    model = build_variant_model(model=specification["model"], sizes=specification["sizes"])
    return solve(model=model, params=specification["params"], log_level=specification["log_level"])
