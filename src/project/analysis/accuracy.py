"""The accuracy checks of ``project.analysis.validation``: exact oracle, Euler errors, gaps.

``ijrs_exact`` is the exact solution of the IJRS (2017) model (log utility, r = 0, no taste
shocks), by enumerating retirement dates; each date's consumption path is the tightest
affordable Euler path. ``euler_errors`` are the relative Euler-equation errors of a
``lifecycle_regimes`` solution, with logit-weighted next-period options and survival;
``compare_solutions`` measures the gaps between two solutions of the same regime model.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from project.dispatch import solve
from project.grids import code_combinations
from project.models import ijrs
from project.models.income import rouwenhorst_matrix, rouwenhorst_nodes
from project.regimes.solution import RegimeSolution


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


def euler_errors(
    *, solution: RegimeSolution, wealth: np.ndarray, min_probability: float = 0.01
) -> pd.DataFrame:
    """Return relative Euler errors of a ``lifecycle_regimes`` solution (no bequest motive).

    One row per period with a successor, regime, type, income node (workers), option with
    choice probability >= ``min_probability`` and wealth: ``error`` = |(u')^-1(beta (1 + r)
    s_t E[sum_d' P_d' u'(c_d')]) / c - 1| with u'(c) = c^-crra and s_t the survival
    probability (the dead have no marginal utility), NaN where the borrowing limit binds.
    """
    if "bequest_weight" in solution.params:
        msg = "euler_errors: a bequest motive adds marginal value at death; not covered here."
        raise ValueError(msg)
    p = {k: np.asarray(v, dtype=np.float64) for k, v in solution.params.items()}
    working, retired = solution.solutions["working"], solution.solutions["retired"]
    n_types = retired.model.states["pref_type"].n_points
    n_income = working.model.states["income"].n_points
    nodes = np.asarray(
        rouwenhorst_nodes(n_nodes=n_income, rho=p["income_rho"], sigma=p["income_sigma"])
    )
    markov = np.asarray(rouwenhorst_matrix(n_nodes=n_income, rho=p["income_rho"]))
    retire_code = np.asarray(working.structure.choices)[:, 0]
    limit = float(np.asarray(retired.savings)[0])
    gamma, gross = float(p["crra"]), 1.0 + float(p["r"])
    ages = np.asarray(solution.model.ages, dtype=np.float64)
    codes = np.array(code_combinations([n_types, n_income]))
    workers = {
        "pref_type": np.repeat(codes[:, 0], wealth.size),
        "income": np.repeat(codes[:, 1], wealth.size),
        "wealth": np.tile(wealth, len(codes)),
    }
    retirees = {"pref_type": np.repeat(np.arange(n_types), wealth.size)}
    retirees["wealth"] = np.tile(wealth, n_types)
    earned = float(p["wage"]) * np.exp(nodes[workers["income"]])
    rows = []
    for t in range(len(ages) - 1):
        common = {
            "period": t,
            "factor": float(p["beta"]) * gross * _survival(p, period=t, age=ages[t]),
            "gamma": gamma,
            "limit": limit,
        }
        c = np.asarray(retired.evaluate_flat(period=t, states=retirees).consumption, np.float64)
        cash = gross * (retirees["wealth"] - c) + p["pension"]
        after = _marginal(retired, period=t + 1, states=retirees | {"wealth": cash}, gamma=gamma)
        rows.append(_rows(**common, flat=retirees, option="retired", consumption=c, after=after))
        at = working.evaluate_flat(period=t, states=workers)
        for d, code in enumerate(retire_code):
            c = np.asarray(at.choice_consumption, np.float64)[:, d]
            saved = gross * (workers["wealth"] - c)
            if code == 1:
                states = workers | {"wealth": saved + p["pension"]}
                after = _marginal(retired, period=t + 1, states=states, gamma=gamma)
            else:
                after = sum(
                    markov[workers["income"], k]
                    * _marginal(
                        working,
                        period=t + 1,
                        states=workers | {"income": np.full(c.shape, k), "wealth": saved + earned},
                        gamma=gamma,
                    )
                    for k in range(n_income)
                )
            keep = np.asarray(at.probability, np.float64)[:, d] >= min_probability
            rows.append(
                _rows(
                    **common,
                    flat=workers,
                    option="retire" if code == 1 else "work",
                    consumption=c,
                    after=after,
                )[keep]
            )
    return pd.concat(rows, ignore_index=True)


def _survival(p: Mapping[str, np.ndarray], *, period: int, age: float) -> float:
    if "survival_probabilities" in p:
        return float(p["survival_probabilities"][period])
    if "mortality_intercept" in p:
        hazard = np.exp(p["mortality_intercept"] + p["mortality_slope"] * age)
        return float(1 - min(1.0, hazard))
    return 1.0


def _marginal(
    solution: Any, *, period: int, states: Mapping[str, np.ndarray], gamma: float
) -> np.ndarray:
    """Return the logit-weighted marginal utility of next period's options at ``states``."""
    known = {k: v for k, v in states.items() if k in solution.model.state_names}
    at = solution.evaluate_flat(period=period, states=known)
    marginal = np.asarray(at.choice_consumption, np.float64).reshape(len(states["wealth"]), -1)
    weights = np.asarray(at.probability, np.float64).reshape(marginal.shape)
    return (weights * marginal**-gamma).sum(axis=1)


