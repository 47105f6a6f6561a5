"""The validation's oracle, Euler errors and comparisons against independent computations."""

import numpy as np
import pandas as pd
import pytest
from oracles.ijrs_exact import retiree_value, retirement_date, worker_consumption, worker_value

from project import solve
from project.analysis.accuracy import (
    compare_solutions,
    euler_errors,
    euler_summary,
    ijrs_exact,
    ijrs_oracle_check,
)
from project.analysis.validation import scientific, validation_numbers, validation_table
from project.models import lifecycle_regimes

EXACT = {"beta": 0.98, "delta": 1.0, "wage": 20.0}
WEALTH = np.linspace(1.0, 400.0, 97)


@pytest.mark.parametrize("period", [0, 2, 4])
def test_ijrs_exact_matches_the_independent_oracle(period):
    kwargs = {"wealth": WEALTH, "period": period, "n_periods": 6}
    c, v, date = ijrs_exact(**kwargs, **EXACT, retired=False)
    np.testing.assert_allclose(v, worker_value(**kwargs, **EXACT), rtol=1e-12)
    np.testing.assert_allclose(c, worker_consumption(**kwargs, **EXACT), rtol=1e-12)
    np.testing.assert_array_equal(date, retirement_date(**kwargs, **EXACT))
    _, v, _ = ijrs_exact(**kwargs, **EXACT, retired=True)
    np.testing.assert_allclose(v, retiree_value(**kwargs, beta=0.98), rtol=1e-12)


def test_ijrs_exact_retiree_consumes_wealth_over_the_discount_sum():
    c, v, _ = ijrs_exact(wealth=WEALTH, period=3, n_periods=6, **EXACT, retired=True)
    np.testing.assert_allclose(c, WEALTH / (1 + 0.98 + 0.98**2), rtol=1e-12)
    c, v, _ = ijrs_exact(wealth=WEALTH, period=5, n_periods=6, **EXACT, retired=False)
    np.testing.assert_allclose((c, v), (WEALTH, np.log(WEALTH)), rtol=1e-12)


def test_dcegm_is_close_to_the_exact_ijrs_solution():
    errors = ijrs_oracle_check(n_savings=200)
    assert errors["value_error"] < 1e-3
    assert errors["consumption_error"] < 1e-3
    assert 0 < errors["share_near_switch"] < 0.2


@pytest.fixture(scope="module")
def small():
    model = lifecycle_regimes.build_model(
        n_wealth=12,
        n_consumption=12,
        n_periods=6,
        start_age=64,
        n_savings=40,
        taste_shocks=True,
        survival="life_table",
    )
    params = lifecycle_regimes.params_for(model) | {"taste_shock_scale": 0.01}
    return model, params, solve(model=model, params=params)


def test_retirees_euler_errors_are_rounding_and_include_survival(small):
    """The retiree's problem is concave: EGM's Euler equation holds to float32 rounding.

    Except next to the borrowing limit's kink, where consumption is interpolated between the
    constrained segment and the first endogenous point. Leaving survival out (s ~ 0.985)
    would show up everywhere as errors near (1/s)^(1/2) - 1 ~ 7e-3.
    """
    _, _, solution = small
    errors = euler_errors(solution=solution, wealth=np.linspace(0.5, 15.0, 30))
    retired = errors[errors["regime"] == "retired"]["error"].dropna()
    assert retired.size > 100
    assert np.quantile(retired, 0.9) < 1e-5
    assert retired.max() < 1e-2
    summary = euler_summary(errors)
    assert summary["mean_log10"] < -4
    assert 0 <= summary["share_constrained"] < 1


def test_euler_errors_are_constrained_at_the_lowest_wealth(small):
    _, _, solution = small
    errors = euler_errors(solution=solution, wealth=np.array([0.2, 10.0]))
    retired = errors[errors["regime"] == "retired"]
    assert retired.loc[retired["wealth"] == 0.2, "error"].isna().all()
    assert retired.loc[retired["wealth"] == 10.0, "error"].notna().all()


def test_a_solution_compared_with_itself_has_no_gaps_and_another_has(small):
    model, params, solution = small
    wealth = np.linspace(0.5, 15.0, 11)
    same = compare_solutions(one=solution, other=solution, wealth=wealth)
    assert all(v == 0 for v in same.values())
    other = solve(model=model, params=params | {"pension": 0.3})
    gap = compare_solutions(one=solution, other=other, wealth=wealth)
    assert gap["value_max"] > gap["value_mean"] > 0
    assert gap["consumption_mean"] > 0


def test_scientific_numbers_in_each_markup():
    cell = scientific(3.21e-6)
    assert cell.text == "3.2 \u00d7 10\u207b\u2076"  # 10 to the minus sixth, in superscripts
    assert scientific(15.0).text == "1.5 \u00d7 10\u00b9"
    assert cell.latex == r"$3.2 \times 10^{-6}$"
    assert cell.typst == "$3.2 times 10^(-6)$"
    assert scientific(0.0).text == "0"


def test_the_table_has_a_row_per_measure():
    results = {
        "oracle": {"value_error": 1e-4, "consumption_error": 2e-3, "share_near_switch": 0.05},
        "euler": {
            "mean_log10": -5.5,
            "max_log10": -2.25,
            "p95_log10": -4.0,
            "n_points": 10,
            "share_constrained": 0.1,
        },
        "convergence": [
            {"n_savings": n, "reference": 120, "value_max": e, "consumption_mean": e / 10}
            for n, e in ((30, 1e-2), (60, 2e-3))
        ],
        "grid_search": {
            "value_mean": 0.1,
            "value_max": 1.0,
            "consumption_mean": 0.01,
            "choice_differs": 0.02,
        },
    }
    table = validation_table(results)
    assert list(table.columns) == ["Check", "Measure", "Value", "Detail"]
    assert len(table) == 2 + 3 + 2 * 2 + 3
    assert isinstance(table, pd.DataFrame)
    details = [d for d in table["Detail"] if "max." in str(d)]  # the grid gap's maximum
    assert [d.latex for d in details] == ["baseline; max. $1.0 \\times 10^{0}$"]
    assert [str(d) for d in details] == ["baseline; max. 1.0 \u00d7 10\u2070"]
    numbers = validation_numbers(results)
    assert numbers["euler_mean_log10"] == "\u22125.50"
    assert numbers["grid_choice_differs"] == "2.0 %"
