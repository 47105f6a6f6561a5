"""Check what the model's functions return before a solve uses them.

The solver evaluates every function at one state-action point at a time, under ``vmap``; what
it cannot tell from the result is silently absorbed there (a vector utility broadcasts, a law of
motion of a discrete state returning 7 or 0.5 is clipped or truncated to a valid code). So:

- **shapes and dtypes**, once per model, by tracing each function on abstract scalars
  (``jax.eval_shape``, nothing runs): ``utility`` returns one real number, a constraint one bool,
  a law of motion one number (an integer code for a discrete state);
- **codes**, once per model and values of the params the law depends on, by running each law of
  motion of a discrete state on a sample of its inputs (every code of a discrete input, every
  period, a few points of a continuous one): every code lies in the state's range.

Stochastic transitions and regime transitions are checked elsewhere (``transitions.py``,
``project.regimes``). Each failure raises ``ModelSpecificationError`` naming the function, what
it returned (where, for a code) and what to return instead.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from project.errors import ModelSpecificationError
from project.model.internal import Fact, table
from project.model.spec import Model
from project.points import float_dtype
from project.shocks import shock_tables
from project.solver.plan import abstract_argument
from project.solver.sweep import composed_function

MAX_SAMPLE = 4096
"""The most input combinations a law of motion of a discrete state is run on."""
CONTINUOUS_SAMPLE = 5
"""Points taken from a continuous grid (evenly spaced in index, both ends included)."""
MAX_CACHED = 8
"""Params combinations remembered per model as already checked."""


def check_function_outputs(
    model: Model, *, params: Mapping[str, np.ndarray], codes: bool = True
) -> None:
    """Raise ``ModelSpecificationError`` for a function whose output the solver cannot use.

    ``params`` are checked ones on the host (``params_on_host``). With ``codes=False`` only the
    (free, once per model) shape and dtype checks run.
    """
    SHAPES_CHECKED.of(model)
    if not codes:
        return
    discrete, used = CODE_INPUTS.of(model)
    key = b"".join(np.ascontiguousarray(params[p]).tobytes() for p in used)
    checked = CODES_CHECKED.of(model)
    if key in checked:
        return
    for state in discrete:
        _check_codes(model, state=state, params=params)
    checked[key] = None
    while len(checked) > MAX_CACHED:
        del checked[next(iter(checked))]


def _targets(model: Model) -> list[str]:
    return ["utility", *model.constraints, *(f"next_{s}" for s in model.deterministic_states)]


def abstract_output(model: Model, target: str, *, where: str) -> Any:
    """Return ``target``'s output traced at one abstract point (``jax.eval_shape``).

    A function that cannot be traced raises ``ModelSpecificationError`` starting with ``where``.
    """
    func, arguments = composed_function(model, [target])
    abstract = {a: abstract_argument(model, a) for a in arguments}
    try:
        return jax.eval_shape(lambda kw: func(**kw)[target], abstract)
    except Exception as error:
        first_line = str(error).splitlines()[0] if str(error) else ""
        msg = (
            f"{where}: evaluating {target!r} at one point of the grids (scalar states, actions "
            f"and params) failed with {type(error).__name__}: {first_line} Write model "
            "functions with jax.numpy, elementwise, and use jnp.where instead of Python `if` on "
            "states, actions or params."
        )
        raise ModelSpecificationError(msg) from error


def _check_shape_and_dtype(model: Model, target: str) -> None:
    out = abstract_output(model, target, where=f"Model {model.name!r}")
    shape, dtype = getattr(out, "shape", None), getattr(out, "dtype", None)
    wanted = _wanted(model, target)
    if shape == () and dtype is not None and _dtype_fits(np.dtype(dtype), wanted):
        return
    got = f"shape {shape} and dtype {dtype}" if shape is not None else f"{type(out).__name__}"
    msg = (
        f"Model {model.name!r}: {target!r} returns {got} at one point of the grids; it must "
        f"return {_WANTED_TEXT[wanted]} per point (the solver evaluates it one state and action "
        "point at a time)."
    )
    raise ModelSpecificationError(msg)


def _wanted(model: Model, target: str) -> str:
    if target in model.constraints:
        return "bool"
    if target.startswith("next_") and model.states[target[5:]].is_discrete:
        return "code"
    return "real"


_WANTED_TEXT = {
    "bool": "one bool (a comparison such as `consumption <= wealth`, not a number)",
    "code": "one integer code of the discrete state (e.g. `jnp.where(retire, 1, 0)`; not a float)",
    "real": "one real number (a scalar, not an array and not a bool)",
}


def _dtype_fits(dtype: np.dtype, wanted: str) -> bool:
    if wanted == "bool":
        return dtype == np.bool_
    if wanted == "code":
        return dtype == np.bool_ or np.issubdtype(dtype, np.integer)
    return np.issubdtype(dtype, np.floating) or np.issubdtype(dtype, np.integer)


def _check_codes(model: Model, *, state: str, params: Mapping[str, np.ndarray]) -> None:
    """Run ``next_<state>`` on a sample of its inputs; raise for the first code out of range."""
    target = f"next_{state}"
    func, arguments = composed_function(model, [target])
    columns = _sample(model, arguments=arguments, params=params)
    fixed = {a: jnp.asarray(params[a]) for a in arguments if a not in columns}
    varying = {a: jnp.asarray(v) for a, v in columns.items()}
    if varying:
        out = jax.vmap(lambda row: func(**fixed, **row)[target])(varying)
    else:
        out = func(**fixed)[target]
    codes = np.atleast_1d(np.asarray(out)).astype(np.int64)
    n = model.states[state].n_points
    bad = np.flatnonzero((codes < 0) | (codes >= n))
    if not bad.size:
        return
    row = int(bad[0])
    where = ", ".join(f"{a}={_shown(v[row])}" for a, v in columns.items()) or "every point"
    msg = (
        f"Model {model.name!r}: {target!r} returns code {codes[row]} at {where} "
        f"({bad.size} of {codes.size} sampled points out of range), but {state!r} has {n} "
        f"categories (codes 0 to {n - 1}). Return a code of {state!r} at every point; the "
        "solver would otherwise clip it to the nearest valid code."
    )
    raise ModelSpecificationError(msg)


def _sample(
    model: Model, *, arguments: tuple[str, ...], params: Mapping[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """Return the product of sample points of every varying input, one column per input."""
    axes: dict[str, np.ndarray] = {}
    for name, grid in (model.states | model.actions).items():
        if name in arguments:
            points = np.asarray(grid.to_jax())
            axes[name] = points if grid.is_discrete else _thin(points, CONTINUOUS_SAMPLE)
    for state in model.stochastic_transitions:
        if f"next_{state}" in arguments:
            axes[f"next_{state}"] = np.arange(model.states[state].n_points, dtype=np.int32)
    if model.shocks and set(model.shocks) & set(arguments):
        values, _, _ = shock_tables(model.shocks, params)
        for name in model.shocks:
            if name in arguments:
                axes[name] = np.unique(np.asarray(values[name]))
    if "period" in arguments or "age" in arguments:
        axes["period"] = np.arange(model.n_periods, dtype=np.int32)
    while math.prod(len(v) for v in axes.values()) > MAX_SAMPLE:
        largest = max(axes, key=lambda a: len(axes[a]))
        axes[largest] = _thin(axes[largest], max(2, len(axes[largest]) // 2))
    grids = np.meshgrid(*axes.values(), indexing="ij") if axes else []
    columns = {name: g.ravel() for name, g in zip(axes, grids, strict=True)}
    if "period" in columns:
        ages = np.asarray(model.ages, dtype=float_dtype())
        columns["age"] = ages[columns["period"]]
        columns = {a: v for a, v in columns.items() if a in arguments}
    return columns


def _thin(points: np.ndarray, k: int) -> np.ndarray:
    if len(points) <= k:
        return points
    return points[np.unique(np.linspace(0, len(points) - 1, k).round().astype(int))]


def _shown(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float | np.floating) else str(value)


def _check_shapes(model: Model) -> bool:
    """Raise for a function whose output shape or dtype the solver cannot use; else True."""
    for target in _targets(model):
        _check_shape_and_dtype(model, target)
    return True


SHAPES_CHECKED: Fact[bool] = Fact("functions' output shapes checked", build=_check_shapes)
CODES_CHECKED = table("params whose discrete laws of motion were checked")


def _code_inputs(model: Model) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Return the deterministic discrete states and the params their laws of motion read."""
    discrete = tuple(s for s in model.deterministic_states if model.states[s].is_discrete)
    ancestors = {p for s in discrete for p in model.ancestors(f"next_{s}")}
    return discrete, tuple(sorted(ancestors & set(model.params_template)))


CODE_INPUTS = Fact("the discrete laws of motion and the params they read", build=_code_inputs)
