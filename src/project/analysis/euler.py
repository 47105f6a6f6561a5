"""Euler-equation errors of the pipeline's model (``lifecycle_normalised``) at given states.

A household in regime r at period t that takes option d (a worker: keep working or claim; a
retiree: none) and consumes c out of normalised cash on hand m sets, where the borrowing limit
does not bind,

    u'_{r,d}(c) = beta * sum_k w_k * g_k * (-dm'_k/dc) * sum_{r'} P_{r'} * V'_{r'}(m'_k),

every term read off the model's own functions (``compose`` on its regime views):

- k runs over next period's shock combinations with probabilities w_k: 56 while working (7
  permanent x 8 transitory bins, unemployment among them), one for a retiree;
- m'_k = ``next_wealth`` in next period's units: R (m - c) / (G_t psi'_k) + theta'_k working
  on, R (m - c) / (B / P_t) + 1 after a claim, R (m - c) + 1 retired; -dm'_k/dc is R over the
  normaliser's growth;
- g_k = ``continuation_scale``, the normaliser's growth to the power 1 - rho (1 retired);
- P_{r'} = the regime transition: survival s_t to the next alive regime, 1 - s_t to death;
- V'_{r'}(m') = u'_{r'}(c'(m')) for an alive regime, at next period's optimal option as the
  solution chooses it (deterministic maximum), by the envelope theorem; for death the slope
  of ``bequest_value`` at m'_k, in the units of the regime left (as the solve reads it).

The implied consumption inverts u'_{r,d} (the model's ``inverse_marginal_utility``); the error
is |c_implied / c - 1|. Where next period's option switches within one savings-grid step of the
row's savings, next period's consumption jumps and the equation does not hold in this form:
``near_switch`` marks those rows.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax.numpy as jnp
import numpy as np
import pandas as pd

from project.analysis.euler_kernels import euler_kernels, terminal_slope
from project.egm.solution import EGMSolution
from project.egm.structure import egm_structure
from project.errors import InvalidStatesError, ModelSpecificationError
from project.regimes.solution import RegimeSolution
from project.shocks import shock_tables

BLOCK = 1 << 14
"""States per evaluation call: padded to whole blocks, so each solution compiles once."""
ROWS = 512
"""Rows of one period and regime are padded to a multiple of this (few shapes to compile)."""
BINDING_TOLERANCE = 1e-10
"""Savings at most this (times max(1, m)) above the limit: the limit binds (c = m)."""
LOG_FLOOR = 1e-16
"""Errors below this count as this in log10 (float64 rounding)."""


class Implied(NamedTuple):
    """Per row: the implied consumption and whether next period's option switches nearby."""

    consumption: np.ndarray
    near_switch: np.ndarray


class Read(NamedTuple):
    """Per state: the optimal option's consumption, V, the option and every option's c."""

    consumption: np.ndarray
    value: np.ndarray
    choice: np.ndarray
    options: np.ndarray


def evaluate(solution: EGMSolution, *, period: int, wealth: np.ndarray, block: int = BLOCK) -> Read:
    """Return the solution of one regime in ``period`` at ``wealth`` (1-D).

    Evaluated in blocks of ``block`` states, the last padded: each block size compiles once.
    """
    wealth = np.asarray(wealth, dtype=np.float64)
    padded = np.concatenate([wealth, np.ones(-wealth.size % block)])
    parts = []
    for start in range(0, padded.size, block):
        states = {"wealth": jnp.asarray(padded[start : start + block])}
        at = solution.evaluate_flat(period=period, states=states)
        fields = (at.consumption, at.value, at.choice, at.choice_consumption)
        parts.append([np.asarray(x) for x in fields])
    if not parts:
        n = solution.structure.n_choices
        return Read(np.zeros(0), np.zeros(0), np.zeros(0, np.int64), np.zeros((0, n)))
    joined = (np.concatenate(p)[: wealth.size] for p in zip(*parts, strict=True))
    consumption, value, choice, options = joined
    return Read(consumption, value, choice, options.reshape(wealth.size, -1))


