"""Checks of the exact IJRS oracle against closed forms and an independent brute-force solve."""

import numpy as np
import pytest

try:
    from oracles.ijrs_exact import (
        consumption_path,
        retiree_value,
        retirement_date,
        worker_consumption,
        worker_value,
    )
except ImportError:  # tests/ became a package: the rootdir is on sys.path instead
    from tests.oracles.ijrs_exact import (
        consumption_path,
        retiree_value,
        retirement_date,
        worker_consumption,
        worker_value,
    )

BETA = 0.98
WAGE = 20.0


def _discount_sum(beta, n_terms):
    return sum(beta**j for j in range(n_terms))


def _retiree_closed_form(wealth, periods_left, beta):
    b_tau = _discount_sum(beta, periods_left + 1)
    double_sum = sum(beta**j * _discount_sum(beta, periods_left - j) for j in range(periods_left))
    return b_tau * np.log(wealth) - b_tau * np.log(b_tau) + beta * np.log(beta) * double_sum


# ----------------------------------------------------------------------------------------
# Closed forms
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("beta", [0.98, 0.9, 0.5])
@pytest.mark.parametrize(("period", "n_periods"), [(0, 6), (2, 6), (4, 6), (5, 6), (0, 4), (0, 1)])
def test_retiree_value_matches_closed_form(beta, period, n_periods):
    wealth = np.linspace(0.5, 400.0, 57)
    got = retiree_value(wealth=wealth, period=period, n_periods=n_periods, beta=beta)
    expected = _retiree_closed_form(wealth, n_periods - 1 - period, beta)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-10)


def test_terminal_period_is_log_wealth_for_everyone():
    wealth = np.linspace(1.0, 400.0, 11)
    kwargs = {"wealth": wealth, "period": 5, "n_periods": 6, "beta": BETA}
    np.testing.assert_allclose(retiree_value(**kwargs), np.log(wealth), atol=1e-14)
    worker = worker_value(**kwargs, delta=1.0, wage=WAGE)
    np.testing.assert_allclose(worker, np.log(wealth), atol=1e-14)


def test_consumption_path_two_periods_closed_form():
    # c_0 = min(m, (m + y_1) / (1 + beta)), c_1 = m - c_0 + y_1.
    for wealth, income in [(5.0, 20.0), (30.0, 20.0), (100.0, 0.0), (1.0, 0.0)]:
        path = consumption_path(wealth=wealth, incomes=np.array([0.0, income]), beta=BETA)
        c0 = min(wealth, (wealth + income) / (1 + BETA))
        np.testing.assert_allclose(path, [c0, wealth - c0 + income], rtol=1e-13)


def test_consumption_path_is_feasible_exhausts_resources_and_satisfies_euler():
    incomes = np.array([0.0, 20.0, 0.0, 50.0, 20.0, 0.0])
    beta = 0.95
    for wealth in [0.3, 7.0, 25.0, 60.0, 300.0]:
        path = consumption_path(wealth=wealth, incomes=incomes, beta=beta)
        cash = wealth + np.cumsum(incomes)  # incomes[0] is ignored and zero here
        slack = cash - np.cumsum(path)
        assert np.all(path > 0)
        assert np.all(slack >= -1e-10)
        assert abs(slack[-1]) < 1e-10
        # Kuhn-Tucker: c_{j+1} = beta * c_j where assets are carried over, and
        # c_{j+1} >= beta * c_j where the constraint binds.
        ratio = path[1:] / path[:-1]
        assert np.all(ratio >= beta - 1e-12)
        carried = slack[:-1] > 1e-9
        np.testing.assert_allclose(ratio[carried], beta, rtol=1e-12)


def test_retiree_consumption_path_is_wealth_over_discount_sum():
    wealth = 123.0
    path = consumption_path(wealth=wealth, incomes=np.zeros(6), beta=BETA)
    c0 = wealth / _discount_sum(BETA, 6)
    np.testing.assert_allclose(path, c0 * BETA ** np.arange(6), rtol=1e-13)


