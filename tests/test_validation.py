"""The validation of the pipeline's model: Euler errors, grid gaps, the IJRS oracle, the table."""

import re

import jax
import numpy as np
import pandas as pd
import pytest
from oracles.ijrs_exact import retiree_value, retirement_date, worker_consumption, worker_value
from scipy.optimize import brentq

from project import solve
from project.analysis.accuracy import (
    compare_at_states,
    ijrs_exact,
    ijrs_oracle_check,
    panel_states,
)
from project.analysis.euler import euler_errors, euler_summary, implied_consumption
from project.analysis.notation import scientific, significant
from project.analysis.validation import (
    validation_numbers,
    validation_sentence,
    validation_table,
)
from project.errors import DataError, InvalidStatesError
from project.models import default_params_of
from project.models import lifecycle_normalised as normalised

EXACT = {"beta": 0.98, "delta": 1.0, "wage": 20.0}
WEALTH = np.linspace(1.0, 400.0, 97)
LAST = normalised.n_periods() - 1


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
    """The pipeline's model on 40 savings points, solved in float64 (crra 2, beta 0.95)."""
    jax.config.update("jax_enable_x64", True)
    try:
        model = normalised.build_model(n_savings=40, taste_shocks=False)
        params = default_params_of(name="lifecycle_normalised", model=model)
        params |= {"crra": 2.0, "beta": 0.95}
        yield model, params, solve(model=model, params=params, log_level="warning")
    finally:
        jax.config.update("jax_enable_x64", False)


def _nodes(solution, *, regime, period, option, low=0.0, high=np.inf):
    """Return the endogenous grid points (wealth, consumption) of one option in ``period``."""
    arrays = solution.solutions[regime].arrays
    wealth = np.asarray(arrays.wealth[period, option, 1:])
    consumption = np.asarray(arrays.consumption[period, option, 1:])
    keep = np.isfinite(wealth) & (consumption > 0) & (wealth > low) & (wealth < high)
    return wealth[keep], consumption[keep]


def _implied(solution, *, regime, period, option, wealth, consumption):
    claim = np.full(wealth.size, option)
    return implied_consumption(
        solution=solution,
        period=period,
        regime=regime,
        claim=claim,
        wealth=wealth,
        consumption=consumption,
    )


CASES = [("working", 5, 0), ("working", 36, 0), ("working", 45, 1), ("retired", 50, 0)]


@pytest.mark.parametrize(("regime", "period", "option"), CASES)
def test_euler_errors_vanish_at_the_endogenous_grid_points(small, regime, period, option):
    """EGM makes the Euler equation hold exactly at its own points: the derivation is the solve's.

    Leaving out survival (~0.99), the bequest, the continuation scale or the work cost's factor
    in marginal utility would show up as errors far above rounding.
    """
    _, _, solution = small
    wealth, consumption = _nodes(solution, regime=regime, period=period, option=option)
    assert wealth.size > 25
    implied = _implied(
        solution,
        regime=regime,
        period=period,
        option=option,
        wealth=wealth,
        consumption=consumption,
    )
    np.testing.assert_allclose(implied.consumption, consumption, rtol=1e-12)


@pytest.mark.parametrize(("regime", "period", "option"), CASES)
def test_a_perturbed_consumption_has_errors_of_the_perturbations_size(
    small, regime, period, option
):
    """Consuming more lowers savings and raises E[V']: the implied c falls, the error >= eps.

    Except next to a switch of next period's option, where E[V'] need not fall in savings.
    """
    _, _, solution = small
    wealth, consumption = _nodes(
        solution, regime=regime, period=period, option=option, low=0.5, high=20.0
    )
    for eps in (1e-3, -1e-3):
        tried = consumption * (1 + eps)
        implied = _implied(
            solution, regime=regime, period=period, option=option, wealth=wealth, consumption=tried
        )
        error = np.abs(implied.consumption / tried - 1)[~implied.near_switch]
        assert error.size > 20
        assert (error >= abs(eps) / (1 + abs(eps)) * (1 - 1e-9)).all()
        assert (error < 10 * abs(eps)).all()


