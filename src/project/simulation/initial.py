"""Initial conditions: draw them from a configured distribution, and validate user input.

Input is a mapping of state name to an array (or a DataFrame with one column per state);
discrete states may be given as labels or int codes. Continuous values must lie on their grid's
range: the solution is only trusted there (outside, V is extrapolated linearly).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from project.errors import InitialConditionsError, InitialStateOutsideGridError
from project.model.spec import Model
from project.points import float_dtype
from project.regimes.spec import RegimeModel
from project.solver.states import parse_state, positions

REGIME = "regime"
"""The entry of initial conditions (and the panel's column) holding each subject's regime."""
MISSING_CODE = -1
"""The code of a discrete state or action a subject's regime lacks (NA in the table)."""


def _subjects(mask: np.ndarray) -> str:
    return positions(mask, index_name="subjects")


def check_start_period(*, start_period: Any, n_periods: int) -> None:
    """Raise unless ``start_period`` is an int period of the model, 0..n_periods-1."""
    if isinstance(start_period, bool) or not isinstance(start_period, int | np.integer):
        msg = (
            f"start_period must be an int, got {start_period!r} ({type(start_period).__name__}). "
            f"Give the period the initial conditions are in, 0..{n_periods - 1}."
        )
        raise InitialConditionsError(msg)
    if not 0 <= start_period < n_periods:
        msg = (
            f"start_period={start_period} is not a period of the model, which has periods "
            f"0..{n_periods - 1}. Give the period the initial conditions are in."
        )
        raise InitialConditionsError(msg)


def validate_initial_conditions(
    *,
    model: Model,
    initial_conditions: Mapping[str, Any] | pd.DataFrame,
    method: str = "grid",
) -> dict[str, np.ndarray]:
    """Return initial states as numpy arrays (int32 codes for discrete states, floats else).

    ``method`` (of the solution to simulate) words the message for states outside a grid.
    """
    if isinstance(initial_conditions, pd.DataFrame):
        initial_conditions = {c: initial_conditions[c].to_numpy() for c in initial_conditions}
    if not isinstance(initial_conditions, Mapping):
        msg = (
            f"Initial conditions for model {model.name!r} must be a mapping of state names to "
            f"arrays or a DataFrame, got {type(initial_conditions).__name__}. Give one array "
            f"per state of {list(model.state_names)}."
        )
        raise InitialConditionsError(msg)
    given, expected = set(initial_conditions), set(model.state_names)
    if given != expected:
        msg = (
            f"Initial conditions for model {model.name!r}: missing states "
            f"{sorted(expected - given)}, unknown states {sorted(given - expected)}. Give exactly "
            f"{list(model.state_names)}."
        )
        raise InitialConditionsError(msg)
    lengths = {name: len(np.atleast_1d(v)) for name, v in initial_conditions.items()}
    if len(set(lengths.values())) != 1 or 0 in lengths.values():
        msg = (
            f"Initial conditions need one non-empty array per state of equal length, got {lengths}."
        )
        raise InitialConditionsError(msg)
    return {
        name: parse_state(
            name=name,
            grid=model.states[name],
            values=np.atleast_1d(initial_conditions[name]),
            what="Initial state",
            index_name="subjects",
            error=InitialConditionsError,
            outside_error=InitialStateOutsideGridError,
            method=method,
        )
        for name in model.state_names
    }


def draw_initial_conditions(
    *,
    model: Model | RegimeModel,
    n_subjects: int,
    seed: int,
    distribution: Mapping[str, Mapping[str, Any]],
) -> dict[str, np.ndarray]:
    """Draw initial states from ``distribution``, one entry per state, deterministic in ``seed``.

    A model with regimes also needs an entry ``regime`` (e.g. ``{"label": "working"}``).

    Entries: ``{"value": x}``, ``{"label": "working"}``, ``{"uniform": [low, high]}``,
    ``{"lognormal": [mean_of_log, sd_of_log], "clip": [low, high]}`` or
    ``{"probabilities": [...]}`` (discrete states).
    """
    if isinstance(n_subjects, bool) or not isinstance(n_subjects, int) or n_subjects < 1:
        msg = f"n_subjects must be an int >= 1, got {n_subjects!r}."
        raise InitialConditionsError(msg)
    check_seed(seed)
    if not isinstance(distribution, Mapping):
        msg = (
            f"The initial distribution must map state names to entries such as "
            f"{{'label': ...}} or {{'uniform': [low, high]}}, got {type(distribution).__name__}."
        )
        raise InitialConditionsError(msg)
    rng = np.random.default_rng(seed)
    drawn: dict[str, np.ndarray] = {}
    grids = dict(model.states)
    if isinstance(model, RegimeModel):
        grids = {REGIME: model.regime_grid} | grids
    for name, grid in grids.items():
        if name not in distribution:
            msg = f"The initial distribution has no entry for state {name!r}."
            raise InitialConditionsError(msg)
        if not isinstance(distribution[name], Mapping):
            msg = (
                f"Initial distribution for state {name!r}: give a mapping such as "
                f"{{'probabilities': [...]}}, got {distribution[name]!r}."
            )
            raise InitialConditionsError(msg)
        drawn[name] = _drawn(
            name=name, grid=grid, spec=dict(distribution[name]), n_subjects=n_subjects, rng=rng
        )
    if isinstance(model, RegimeModel):
        regime, states = validate_regime_initial_conditions(model=model, initial_conditions=drawn)
        return {REGIME: regime, **states}
    return validate_initial_conditions(model=model, initial_conditions=drawn)


def _drawn(
    *, name: str, grid: Any, spec: dict[str, Any], n_subjects: int, rng: np.random.Generator
) -> np.ndarray:
    """Return ``n_subjects`` draws of state ``name`` from its entry ``spec`` (checked first)."""
    _check_continuous_spec(name=name, spec=spec)
    if "value" in spec:
        return np.full(n_subjects, spec["value"])
    if "label" in spec:
        _check_discrete_spec(name=name, grid=grid, spec=spec)
        return np.full(n_subjects, grid.labels.index(spec["label"]), dtype=np.int32)
    if "probabilities" in spec:
        _check_discrete_spec(name=name, grid=grid, spec=spec)
        return rng.choice(grid.n_points, size=n_subjects, p=spec["probabilities"]).astype(np.int32)
    if "uniform" in spec:
        return rng.uniform(*spec["uniform"], size=n_subjects)
    if "lognormal" in spec:
        return np.clip(
            rng.lognormal(*spec["lognormal"], size=n_subjects),
            *spec.get("clip", (-np.inf, np.inf)),
        )
    msg = f"Unknown initial distribution {spec} for state {name!r}."
    raise InitialConditionsError(msg)


def check_seed(seed: Any) -> None:
    """Raise ``InitialConditionsError`` unless ``seed`` is an int >= 0."""
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        msg = f"seed must be an int >= 0, got {seed!r} ({type(seed).__name__})."
        raise InitialConditionsError(msg)


def _check_continuous_spec(*, name: str, spec: Mapping[str, Any]) -> None:
    """Raise for a uniform range that is not increasing or a lognormal with a negative sd."""
    if "uniform" in spec:
        low, high = (float(v) for v in spec["uniform"])
        if not low < high:
            msg = f"Initial distribution for state {name!r}: uniform needs low < high, got {spec}."
            raise InitialConditionsError(msg)
    if "lognormal" in spec and float(spec["lognormal"][1]) < 0:
        msg = f"Initial distribution for state {name!r}: lognormal needs sd >= 0, got {spec}."
        raise InitialConditionsError(msg)


def _check_discrete_spec(*, name: str, grid: Any, spec: Mapping[str, Any]) -> None:
    labels = list(getattr(grid, "labels", ()))
    if not labels:
        msg = f"Initial distribution for state {name!r}: {spec} needs a discrete state."
        raise InitialConditionsError(msg)
    if "label" in spec and spec["label"] not in labels:
        msg = (
            f"Initial distribution for state {name!r}: label {spec['label']!r} is not one of "
            f"its categories {labels}."
        )
        raise InitialConditionsError(msg)
    if "probabilities" in spec:
        probabilities = np.asarray(spec["probabilities"], dtype=float)
        if (
            probabilities.shape != (len(labels),)
            or (probabilities < 0).any()
            or not np.isclose(probabilities.sum(), 1.0)
        ):
            msg = (
                f"Initial distribution for state {name!r}: probabilities "
                f"{spec['probabilities']} must be {len(labels)} non-negative numbers summing to "
                f"one, one per category {labels}."
            )
            raise InitialConditionsError(msg)


def validate_regime_initial_conditions(
    *, model: RegimeModel, initial_conditions: Mapping[str, Any] | pd.DataFrame
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Return regime codes and every state (missing where a subject's regime lacks it)."""
    if isinstance(initial_conditions, pd.DataFrame):
        initial_conditions = {c: initial_conditions[c].to_numpy() for c in initial_conditions}
    if REGIME not in initial_conditions:
        msg = (
            f"Initial conditions for model {model.name!r} need a {REGIME!r} entry (labels "
            f"{list(model.regime_names)} or their codes) besides the states."
        )
        raise InitialConditionsError(msg)
    unknown = sorted(set(initial_conditions) - {REGIME, *model.state_names})
    if unknown:
        msg = (
            f"Initial conditions for model {model.name!r}: unknown states {unknown}. States are "
            f"{list(model.state_names)}."
        )
        raise InitialConditionsError(msg)
    regime = parse_state(
        name=REGIME,
        grid=model.regime_grid,
        values=np.atleast_1d(np.asarray(initial_conditions[REGIME])),
        what="Initial state",
        index_name="subjects",
        error=InitialConditionsError,
        outside_error=InitialConditionsError,
    )
    n = regime.size
    states = {}
    for name, grid in model.states.items():
        dtype = np.int32 if grid.is_discrete else np.dtype(float_dtype())
        fill = MISSING_CODE if grid.is_discrete else np.nan
        states[name] = np.full(n, fill, dtype=dtype)
    for name, view in model.regimes.items():
        members = regime == model.code(name)
        if not members.any():
            continue
        given = {}
        for state in view.state_names:
            if state not in initial_conditions:
                msg = (
                    f"Initial conditions: {positions(members, index_name='subjects')} start in "
                    f"regime {name!r}, which needs the state {state!r}; give it."
                )
                raise InitialConditionsError(msg)
            values = np.broadcast_to(np.asarray(initial_conditions[state]), (n,))[members]
            # The subjects of other regimes may leave a state out (None): numbers stay numbers.
            given[state] = pd.Series(values).infer_objects().to_numpy()
        for state, values in validate_initial_conditions(
            model=view, initial_conditions=given
        ).items():
            states[state][members] = values
    return regime, states