def implied_consumption(
    *,
    solution: RegimeSolution,
    period: int,
    regime: str,
    claim: np.ndarray,
    wealth: np.ndarray,
    consumption: np.ndarray,
    rows: int | None = None,
) -> Implied:
    """Return the consumption the Euler equation implies at rows of ``period`` and ``regime``.

    ``claim`` is each row's option (ignored for a retiree), ``consumption`` the consumption
    to test at ``wealth``. Next period is read from ``solution`` (see the module docstring).
    Rows are padded to ``rows`` (default: a multiple of ``ROWS``): each shape compiles once.
    """
    view = _view(solution, regime=regime, period=period)
    n = np.size(wealth)
    pad = -n % ROWS if rows is None else rows - n
    if pad < 0:
        msg = f"implied_consumption: {n} rows do not fit the padding to rows={rows}."
        raise InvalidStatesError(msg)
    wealth, consumption = (
        np.concatenate([np.asarray(x, dtype=np.float64).ravel(), np.full(pad, fill)])
        for x, fill in ((wealth, 1.0), (consumption, 0.5))
    )
    claim = np.concatenate([np.asarray(claim, dtype=np.int64).ravel(), np.zeros(pad, np.int64)])
    params = {k: jnp.asarray(v) for k, v in solution.params.items()}
    values, weights, _ = shock_tables(view.shocks, params)
    at = {"period": jnp.int32(period), "age": jnp.asarray(float(view.ages[period]))}
    following, slope, scale, probabilities = (
        np.asarray(x, dtype=np.float64)
        for x in euler_kernels(view)["laws"](params, at, claim, wealth, consumption, values)
    )
    # The savings-grid step around each row's savings, cut at the borrowing limit below.
    savings = wealth - consumption
    grid = np.asarray(solution.solutions[regime].savings, dtype=np.float64)
    up = _savings_step(grid, savings=savings)
    down = np.minimum(up, np.maximum(savings - grid[0], 0.0))
    marginal = np.zeros_like(following)
    near = np.zeros(wealth.size, dtype=bool)
    for target, probability in zip(solution.model.regime_names, probabilities, strict=True):
        if not (probability > 0).any():
            continue
        if target in solution.model.terminal:
            slope_next = np.asarray(terminal_slope(solution, regime=target, wealth=following))
        else:
            slope_next, switches = _alive_slope(
                solution,
                regime=target,
                period=period + 1,
                wealth=following,
                shifts=(slope * down[:, None], slope * up[:, None]),
            )
            near |= (switches & (probability > 0)).any(axis=1)
        marginal += np.where(probability > 0, probability * slope_next, 0.0)
    weight = np.asarray(weights, dtype=np.float64)[None, :]
    rhs = float(solution.params["beta"]) * (weight * scale * slope * marginal).sum(axis=1)
    implied = euler_kernels(view)["inverse"](params, claim, rhs)
    return Implied(consumption=np.asarray(implied, dtype=np.float64)[:n], near_switch=near[:n])


def euler_errors(*, solution: RegimeSolution, states: pd.DataFrame) -> pd.DataFrame:
    """Return ``states`` (``accuracy.panel_states``' columns) with their Euler errors.

    Vectorised per period and regime.

    Rows of the last period (no successor) are dropped. Added columns: consumption (the
    solution's, at the row's option), implied, error (|implied / consumption - 1|, NaN where the
    borrowing limit binds), constrained and near_switch.
    """
    last = solution.model.n_periods - 1
    states = states.loc[states["period"] < last].reset_index(drop=True)
    columns = {
        "consumption": np.full(len(states), np.nan),
        "implied": np.full(len(states), np.nan),
        "constrained": np.zeros(len(states), dtype=bool),
        "near_switch": np.zeros(len(states), dtype=bool),
    }
    rows = padded_rows(states)
    for (period, regime), group in states.groupby(["period", "regime"], sort=True):
        index = group.index.to_numpy()
        wealth, claim = group["wealth"].to_numpy(), group["claim"].to_numpy()
        regime_solution = solution.solutions[str(regime)]
        options = evaluate(regime_solution, period=int(period), wealth=wealth, block=rows).options
        consumption = options[np.arange(index.size), _option_index(regime_solution, claim)]
        implied = implied_consumption(
            solution=solution,
            period=int(period),
            regime=str(regime),
            claim=claim,
            wealth=wealth,
            consumption=consumption,
            rows=rows,
        )
        limit = float(np.asarray(regime_solution.savings)[0])
        room = BINDING_TOLERANCE * np.maximum(1.0, np.abs(wealth))
        columns["consumption"][index] = consumption
        columns["implied"][index] = implied.consumption
        columns["constrained"][index] = wealth - consumption <= limit + room
        columns["near_switch"][index] = implied.near_switch
    error = np.abs(columns["implied"] / columns["consumption"] - 1)
    out = states.assign(**columns)
    return out.assign(error=np.where(out["constrained"], np.nan, error))


