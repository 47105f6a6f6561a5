"""The accuracy checks of ``project.analysis.validation``: the IJRS oracle and grid convergence.

``ijrs_exact`` is the exact solution of the IJRS (2017) model (log utility, r = 0, no taste
shocks), by enumerating retirement dates; each date's consumption path is the tightest
affordable Euler path. ``ijrs_oracle_check`` measures DC-EGM against it: a check of the method
on *another* model with a known solution, not of the pipeline's. ``panel_states`` reads the
living households' states off a simulated panel; ``compare_at_states`` measures the gaps between
two solutions of the pipeline's model there. The Euler errors of the pipeline's model are in
``project.analysis.euler``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from project.analysis.euler import evaluate, padded_rows
from project.dispatch import solve
from project.errors import DataError
from project.models import ijrs
from project.regimes.solution import RegimeSolution

ALIVE = ("working", "retired")
"""The regimes of the living (the pipeline's model)."""


def ijrs_exact(
    *,
    wealth: np.ndarray,
    period: int,
    n_periods: int,
    beta: float,
    delta: float,
    wage: float,
    retired: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return exact consumption, V and retirement date of the IJRS model at ``period`` (r = 0).

    A worker chooses the date s >= ``period`` from which she is retired (working before,
    paid the wage the period after each period worked); a retiree's date is ``period``. The
    last period is terminal: V = log(wealth). Ties go to the earliest date.
    """
    wealth = np.asarray(wealth, dtype=np.float64)
    horizon = n_periods - period
    if not 0 <= period < n_periods:
        msg = f"period must lie in 0..{n_periods - 1}, got {period}."
        raise ValueError(msg)
    dates = [0] if retired else range(horizon)
    firsts, values = [], []
    discounts = beta ** np.arange(horizon)
    for worked in dates:
        incomes = np.zeros(horizon)
        incomes[1 : worked + 1] = wage
        path = _euler_path(wealth=wealth, incomes=incomes, beta=beta)
        firsts.append(path[..., 0])
        values.append(np.log(path) @ discounts - delta * discounts[:worked].sum())
    stacked = np.stack(values, axis=-1)
    best = stacked.argmax(axis=-1)
    consumption = np.take_along_axis(np.stack(firsts, axis=-1), best[..., None], -1)[..., 0]
    return consumption, stacked.max(axis=-1), period + best


def _euler_path(*, wealth: np.ndarray, incomes: np.ndarray, beta: float) -> np.ndarray:
    """Return the optimal no-borrowing consumption path (log utility, r = 0) per wealth."""
    assets, horizon = wealth.copy(), incomes.size
    path = np.empty((*wealth.shape, horizon))
    for j in range(horizon):
        cash = np.concatenate([[0.0], np.cumsum(incomes[j + 1 :])])
        spread = np.cumsum(beta ** np.arange(horizon - j))
        path[..., j] = ((assets[..., None] + cash) / spread).min(axis=-1)
        following = incomes[j + 1] if j + 1 < horizon else 0.0
        assets = np.maximum(assets - path[..., j], 0.0) + following
    return path


def ijrs_oracle_check(
    *, n_savings: int, n_periods: int = 5, n_wealth: int = 100
) -> dict[str, float]:
    """Solve the IJRS model by DC-EGM (taste shocks at scale 0); return its errors.

    Keys: ``value_error`` (max over periods, both regimes and wealth in [1, 400] of |V - V*| /
    max(|V*|, 1)), ``consumption_error`` and ``consumption_error_mean`` (|c - c*| away from
    retirement-date switches), ``share_near_switch`` (the share of points left out there).
    """
    params = dict(ijrs.DEFAULT_PARAMS) | {"taste_shock_scale": 0.0}
    model = ijrs.build_model(n_periods=n_periods, n_savings=n_savings, taste_shocks=True)
    solution = solve(model=model, params=params, log_level="warning")
    savings = np.asarray(solution.savings, dtype=np.float64)
    wealth = np.linspace(1.0, 400.0, n_wealth)
    fine = np.linspace(0.5, 420.0, 40_001)
    exact = {k: float(params[k]) for k in ("beta", "delta", "wage")}
    value_errors, consumption_errors, near_counts = [], [], 0
    for period in range(n_periods - 1):
        dates = ijrs_exact(wealth=fine, period=period, n_periods=n_periods, retired=False, **exact)
        switches = fine[1:][np.diff(dates[2]) != 0]
        step = np.diff(savings)[
            np.clip(np.searchsorted(savings, switches), 1, savings.size - 1) - 1
        ]
        near = (np.abs(wealth[:, None] - switches) <= 2 * step).any(axis=1)
        for lag in (0, 1):
            states = {"lagged_retirement": np.full(wealth.shape, lag), "wealth": wealth}
            c_star, v_star, _ = ijrs_exact(
                wealth=wealth, period=period, n_periods=n_periods, retired=bool(lag), **exact
            )
            value = np.asarray(solution.value(period=period, states=states), dtype=np.float64)
            consumption = np.asarray(solution.policy(period=period, states=states)["consumption"])
            value_errors.append(np.abs(value - v_star) / np.maximum(np.abs(v_star), 1.0))
            keep = ~near if lag == 0 else np.ones(wealth.shape, bool)
            consumption_errors.append(np.abs(consumption - c_star)[keep])
            near_counts += int((~keep).sum())
    errors = np.concatenate(consumption_errors)
    return {
        "value_error": float(np.max(np.concatenate(value_errors))),
        "consumption_error": float(errors.max()),
        "consumption_error_mean": float(errors.mean()),
        "share_near_switch": near_counts / (2 * (n_periods - 1) * wealth.size),
    }


def panel_states(panel: pd.DataFrame, *, n_households: int | None = None) -> pd.DataFrame:
    """Return the living rows of the first ``n_households`` subjects (all: None).

    Columns: subject_id, period, age, regime (str), claim (the option's code: 1 claims, 0
    keeps working; 0 for retirees), wealth and unit (the regime's normaliser over permanent
    income: 1 while working, B / P at the claim after it; from the panel's income_unit).
    """
    regime = panel["regime"].astype(str)
    living = panel.loc[regime.isin(ALIVE)]
    if n_households is not None:
        subjects = np.sort(living["subject_id"].unique())[:n_households]
        living = living.loc[living["subject_id"].isin(subjects)]
    regime = living["regime"].astype(str).to_numpy()
    claim = living["claim"].astype(str).map({"working": 0, "claim": 1}).fillna(0)
    claims = living.loc[(regime == "working") & (claim == 1).to_numpy()]
    at_claim = claims.set_index("subject_id")["income_unit"]
    unit = np.where(
        regime == "retired",
        living["income_unit"].to_numpy() / living["subject_id"].map(at_claim).to_numpy(),
        1.0,
    )
    if np.isnan(unit).any():
        msg = (
            "panel_states: a retiree's subject has no working row that claims (or no "
            "income_unit) in the panel; pass a whole simulated panel "
            "(SimulationResult.to_dataframe() with income_unit)."
        )
        raise DataError(msg)
    return pd.DataFrame(
        {
            "subject_id": living["subject_id"].to_numpy(),
            "period": living["period"].to_numpy(dtype=np.int64),
            "age": living["age"].to_numpy(dtype=np.float64),
            "regime": regime,
            "claim": claim.to_numpy(dtype=np.int64),
            "wealth": living["wealth"].to_numpy(dtype=np.float64),
            "unit": unit,
        }
    )


def compare_at_states(
    *, one: RegimeSolution, reference: RegimeSolution, states: pd.DataFrame
) -> dict[str, Any]:
    """Return the gaps of ``one`` to ``reference`` at ``states`` (``panel_states``' columns).

    Consumption is the optimal option's, its gap absolute in units of permanent income (times
    the row's ``unit``: the pension's share of permanent income at the claim for a retiree);
    V's gap is relative, |V / V_ref - 1|. Keys: consumption_mean, consumption_max,
    consumption_max_at, value_mean, value_max, value_max_at (age, regime, wealth),
    option_differs (how many workers' states have another optimal option), n_working and
    n_states.
    """
    states = states.reset_index(drop=True)
    gaps = {
        "consumption": np.zeros(len(states)),
        "value": np.zeros(len(states)),
        "option": np.zeros(len(states), dtype=bool),
    }
    rows = padded_rows(states)
    for (period, regime), group in states.groupby(["period", "regime"], sort=True):
        index = group.index.to_numpy()
        wealth = group["wealth"].to_numpy()
        ours, theirs = (
            evaluate(s.solutions[str(regime)], period=int(period), wealth=wealth, block=rows)
            for s in (one, reference)
        )
        gaps["consumption"][index] = np.abs(ours.consumption - theirs.consumption)
        gaps["consumption"][index] *= group["unit"].to_numpy()
        gaps["value"][index] = np.abs(ours.value / theirs.value - 1)
        gaps["option"][index] = ours.choice != theirs.choice
    working = (states["regime"] == "working").to_numpy()
    return {
        "n_states": len(states),
        **_gap_statistics(states, gaps["consumption"], name="consumption"),
        **_gap_statistics(states, gaps["value"], name="value"),
        "option_differs": int(gaps["option"][working].sum()),
        "n_working": int(working.sum()),
    }


def _gap_statistics(states: pd.DataFrame, gaps: np.ndarray, *, name: str) -> dict[str, Any]:
    """Return the mean and max of ``gaps`` and where the max is (age, regime, wealth)."""
    worst = states.iloc[int(np.argmax(gaps))]
    return {
        f"{name}_mean": float(gaps.mean()),
        f"{name}_max": float(gaps.max()),
        f"{name}_max_at": {
            "age": float(worst["age"]),
            "regime": str(worst["regime"]),
            "wealth": float(worst["wealth"]),
        },
    }
