"""Stating an EGM model without an action grid, its evaluation domain, and NaN in V raising."""

import logging

import jax.numpy as jnp
import numpy as np
import pytest

from project import (
    ContinuousAction,
    DiscreteGrid,
    InvalidValueFunctionError,
    LinSpacedGrid,
    LogSpacedGrid,
    Model,
    ModelSpecificationError,
    ParamsError,
    StateOutsideGridError,
    default_savings_grid,
    solve,
)
from project.grids import grid_from_description
from project.models import iid_income, ijrs
from project.persist import load_solution, save_solution
from project.shocks import DiscreteShock
from project.simulation import simulate

PARAMS = {"beta": 0.96, "crra": 2.0, "interest_factor": 1.03}
WEALTH = LogSpacedGrid(start=0.1, stop=20.0, n_points=60, name="wealth")


def textbook(*, n_income: int, consumption=None, savings=None, utility=iid_income.utility):
    """Return the textbook consumption-savings model as a new user states it."""
    return Model(
        name="textbook",
        states={"wealth": WEALTH},
        actions={"consumption": ContinuousAction() if consumption is None else consumption},
        functions={"utility": utility, "next_wealth": iid_income.next_wealth},
        constraints={"borrowing_constraint": iid_income.borrowing_constraint},
        shocks={"income": DiscreteShock(nodes=iid_income.INCOME_NODES[n_income])},
        n_periods=10,
        post_decision_grid=savings,
    )


def on_grid(solution):
    wealth = np.asarray(WEALTH.to_jax())
    return (
        np.stack([np.asarray(v) for v in solution.value_function]),
        np.stack(
            [solution.policy(period=t, states={"wealth": wealth})["consumption"] for t in range(10)]
        ),
    )


@pytest.mark.parametrize("n_income", [1, 2])
def test_a_continuous_action_solves_by_egm_on_the_default_savings_grid(n_income):
    solution = solve(model=textbook(n_income=n_income), params=PARAMS)
    assert solution.method == "egm"
    explicit = textbook(n_income=n_income, savings=default_savings_grid(stop=20.0))
    searched = textbook(
        n_income=n_income, consumption=LinSpacedGrid(start=0.01, stop=20.0, n_points=3)
    )
    value, consumption = on_grid(solution)
    for other in (explicit, searched):
        other_value, other_consumption = on_grid(solve(model=other, params=PARAMS, method="egm"))
        np.testing.assert_array_equal(value, other_value)
        np.testing.assert_array_equal(consumption, other_consumption)
    assert np.isfinite(value).all()
    assert (np.diff(consumption, axis=1) > 0).all()


def test_a_model_with_an_action_grid_and_no_savings_grid_is_still_solved_on_its_grids():
    model = textbook(n_income=2, consumption=LinSpacedGrid(start=0.01, stop=20.0, n_points=30))
    assert solve(model=model, params=PARAMS).method == "grid"


def test_grid_search_on_a_continuous_action_says_it_needs_points_and_how_to_give_them():
    with pytest.raises(
        ModelSpecificationError,
        match=r"method='grid'.*needs points.*\['consumption'\].*ContinuousAction.*LinSpacedGrid",
    ):
        solve(model=textbook(n_income=2), params=PARAMS, method="grid")


def test_a_continuous_action_where_egm_does_not_apply_names_the_obstacle():
    model = Model(
        name="two_states",
        states={"wealth": WEALTH, "income": LinSpacedGrid(start=0.5, stop=1.5, n_points=3)},
        actions={"consumption": ContinuousAction()},
        functions={
            "utility": iid_income.utility,
            "next_wealth": lambda wealth, consumption, income: wealth - consumption + income,
            "next_income": lambda income: income,
        },
        n_periods=2,
    )
    with pytest.raises(ModelSpecificationError, match=r"2 continuous states.*ContinuousAction"):
        solve(model=model, params={"beta": 0.9, "crra": 2.0})


def test_a_continuous_action_cannot_be_a_state():
    with pytest.raises(ModelSpecificationError, match="only an action can be"):
        Model(
            name="bad",
            states={"wealth": ContinuousAction()},
            actions={},
            functions={"utility": lambda: 0.0, "next_wealth": lambda wealth: wealth},
            n_periods=1,
        )


def test_a_choice_used_but_not_declared_is_named_as_a_missing_param_with_a_hint():
    model = Model(
        name="undeclared",
        states={"wealth": WEALTH},
        actions={},
        functions={"utility": log_of_c, "next_wealth": lambda wealth, c: wealth - c},
        n_periods=2,
    )
    with pytest.raises(ParamsError, match=r"missing \['c'\].*declare them in actions.*Continuous"):
        solve(model=model, params={"beta": 0.9})


def log_of_c(c):
    return jnp.log(c)


def test_evaluating_outside_the_state_grid_speaks_of_egms_evaluation_domain():
    solution = solve(model=textbook(n_income=2), params=PARAMS)
    with pytest.raises(StateOutsideGridError, match=r"by EGM.*evaluation domain") as info:
        solution.value(period=0, states={"wealth": np.array([1.0, 30.0])})
    assert "extrapolated linearly" not in str(info.value)
    with pytest.raises(StateOutsideGridError, match=r"by EGM.*evaluation domain"):
        simulate(
            solution=solution,
            params=PARAMS,
            initial_conditions={"wealth": np.array([25.0])},
            seed=0,
        )