def padded_rows(states: pd.DataFrame) -> int:
    """Return the rows every (period, regime) group of ``states`` is padded to (one shape)."""
    largest = int(states.groupby(["period", "regime"]).size().max()) if len(states) else 1
    return -(-largest // ROWS) * ROWS


def euler_summary(errors: pd.DataFrame) -> dict[str, Any]:
    """Return log10 error statistics away from the limit and switches; counts of the rest.

    Keys: n_rows, n_constrained, n_near_switch, n_points (rows measured), mean_log10,
    p95_log10, max_log10, max_at (age, regime, option, wealth and savings of the largest error),
    near_switch (the same statistics on the rows next to a switch) and by_regime.
    """
    free = errors.loc[~errors["constrained"]]
    away, near = free.loc[~free["near_switch"]], free.loc[free["near_switch"]]
    return {
        "n_rows": len(errors),
        "n_constrained": int(errors["constrained"].sum()),
        "n_near_switch": len(near),
        **_log_statistics(away),
        "near_switch": _log_statistics(near),
        "by_regime": {
            str(r): _log_statistics(group) for r, group in away.groupby("regime", sort=True)
        },
    }


def _log_statistics(rows: pd.DataFrame) -> dict[str, Any]:
    """Return n_points, mean, 95th percentile and max of log10 errors and where the max is."""
    if rows.empty:
        return {"n_points": 0}
    logged = np.log10(np.maximum(rows["error"].to_numpy(), LOG_FLOOR))
    worst = rows.iloc[int(np.argmax(logged))]
    return {
        "n_points": len(rows),
        "mean_log10": float(logged.mean()),
        "p95_log10": float(np.percentile(logged, 95)),
        "max_log10": float(logged.max()),
        "max_at": {
            "age": float(worst["age"]),
            "regime": str(worst["regime"]),
            "option": _option_label(worst),
            "wealth": float(worst["wealth"]),
            "savings": float(worst["wealth"] - worst["consumption"]),
        },
    }


def _option_label(row: pd.Series) -> str:
    if row["regime"] != "working":
        return "retired"
    return "claim" if int(row["claim"]) == 1 else "working"


def _view(solution: RegimeSolution, *, regime: str, period: int) -> Any:
    """Return ``regime``'s view, refusing what the Euler equation here does not cover."""
    if regime not in solution.solutions:
        msg = (
            f"Euler errors: regime {regime!r} has no solution; give one of "
            f"{sorted(solution.solutions)}."
        )
        raise InvalidStatesError(msg)
    if not 0 <= period < solution.model.n_periods - 1:
        msg = (
            f"Euler errors: period {period} has no successor; give 0..."
            f"{solution.model.n_periods - 2}."
        )
        raise InvalidStatesError(msg)
    view = solution.model.regimes[regime]
    if view.taste_shocks or egm_structure(view).discrete or view.stochastic_transitions:
        msg = (
            f"Euler errors of model {solution.model.name!r}: regime {regime!r} has taste shocks "
            "or discrete states; the Euler equation here takes next period's option as a "
            "deterministic maximum over one continuous state (solve with taste_shocks=False)."
        )
        raise ModelSpecificationError(msg)
    return view


def _option_index(solution: EGMSolution, claim: np.ndarray) -> np.ndarray:
    """Return the row of each option code in the solution's choices (0 without choices)."""
    choices = np.asarray(solution.structure.choices)
    if choices.shape[1] == 0:
        return np.zeros(claim.shape, dtype=np.int64)
    return np.searchsorted(choices[:, 0], claim)


def _savings_step(grid: np.ndarray, *, savings: np.ndarray) -> np.ndarray:
    """Return the width of the interval of the savings ``grid`` that holds each of ``savings``."""
    upper = np.clip(np.searchsorted(grid, savings, side="right"), 1, grid.size - 1)
    return grid[upper] - grid[upper - 1]


def _alive_slope(
    solution: RegimeSolution,
    *,
    regime: str,
    period: int,
    wealth: np.ndarray,
    shifts: tuple[np.ndarray, np.ndarray],
) -> tuple[np.ndarray, np.ndarray]:
    """Return u'(c*) at ``wealth`` and whether the option differs within ``shifts`` of it.

    ``shifts`` (down, up): the option is read at ``wealth - down`` and ``wealth + up`` too.

    The options are compared only where ``period`` offers more than one.
    """
    regime_solution = solution.solutions[regime]
    structure = regime_solution.structure
    several = int(np.asarray(regime_solution.arrays.feasible[period]).sum(axis=-1).max()) > 1
    points = [wealth, wealth - shifts[0], wealth + shifts[1]] if several else [wealth]
    read = evaluate(
        regime_solution, period=period, wealth=np.concatenate([p.ravel() for p in points])
    )
    chosen, choice = read.consumption, read.choice.reshape(len(points), *wealth.shape)
    switches = (choice[1:] != choice[0]).any(axis=0)
    params = {k: jnp.asarray(v) for k, v in solution.params.items()}
    at = {
        "period": jnp.int32(period),
        "age": jnp.asarray(float(regime_solution.model.ages[period])),
    }
    codes = jnp.asarray(np.asarray(structure.choices)[choice[0].ravel()])
    marginal = euler_kernels(regime_solution.model)["marginal"](
        params, at, codes, jnp.asarray(chosen[: wealth.size])
    )
    return np.asarray(marginal, dtype=np.float64).reshape(wealth.shape), switches
