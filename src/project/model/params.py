"""Check user parameters against a model's template (names, shapes, finite values); pack them."""

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

DISCOUNT_FACTOR = "beta"
"""The discount factor's name: every model has it (``project.model.spec``)."""


def validate_params(*, model: Model, params: Mapping[str, Any]) -> dict[str, jnp.ndarray]:
    """Return params as float JAX arrays (working precision) after checking names and shapes."""
    return {k: jax.device_put(v) for k, v in params_on_host(model=model, params=params).items()}


def params_on_host(
    *, model: Model, params: Mapping[str, Any], check_values: bool = True
) -> dict[str, np.ndarray]:
    """Return params as float NumPy arrays (working precision) after checking names and shapes.

    ``check_values=False`` leaves the values' check (``check_param_values``) to the caller.
    """
    template = model.params_template
    _check_names(model=model, params=params, template=template)
    dtype = float_dtype()
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
        if np.can_cast(value.dtype, dtype):  # no overflow possible
            converted[key] = value.astype(dtype)
            continue
        with np.errstate(over="ignore"):
            cast = value.astype(dtype)
        if not np.isfinite(cast).all() and np.isfinite(value).all():
            wrong.append(
                f"{key}: {value.tolist()} exceeds the range of {np.dtype(dtype).name}; "
                "rescale it or enable x64"
            )
            continue
        converted[key] = cast
    if wrong:
        msg = (
            f"Model {model.name!r}: invalid params: {'; '.join(wrong)}. Give each a number or "
            "an array of the expected shape (see model.params_template)."
        )
        raise ParamsError(msg)
    if model.taste_shocks:
        check_taste_shock_scale(model_name=model.name, params=converted)
    if check_values:
        check_param_values(model_name=model.name, params=converted)
    return converted


def _check_names(*, model: Model, params: Any, template: Mapping[str, Any]) -> None:
    """Raise ``ParamsError`` unless ``params`` maps exactly the template's names."""
    if not isinstance(params, Mapping):
        msg = (
            f"Model {model.name!r}: params must be a mapping of names to numbers, got "
            f"{type(params).__name__}. Give e.g. {dict.fromkeys(template, 0.0)}."
        )
        raise ParamsError(msg)
    missing = sorted(set(template) - set(params))
    extra = sorted(set(params) - set(template))
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing {missing}")
        if extra:
            parts.append(f"unexpected {extra}")
        hint = (
            f" Every function argument that is not a state, action, function, shock, age or "
            f"period is a parameter: if {missing} are choices, declare them in actions (a "
            "continuous one that EGM/DC-EGM computes as ContinuousAction(), without a grid)."
            if missing
            else ""
        )
        msg = (
            f"Model {model.name!r}: params are {' and '.join(parts)}. Expected exactly "
            f"{list(template)} (see model.params_template).{hint}"
        )
        raise ParamsError(msg)


def check_param_values(*, model_name: str, params: Mapping[str, np.ndarray]) -> None:
    """Raise ``ParamsError`` for non-finite params and a discount factor that is not positive."""
    values = list(params.values())
    if values and np.isfinite(np.concatenate([np.ravel(v) for v in values])).all():
        bad = []
    else:
        bad = sorted(name for name, value in params.items() if not np.isfinite(value).all())
    if bad:
        msg = (
            f"Model {model_name!r}: params {bad} are not finite (NaN or inf): "
            f"{ {name: params[name].tolist() for name in bad} }. Give finite numbers."
        )
        raise ParamsError(msg)
    beta = params.get(DISCOUNT_FACTOR)
    if beta is not None and not (beta > 0).all():
        msg = (
            f"Model {model_name!r}: the discount factor {DISCOUNT_FACTOR!r} must be > 0, got "
            f"{beta.tolist()}."
        )
        raise ParamsError(msg)


def pack_params(values: Mapping[str, np.ndarray]) -> np.ndarray:
    """Return params (as from ``params_on_host``) as one flat vector, in sorted-name order."""
    return np.concatenate([np.ravel(values[k]) for k in sorted(values)])


def n_packed_params(model: Model) -> int:
    """Return the length of the vector ``pack_params`` makes for ``model``'s params."""
    return sum(int(np.prod(shape, dtype=int)) for shape in model.params_template.values())


def unpack_params(*, model: Model, flat: jnp.ndarray) -> dict[str, jnp.ndarray]:
    """Return the params dict of a vector made by ``pack_params`` (traceable)."""
    unpacked, offset = {}, 0
    for key, shape in sorted(model.params_template.items()):
        size = int(np.prod(shape, dtype=int))
        unpacked[key] = flat[offset : offset + size].reshape(shape)
        offset += size
    return unpacked


def check_solved_params(
    *, model_name: str, params: Mapping[str, Any], solved: Mapping[str, Any]
) -> None:
    """Raise ``ParamsError`` unless ``params`` equal those a solution was solved with.

    Both are compared in working precision; ``params`` are checked ones (``validate_params``).
    """
    differ = sorted(
        name
        for name, value in params.items()
        if name not in solved
        or not np.array_equal(
            np.asarray(value), np.asarray(solved[name], dtype=np.asarray(value).dtype)
        )
    )
    if differ:
        shown = {n: (np.asarray(params[n]).tolist(), _listed(solved.get(n))) for n in differ}
        msg = (
            f"Model {model_name!r}: params {differ} differ from those the solution was solved "
            f"with (given, solved): {shown}. Simulate with the solution's params "
            "(solution.params) or solve again with the new ones."
        )
        raise ParamsError(msg)


def _listed(value: Any) -> Any:
    return None if value is None else np.asarray(value).tolist()