def _closed_form_rhs(params, *, option, regime, wealth, consumption):
    """Return beta E[...] of the first-order condition at age 98, written out by hand.

    At 99 everyone consumes all cash on hand, so V'(m') = u'(m'), with working utility
    ((1 - kappa) c)^(1 - rho) / (1 - rho) for a worker; death leaves m' to the warm glow.
    """
    t = LAST - 1
    rho, kappa, growth = params["crra"], params["work_cost"], params["interest_factor"]
    alive = params["survival_probabilities"][t]
    glow, shift = params["bequest_weight"], params["bequest_shift"]
    savings = wealth - consumption
    if regime == "retired":
        following = growth * savings + 1
        return (
            params["beta"]
            * growth
            * (alive * following**-rho + (1 - alive) * glow * (following + shift) ** -rho)
        )
    if option == 1:
        pension = params["replacement"] * params["claiming_factor"][t] * params["benefit_scale"]
        following = growth * savings / pension + 1
        bracket = alive * following**-rho + (1 - alive) * glow * (following + shift) ** -rho
        return params["beta"] * pension ** (1 - rho) * growth / pension * bracket
    risk = params["unemployment_risk"][t]
    incomes = [(risk, 0.0)] + [
        ((1 - risk) / 7, node / (1 - risk)) for node in params["transitory_nodes"][t]
    ]
    total = 0.0
    for psi in params["permanent_nodes"][t]:
        units = params["income_growth"][t] * psi
        for probability, income in incomes:
            following = growth * savings / units + income
            marginal = alive * (1 - kappa) ** (1 - rho) * following**-rho
            marginal += (1 - alive) * glow * (following + shift) ** -rho
            total += probability / 7 * units ** (1 - rho) * growth / units * marginal
    return params["beta"] * total


@pytest.mark.parametrize(("regime", "option"), [("retired", 0), ("working", 0), ("working", 1)])
def test_euler_equation_matches_a_closed_form_one_year_before_the_end(small, regime, option):
    """At 98 the exact policy solves a scalar equation: no Euler error there, the solve's small."""
    _, params, solution = small
    p = {k: np.asarray(v, dtype=np.float64) for k, v in params.items()}
    rho, kappa = float(p["crra"]), float(p["work_cost"])
    level = 1.0 if regime == "retired" else (1 - kappa) ** (1 - rho)
    exact = []
    wealth = np.array([2.0, 5.0, 10.0, 25.0])
    for m in wealth:

        def gap(c, m=m):
            rhs = _closed_form_rhs(p, option=option, regime=regime, wealth=m, consumption=c)
            return level * c**-rho - rhs

        exact.append(brentq(gap, 1e-9 * m, m * (1 - 1e-12), xtol=1e-15, rtol=1e-15))
    exact = np.array(exact)
    implied = _implied(
        solution, regime=regime, period=LAST - 1, option=option, wealth=wealth, consumption=exact
    )
    np.testing.assert_allclose(implied.consumption, exact, rtol=1e-10)
    states = {"wealth": wealth}
    ours = solution.solutions[regime].evaluate_flat(period=LAST - 1, states=states)
    np.testing.assert_allclose(np.asarray(ours.choice_consumption)[:, option], exact, rtol=2e-2)


def _grid_states(periods, wealth):
    rows = []
    for t in periods:
        age = normalised.FIRST_AGE + t
        options = (0, 1) if age >= normalised.EARLIEST_CLAIM else (0,)
        for m in wealth:
            rows += [(t, age, "working", d, m, 1.0) for d in options]
            rows.append((t, age, "retired", 0, m, 0.6))
    columns = ["period", "age", "regime", "claim", "wealth", "unit"]
    return pd.DataFrame(rows, columns=columns).assign(subject_id=0)


def test_euler_errors_of_states_and_their_summary(small):
    _, _, solution = small
    wealth = np.concatenate([[1e-4], np.geomspace(0.05, 30.0, 40)])
    states = _grid_states([3, 34, 35, 36, 37, 60, LAST], wealth)
    errors = euler_errors(solution=solution, states=states)
    assert (errors["period"] < LAST).all()  # the last period has no successor
    assert len(errors) == (states["period"] < LAST).sum()
    retired = errors["regime"] == "retired"
    # A retiree without income risk hits the limit at the lowest wealth; a worker never does.
    assert errors.loc[retired & (errors["wealth"] == 1e-4), "constrained"].all()
    assert errors.loc[errors["constrained"], "error"].isna().all()
    assert errors.loc[~errors["constrained"], "error"].notna().all()
    # Next period's claim decision varies only from 61 on (a claim at 62 is decided a year
    # ahead), and only for those who keep working.
    ages = errors["age"]
    possible = (errors["regime"] == "working") & (errors["claim"] == 0) & (ages + 1 >= 61)
    assert not errors.loc[~possible, "near_switch"].any()
    assert errors.loc[possible & (ages == 61), "near_switch"].any()
    summary = euler_summary(errors)
    assert summary["n_rows"] == len(errors)
    measured = summary["n_constrained"] + summary["n_near_switch"] + summary["n_points"]
    assert measured == summary["n_rows"]
    assert summary["mean_log10"] <= summary["p95_log10"] <= summary["max_log10"]
    away = errors.loc[~errors["constrained"] & ~errors["near_switch"]]
    worst = away.loc[away["error"].idxmax()]
    assert summary["max_log10"] == pytest.approx(np.log10(worst["error"]))
    assert summary["max_at"]["wealth"] == worst["wealth"]
    assert summary["max_at"]["age"] == worst["age"]
    assert summary["max_at"]["savings"] == worst["wealth"] - worst["consumption"]
    assert set(summary["by_regime"]) == {"working", "retired"}