def test_worker_value_at_least_retiree_value_and_increasing():
    wealth = np.linspace(1.0, 400.0, 100)
    worker = worker_value(wealth=wealth, period=0, n_periods=6, beta=BETA, delta=1.0, wage=WAGE)
    retiree = retiree_value(wealth=wealth, period=0, n_periods=6, beta=BETA)
    assert np.all(worker >= retiree - 1e-12)
    assert np.all(np.diff(worker) > 0)
    # Above m_bar everyone retires now, so the two values coincide.
    rich = wealth > 110.0
    np.testing.assert_allclose(worker[rich], retiree[rich], atol=1e-12)


def test_worker_consumption_constrained_below_wage_over_beta():
    # Workers with wealth below wage / beta consume everything.
    wealth = np.linspace(1.0, WAGE / BETA - 1e-6, 20)
    consumption = worker_consumption(
        wealth=wealth, period=0, n_periods=6, beta=BETA, delta=1.0, wage=WAGE
    )
    np.testing.assert_allclose(consumption, wealth, rtol=1e-13)


# ----------------------------------------------------------------------------------------
# Independent brute force: value function iteration on fine grids
# ----------------------------------------------------------------------------------------


def _brute_force_period0(query, *, n_periods, beta, delta, wage, n_wealth=3000, n_share=2000):
    """Solve the Bellman equation by plain VFI; return (retiree, worker) values at period 0.

    Wealth grid: uniform in log(m) on [1e-3, 3000], continuation values interpolated linearly
    in log(m). Consumption grid: c = share * m with share on a uniform grid over (0, 1],
    share = 1 (consume everything) included. Period 0 is maximised directly at ``query``.
    """
    log_grid = np.linspace(np.log(1e-3), np.log(3000.0), n_wealth)
    grid = np.exp(log_grid)
    shares = np.linspace(0.0, 1.0, n_share + 1)[1:]

    def bellman(wealth, v_retiree, v_worker):
        consumption = wealth[:, None] * shares
        utility = np.log(consumption)
        savings = wealth[:, None] - consumption
        cont_retiree = np.interp(np.log(np.maximum(savings, 1e-300)), log_grid, v_retiree)
        cont_worker = np.interp(np.log(savings + wage), log_grid, v_worker)
        new_retiree = (utility + beta * cont_retiree).max(axis=1)
        new_work = (utility - delta + beta * cont_worker).max(axis=1)
        return new_retiree, np.maximum(new_retiree, new_work)

    v_retiree = np.log(grid)
    v_worker = np.log(grid)
    for _ in range(n_periods - 2):
        v_retiree, v_worker = bellman(grid, v_retiree, v_worker)
    return bellman(np.asarray(query, dtype=np.float64), v_retiree, v_worker)


# Error budget of the brute force (it is an approximation; the oracle is exact):
# - consumption share step h = 5e-4: a value loss of about 0.5 * |d2V/dc2| * (h * m)^2 per
#   decision, roughly B^3 h^2 / 2 < 2e-5 per period for B <= 6;
# - linear interpolation in log(m) with step dx ~ 5e-3: about dx^2 / 8 * |d2V/dx2| < 1e-5.
# Summed over at most five decisions this stays below 1e-4. The smallest error one would
# plausibly make in the oracle (e.g. an undiscounted work cost) shifts V by > 2e-3 here.
BRUTE_FORCE_ATOL = 1e-4


@pytest.mark.parametrize(("delta", "n_periods"), [(1.0, 6), (0.1, 4)])
def test_oracle_matches_brute_force_vfi(delta, n_periods):
    wealth = np.linspace(5.0, 400.0, 100)
    brute_retiree, brute_worker = _brute_force_period0(
        wealth, n_periods=n_periods, beta=BETA, delta=delta, wage=WAGE
    )
    retiree = retiree_value(wealth=wealth, period=0, n_periods=n_periods, beta=BETA)
    worker = worker_value(
        wealth=wealth, period=0, n_periods=n_periods, beta=BETA, delta=delta, wage=WAGE
    )
    np.testing.assert_allclose(retiree, brute_retiree, rtol=0, atol=BRUTE_FORCE_ATOL)
    np.testing.assert_allclose(worker, brute_worker, rtol=0, atol=BRUTE_FORCE_ATOL)


# ----------------------------------------------------------------------------------------
# Retirement-date switch points
# ----------------------------------------------------------------------------------------


