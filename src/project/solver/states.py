"""Validate states at which a solution is evaluated: names, codes or labels, and grid ranges."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from project.errors import InvalidStatesError, ProjectError, StateOutsideGridError
from project.grid_checks import SHOWN, check_within_grid
from project.grids import Grid
from project.model.spec import Model


def validate_states(
    *, model: Model, states: Mapping[str, Any], period: int, method: str = "grid"
) -> tuple[dict[str, np.ndarray], tuple[int, ...]]:
    """Return the states as flat arrays (int codes for discrete states) and their common shape.

    Every state of the model must be given; arrays broadcast against each other. Discrete states
    take int codes or labels; continuous ones must lie within their grid's range (the domain of
    a solution by ``method``, which words the message).
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
    flat = {
        name: parse_state(
            name=name,
            grid=model.states[name],
            values=given.ravel(),
            what=f"State (period {period})",
            index_name="entries",
            error=InvalidStatesError,
            outside_error=StateOutsideGridError,
            method=method,
        )
        for name, given in zip(model.state_names, arrays, strict=True)
    }
    return flat, shape


def positions(mask: np.ndarray, *, index_name: str) -> str:
    """Return e.g. "subjects [3, 7] (2 in all)" for the true entries of ``mask``."""
    hits = np.flatnonzero(mask)
    shown = ", ".join(str(i) for i in hits[:SHOWN])
    return f"{index_name} [{shown}{', ...' if hits.size > SHOWN else ''}] ({hits.size} in all)"


def parse_state(
    *,
    name: str,
    grid: Grid,
    values: np.ndarray,
    what: str,
    index_name: str,
    error: type[ProjectError],
    outside_error: type[StateOutsideGridError],
    method: str = "grid",
) -> np.ndarray:
    """Return one state's values: int32 codes (from labels or codes) or floats on the grid.

    ``what`` ("Initial state", ...) and ``index_name`` ("subjects", ...) word the messages;
    ``error`` is raised for bad labels, codes or numbers, ``outside_error`` outside the grid.
    """
    if grid.is_discrete:
        labels = list(grid.labels)
        if values.dtype.kind in "OUS" or isinstance(values.dtype, pd.CategoricalDtype):
            as_text = np.asarray(values, dtype=object).astype(str)
            invalid = ~np.isin(as_text, labels)
            if invalid.any():
                msg = (
                    f"{what} {name!r}: {positions(invalid, index_name=index_name)} have labels "
                    f"{sorted(set(as_text[invalid]))[:SHOWN]} that are not categories of "
                    f"{grid.name} {labels}."
                )
                raise error(msg)
            return np.asarray([labels.index(v) for v in as_text], dtype=np.int32)
        numeric = np.asarray(values, dtype=float)
        invalid = ~np.isin(numeric, np.arange(grid.n_points))
        if invalid.any():
            msg = (
                f"{what} {name!r}: {positions(invalid, index_name=index_name)} have codes outside "
                f"0..{grid.n_points - 1} of {grid.name} {labels}."
            )
            raise error(msg)
        return numeric.astype(np.int32)
    try:
        numeric = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exception:
        msg = f"{what} {name!r} must be numeric: {exception}."
        raise error(msg) from exception
    invalid = ~np.isfinite(numeric)
    if invalid.any():
        msg = (
            f"{what} {name!r}: {positions(invalid, index_name=index_name)} have non-finite values."
        )
        raise error(msg)
    check_within_grid(
        name=name,
        grid=grid,
        values=numeric,
        what=what,
        index_name=index_name,
        error=outside_error,
        method=method,
    )
    return numeric