def test_implied_consumption_refuses_the_last_period(small):
    _, _, solution = small
    with pytest.raises(InvalidStatesError, match="no successor"):
        _implied(
            solution,
            regime="retired",
            period=LAST,
            option=0,
            wealth=np.ones(2),
            consumption=np.ones(2) / 2,
        )


def test_grid_gaps_vanish_against_itself_and_shrink_with_more_points(small):
    _, params, solution = small
    states = _grid_states([0, 30, 40, 70, LAST], np.geomspace(0.1, 30.0, 25))
    same = compare_at_states(one=solution, reference=solution, states=states)
    assert same["consumption_max"] == same["value_max"] == same["option_differs"] == 0
    finer = {
        n: solve(
            model=normalised.build_model(n_savings=n, taste_shocks=False),
            params=params,
            log_level="warning",
        )
        for n in (80, 160)
    }
    reference = finer[160]
    gap = compare_at_states(one=solution, reference=reference, states=states)
    closer = compare_at_states(one=finer[80], reference=reference, states=states)
    assert 0 < gap["consumption_mean"] < gap["consumption_max"] < 0.05
    assert 0 < gap["value_mean"] < gap["value_max"]
    for measure in ("consumption_mean", "value_mean", "value_max"):
        assert closer[measure] < gap[measure] / 2
    # The largest gap is reported at one of the states compared.
    where = gap["value_max_at"]
    rows = states.loc[(states["age"] == where["age"]) & (states["regime"] == where["regime"])]
    assert where["wealth"] in set(rows["wealth"])
    # The retirees' gaps are in units of permanent income: the unit scales them, not V's.
    retired = states.loc[states["regime"] == "retired"]
    ours = compare_at_states(one=solution, reference=reference, states=retired)
    halved = compare_at_states(
        one=solution, reference=reference, states=retired.assign(unit=retired["unit"] / 2)
    )
    assert halved["consumption_mean"] == pytest.approx(ours["consumption_mean"] / 2, rel=1e-12)
    assert halved["value_mean"] == ours["value_mean"] > 0


def _panel():
    regimes = ["working", "working", "retired", "dead", "working", "working", "working"]
    claims = ["working", "claim", None, None, "working", "working", "working"]
    return pd.DataFrame(
        {
            "subject_id": [0, 0, 0, 0, 1, 1, 2],
            "period": [0, 1, 2, 3, 0, 1, 0],
            "age": [25.0, 26.0, 27.0, 28.0, 25.0, 26.0, 25.0],
            "regime": pd.Categorical(regimes, categories=["working", "retired", "dead"]),
            "claim": pd.Categorical(claims, categories=["working", "claim"]),
            "wealth": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
            "income_unit": [1.0, 1.2, 0.6, np.nan, 1.0, 0.9, 1.0],
        }
    )


def test_panel_states_keep_the_living_of_the_first_households():
    states = panel_states(_panel(), n_households=2)
    assert states["subject_id"].tolist() == [0, 0, 0, 1, 1]
    assert states["regime"].tolist() == ["working", "working", "retired", "working", "working"]
    assert states["claim"].tolist() == [0, 1, 0, 0, 0]
    # The retiree's pension is half the permanent income at the claim (0.6 / 1.2).
    np.testing.assert_allclose(states["unit"], [1.0, 1.0, 0.5, 1.0, 1.0])
    assert len(panel_states(_panel())) == 6


def test_panel_states_need_the_claim_of_every_retiree():
    panel = _panel()
    panel.loc[1, "claim"] = "working"
    with pytest.raises(DataError, match="claims"):
        panel_states(panel)