def test_a_continuous_action_model_simulates_with_the_egm_policy():
    solution = solve(model=textbook(n_income=2), params=PARAMS)
    initial = np.array([1.0, 5.0, 10.0])
    result = simulate(
        solution=solution, params=PARAMS, initial_conditions={"wealth": initial}, seed=0
    )
    frame = result.to_dataframe()
    first = frame[frame["period"] == 0].sort_values("wealth")
    expected = solution.policy(period=0, states={"wealth": initial})["consumption"]
    np.testing.assert_allclose(first["consumption"].to_numpy(), expected, rtol=1e-6)


def test_a_continuous_action_model_round_trips_through_persistence(tmp_path):
    model = textbook(n_income=2)
    assert model.describe()["actions"]["consumption"]["kind"] == "continuous_action"
    rebuilt = grid_from_description(model.describe()["actions"]["consumption"])
    assert isinstance(rebuilt, ContinuousAction)
    solution = solve(model=model, params=PARAMS)
    save_solution(solution=solution, directory=tmp_path / "solution")
    loaded = load_solution(directory=tmp_path / "solution", model=textbook(n_income=2))
    assert loaded.method == "egm"
    np.testing.assert_array_equal(on_grid(loaded)[0], on_grid(solution)[0])


def nan_after(utility):
    """Return ``utility`` plus sqrt(shift - age): NaN from the period whose age exceeds shift."""

    def shifted(consumption, crra, age, shift):
        return utility(consumption, crra) + jnp.sqrt(shift - age)

    return shifted


def ijrs_with(*, consumption, nan: bool):
    def utility(consumption, working, delta, age, shift):
        return ijrs.utility(consumption, working, delta) + jnp.sqrt(shift - age)

    base = ijrs.build_model(n_wealth=20, n_consumption=20, n_periods=4)
    return Model(
        name="ijrs_nan",
        states=base.states,
        actions={"retirement": DiscreteGrid(ijrs.RetirementStatus), "consumption": consumption},
        functions=base.functions | ({"utility": utility} if nan else {}),
        constraints=base.constraints,
        n_periods=4,
    )


@pytest.mark.parametrize("method", ["grid", "egm"])
def test_nan_in_v_raises_naming_the_period_and_states(method, caplog):
    consumption = LinSpacedGrid(start=0.01, stop=20.0, n_points=40) if method == "grid" else None
    model = textbook(n_income=2, consumption=consumption, utility=nan_after(iid_income.utility))
    params = PARAMS | {"shift": 7.5}  # NaN in periods 8 and 9
    with pytest.raises(
        InvalidValueFunctionError, match=rf"(?i){method}.*period 9.*wealth at indices \[0, 1"
    ):
        solve(model=model, params=params, method=method)
    with caplog.at_level(logging.WARNING, logger="project.solver"):
        solution = solve(model=model, params=params, method=method, on_invalid="warn")
    assert "continuing (on_invalid='warn')" in caplog.text
    assert np.isnan(np.asarray(solution.value_function[9])).all()


def test_nan_in_v_raises_for_dcegm_and_only_warns_when_asked(caplog):
    model = ijrs_with(consumption=ContinuousAction(), nan=True)
    params = ijrs.DEFAULT_PARAMS | {"shift": 2.5}  # NaN in period 3
    with pytest.raises(InvalidValueFunctionError, match=r"by DCEGM.*in period 3 V is NaN at"):
        solve(model=model, params=params)
    with caplog.at_level(logging.WARNING, logger="project.solver"):
        solution = solve(model=model, params=params, on_invalid="warn")
    assert solution.method == "dcegm"
    assert "continuing (on_invalid='warn')" in caplog.text


def test_log_level_off_skips_the_nan_check():
    model = textbook(n_income=2, utility=nan_after(iid_income.utility))
    solution = solve(model=model, params=PARAMS | {"shift": 7.5}, log_level="off")
    assert np.isnan(np.asarray(solution.value_function[9])).all()


def test_dcegm_with_a_continuous_action_equals_dcegm_with_a_consumption_grid():
    params = ijrs.DEFAULT_PARAMS
    computed = solve(model=ijrs_with(consumption=ContinuousAction(), nan=False), params=params)
    grid = LinSpacedGrid(start=1, stop=400, n_points=7)
    searched = solve(model=ijrs_with(consumption=grid, nan=False), params=params, method="dcegm")
    assert computed.method == "dcegm"
    for t in range(4):
        np.testing.assert_array_equal(
            np.asarray(computed.value_function[t]), np.asarray(searched.value_function[t])
        )


def test_regimes_with_a_continuous_action_solve_by_dcegm_and_refuse_grid_search(monkeypatch):
    from project.models import lifecycle_regimes

    shape = {"n_wealth": 20, "n_income": 2, "n_periods": 4, "survival": False}
    params = lifecycle_regimes.default_params(survival=False)
    searched = lifecycle_regimes.build_model(**shape, n_consumption=5)
    monkeypatch.setattr(lifecycle_regimes, "consumption_grid", lambda n_points: ContinuousAction())
    computed = lifecycle_regimes.build_model(**shape)
    solution = solve(model=computed, params=params)
    reference = solve(model=searched, params=params, method="dcegm")
    for regime, own in solution.solutions.items():
        for t in range(4):
            np.testing.assert_array_equal(
                np.asarray(own.value_function[t]),
                np.asarray(reference.solutions[regime].value_function[t]),
            )
    with pytest.raises(ModelSpecificationError, match=r"regime 'working'.*needs points"):
        solve(model=computed, params=params, method="grid")
