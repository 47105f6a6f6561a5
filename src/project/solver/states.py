"""Validate states at which a solution is evaluated: names, codes or labels, and grid ranges."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from project.errors import InvalidStatesError
from project.grids import check_within_grid
from project.model.spec import Model


def validate_states(
    *, model: Model, states: Mapping[str, Any], period: int
) -> tuple[dict[str, np.ndarray], tuple[int, ...]]:
    """Return the states as flat arrays (int codes for discrete states) and their common shape.

    Every state of the model must be given; arrays broadcast against each other. Discrete states
    take int codes or labels; continuous ones must lie within their grid's range.
    """
    if isinstance(period, bool) or not isinstance(period, int | np.integer):
        msg = f"period must be an int in 0..{model.n_periods - 1}, got {period!r}."
        raise InvalidStatesError(msg)
    if not 0 <= period < model.n_periods:
        msg = f"period={period} is not a period of {model.name!r} (0..{model.n_periods - 1})."
        raise InvalidStatesError(msg)
    given, expected = set(states), set(model.state_names)
    if given != expected:
        msg = (
            f"States to evaluate {model.name!r} at: missing {sorted(expected - given)}, unknown "
            f"{sorted(given - expected)}. Give exactly {list(model.state_names)}."
        )
        raise InvalidStatesError(msg)
    try:
        arrays = np.broadcast_arrays(*(np.asarray(states[s]) for s in model.state_names))
    except ValueError as error:
        msg = f"States to evaluate {model.name!r} at do not broadcast together: {error}."
        raise InvalidStatesError(msg) from error
    shape = arrays[0].shape if arrays else ()
    flat: dict[str, np.ndarray] = {}
    for name, given in zip(model.state_names, arrays, strict=True):
        grid = model.states[name]
        values = given.ravel()
        if grid.is_discrete:
            flat[name] = _codes(name=name, grid=grid, values=values)
            continue
        try:
            numeric = values.astype(float)
        except (TypeError, ValueError) as error:
            msg = f"State {name!r} must be numeric: {error}."
            raise InvalidStatesError(msg) from error
        check_within_grid(name=name, grid=grid, values=numeric, what=f"State (period {period})")
        flat[name] = numeric
    return flat, shape


def _codes(*, name: str, grid: Any, values: np.ndarray) -> np.ndarray:
    labels = list(grid.labels)
    if values.dtype.kind in "OUS":
        text = values.astype(str)
        unknown = sorted(set(text[~np.isin(text, labels)]))
        if unknown:
            msg = (
                f"State {name!r}: labels {unknown[:5]} are not categories of {grid.name} {labels}."
            )
            raise InvalidStatesError(msg)
        return np.asarray([labels.index(v) for v in text], dtype=np.int32)
    numeric = np.asarray(values, dtype=float)
    bad = ~np.isin(numeric, np.arange(grid.n_points))
    if bad.any():
        msg = (
            f"State {name!r}: codes {sorted(set(numeric[bad].tolist()))[:5]} are not in "
            f"0..{grid.n_points - 1} of {grid.name} {labels}."
        )
        raise InvalidStatesError(msg)
    return numeric.astype(np.int32)
