"""Simulate a model with regimes: each period every subject acts in its regime, then moves on.

A subject's regime decides which solution chooses its actions (grid or EGM, as for a plain
model) and which laws of motion give its next states; its next regime is drawn from the regime
transition with its own key (stream ``REGIME_STREAM``, apart from the state, shock and taste-shock
streams), so results do not depend on ``subject_batch_size``. A terminal regime is absorbing:
its subjects take no actions and their value is the regime's value function at the states it
reads (0 without one). Arrays hold every state and action of any regime; entries a subject's
regime lacks are missing (NaN for numbers, code -1 for categories: NA in the table).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from project._xla import jit
from project.errors import InitialConditionsError
from project.model.internal import table
from project.model.params import check_solved_params, validate_params
from project.points import float_dtype
from project.regimes.solution import RegimeSolution
from project.regimes.spec import RegimeModel
from project.simulation.chunks import plan_chunk
from project.simulation.initial import (
    MISSING_CODE,
    REGIME,
    check_start_period,
    validate_regime_initial_conditions,
)
from project.simulation.regime_steps import REGIME_STREAM, build_regime_panel
from project.simulation.result import SimulationResult
from project.simulation.steps import step_streams, steps_for
from project.solver.grid_cache import grid_points_of
from project.solver.states import positions

logger = logging.getLogger("project.simulation")


def simulate_regimes(
    *,
    params: Mapping[str, Any],
    initial_conditions: Mapping[str, Any] | pd.DataFrame,
    solution: RegimeSolution,
    seed: int,
    subject_batch_size: int = 0,
    start_period: int = 0,
    memory_limit: Any = None,
    log_level: str = "warning",
) -> SimulationResult:
    """Simulate every subject; ``initial_conditions`` include ``regime`` (labels or codes).

    A subject needs the states of its initial regime; the others may be missing (NaN/None).
    ``memory_limit`` plans the chunk of subjects as for one model (``chunks.py``).
    """
    model = solution.model
    check_start_period(start_period=start_period, n_periods=model.n_periods)
    params = validate_params(model=model, params=params)
    check_solved_params(model_name=model.name, params=params, solved=solution.params)
    regime, initial = validate_regime_initial_conditions(
        model=model, initial_conditions=initial_conditions
    )
    n_subjects = regime.size
    memory = plan_chunk(
        solution=solution,
        n_subjects=n_subjects,
        n_periods=model.n_periods - start_period,
        subject_batch_size=subject_batch_size,
        devices=jax.devices()[:1],
        memory_limit=memory_limit,
    )
    chunk = memory.chunk
    if log_level in ("progress", "debug"):
        memory.log(what=f"simulating {n_subjects} subjects of {model.name!r}")
    dtype = float_dtype()
    program = regime_panel(solution)
    expected = period_inputs(solution, params=params, start_period=start_period)
    periods = jnp.arange(start_period, model.n_periods, dtype=jnp.int32)
    ages = jnp.asarray(np.asarray(model.ages[start_period:]), dtype=dtype)
    columns = _empty_columns(model, shape=(n_subjects, model.n_periods - start_period))
    for start in range(0, n_subjects, chunk):
        ids = np.arange(start, min(start + chunk, n_subjects))
        codes = jnp.asarray(regime[ids])
        states = {
            s: jnp.asarray(filled_states(model, s, values[ids])) for s, values in initial.items()
        }
        subject_ids = jnp.asarray(ids.astype(np.int32))
        history = program(codes, states, subject_ids, expected, params, periods, ages, seed)
        _record(columns, model, rows=ids, history=history)
    _check_first_period(columns, model=model)
    return SimulationResult.from_simulation(
        model=model,
        params=params,
        solution=solution,
        columns=columns,
        seed=seed,
        subject_batch_size=subject_batch_size,
        start_period=start_period,
    )


def _empty_columns(model: RegimeModel, *, shape: tuple[int, int]) -> dict[str, np.ndarray]:
    """Return the panel's columns (subjects by periods) filled with zeros, in their dtypes."""
    dtype = np.dtype(float_dtype())
    columns = {REGIME: np.zeros(shape, np.int32)}
    for name, grid in (model.states | model.actions).items():
        columns[name] = np.zeros(shape, np.int32 if grid.is_discrete else dtype)
    columns["value"] = np.zeros(shape, dtype)
    return columns


def regime_methods(solution: RegimeSolution) -> tuple[tuple[str, str], ...]:
    """Return (regime, method) of every living regime of a solution."""
    return tuple((r, solution.solution(r).method) for r in solution.model.regimes)


