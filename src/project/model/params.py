"""Check user parameters against a model's template (names and shapes); pack them for a solve."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np

from project.errors import ParamsError
from project.points import float_dtype
from project.taste_shocks import check_taste_shock_scale

if TYPE_CHECKING:
    from project.model.spec import Model


def validate_params(*, model: Model, params: Mapping[str, Any]) -> dict[str, jnp.ndarray]:
    """Return params as float JAX arrays (working precision) after checking names and shapes."""
    return {k: jax.device_put(v) for k, v in params_on_host(model=model, params=params).items()}


def params_on_host(*, model: Model, params: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Return params as float NumPy arrays (working precision) after checking names and shapes."""
    template = model.params_template
    missing = sorted(set(template) - set(params))
    extra = sorted(set(params) - set(template))
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing {missing}")
        if extra:
            parts.append(f"unexpected {extra}")
        msg = (
            f"Model {model.name!r}: params are {' and '.join(parts)}. Expected exactly "
            f"{list(template)} (see model.params_template)."
        )
        raise ParamsError(msg)
    converted: dict[str, np.ndarray] = {}
    wrong = []
    for key, shape in template.items():
        try:
            value = np.asarray(params[key])
        except (TypeError, ValueError) as error:
            wrong.append(f"{key}: cannot be read as an array ({error})")
            continue
        if value.dtype.kind not in "biuf":
            wrong.append(f"{key}: expected numbers, got dtype {value.dtype}")
            continue
        if value.shape != shape:
            wrong.append(f"{key}: expected shape {shape}, got {value.shape}")
            continue
        converted[key] = value.astype(float_dtype())
    if wrong:
        msg = (
            f"Model {model.name!r}: invalid params: {'; '.join(wrong)}. Give each a number or "
            "an array of the expected shape (see model.params_template)."
        )
        raise ParamsError(msg)
    if model.taste_shocks:
        check_taste_shock_scale(model_name=model.name, params=converted)
    return converted


def pack_params(values: Mapping[str, np.ndarray]) -> np.ndarray:
    """Return params (as from ``params_on_host``) as one flat vector, in sorted-name order."""
    return np.concatenate([np.ravel(values[k]) for k in sorted(values)])


def unpack_params(*, model: Model, flat: jnp.ndarray) -> dict[str, jnp.ndarray]:
    """Return the params dict of a vector made by ``pack_params`` (traceable)."""
    unpacked, offset = {}, 0
    for key, shape in sorted(model.params_template.items()):
        size = int(np.prod(shape, dtype=int))
        unpacked[key] = flat[offset : offset + size].reshape(shape)
        offset += size
    return unpacked
