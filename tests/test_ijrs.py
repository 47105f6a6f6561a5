"""The IJRS (2017) retirement model without taste shocks against its exact solution.

beta = 0.98, r = 0, wage = 20; wealth on 100 points in [1, 400]; consumption on 991 points in
[1, 400] (991 - 1 is a multiple of 100 - 1, so every wealth point is a consumption point and the
terminal period is exact). Cases: delta = 1 with 5 periods and delta = 0.1 with 3 (the last
period of each is terminal: consume everything, as in the reference's switch points).

Tolerance, derived from the grid steps (wealth step h, consumption step dc) as in
test_cake_eating: per period the grid V loses beta * (e_{t+1} + h^2/8 max|V''_{t+1}|) from
interpolating the concave value of each plan plus 1/2 max|Q''| (dc/2)^2 from the discrete
consumption choice. Every plan value has |V''| <= B/m^2 (B = sum of remaining discount factors),
which also bounds the worker. The worker's V is the upper envelope of plan values, so it has
convex kinks where the retirement date switches; linear interpolation across such a kink
overstates V by at most h/4 times the jump in V' there, which we measure on the exact solution.
Compared on wealth >= 20: below, consumption >= 1 pushes next wealth under the grid, where V is
extrapolated linearly (documented) and the log's curvature makes any grid error unbounded.
"""

import numpy as np
import pytest
from oracles.ijrs_exact import retiree_value, worker_value

from project import solve
from project.models import ijrs

BETA, WAGE = 0.98, 20.0
N_WEALTH, N_CONSUMPTION = 100, 991
COMPARE_FROM = 20.0
CASES = [(1.0, 5), (0.1, 3)]


def discount_sum(n_terms: int) -> float:
    return sum(BETA**j for j in range(n_terms))


def kink_jump(*, period: int, n_periods: int, delta: float, low: float) -> float:
    """Return the largest jump of the exact worker V' over wealth >= low (0 if terminal)."""
    if period >= n_periods - 1:
        return 0.0
    grid = np.linspace(low, 400.0, 200_001)
    value = worker_value(
        wealth=grid, period=period, n_periods=n_periods, beta=BETA, delta=delta, wage=WAGE
    )
    slope = np.diff(value) / np.diff(grid)
    window = 50
    return float(np.max(slope[2 * window :] - slope[: -2 * window]).clip(min=0.0))


def error_bounds(*, period: int, low: float, n_periods: int, delta: float) -> tuple[float, float]:
    """Return (lower, upper) bounds on the grid error of V_period on wealth >= low.

    Recursive: next period's bound is needed where next wealth can land, on wealth >= next_low.
    """
    if period == n_periods - 1:
        return 0.0, 0.0
    h = 399.0 / (N_WEALTH - 1)
    dc = 399.0 / (N_CONSUMPTION - 1)
    remaining_now = discount_sum(n_periods - period)
    remaining_next = discount_sum(n_periods - period - 1)
    next_low = low * (1 - 1 / remaining_now) - dc
    next_lower, next_upper = error_bounds(
        period=period + 1, low=next_low, n_periods=n_periods, delta=delta
    )
    interpolation = h**2 / 8 * remaining_next / next_low**2
    c_min = low / remaining_now - dc
    choice = 0.5 * (1 / c_min**2 + BETA * remaining_next / next_low**2) * (dc / 2) ** 2
    kink = h / 4 * kink_jump(period=period + 1, n_periods=n_periods, delta=delta, low=next_low)
    return BETA * (next_lower + interpolation) + choice, BETA * (next_upper + kink)


def derived_bounds(*, n_periods: int, delta: float) -> dict[int, tuple[float, float]]:
    """Return the bounds on wealth >= COMPARE_FROM for every period."""
    return {
        t: error_bounds(period=t, low=COMPARE_FROM, n_periods=n_periods, delta=delta)
        for t in range(n_periods)
    }


@pytest.fixture(scope="module", params=CASES, ids=["delta1-T5", "delta0.1-T3"])
def ijrs_case(request):
    import jax

    delta, n_periods = request.param
    jax.config.update("jax_enable_x64", True)
    try:
        model = ijrs.build_model(
            n_wealth=N_WEALTH, n_consumption=N_CONSUMPTION, n_periods=n_periods
        )
        params = dict(ijrs.DEFAULT_PARAMS, delta=delta, wage=WAGE, beta=BETA, r=0.0)
        solution = solve(model=model, params=params)
    finally:
        jax.config.update("jax_enable_x64", False)
    return delta, n_periods, solution, derived_bounds(n_periods=n_periods, delta=delta)


def test_retiree_value_matches_exact_solution(ijrs_case):
    _delta, n_periods, solution, bounds = ijrs_case
    wealth = np.linspace(1, 400, N_WEALTH)
    compared = wealth >= COMPARE_FROM
    for t in range(n_periods):
        exact = retiree_value(wealth=wealth, period=t, n_periods=n_periods, beta=BETA)
        error = np.asarray(solution.value_function[t][ijrs.RetirementStatus.retired]) - exact
        assert error[compared].max() <= 1e-9, f"period {t}: retiree V above the exact V"
        assert error[compared].min() >= -bounds[t][0] - 1e-9, f"period {t}"


def test_worker_value_matches_exact_solution(ijrs_case):
    delta, n_periods, solution, bounds = ijrs_case
    wealth = np.linspace(1, 400, N_WEALTH)
    compared = wealth >= COMPARE_FROM
    for t in range(n_periods):
        exact = worker_value(
            wealth=wealth, period=t, n_periods=n_periods, beta=BETA, delta=delta, wage=WAGE
        )
        error = np.asarray(solution.value_function[t][ijrs.RetirementStatus.working]) - exact
        lower, upper = bounds[t]
        assert error[compared].max() <= upper + 1e-9, f"period {t}"
        assert error[compared].min() >= -lower - 1e-9, f"period {t}"


def test_worker_retires_above_the_analytical_threshold():
    """With delta = 1 and 5 periods nobody works above m = 86.43 in period 0 (reference)."""
    import jax

    jax.config.update("jax_enable_x64", True)
    try:
        solution = solve(
            model=ijrs.build_model(n_wealth=400, n_consumption=1000, n_periods=5),
            params=ijrs.DEFAULT_PARAMS,
        )
    finally:
        jax.config.update("jax_enable_x64", False)
    wealth = np.linspace(1, 400, 400)
    retire = np.asarray(solution.policy_indices[0]["retirement"][ijrs.RetirementStatus.working])
    assert (retire[wealth > 90] == ijrs.RetirementStatus.retired).all()
    assert (retire[(wealth > 25) & (wealth < 80)] == ijrs.RetirementStatus.working).all()
