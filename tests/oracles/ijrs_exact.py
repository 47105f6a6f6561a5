"""Exact solution of the IJRS (2017) consumption-retirement model without taste shocks.

Pure-numpy test oracle, written independently of the grid-based solver in ``src/project``.

Model (interest rate r = 0 throughout, which is why ``r`` is not an argument):
periods t = 0, ..., T - 1 with T = ``n_periods``; the last period T - 1 is terminal with
V_{T-1}(m) = log(m) for everyone. Utility is log(c) - delta * working with 0 < c <= m,
next wealth is (m - c) + wage * working (the income of a worked period arrives at the start
of the next period), and retirement is absorbing. Retirees have no work cost and no income.

The model is deterministic, so a worker's optimal plan is a retirement date s in t..T-1
("work in periods t..s-1, retired from s on") plus the optimal consumption path for the
resulting income stream y_j = wage for j = t+1..s (else 0); its value is the discounted log
consumption minus the discounted work cost delta * sum_{j=0}^{s-t-1} beta^j (the work cost is a
per-period utility cost, so it is discounted like utility). For log utility, r = 0 and no
borrowing, the first-period consumption of that savings problem is the tightest affordable
Euler path, c_t = min_k (m + sum_{i=t+1}^{k} y_i) / sum_{i=0}^{k-t} beta^i, and the rest of
the path follows by recursion on next-period assets m - c_t + y_{t+1}.
"""

import numpy as np


def _consumption_paths(*, wealth: np.ndarray, incomes: np.ndarray, beta: float) -> np.ndarray:
    """Return optimal consumption paths, one row per initial wealth, one column per period."""
    assets = np.asarray(wealth, dtype=np.float64).copy()
    incomes = np.asarray(incomes, dtype=np.float64)
    horizon = incomes.shape[0]
    paths = np.empty((*assets.shape, horizon))
    for j in range(horizon):
        # Cash available through period j + h for h = 0..horizon-1-j (today's assets plus
        # the incomes arriving at the start of periods j+1..j+h).
        future = np.concatenate([[0.0], np.cumsum(incomes[j + 1 :])])
        discount_sums = np.cumsum(beta ** np.arange(horizon - j))
        ratios = (assets[..., None] + future) / discount_sums
        consumption = ratios.min(axis=-1)
        paths[..., j] = consumption
        next_income = incomes[j + 1] if j + 1 < horizon else 0.0
        # Guard against negative round-off when the constraint binds (assets = consumption).
        assets = np.maximum(assets - consumption, 0.0) + next_income
    return paths


def _path_value(*, paths: np.ndarray, beta: float) -> np.ndarray:
    """Return the discounted sum of log consumption along the last axis of ``paths``."""
    discounts = beta ** np.arange(paths.shape[-1])
    return np.log(paths) @ discounts


def consumption_path(*, wealth: float, incomes: np.ndarray, beta: float) -> np.ndarray:
    """Compute the exact optimal consumption path of the no-borrowing savings problem.

    The problem is max sum_j beta^j log(c_j) subject to a_{j+1} = a_j - c_j + incomes[j + 1],
    0 < c_j <= a_j and a_0 = ``wealth`` (log utility, r = 0). ``incomes[j]`` arrives at the
    start of period j; ``incomes[0]`` is ignored. The horizon is ``len(incomes)`` periods.
    """
    incomes = np.asarray(incomes, dtype=np.float64)
    if incomes.ndim != 1 or incomes.size == 0:
        msg = "incomes must be a non-empty one-dimensional array."
        raise ValueError(msg)
    return _consumption_paths(wealth=np.asarray(float(wealth)), incomes=incomes, beta=beta)


def _check_period(*, period: int, n_periods: int) -> int:
    """Return the number of periods left after ``period``, validating the inputs."""
    if not 0 <= period < n_periods:
        msg = f"period must lie in 0..{n_periods - 1}, got {period}."
        raise ValueError(msg)
    return n_periods - 1 - period


def retiree_value(*, wealth: np.ndarray, period: int, n_periods: int, beta: float) -> np.ndarray:
    """Compute the exact value of a retiree at ``period`` (r = 0)."""
    periods_left = _check_period(period=period, n_periods=n_periods)
    wealth = np.asarray(wealth, dtype=np.float64)
    paths = _consumption_paths(wealth=wealth, incomes=np.zeros(periods_left + 1), beta=beta)
    return _path_value(paths=paths, beta=beta)


def _plan_values(
    *, wealth: np.ndarray, period: int, n_periods: int, beta: float, delta: float, wage: float
) -> np.ndarray:
    """Return the value of each retirement date s = period..n_periods-1 (last axis)."""
    periods_left = _check_period(period=period, n_periods=n_periods)
    wealth = np.asarray(wealth, dtype=np.float64)
    values = []
    for years_worked in range(periods_left + 1):
        incomes = np.zeros(periods_left + 1)
        incomes[1 : years_worked + 1] = wage
        paths = _consumption_paths(wealth=wealth, incomes=incomes, beta=beta)
        # The work cost is a per-period utility cost, so it is discounted like utility.
        work_cost = delta * np.sum(beta ** np.arange(years_worked))
        values.append(_path_value(paths=paths, beta=beta) - work_cost)
    return np.stack(values, axis=-1)


def worker_value(
    *,
    wealth: np.ndarray,
    period: int,
    n_periods: int,
    beta: float,
    delta: float,
    wage: float,
) -> np.ndarray:
    """Compute the exact value of a worker (not yet retired) at ``period`` (r = 0)."""
    values = _plan_values(
        wealth=wealth, period=period, n_periods=n_periods, beta=beta, delta=delta, wage=wage
    )
    return values.max(axis=-1)


def retirement_date(
    *,
    wealth: np.ndarray,
    period: int,
    n_periods: int,
    beta: float,
    delta: float,
    wage: float,
) -> np.ndarray:
    """Compute a worker's optimal retirement date s (retire now: s = ``period``).

    The worker works in periods ``period``..s-1 and is retired from s on. Ties go to the
    earliest date.
    """
    values = _plan_values(
        wealth=wealth, period=period, n_periods=n_periods, beta=beta, delta=delta, wage=wage
    )
    return period + values.argmax(axis=-1)


def worker_consumption(
    *,
    wealth: np.ndarray,
    period: int,
    n_periods: int,
    beta: float,
    delta: float,
    wage: float,
) -> np.ndarray:
    """Compute a worker's optimal consumption at ``period`` under the optimal plan."""
    periods_left = _check_period(period=period, n_periods=n_periods)
    wealth = np.asarray(wealth, dtype=np.float64)
    dates = retirement_date(
        wealth=wealth, period=period, n_periods=n_periods, beta=beta, delta=delta, wage=wage
    )
    consumption = np.empty(wealth.shape)
    for years_worked in range(periods_left + 1):
        incomes = np.zeros(periods_left + 1)
        incomes[1 : years_worked + 1] = wage
        paths = _consumption_paths(wealth=wealth, incomes=incomes, beta=beta)
        chosen = dates == period + years_worked
        consumption[chosen] = paths[..., 0][chosen]
    return consumption
