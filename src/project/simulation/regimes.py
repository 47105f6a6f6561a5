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
import weakref
from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from project.errors import InitialConditionsError
from project.model.params import check_solved_params, validate_params
from project.points import float_dtype
from project.regimes.solution import RegimeSolution
from project.regimes.spec import REGIME_TRANSITION, RegimeModel, RegimeView
from project.simulation.chunks import plan_chunk
from project.simulation.initial import (
    MISSING_CODE,
    REGIME,
    check_start_period,
    validate_regime_initial_conditions,
)
from project.simulation.keys import draw_category, subject_keys
from project.simulation.result import SimulationResult
from project.simulation.steps import steps_for
from project.solver.grid_cache import grid_points_of
from project.solver.states import positions
from project.solver.sweep import compose

logger = logging.getLogger("project.simulation")

REGIME_STREAM = 1_048_577  # far above any state, shock or taste-shock stream of a regime


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
    periods = [jnp.int32(t) for t in range(model.n_periods)]
    ages = [jnp.asarray(a, dtype=dtype) for a in model.ages]
    regimes = _Regimes(solution, params=params, start_period=start_period)
    n_simulated = model.n_periods - start_period
    columns = {REGIME: np.zeros((n_subjects, n_simulated), np.int32)}
    for name, grid in (model.states | model.actions).items():
        kind = np.int32 if grid.is_discrete else np.dtype(dtype)
        columns[name] = np.zeros((n_subjects, n_simulated), kind)
    columns["value"] = np.zeros((n_subjects, n_simulated), np.dtype(dtype))
    for start in range(0, n_subjects, chunk):
        ids = np.arange(start, min(start + chunk, n_subjects))
        codes = jnp.asarray(regime[ids])
        states = {s: jnp.asarray(_filled(model, s, values[ids])) for s, values in initial.items()}
        subject_ids = jnp.asarray(ids.astype(np.int32))
        for j, t in enumerate(range(start_period, model.n_periods)):
            last = t == model.n_periods - 1
            actions, value, next_states, next_codes = regimes.period(
                codes, states, subject_ids, period=periods[t], age=ages[t], seed=seed, last=last
            )
            _record(
                columns,
                model,
                column=j,
                rows=ids,
                codes=codes,
                states=states,
                actions=actions,
                value=value,
            )
            codes, states = next_codes, next_states
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


class _Regimes:
    """Every regime's steps, expected next values, regime draws and terminal values."""

    def __init__(
        self, solution: RegimeSolution, *, params: Mapping[str, Any], start_period: int
    ) -> None:
        model = solution.model
        self.model, self.params = model, params
        self.steps, self.expected, self.draws, self.points = {}, {}, {}, {}
        for regime, view in model.regimes.items():
            regime_solution = solution.solution(regime)
            steps = steps_for(view, method=regime_solution.method)
            points = grid_points_of(view)
            self.steps[regime], self.points[regime] = steps, points
            self.draws[regime] = _regime_draw(view)
            if regime_solution.method == "grid":
                self.expected[regime] = {
                    t: steps["expected"](
                        regime_solution.next_value(t),
                        params,
                        points,
                        jnp.int32(t),
                        jnp.asarray(model.ages[t], dtype=float_dtype()),
                    )
                    for t in range(start_period, model.n_periods)
                }
            else:
                self.expected[regime] = {
                    t: (regime_solution.period_arrays(t), regime_solution.savings[0])
                    for t in range(start_period, model.n_periods)
                }
        self.terminal = {r: _terminal_value(model, r) for r in model.terminal}

    def period(
        self,
        codes: jax.Array,
        states: dict[str, jax.Array],
        ids: jax.Array,
        *,
        period: jax.Array,
        age: jax.Array,
        seed: int,
        last: bool,
    ) -> tuple[dict[str, jax.Array], jax.Array, dict[str, jax.Array], jax.Array]:
        """Return actions, values, next states and next regimes of a chunk of subjects."""
        model = self.model
        value = jnp.zeros(codes.shape, float_dtype())
        actions = {a: _missing(model.actions[a], codes.shape) for a in model.actions}
        next_states, next_codes = dict(states), codes
        for regime, view in model.regimes.items():
            here = codes == model.code(regime)
            own = {s: states[s] for s in view.state_names}
            step = self.steps[regime]["terminal" if last else "regular"]
            chosen, regime_value, following = step(
                own,
                ids,
                self.expected[regime][int(period)],
                self.params,
                self.points[regime],
                period,
                age,
                seed,
            )
            value = jnp.where(here, regime_value, value)
            for action, values in chosen.items():
                actions[action] = jnp.where(
                    here, values.astype(actions[action].dtype), actions[action]
                )
            if last:
                continue
            for state, values in following.items():
                next_states[state] = jnp.where(here, values, next_states[state])
            drawn = self.draws[regime](own, chosen, ids, self.params, period, age, seed)
            next_codes = jnp.where(here, drawn, next_codes)
        for regime, evaluate in self.terminal.items():
            here = codes == model.code(regime)
            value = jnp.where(here, evaluate(states, self.params), value)
        return actions, value, next_states, next_codes


