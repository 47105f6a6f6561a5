"""The endogenous grid method against closed forms, a converged reference and the grid solver."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from project import CheckpointError, LinSpacedGrid, LogSpacedGrid, Model, ModelSpecificationError
from project.dispatch import solve
from project.egm.accuracy import euler_errors
from project.errors import InvalidValueFunctionError, StateOutsideGridError
from project.models import iid_income, lifecycle, precautionary

BETA, R, T = 0.95, 1.04, 5
WEALTH = np.linspace(0.1, 10, 50)


def cake_model(*, n_savings: int = 100, **functions) -> Model:
    """CRRA cake eating without income; the savings grid starts at the limit 0."""
    return Model(
        name="cake",
        states={"wealth": LogSpacedGrid(start=0.1, stop=10, n_points=20, name="wealth")},
        actions={"consumption": LinSpacedGrid(start=0.01, stop=10, n_points=20, name="c")},
        functions={
            "utility": lambda consumption, crra: consumption ** (1 - crra) / (1 - crra),
            "next_wealth": lambda wealth, consumption, interest_factor: (
                interest_factor * (wealth - consumption)
            ),
            **functions,
        },
        constraints={"feasible": lambda consumption, wealth: consumption <= wealth},
        n_periods=T,
        post_decision_grid=LinSpacedGrid(start=0.0, stop=20, n_points=n_savings, name="savings"),
    )


def remaining_sum(t: int, rho: float) -> float:
    lam = BETA ** (1 / rho) * R ** ((1 - rho) / rho)
    return sum(lam**j for j in range(T - t))


@pytest.mark.parametrize("rho", [0.5, 2.0, 3.0])
def test_cake_eating_matches_closed_form(x64, rho):
    solution = solve(model=cake_model(), params={"beta": BETA, "crra": rho, "interest_factor": R})
    assert solution.method == "egm"
    for t in range(T):
        s = remaining_sum(t, rho)
        consumption = solution.policy(period=t, states={"wealth": WEALTH})["consumption"]
        value = solution.value(period=t, states={"wealth": WEALTH})
        np.testing.assert_allclose(consumption, WEALTH / s, rtol=1e-10)
        np.testing.assert_allclose(value, s**rho * WEALTH ** (1 - rho) / (1 - rho), rtol=1e-10)


def test_closed_form_inverse_gives_the_numerical_solution(x64):
    params = {"beta": BETA, "crra": 2.0, "interest_factor": R}
    numerical = solve(model=cake_model(), params=params)
    given = solve(
        model=cake_model(
            inverse_marginal_utility=lambda marginal_utility, crra: marginal_utility ** (-1 / crra)
        ),
        params=params,
    )
    for field in ("wealth", "consumption", "value_equivalent"):
        np.testing.assert_allclose(
            getattr(given.arrays, field), getattr(numerical.arrays, field), rtol=1e-12
        )


def test_closed_form_inverse_utility_gives_the_numerical_solution(x64):
    params = {"beta": BETA, "crra": 2.0, "interest_factor": R}
    numerical = solve(model=cake_model(), params=params)
    given = solve(
        model=cake_model(
            inverse_utility=lambda utility_level, crra: (
                ((1 - crra) * utility_level) ** (1 / (1 - crra))
            )
        ),
        params=params,
    )
    for field in ("wealth", "consumption", "value_equivalent", "equivalent_slope"):
        np.testing.assert_allclose(
            getattr(given.arrays, field), getattr(numerical.arrays, field), rtol=1e-12
        )


def test_wrong_inverse_utility_is_reported(x64):
    model = cake_model(inverse_utility=lambda utility_level: -1 / utility_level)
    with pytest.raises(ModelSpecificationError, match="inverse_utility does not invert"):
        solve(model=model, params={"beta": BETA, "crra": 3.0, "interest_factor": R})


def test_inverse_utility_of_the_state_leaves_egm(x64):
    model = cake_model(inverse_utility=lambda utility_level, wealth: utility_level * wealth)
    with pytest.raises(ModelSpecificationError, match="'inverse_utility' depends on 'wealth'"):
        solve(model=model, params={"beta": BETA, "crra": 2.0, "interest_factor": R}, method="egm")


def test_wrong_inverse_is_reported(x64):
    model = cake_model(inverse_marginal_utility=lambda marginal_utility: 1 / marginal_utility)
    with pytest.raises(ModelSpecificationError, match="inverse_marginal_utility disagrees"):
        solve(model=model, params={"beta": BETA, "crra": 2.0, "interest_factor": R})


@pytest.fixture(scope="module")
def references():
    """EGM at 10,000 savings points per income count (the converged reference)."""
    jax.config.update("jax_enable_x64", True)
    try:
        yield {
            n: solve(
                model=iid_income.build_model(n_savings=10_000, n_income=n),
                params=iid_income.DEFAULT_PARAMS,
            )
            for n in (2, 3)
        }
    finally:
        jax.config.update("jax_enable_x64", False)


@pytest.mark.parametrize("n_income", [2, 3])
def test_iid_income_consumption_within_1e_4_of_reference(x64, references, n_income):
    model = iid_income.build_model(n_savings=500, n_income=n_income)
    solution = solve(model=model, params=iid_income.DEFAULT_PARAMS)
    wealth = np.linspace(0.1, 20, 50)
    for t in range(model.n_periods):
        ours = solution.policy(period=t, states={"wealth": wealth})["consumption"]
        exact = references[n_income].policy(period=t, states={"wealth": wealth})["consumption"]
        assert np.max(np.abs(ours - exact)) <= 1e-4, t


@pytest.mark.parametrize("n_income", [2, 3])
def test_iid_income_euler_errors_below_1e_minus_5(x64, n_income):
    model = iid_income.build_model(n_savings=500, n_income=n_income)
    solution = solve(model=model, params=iid_income.DEFAULT_PARAMS)
    wealth = np.linspace(0.1, 20, 1000) + 1e-4 * np.pi
    wealth = np.clip(wealth, 0.1, 20)
    errors = np.concatenate(
        [euler_errors(solution, period=t, states={"wealth": wealth}) for t in range(9)]
    )
    assert np.isfinite(errors).sum() > 1000
    assert np.nanmedian(np.log10(errors)) <= -5


def consumption_gaps(grid, egm, *, states_per_period, periods) -> np.ndarray:
    """Return |c_grid - c_egm| at the given states of every period, pooled."""
    return np.concatenate(
        [
            np.abs(
                grid.policy(period=t, states=states)["consumption"]
                - egm.policy(period=t, states=states)["consumption"]
            ).ravel()
            for t in periods
            for states in states_per_period
        ]
    )


def test_reference_agrees_with_the_grid_solver(x64, references):
    """The reference is checked against the grid solver at a fine grid.

    The grid solver's policy is a grid point chosen with an interpolated V, so it scatters by a
    few consumption steps around the truth (most in period T-2, where V_{T-1} = u(grid point));
    the median gap must stay within one step and the largest within eight.
    """
    model = iid_income.build_model(n_wealth=200, n_consumption=1000, n_income=2)
    grid = solve(model=model, params=iid_income.DEFAULT_PARAMS, method="grid")
    step = (20 - 0.01) / 999
    gaps = consumption_gaps(
        grid,
        references[2],
        states_per_period=[{"wealth": np.linspace(1.0, 15, 30)}],
        periods=range(model.n_periods),
    )
    assert np.median(gaps) <= step
    assert np.max(gaps) <= 8 * step


def test_shock_integration_equals_an_iid_discrete_state(x64):
    """A DiscreteShock gives the V of the same shock stated as an iid stochastic state."""
    shocked = iid_income.build_model(n_wealth=30, n_consumption=40, n_income=3, n_periods=4)
    nodes = jnp.asarray(iid_income.INCOME_NODES[3])
    from project.grids import DiscreteGrid, categories

    as_state = Model(
        name="as_state",
        states={
            "draw": DiscreteGrid(categories("Draw", ["low", "mid", "high"])),
            "wealth": shocked.states["wealth"],
        },
        actions=shocked.actions,
        functions={
            "utility": iid_income.utility,
            "next_wealth": lambda wealth, consumption, next_draw, interest_factor: (
                interest_factor * (wealth - consumption) + nodes[next_draw]
            ),
        },
        constraints=shocked.constraints,
        stochastic_transitions={"draw": lambda draw: jnp.full(3, 1 / 3) + 0 * draw},
        n_periods=4,
    )
    params = iid_income.DEFAULT_PARAMS
    with_shock = solve(model=shocked, params=params, method="grid")
    with_state = solve(model=as_state, params=params)
    for t in range(4):
        for code in range(3):
            np.testing.assert_allclose(
                with_state.value_function[t][code], with_shock.value_function[t], rtol=1e-12
            )


def test_grid_and_egm_agree_on_precautionary_model(x64):
    """The shipped precautionary model, by both solvers: consumption within the grid's step.

    Its consumption grid is widened to [0.1, 20] (EGM bounds consumption by the borrowing limit
    only; the default top of 5 binds at high wealth) and wealth is compared on [4, 12] (the grid
    solver extrapolates V below its wealth grid's start at 1, where low income takes some).
    As in the iid-income check, the grid policy scatters around EGM's by a few steps, most in
    period T-2 (up to 9 steps measured): median within one step, largest within ten.
    """
    model = precautionary.build_model(
        n_wealth=100, n_consumption=400, n_savings=300, consumption_stop=20.0
    )
    params = precautionary.DEFAULT_PARAMS
    egm = solve(model=model, params=params)
    grid = solve(model=model, params=params, method="grid")
    assert (egm.method, grid.method) == ("egm", "grid")
    step = (20 - 0.1) / 399
    wealth = np.linspace(4, 12, 40)
    states = [{"income": income, "wealth": wealth} for income in range(5)]
    gaps = consumption_gaps(grid, egm, states_per_period=states, periods=range(model.n_periods))
    assert np.median(gaps) <= step
    assert np.max(gaps) <= 10 * step
    # V: each period's grid choice loses up to about u'(c)·step = step/c (c >= 1 here); summed
    # over the five periods that bounds the gap by 0.25 (0.061 measured).
    for t in range(model.n_periods):
        for point in states:
            gap = grid.value(period=t, states=point) - egm.value(period=t, states=point)
            assert np.max(np.abs(gap)) <= (model.n_periods - t) * step, t


def test_default_method_is_the_most_accurate_admitted():
    assert (
        solve(model=cake_model(), params={"beta": 0.9, "crra": 2.0, "interest_factor": 1.0}).method
        == "egm"
    )
    no_savings_grid = precautionary.build_model(n_wealth=10, n_consumption=10)
    assert solve(model=no_savings_grid, params=precautionary.DEFAULT_PARAMS).method == "grid"


def test_egm_on_a_model_it_does_not_admit_names_the_reason():
    model = lifecycle.build_model(n_wealth=10, n_consumption=10)
    wealthy = Model(
        name="wealthy",
        states={"wealth": LogSpacedGrid(start=0.1, stop=20, n_points=10)},
        actions={"consumption": LinSpacedGrid(start=0.1, stop=20, n_points=10)},
        functions={
            "utility": lambda consumption, wealth: jnp.log(consumption) + wealth,
            "next_wealth": lambda wealth, consumption: wealth - consumption + 1.0,
        },
        n_periods=2,
    )
    with pytest.raises(
        ModelSpecificationError,
        match=r"cannot be solved with method='egm'.*utility depends on 'wealth'.*method='grid'",
    ):
        solve(model=wealthy, params={"beta": 0.9}, method="egm")
    with pytest.raises(ModelSpecificationError, match=r"discrete actions.*method='dcegm'"):
        solve(model=model, params=lifecycle.DEFAULT_PARAMS, method="egm")
    with pytest.raises(ModelSpecificationError, match="method must be one of"):
        solve(model=model, params=lifecycle.DEFAULT_PARAMS, method="newton")


def test_savings_grid_must_start_at_the_borrowing_limit():
    model = Model(
        name="cake",
        states=cake_model().states,
        actions=cake_model().actions,
        functions=cake_model().functions,
        constraints=cake_model().constraints,
        n_periods=T,
        post_decision_grid=LinSpacedGrid(start=0.5, stop=20, n_points=50, name="savings"),
    )
    with pytest.raises(ModelSpecificationError, match=r"allow savings below 0\.5"):
        solve(model=model, params={"beta": BETA, "crra": 2.0, "interest_factor": R})


def test_non_concave_problem_reports_non_monotone_endogenous_grid(x64):
    """Utility convex in consumption makes the Euler equation's solution non-monotone."""
    model = cake_model()
    convex = Model(
        name="convex",
        states=model.states,
        actions=model.actions,
        functions={
            "utility": lambda consumption, crra: jnp.log(consumption) + crra * consumption**2,
            "next_wealth": model.functions["next_wealth"],
        },
        constraints=model.constraints,
        n_periods=T,
        post_decision_grid=model.post_decision_grid,
    )
    with pytest.raises(ModelSpecificationError, match="did not invert marginal utility"):
        solve(model=convex, params={"beta": BETA, "crra": 0.5, "interest_factor": R})


def test_non_monotone_endogenous_grid_is_reported_where_and_why(x64):
    """A report flag for a non-monotone grid names period, savings and wealth, and the reason."""
    from project.egm.program import REPORT_COLUMNS
    from project.egm.solve import check_report

    solution = solve(
        model=cake_model(n_savings=20), params={"beta": BETA, "crra": 2.0, "interest_factor": R}
    )
    wealth = np.asarray(solution.arrays.wealth).copy()
    wealth[2, 0, 8] = wealth[2, 0, 6]  # the grid falls back between nodes 7 and 8 of period 2
    damaged = dataclasses.replace(
        solution, arrays=solution.arrays._replace(wealth=jnp.asarray(wealth))
    )
    report = np.zeros((T, len(REPORT_COLUMNS)), dtype=np.int32)
    report[2, REPORT_COLUMNS.index("non_monotone")] = 1
    with pytest.raises(InvalidValueFunctionError, match=r"period 2.*not increasing.*not concave"):
        check_report(damaged, report)


def test_evaluating_outside_the_grid_names_grid_value_and_range(x64):
    solution = solve(model=cake_model(), params={"beta": BETA, "crra": 2.0, "interest_factor": R})
    with pytest.raises(StateOutsideGridError, match=r"10\.5.*\[0\.1, 10\.0\].*wealth"):
        solution.value(period=0, states={"wealth": [1.0, 10.5]})


def test_grid_solution_evaluates_to_its_values_on_grid_points(x64):
    model = precautionary.build_model(n_wealth=20, n_consumption=30)
    solution = solve(model=model, params=precautionary.DEFAULT_PARAMS)
    wealth = np.asarray(model.states["wealth"].to_jax())
    for t in (0, model.n_periods - 1):
        value = solution.value(period=t, states={"income": 2, "wealth": wealth})
        np.testing.assert_allclose(value, solution.value_function[t][2], rtol=1e-12)
        policy = solution.policy(period=t, states={"income": 2, "wealth": wealth})
        np.testing.assert_array_equal(
            policy["consumption"], solution.policy_values(period=t)["consumption"][2]
        )


def test_egm_solution_save_load_round_trip_records_the_method(x64, tmp_path):
    from project.persist.bundle import load_bundle, save_bundle
    from project.persist.solution import load_solution, save_solution
    from project.simulation.forward import simulate

    model = iid_income.build_model(n_wealth=20, n_consumption=20, n_savings=50, n_periods=3)
    params = iid_income.DEFAULT_PARAMS
    solution = solve(model=model, params=params)
    save_solution(solution=solution, directory=tmp_path / "solution")
    metadata = (tmp_path / "solution" / "metadata.json").read_text()
    assert '"method": "egm"' in metadata
    loaded = load_solution(directory=tmp_path / "solution", model=model)
    assert loaded.method == "egm"
    wealth = np.linspace(0.1, 20, 11)
    for t in range(model.n_periods):
        np.testing.assert_array_equal(
            loaded.value(period=t, states={"wealth": wealth}),
            solution.value(period=t, states={"wealth": wealth}),
        )
    other = iid_income.build_model(n_wealth=20, n_consumption=20, n_savings=60, n_periods=3)
    with pytest.raises(CheckpointError, match="post_decision_grid"):
        load_solution(directory=tmp_path / "solution", model=other)
    result = simulate(
        params=params, initial_conditions={"wealth": wealth}, solution=solution, seed=0
    )
    save_bundle(result=result, directory=tmp_path / "bundle")
    assert load_bundle(directory=tmp_path / "bundle").method == "egm"


def test_simulated_consumption_is_the_policy_at_the_exact_state(x64):
    from project.simulation.forward import simulate

    model = iid_income.build_model(n_savings=200, n_periods=4)
    params = iid_income.DEFAULT_PARAMS
    solution = solve(model=model, params=params)
    result = simulate(
        params=params,
        initial_conditions={"wealth": np.linspace(0.1, 8, 25)},
        solution=solution,
        seed=5,
    )
    for t in range(model.n_periods):
        states = {"wealth": result.columns["wealth"][:, t]}
        np.testing.assert_allclose(
            result.columns["consumption"][:, t],
            solution.policy(period=t, states=states)["consumption"],
            rtol=1e-13,
        )
        np.testing.assert_allclose(
            result.columns["value"][:, t], solution.value(period=t, states=states), rtol=1e-13
        )