def _rows(
    *,
    period: int,
    flat: Mapping[str, np.ndarray],
    option: str,
    consumption: np.ndarray,
    after: np.ndarray,
    factor: float,
    gamma: float,
    limit: float,
) -> pd.DataFrame:
    """Return the Euler errors of one option at ``flat`` states (NaN at the borrowing limit)."""
    c = consumption
    implied = (factor * after) ** (-1 / gamma)
    error = np.abs(implied / c - 1)
    binding = flat["wealth"] - c <= limit + 1e-5 * np.maximum(1.0, flat["wealth"])
    return pd.DataFrame(
        {
            "period": period,
            "regime": "retired" if option == "retired" else "working",
            "pref_type": flat["pref_type"],
            "income": flat.get("income", -1),
            "option": option,
            "wealth": flat["wealth"],
            "error": np.where(binding, np.nan, error),
        }
    )


def euler_summary(errors: pd.DataFrame) -> dict[str, float]:
    """Return mean and max log10 Euler error over unconstrained rows and the constrained share."""
    free = errors["error"].dropna()
    logged = np.log10(np.maximum(free.to_numpy(), 1e-16))
    return {
        "mean_log10": float(logged.mean()),
        "max_log10": float(logged.max()),
        "p95_log10": float(np.percentile(logged, 95)),
        "n_points": int(free.size),
        "share_constrained": float(errors["error"].isna().mean()),
    }


def compare_solutions(
    *, one: RegimeSolution, other: RegimeSolution, wealth: np.ndarray
) -> dict[str, float]:
    """Return the gaps in V and the likeliest option's consumption at common states.

    States: every period, solved regime, discrete state combination and ``wealth``. Keys:
    ``value_max``, ``value_mean`` (|dV|), ``consumption_max``, ``consumption_mean`` (|dc|)
    and ``choice_differs`` (share of workers' states whose likeliest option differs).
    """
    gaps: dict[str, list[np.ndarray]] = {"value": [], "consumption": [], "choice": []}
    for regime, solution in one.solutions.items():
        model = solution.model
        discrete = [s for s in model.state_names if s != "wealth"]
        codes = np.array(code_combinations([model.states[s].n_points for s in discrete]))
        states = {s: np.repeat(codes[:, i], wealth.size) for i, s in enumerate(discrete)}
        states["wealth"] = np.tile(wealth, len(codes))
        for t in range(len(model.ages)):
            ours = one.policy(period=t, regime=regime, states=states)
            theirs = other.policy(period=t, regime=regime, states=states)
            value = one.value(period=t, regime=regime, states=states)
            gaps["value"].append(
                np.abs(value - other.value(period=t, regime=regime, states=states))
            )
            gaps["consumption"].append(np.abs(ours["consumption"] - theirs["consumption"]))
            if "retirement" in ours:
                gaps["choice"].append(ours["retirement"] != theirs["retirement"])
    value, consumption = (
        np.concatenate(gaps[k]).astype(np.float64) for k in ("value", "consumption")
    )
    return {
        "value_max": float(value.max()),
        "value_mean": float(value.mean()),
        "consumption_max": float(consumption.max()),
        "consumption_mean": float(consumption.mean()),
        "choice_differs": float(np.concatenate(gaps["choice"]).mean()) if gaps["choice"] else 0.0,
    }