_DRAWS: weakref.WeakKeyDictionary[RegimeView, Callable[..., jax.Array]] = (
    weakref.WeakKeyDictionary()
)
_TERMINAL_VALUES: weakref.WeakKeyDictionary[RegimeModel, dict[str, Callable[..., jax.Array]]] = (
    weakref.WeakKeyDictionary()
)
"""The jitted regime draws and terminal values, built once per model (a repeated simulation,
as in an estimation, reuses their compiled programs instead of tracing them again)."""


def _regime_draw(view: RegimeView) -> Callable[..., jax.Array]:
    """Return the jitted draw of next period's regime for a chunk of subjects (cached)."""
    if view not in _DRAWS:
        _DRAWS[view] = _build_regime_draw(view)
    return _DRAWS[view]


def _terminal_value(model: RegimeModel, regime: str) -> Callable[..., jax.Array]:
    """Return ``value(states, params)`` of a terminal regime, jitted once per model."""
    values = _TERMINAL_VALUES.setdefault(model, {})
    if regime not in values:
        values[regime] = _build_terminal_value(model, regime)
    return values[regime]


def _build_regime_draw(view: RegimeView) -> Callable[..., jax.Array]:
    """Return the jitted draw of next period's regime for a chunk of subjects."""
    transition = compose(view, [REGIME_TRANSITION])

    def one(state_values, action_values, key, params, period, age):  # noqa: ANN001, ANN202
        env = {**params, **state_values, **action_values, "period": period, "age": age}
        probabilities = view.regime_probabilities(transition(env)[REGIME_TRANSITION])
        return draw_category(
            key=key, probabilities=probabilities.astype(float_dtype()), stream=REGIME_STREAM
        )

    def draw(states, actions, subject_ids, params, period, age, seed):  # noqa: ANN001, ANN202
        keys = subject_keys(seed=seed, subject_ids=subject_ids, period=period)
        return jax.vmap(one, in_axes=(0, 0, 0, None, None, None))(
            states, actions, keys, params, period, age
        )

    return jax.jit(draw)


def _build_terminal_value(model: RegimeModel, regime: str) -> Callable[..., jax.Array]:
    """Return ``value(states, params)`` of a terminal regime for a chunk of subjects."""
    spec = model.terminal[regime]

    def value(states, params):  # noqa: ANN001, ANN202
        n = next(iter(states.values())).shape[0]
        if spec.value is None:
            return jnp.zeros((n,), float_dtype())
        env = {**params, **states}

        def one(row: dict[str, jax.Array]) -> jax.Array:
            return jnp.asarray(spec.value(**{a: row.get(a, env.get(a)) for a in spec.arguments}))

        read = {a: states[a] for a in spec.arguments if a in states}
        return jax.vmap(one)(read).astype(float_dtype())

    return jax.jit(value)


def _filled(model: RegimeModel, name: str, values: np.ndarray) -> np.ndarray:
    """Return values with missing entries replaced by a valid point (their results are unused)."""
    grid = model.states[name]
    if grid.is_discrete:
        return np.where(values == MISSING_CODE, 0, values).astype(np.int32)
    start = float(np.asarray(grid.to_jax())[0])
    return np.where(np.isnan(values), start, values).astype(values.dtype)


def _missing(grid: Any, shape: tuple[int, ...]) -> jax.Array:
    if grid.is_discrete:
        return jnp.full(shape, MISSING_CODE, jnp.int32)
    return jnp.full(shape, jnp.nan, float_dtype())


def _record(
    columns: dict[str, np.ndarray],
    model: RegimeModel,
    *,
    column: int,
    rows: np.ndarray,
    codes: jax.Array,
    states: dict[str, jax.Array],
    actions: dict[str, jax.Array],
    value: jax.Array,
) -> None:
    """Write one period of a chunk, with states a subject's regime lacks set missing."""
    codes, states, actions, value = jax.device_get((codes, states, actions, value))
    columns[REGIME][rows, column] = codes
    columns["value"][rows, column] = value
    for name, values in states.items():
        present = np.zeros(codes.shape, bool)
        for regime in model.regime_names:
            if name in _state_names(model, regime):
                present |= codes == model.code(regime)
        missing = MISSING_CODE if model.states[name].is_discrete else np.nan
        columns[name][rows, column] = np.where(present, values, missing)
    for name, values in actions.items():
        columns[name][rows, column] = values


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