def _date(wealth, *, n_periods, delta=1.0):
    return int(
        retirement_date(
            wealth=np.array([wealth]),
            period=0,
            n_periods=n_periods,
            beta=BETA,
            delta=delta,
            wage=WAGE,
        )[0]
    )


def _switch_points(*, n_periods, lo=1.0, hi=150.0, step=0.25, tol=1e-10):
    """Locate the wealth levels where the optimal period-0 retirement date changes."""
    scan = np.arange(lo, hi, step)
    dates = retirement_date(
        wealth=scan, period=0, n_periods=n_periods, beta=BETA, delta=1.0, wage=WAGE
    )
    assert np.all(np.diff(dates) <= 0), "retirement date must not increase with wealth"
    switches = []
    for i in np.nonzero(np.diff(dates))[0]:
        left, right = scan[i], scan[i + 1]
        left_date = dates[i]
        while right - left > tol:
            mid = 0.5 * (left + right)
            if _date(mid, n_periods=n_periods) == left_date:
                left = mid
            else:
                right = mid
        switches.append(0.5 * (left + right))
    return np.array(switches), dates


def _unconstrained_switch_points(*, n_periods, delta):
    """Indifference between working n and n - 1 periods when no constraint binds.

    With n years worked and no binding constraint, V = B log(m + n * wage) + const
    - delta * sum_{j<n} beta^j, so the worker is indifferent where
    B log((m + n * wage) / (m + (n - 1) * wage)) = delta * beta^(n - 1).
    """
    b_tau = _discount_sum(BETA, n_periods)
    years = np.arange(n_periods - 1, 0, -1)
    k = delta * BETA ** (years - 1) / b_tau
    return WAGE / np.expm1(k) - (years - 1) * WAGE


@pytest.mark.parametrize("n_periods", [5, 6])
def test_switch_points_match_indifference_closed_form(n_periods):
    switches, dates = _switch_points(n_periods=n_periods)
    # One switch per retirement date: from "work until the end" down to "retire now".
    assert dates[0] == n_periods - 1
    assert dates[-1] == 0
    assert len(switches) == n_periods - 1
    expected = _unconstrained_switch_points(n_periods=n_periods, delta=1.0)
    np.testing.assert_allclose(switches, expected, rtol=0, atol=1e-6)
    # The last switch is m_bar = wage e^-k / (1 - e^-k), k = delta / B_tau.
    k = 1.0 / _discount_sum(BETA, n_periods)
    np.testing.assert_allclose(switches[-1], WAGE * np.exp(-k) / -np.expm1(-k), atol=1e-6)
    # The closed form assumes unconstrained plans at the switch: check that assumption.
    for years, m in zip(range(n_periods - 1, 0, -1), switches, strict=True):
        for n in (years, years - 1):
            incomes = np.zeros(n_periods)
            incomes[1 : n + 1] = WAGE
            path = consumption_path(wealth=m, incomes=incomes, beta=BETA)
            np.testing.assert_allclose(path[1:] / path[:-1], BETA, rtol=1e-12)


def test_switch_points_of_reference_document():
    # ijrs_analytical.md quotes first-period switch points 32.4, 50.4, 68.3, 86.4 and
    # "nobody works above about 86.5" for beta = 0.98, delta = 1, wage = 20. These are the
    # numbers for FIVE periods in total (periods 0..4, period 4 terminal, B_tau = B_4).
    switches, _ = _switch_points(n_periods=5)
    np.testing.assert_allclose(switches, [32.4, 50.4, 68.3, 86.4], rtol=0, atol=0.5)
    assert _date(87.0, n_periods=5) == 0
    assert _date(200.0, n_periods=5) == 0
    assert _date(80.0, n_periods=5) > 0
    # With six periods in total (periods 0..5) the worker keeps working up to m_bar ~ 104.4.
    switches_6, _ = _switch_points(n_periods=6)
    np.testing.assert_allclose(switches_6, [34.03, 51.56, 69.14, 86.77, 104.44], rtol=0, atol=0.01)
    assert _date(87.0, n_periods=6) > 0
    assert _date(105.0, n_periods=6) == 0
