"""CRRA cake eating without income against its closed form.

c_t = m / S_t and v_t = S_t^rho m^(1-rho) / (1-rho), S_t = sum_{j<T-t} lambda^j,
lambda = beta^(1/rho) R^((1-rho)/rho).

Tolerance, derived from the grid steps (wealth step h, consumption step dc; consumption grid =
wealth grid, so the terminal period is exact on the grid). In period t the grid solve loses
(i) the linear-interpolation error of the concave v_{t+1}: at most h^2/8 max|v''_{t+1}| over the
reachable next wealth, (ii) the next period's own error e_{t+1}, both discounted by beta, and
(iii) the discrete-choice loss: at most 1/2 max|Q''| (dc/2)^2. Both (i) and (iii) are losses, so
the grid V lies below the exact V: e_t = beta (e_{t+1} + (i)) + (iii) bounds it from one side.
For the policy: with Q concave (curvature between q_min and q_max) and the continuation
understated by at most eps = beta (e_{t+1} + (i)), the chosen c satisfies
(c - c*)^2 <= 2 (eps + 1/2 q_max (dc/2)^2) / q_min.
"""

import numpy as np
import pytest

from project import LinSpacedGrid, Model, solve

RHO, BETA, R, T = 2.0, 0.95, 1.04, 4
LOW, HIGH, N = 0.1, 10.0, 400
COMPARE_FROM = 1.0  # compare on m in [1, 10]; below, next wealth leaves the grid


def build_cake_model() -> Model:
    return Model(
        name="cake",
        states={"wealth": LinSpacedGrid(start=LOW, stop=HIGH, n_points=N, name="wealth")},
        actions={
            "consumption": LinSpacedGrid(start=LOW, stop=HIGH, n_points=N, name="consumption")
        },
        functions={
            "utility": lambda consumption, crra: consumption ** (1 - crra) / (1 - crra),
            "next_wealth": lambda wealth, consumption, interest_factor: (
                interest_factor * (wealth - consumption)
            ),
        },
        constraints={"feasible": lambda consumption, wealth: consumption <= wealth},
        n_periods=T,
    )


def remaining_sum(t: int) -> float:
    lam = BETA ** (1 / RHO) * R ** ((1 - RHO) / RHO)
    return sum(lam**j for j in range(T - t))


def derived_bounds() -> tuple[dict[int, float], dict[int, float]]:
    """Return (value bound, policy bound) per period from the formulas in the module docstring."""
    h = dc = (HIGH - LOW) / (N - 1)
    value_bound, policy_bound = {T - 1: 0.0}, {T - 1: 0.0}
    for t in reversed(range(T - 1)):
        s_now, s_next = remaining_sum(t), remaining_sum(t + 1)
        c_min = COMPARE_FROM / s_now - dc
        next_min = R * (COMPARE_FROM - COMPARE_FROM / s_now) - R * dc
        curvature_next = RHO * s_next**RHO * next_min ** (-RHO - 1)
        interpolation = h**2 / 8 * curvature_next
        q_max = RHO * c_min ** (-RHO - 1) + BETA * R**2 * curvature_next
        q_min = RHO * (HIGH / s_now + dc) ** (-RHO - 1)
        eps = BETA * (value_bound[t + 1] + interpolation)
        choice = 0.5 * q_max * (dc / 2) ** 2
        value_bound[t] = eps + choice
        policy_bound[t] = np.sqrt(2 * (eps + choice) / q_min)
    return value_bound, policy_bound


@pytest.fixture(scope="module")
def cake_solution():
    import jax

    jax.config.update("jax_enable_x64", True)
    try:
        yield solve(
            model=build_cake_model(), params={"beta": BETA, "crra": RHO, "interest_factor": R}
        )
    finally:
        jax.config.update("jax_enable_x64", False)


@pytest.mark.parametrize("period", range(T))
def test_value_matches_closed_form_within_grid_bound(cake_solution, period):
    wealth = np.linspace(LOW, HIGH, N)
    compared = wealth >= COMPARE_FROM
    exact = remaining_sum(period) ** RHO * wealth ** (1 - RHO) / (1 - RHO)
    error = np.asarray(cake_solution.value_function[period]) - exact
    bound = derived_bounds()[0][period]
    assert error[compared].max() <= 1e-9, "grid V must not exceed the exact V"
    assert error[compared].min() >= -bound - 1e-9


@pytest.mark.parametrize("period", range(T))
def test_policy_matches_closed_form_within_grid_bound(cake_solution, period):
    wealth = np.linspace(LOW, HIGH, N)
    compared = wealth >= COMPARE_FROM
    exact = wealth / remaining_sum(period)
    chosen = np.asarray(cake_solution.policy_values(period=period)["consumption"])
    bound = derived_bounds()[1][period] + 1e-9
    assert np.abs(chosen - exact)[compared].max() <= bound


def test_derived_bounds_are_tight_enough_to_catch_a_wrong_discount_factor(cake_solution):
    """A solve with beta off by 2% leaves the bound: the tolerance is not vacuous."""
    import jax

    jax.config.update("jax_enable_x64", True)
    try:
        wrong = solve(
            model=build_cake_model(),
            params={"beta": BETA * 0.98, "crra": RHO, "interest_factor": R},
        )
    finally:
        jax.config.update("jax_enable_x64", False)
    wealth = np.linspace(LOW, HIGH, N)
    exact = remaining_sum(0) ** RHO * wealth ** (1 - RHO) / (1 - RHO)
    error = np.asarray(wrong.value_function[0]) - exact
    assert np.abs(error[wealth >= COMPARE_FROM]).max() > derived_bounds()[0][0]
