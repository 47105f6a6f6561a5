"""Simulate subjects forward through a solved model, in chunks of subjects.

Each period a subject's action maximises Q at its exact (off-grid) state over the action grid,
with next period's V interpolated, the same Q the solver maximises. Deterministic states follow
their laws of motion; stochastic states are drawn from their transition probabilities with keys
from ``keys.py``, so results do not depend on ``subject_batch_size``. Every finished chunk is
moved to host memory before the next starts: device memory is bounded by one chunk.

With a sharded solution, subjects are split over the same devices (each chunk padded to a
multiple of the device count; pad rows are dropped). Each device then holds a replicated copy of
next period's prepared V, since its subjects may be of any permanent type.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from project.devices import replicate, shard_rows, subject_mesh, value_devices
from project.errors import InitialConditionsError, InvalidValueFunctionError
from project.model.params import check_solved_params, validate_params
from project.model.solution import SolutionInterface
from project.model.spec import Model
from project.points import float_dtype as working_float_dtype
from project.simulation.chunks import plan_chunk
from project.simulation.initial import (
    _subjects,
    check_seed,
    check_start_period,
    validate_initial_conditions,
)
from project.simulation.regimes import simulate_regimes
from project.simulation.result import SimulationResult
from project.simulation.steps import steps_for
from project.solver.checks import check_log_level
from project.solver.grid_cache import grid_points_of

logger = logging.getLogger("project.simulation")


def simulate(
    *,
    params: Mapping[str, Any],
    initial_conditions: Mapping[str, Any] | pd.DataFrame,
    solution: SolutionInterface,
    seed: int,
    subject_batch_size: int = 0,
    log_level: str = "warning",
    start_period: int = 0,
    memory_limit: int | float | str | None = None,
) -> SimulationResult:
    """Simulate every subject over all periods; ``subject_batch_size=0`` runs one pass.

    ``start_period=k``: the initial conditions are the states in period k, and subjects live
    periods k..n_periods-1 (the result's columns). Draws in period t are those of a simulation
    started in period 0. ``memory_limit`` (as in ``solve``): where one pass, or chunks of
    ``subject_batch_size``, would not fit, the largest chunk that fits runs (``chunks.py``).
    """
    _check_arguments(
        solution=solution, seed=seed, subject_batch_size=subject_batch_size, log_level=log_level
    )
    if solution.regimes:
        return simulate_regimes(
            params=params,
            initial_conditions=initial_conditions,
            solution=solution,
            seed=seed,
            subject_batch_size=subject_batch_size,
            start_period=start_period,
            memory_limit=memory_limit,
            log_level=log_level,
        )
    model = solution.model
    params, initial, memory, mesh = _planned(
        solution=solution,
        params=params,
        initial_conditions=initial_conditions,
        start_period=start_period,
        subject_batch_size=subject_batch_size,
        memory_limit=memory_limit,
    )
    n_subjects, chunk = len(next(iter(initial.values()))), memory.chunk
    run = _Run(solution=solution, params=params, seed=seed, start_period=start_period, mesh=mesh)
    columns = _simulated_columns(
        run, initial, chunk=chunk, n_subjects=n_subjects, log_level=log_level
    )
    if log_level == "progress":
        memory.log(what=f"simulating {n_subjects} subjects in chunks of {chunk}")
    _check_simulated_values(values=columns["value"], log_level=log_level, start_period=start_period)
    return SimulationResult.from_simulation(
        model=model,
        params=run.params,
        solution=solution,
        columns=columns,
        seed=seed,
        subject_batch_size=subject_batch_size,
        start_period=start_period,
    )


def _check_arguments(*, solution: Any, seed: int, subject_batch_size: Any, log_level: str) -> None:
    """Raise for a log level, seed, solution or subject batch size ``simulate`` cannot take."""
    check_log_level(log_level)
    check_seed(seed)
    if not isinstance(solution, SolutionInterface):
        msg = (
            f"solution must be what project.solve returned (or load_solution), got "
            f"{type(solution).__name__}."
        )
        raise InitialConditionsError(msg)
    if (
        isinstance(subject_batch_size, bool)
        or not isinstance(subject_batch_size, int)
        or (subject_batch_size < 0)
    ):
        msg = f"subject_batch_size must be an int >= 0, got {subject_batch_size!r}."
        raise InitialConditionsError(msg)


def _planned(
    *,
    solution: Any,
    params: Mapping[str, Any],
    initial_conditions: Any,
    start_period: int,
    subject_batch_size: int,
    memory_limit: Any,
) -> tuple[dict[str, Any], dict[str, np.ndarray], Any, Mesh | None]:
    """Return the checked params and initial states, the chunk plan and the subjects' mesh."""
    model, method = solution.model, solution.method
    check_start_period(start_period=start_period, n_periods=model.n_periods)
    params = validate_params(model=model, params=params)
    check_solved_params(model_name=model.name, params=params, solved=solution.params)
    initial = validate_initial_conditions(
        model=model, initial_conditions=initial_conditions, method=method
    )
    devices = value_devices(solution.value_function[0]) if method == "grid" else jax.devices()[:1]
    memory = plan_chunk(  # the chunk of subjects that fits memory_limit (results are the same)
        solution=solution,
        n_subjects=len(next(iter(initial.values()))),
        n_periods=model.n_periods - start_period,
        subject_batch_size=subject_batch_size,
        devices=devices,
        memory_limit=memory_limit,
    )
    return params, initial, memory, subject_mesh(devices) if len(devices) > 1 else None


class _Run:
    """One simulation's compiled steps and what they read each period, for chunk after chunk."""

    def __init__(
        self,
        *,
        solution: Any,
        params: Any,
        seed: int,
        start_period: int,
        mesh: Mesh | None,
    ) -> None:
        self.model = model = solution.model
        self.steps = steps_for(model, method=solution.method)
        grid_points = grid_points_of(model)
        if mesh is not None:  # every device holds the params and grids
            params, grid_points = replicate((params, grid_points), mesh=mesh)
        self.params, self.grid_points, self.seed, self.mesh = params, grid_points, seed, mesh
        self.float_dtype = working_float_dtype()
        self.periods = [jnp.asarray(t, dtype=jnp.int32) for t in range(model.n_periods)]
        self.ages = [jnp.asarray(a, dtype=self.float_dtype) for a in model.ages]
        self.times = range(start_period, model.n_periods)
        if solution.method in ("egm", "dcegm"):
            self.expected = {
                t: (solution.period_arrays(t), solution.savings[0]) for t in self.times
            }
        else:
            # The last period reads a V of zeros and discards the continuation, like the solver.
            self.expected = {
                t: _replicated(
                    self.steps["expected"](
                        solution.next_value(t), params, grid_points, self.periods[t], self.ages[t]
                    ),
                    mesh=mesh,
                )
                for t in self.times
            }

    def chunk(
        self, initial: Mapping[str, np.ndarray], *, ids: np.ndarray, n_subjects: int
    ) -> list[Any]:
        """Return the states, actions and V of every period of subjects ``ids`` (padded)."""
        rows = np.minimum(ids, n_subjects - 1)
        states = {
            name: _place(
                values[rows].astype(
                    np.int32 if self.model.states[name].is_discrete else self.float_dtype
                ),
                mesh=self.mesh,
            )
            for name, values in initial.items()
        }
        subject_ids = _place(ids.astype(np.int32), mesh=self.mesh)
        history = []
        for t in self.times:
            step = self.steps["terminal" if t == self.model.n_periods - 1 else "regular"]
            actions, value, next_states = step(
                states,
                subject_ids,
                self.expected[t],
                self.params,
                self.grid_points,
                self.periods[t],
                self.ages[t],
                self.seed,
            )
            history.append((states, actions, value))
            states = next_states
        return history


def _simulated_columns(
    run: _Run, initial: Mapping[str, np.ndarray], *, chunk: int, n_subjects: int, log_level: str
) -> dict[str, np.ndarray]:
    """Return every column (subject, period) from running chunk after chunk of subjects."""
    columns = _empty_columns(
        model=run.model,
        n_subjects=n_subjects,
        n_periods=len(run.times),
        float_dtype=run.float_dtype,
    )
    started = time.perf_counter()
    for start in range(0, -(-n_subjects // chunk) * chunk, chunk):
        ids = np.arange(start, start + chunk)
        history = run.chunk(initial, ids=ids, n_subjects=n_subjects)
        _record(columns, history=jax.device_get(history), ids=ids, n_subjects=n_subjects)
        if log_level == "progress":
            logger.info(
                "Simulated subjects %d-%d of %d (%.2f s).",
                start,
                min(start + chunk, n_subjects) - 1,
                n_subjects,
                time.perf_counter() - started,
            )
    return columns


def _record(
    columns: dict[str, np.ndarray], *, history: list[Any], ids: np.ndarray, n_subjects: int
) -> None:
    """Write a chunk's states, actions and V of every period into ``columns`` (padding dropped)."""
    keep = ids < n_subjects
    target = ids[keep]
    for t, (period_states, period_actions, period_value) in enumerate(history):
        for name, values in {**period_states, **period_actions}.items():
            columns[name][target, t] = np.asarray(values)[keep]
        columns["value"][target, t] = np.asarray(period_value)[keep]


def _place(host: np.ndarray, *, mesh: Mesh | None) -> jax.Array:
    return jnp.asarray(host) if mesh is None else shard_rows(host, mesh=mesh)


def _replicated(value: jax.Array, *, mesh: Mesh | None) -> jax.Array:
    """Copy next period's prepared V to every device (subjects of any type read it)."""
    if mesh is None:
        return value
    return jax.device_put(value, NamedSharding(mesh, PartitionSpec()))


def _empty_columns(
    *, model: Model, n_subjects: int, n_periods: int, float_dtype: Any
) -> dict[str, np.ndarray]:
    columns = {}
    for name, grid in (model.states | model.actions).items():
        dtype = np.int32 if grid.is_discrete else np.dtype(float_dtype)
        columns[name] = np.zeros((n_subjects, n_periods), dtype=dtype)
    columns["value"] = np.zeros((n_subjects, n_periods), dtype=np.dtype(float_dtype))
    return columns


def _check_simulated_values(*, values: np.ndarray, log_level: str, start_period: int) -> None:
    if log_level == "off":
        return
    infeasible = np.isneginf(values)
    if infeasible[:, 0].any():
        msg = (
            f"{_subjects(infeasible[:, 0])} have no feasible action in the first simulated "
            f"period ({start_period}). "
            "Check their initial conditions against the constraints."
        )
        raise InitialConditionsError(msg)
    if infeasible.any():
        logger.warning(
            "%s have no feasible action in some later period.", _subjects(infeasible.any(axis=1))
        )
    nan = np.isnan(values)
    if nan.any():
        msg = f"Simulated values are NaN for {_subjects(nan.any(axis=1))}."
        if log_level == "debug":
            raise InvalidValueFunctionError(msg)
        logger.warning(msg)