def test_scientific_numbers_in_each_markup():
    cell = scientific(3.21e-6)
    assert cell.text == "3.2 \u00d7 10\u207b\u2076"  # 10 to the minus sixth, in superscripts
    assert scientific(15.0).text == "1.5 \u00d7 10\u00b9"
    assert cell.latex == r"$3.2 \times 10^{-6}$"
    assert cell.typst == "$3.2 times 10^(-6)$"
    assert scientific(0.0).text == "0"
    assert [significant(x) for x in (0.009151, 1.128, 58.57)] == ["0.00915", "1.13", "58.6"]


def _where(age, regime, wealth, **extra):
    return {"age": age, "regime": regime, "wealth": wealth, **extra}


def _statistics(mean, p95, top, at, n):
    return {"n_points": n, "mean_log10": mean, "p95_log10": p95, "max_log10": top, "max_at": at}


RESULTS = {
    "sample": {"n_households": 2000, "n_simulated": 20000, "n_states": 110000},
    "euler": {
        "n_rows": 1100,
        "n_constrained": 95,
        "n_near_switch": 26,
        **_statistics(
            -5.57,
            -4.52,
            -0.08,
            _where(28.0, "working", 0.00915, option="working", savings=1.39e-4),
            979,
        ),
        "near_switch": _statistics(-3.81, -2.75, -1.34, _where(65.0, "working", 0.39), 26),
        "by_regime": {},
        "first_step": 0.00634,
        "beyond_first_step": _statistics(-5.5, -4.5, -1.5, _where(60.0, "retired", 0.49), 900),
    },
    "convergence": [
        {
            "n_savings": n,
            "reference": 600,
            "consumption_mean": e,
            "consumption_max": 10 * e,
            "consumption_max_at": _where(62.0, "working", 4.08),
            "value_mean": 2 * e,
            "value_max": 20 * e,
            "value_max_at": _where(27.0, "working", 0.0567),
            "option_differs": 3,
            "n_working": 7000,
        }
        for n, e in ((150, 1e-4), (300, 2e-5))
    ],
    "oracle": {
        "n_savings": 150,
        "value_error": 5.6e-5,
        "consumption_error": 2.8e-14,
        "consumption_error_mean": 1e-15,
        "share_near_switch": 0.026,
    },
}


def test_the_table_states_each_measure_on_its_model():
    table = validation_table(RESULTS)
    assert list(table.columns) == ["Check", "Measure", "Value", "Detail"]
    assert len(table) == 4 + 3 * 2 + 2
    checks = table["Check"].tolist()
    assert checks.count("Euler equation (baseline)") == 4
    assert checks.count("IJRS model (not the baseline)") == 2
    values = dict(zip(table["Measure"], table["Value"], strict=False))
    assert values["Max. log10 relative error"] == "\u22120.08"
    details = table.loc[table["Measure"] == "Max. log10 relative error", "Detail"].item()
    assert details == "age 28, working, wealth 0.00915"
    grid = table.loc[table["Measure"] == "Mean abs. gap in consumption", "Detail"].iloc[0]
    assert (
        str(grid)
        == "150 vs 600 points; max. 1.0 \u00d7 10\u207b\u00b3 (age 62, working, wealth 4.08)"
    )


def test_numbers_and_sentence_give_mean_and_maximum_as_printed():
    numbers = validation_numbers(RESULTS)
    assert numbers["euler_mean_log10"] == "\u22125.57"
    assert numbers["euler_max_log10"] == "\u22120.08"
    assert numbers["euler_max_age"] == "28"
    assert numbers["euler_max_wealth"] == "0.00915"
    assert numbers["euler_max_savings"] == "0.000139"
    assert numbers["euler_near_switch_max_log10"] == "\u22121.34"
    assert numbers["euler_points"] == "979"
    assert numbers["convergence_150_consumption_max"] == "1.0 \u00d7 10\u207b\u00b3"
    assert numbers["convergence_300_value_mean"] == "4.0 \u00d7 10\u207b\u2075"
    assert numbers["convergence_150_option_differs"] == "3"
    assert numbers["convergence_150_working_states"] == "7,000"
    assert numbers["oracle_value_error"] == "5.6 \u00d7 10\u207b\u2075"
    sentence = validation_sentence(RESULTS)
    for key in ("euler_mean_log10", "euler_max_log10", "euler_near_switch_max_log10"):
        assert numbers[key] in sentence
    assert "On the baseline model" in sentence
    assert "another model with a known solution" in sentence
    assert re.search(r"-\d", sentence) is None  # true minus signs only