def period_inputs(
    solution: RegimeSolution, *, params: Mapping[str, Any], start_period: int
) -> dict[str, Any]:
    """Return each regime's solution inputs of the simulated periods, stacked on a leading axis.

    EGM: (endogenous-grid arrays with contexts flattened, the borrowing limit); grid: next
    period's prepared V (the expected-value step of each period).
    """
    model = solution.model
    dtype = float_dtype()
    inputs = {}
    for regime, view in model.regimes.items():
        regime_solution = solution.solution(regime)
        if regime_solution.method == "grid":
            prepare = steps_for(view, method="grid")["expected"]
            points = grid_points_of(view)
            inputs[regime] = jnp.stack(
                [
                    prepare(
                        regime_solution.next_value(t),
                        params,
                        points,
                        jnp.int32(t),
                        jnp.asarray(model.ages[t], dtype=dtype),
                    )
                    for t in range(start_period, model.n_periods)
                ]
            )
        else:
            arrays = jax.tree.map(
                lambda x, shape=regime_solution.structure.discrete_shape: x.reshape(
                    x.shape[0], -1, *x.shape[1 + len(shape) :]
                )[start_period:],
                regime_solution.arrays,
            )
            inputs[regime] = egm_period_inputs(
                arrays=arrays,
                limit=regime_solution.savings[0],
                n_periods=model.n_periods - start_period,
            )
    return inputs


def egm_period_inputs(*, arrays: Any, limit: jax.Array, n_periods: int) -> tuple[Any, jax.Array]:
    """Return EGM arrays (period, context, ...) with the borrowing limit repeated per period."""
    return arrays, jnp.broadcast_to(limit, (n_periods,))


def draw_streams(model: RegimeModel) -> tuple[int, ...]:
    """Return every key stream a period of ``model`` may draw from (``keys.draw_ahead``'s).

    Each regime's stochastic states and iid shocks (``steps.build_advance``), its taste-shocked
    choice (``steps.taste_shock_stream``) and the regime transition (``REGIME_STREAM``).
    """
    own = {stream for view in model.regimes.values() for stream in step_streams(view)}
    return (*sorted(own), REGIME_STREAM)


PANELS = table("compiled regime panels by the regimes' methods")


def regime_panel(solution: RegimeSolution) -> Callable[..., Any]:
    """Return the compiled simulation of a chunk over every period (one per model and methods)."""
    programs = PANELS.of(solution.model)
    methods = regime_methods(solution)
    if methods not in programs:
        programs[methods] = jit(build_regime_panel(solution.model, methods=dict(methods)))
    return programs[methods]


def filled_states(model: RegimeModel, name: str, values: np.ndarray) -> np.ndarray:
    """Return values with missing entries replaced by a valid point (their results are unused)."""
    grid = model.states[name]
    if grid.is_discrete:
        return np.where(values == MISSING_CODE, 0, values).astype(np.int32)
    start = float(np.asarray(grid.to_jax())[0])
    return np.where(np.isnan(values), start, values).astype(values.dtype)


def _record(
    columns: dict[str, np.ndarray], model: RegimeModel, *, rows: np.ndarray, history: Any
) -> None:
    """Write a chunk's history (period-major), with states a subject's regime lacks missing."""
    codes, states, actions, value = jax.device_get(history)
    columns[REGIME][rows] = codes.T
    columns["value"][rows] = value.T
    for name, values in states.items():
        present = np.zeros(codes.shape, bool)
        for regime in model.regime_names:
            if name in _state_names(model, regime):
                present |= codes == model.code(regime)
        missing = MISSING_CODE if model.states[name].is_discrete else np.nan
        columns[name][rows] = np.where(present, values, missing).T
    for name, values in actions.items():
        columns[name][rows] = values.T


def _state_names(model: RegimeModel, regime: str) -> tuple[str, ...]:
    """Return the states shown for ``regime``: its own, or those its terminal value reads."""
    if regime in model.regimes:
        return model.regimes[regime].state_names
    return tuple(a for a in model.terminal[regime].arguments if a in model.states)


def _check_first_period(columns: dict[str, np.ndarray], *, model: RegimeModel) -> None:
    alive = np.isin(columns[REGIME][:, 0], [model.code(r) for r in model.regimes])
    infeasible = alive & np.isneginf(columns["value"][:, 0])
    if infeasible.any():
        msg = (
            f"{positions(infeasible, index_name='subjects')} have no feasible action in the "
            "first simulated period. Check their initial conditions against the constraints."
        )
        raise InitialConditionsError(msg)
    alive = np.isin(columns[REGIME], [model.code(r) for r in model.regimes])
    nan = alive & np.isnan(columns["value"])
    if nan.any():
        logger.warning(
            "Simulated values are NaN for %s.", positions(nan.any(axis=1), index_name="subjects")
        )
