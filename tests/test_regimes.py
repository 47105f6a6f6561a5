"""Models with regimes: oracles against single-regime models, the API, and bad statements.

Oracles: (1) one regime that dies with a constant probability 1 - s (value 0 when dead) is the
same model with discount factor beta·s; (2) the default life-cycle model restated as working,
retired and dead regimes, without mortality, has the single-regime model's V at lagged
retirement "working" and "retired" (the retiree's V does not depend on income).
"""

import logging

import dags
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

from project import solve
from project.errors import (
    InvalidStatesError,
    InvalidTransitionError,
    MemoryPlanError,
    ModelSpecificationError,
)
from project.grids import DiscreteGrid, LinSpacedGrid
from project.model import Model
from project.models import ijrs, lifecycle, lifecycle_regimes, precautionary
from project.regimes import RegimeModel, TerminalRegime

SURVIVAL = 0.9
SMALL = {"n_wealth": 30, "n_consumption": 40, "n_periods": 6}


def log_utility(consumption):
    return jnp.log(consumption)


def mortal(model: Model) -> RegimeModel:
    return RegimeModel(
        name="mortal",
        regimes={"alive": model, "dead": TerminalRegime()},
        transitions={"alive": lambda survival: {"alive": survival, "dead": 1 - survival}},
    )


@pytest.mark.parametrize("module", [precautionary, ijrs])
def test_constant_survival_is_a_lower_discount_factor(x64, module):
    model = module.build_model()
    params = module.DEFAULT_PARAMS
    solution = solve(model=mortal(model), params=params | {"survival": SURVIVAL}, method="grid")
    reference = solve(
        model=model, params=params | {"beta": params["beta"] * SURVIVAL}, method="grid"
    )
    alive = solution.solution("alive")
    np.testing.assert_allclose(alive.values, reference.values, rtol=0, atol=1e-12)
    for action, policy in reference.policies.items():
        np.testing.assert_array_equal(alive.policies[action], policy)
    states = {
        s: np.array([0, 1, 1]) if g.is_discrete else np.array([2.25, 5.5, 7.125])
        for s, g in model.states.items()
    }
    for period in (0, model.n_periods - 1):
        np.testing.assert_allclose(
            solution.value(period=period, regime="alive", states=states),
            reference.value(period=period, states=states),
            rtol=0,
            atol=1e-12,
        )


@pytest.fixture(scope="module")
def restated():
    import jax

    jax.config.update("jax_enable_x64", True)
    try:
        single = solve(
            model=lifecycle.build_model(**SMALL), params=lifecycle.DEFAULT_PARAMS, method="grid"
        )
        regimes = solve(
            model=lifecycle_regimes.build_model(**SMALL, survival=False),
            params=lifecycle_regimes.default_params(survival=False),
            method="grid",
        )
        yield single, regimes
    finally:
        jax.config.update("jax_enable_x64", False)


def test_restated_default_model_reproduces_the_single_regime_value(restated):
    single, regimes = restated
    values = np.asarray(single.values)  # (period, type, lagged retirement, income, wealth)
    working = np.asarray(regimes.solution("working").values)  # (period, type, income, wealth)
    retired = np.asarray(regimes.solution("retired").values)  # (period, type, wealth)
    np.testing.assert_allclose(working, values[:, :, 0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(
        np.broadcast_to(retired[:, :, None, :], values[:, :, 1].shape),
        values[:, :, 1],
        rtol=0,
        atol=1e-12,
    )


def test_restated_default_model_reproduces_the_single_regime_policy(restated):
    single, regimes = restated
    working = regimes.solution("working").policies
    retired = regimes.solution("retired").policies
    for action in ("retirement", "consumption"):
        np.testing.assert_array_equal(working[action], np.asarray(single.policies[action])[:, :, 0])
    consumption = np.asarray(single.policies["consumption"])[:, :, 1]
    np.testing.assert_array_equal(
        np.broadcast_to(np.asarray(retired["consumption"])[:, :, None], consumption.shape),
        consumption,
    )


def test_regime_solution_evaluates_each_regime_and_terminal_values(restated):
    _, regimes = restated
    states = {"pref_type": ["work_loving", "leisure_loving"], "wealth": [3.0, 7.5]}
    assert regimes.value(period=2, regime="retired", states=states).shape == (2,)
    assert regimes.value(period=2, regime="dead", states={}) == 0.0
    with pytest.raises(InvalidStatesError, match="reads \\[\\], not \\['wealth'\\]"):
        regimes.value(period=2, regime="dead", states={"wealth": [1.0, 2.0]})
    with pytest.raises(ModelSpecificationError, match="terminal"):
        regimes.policy(period=0, regime="dead", states={})
    with pytest.raises(ModelSpecificationError, match="no regime 'retird'"):
        regimes.value(period=0, regime="retird", states=states)


def test_every_solution_reads_through_one_interface(restated):
    """Both solutions satisfy ``SolutionInterface``; ``regimes`` tells them apart, not the class."""
    from project.model.solution import SolutionInterface

    single, regimes = restated
    assert isinstance(single, SolutionInterface)
    assert isinstance(regimes, SolutionInterface)
    assert not single.regimes
    assert set(regimes.regimes) == {"working", "retired"}
    assert regimes.regimes["retired"] is regimes.solution("retired")
    states = {"pref_type": ["work_loving", "leisure_loving"], "wealth": [3.0, 7.5]}
    np.testing.assert_array_equal(
        regimes.value(period=2, regime="retired", states=states),
        regimes.regimes["retired"].value(period=2, states=states),
    )
    with pytest.raises(ModelSpecificationError, match=r"names one \(regime=\.\.\.\)"):
        regimes.value(period=2, states=states)
    single_states = states | {"income": [0, 1], "lagged_retirement": [0, 0]}
    single_states = {s: single_states[s] for s in single.model.state_names}
    for read in (single.value, single.policy, single.choice_probabilities):
        with pytest.raises(ModelSpecificationError, match=r"has no regimes.*Leave regime out"):
            read(period=2, states=single_states, regime="working")


# ---------------------------------------------------------------------------------------------
# Bad statements and transitions
# ---------------------------------------------------------------------------------------------


def _law_of_motion(state, grid):
    """Return wealth less consumption for a continuous state, the same code for a discrete one."""
    if grid.is_discrete:
        return dags.rename_arguments(lambda code: code, mapper={"code": state})
    return lambda wealth, consumption: wealth - consumption


def two_regimes(transition, *, retired_states=None, terminal=None, **other):
    working = ijrs.build_model(n_wealth=10, n_consumption=10, n_periods=3)
    states = retired_states or {"wealth": working.states["wealth"]}
    retired = Model(
        name="retired",
        states=states,
        actions={"consumption": working.actions["consumption"]},
        functions={
            "utility": log_utility,
            **{f"next_{s}": _law_of_motion(s, grid) for s, grid in states.items()},
        },
        constraints={"budget": lambda consumption, wealth: consumption <= wealth},
        n_periods=other.pop("retired_periods", 3),
    )
    regimes = {"working": working, "retired": retired, "dead": terminal or TerminalRegime()}
    transitions = {"working": transition, "retired": lambda: {"retired": 1.0}} | other
    return RegimeModel(name="two", regimes=regimes, transitions=transitions)


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: two_regimes(lambda: {"retird": 1.0}), "unknown regimes \\['retird'\\]"),
        (lambda: two_regimes(lambda: {"working": 1.0}, dead=lambda: 1), "terminal"),
        (lambda: two_regimes(lambda: {"working": 1.0}, gone=lambda: 1), "unknown regimes"),
        (lambda: two_regimes(lambda wealth: {"working": wealth}), "continuous \\['wealth'\\]"),
        (lambda: two_regimes(lambda consumption: {"dead": consumption}), "continuous"),
        (lambda: two_regimes(lambda: jnp.ones(2)), "probability vector of length 3"),
        (lambda: two_regimes(lambda: {"working": jnp.ones(2)}), "not scalars"),
        (lambda: two_regimes(lambda: {"working": 1.0}, retired_periods=4), "same horizon"),
        (
            lambda: two_regimes(
                lambda: {"retired": 1.0},
                retired_states={"wealth": LinSpacedGrid(start=1, stop=300, n_points=10)},
            ),
            "state 'wealth' has the grid",
        ),
        (
            lambda: two_regimes(
                lambda: {"retired": 1.0},
                retired_states={
                    "wealth": ijrs.build_model(n_wealth=10).states["wealth"],
                    "health": DiscreteGrid(ijrs.RetirementStatus),
                },
            ),
            "needs the states \\['health'\\] that 'working' lacks",
        ),
        (
            lambda: two_regimes(
                lambda: {"dead": 1.0}, terminal=TerminalRegime(value=lambda health: health)
            ),
            "",
        ),
    ],
)
def test_bad_regime_statements_raise_naming_the_culprit(build, match):
    if match == "":  # a terminal value may read a name no regime has: it is a parameter
        assert "health" in build().params_template
        return
    with pytest.raises(ModelSpecificationError, match=match):
        build()


def test_a_regime_without_a_transition_is_refused():
    working = ijrs.build_model(n_wealth=10, n_consumption=10, n_periods=3)
    with pytest.raises(ModelSpecificationError, match="no regime transition"):
        RegimeModel(name="x", regimes={"working": working}, transitions={})


def test_a_regime_without_a_law_of_motion_names_the_state():
    with pytest.raises(ModelSpecificationError, match="no law of motion"):
        Model(
            name="retired",
            states={"wealth": LinSpacedGrid(start=1, stop=10, n_points=5)},
            actions={"consumption": LinSpacedGrid(start=1, stop=10, n_points=5)},
            functions={"utility": log_utility},
            n_periods=3,
        )


@pytest.mark.parametrize(
    ("transition", "match"),
    [
        (lambda: {"working": 0.5, "retired": 0.6}, "do not sum to one"),
        (lambda: {"working": 1.5, "retired": -0.5}, "negative probability"),
        (lambda: jnp.int32(7), "do not sum to one"),
    ],
)
def test_bad_regime_probabilities_raise_at_solve(transition, match):
    model = two_regimes(transition)
    with pytest.raises(InvalidTransitionError, match=match):
        solve(model=model, params=ijrs.DEFAULT_PARAMS, method="grid")


def test_moving_to_a_regime_whose_states_the_source_lacks_raises_at_solve():
    health = DiscreteGrid(ijrs.RetirementStatus)
    wealth = ijrs.build_model(n_wealth=10).states["wealth"]
    model = two_regimes(
        lambda: jnp.asarray([0.5, 0.5, 0.0]), retired_states={"wealth": wealth, "health": health}
    )
    with pytest.raises(InvalidTransitionError, match="whose states this regime lacks"):
        solve(model=model, params=ijrs.DEFAULT_PARAMS, method="grid")


# ---------------------------------------------------------------------------------------------
# DC-EGM with regimes
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def single_model_without_kinks(monkeypatch):
    """Solve single models without kinks on the savings grid, as regimes solve (not yet carried)."""
    monkeypatch.setattr("project.egm.program.KINK_SLOTS", 0)


def test_egm_constant_survival_is_a_lower_discount_factor(x64, single_model_without_kinks):
    from project.models import iid_income

    model = iid_income.build_model(n_savings=200, n_income=2)
    params = iid_income.DEFAULT_PARAMS
    solution = solve(model=mortal(model), params=params | {"survival": SURVIVAL})
    reference = solve(model=model, params=params | {"beta": params["beta"] * SURVIVAL})
    assert solution.method == reference.method == "egm"
    for name, array in solution.solution("alive").arrays._asdict().items():
        np.testing.assert_allclose(
            array, getattr(reference.arrays, name), rtol=1e-13, atol=1e-13, err_msg=name
        )


def test_dcegm_restated_default_model_reproduces_the_single_regime_value(
    x64, single_model_without_kinks
):
    shape = {"n_periods": 6, "start_age": 66, "n_income": 3, "n_savings": 100}
    params = lifecycle.DEFAULT_PARAMS | {"taste_shock_scale": 0.01}
    single = solve(model=lifecycle.build_model(**shape, taste_shocks=True), params=params)
    regimes = solve(
        model=lifecycle_regimes.build_model(**shape, taste_shocks=True, survival=False),
        params=params,
    )
    assert regimes.method == single.method == "dcegm"
    wealth = np.linspace(0.5, 15.0, 30)
    for period in range(6):
        for kind, lag in (("working", 0), ("retired", 1)):
            for typ in (0, 1):
                for income in range(3):
                    states = {"pref_type": typ, "income": income, "wealth": wealth}
                    expected = single.value(
                        period=period, states=states | {"lagged_retirement": lag}
                    )
                    if kind == "retired":
                        states = {"pref_type": typ, "wealth": wealth}
                    got = regimes.value(period=period, regime=kind, states=states)
                    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)


def test_dcegm_and_the_grid_solver_agree_with_mortality_and_bequests(x64):
    """Tolerances as in test_dcegm: a wealth step h plus a consumption step dc of consumption.

    Consumption is compared where both solvers' likeliest retirement choice is the same; near
    indifference it may differ, which the probabilities' tolerance (0.05) bounds.
    """
    from project.grids import code_combinations

    shape = {"n_periods": 6, "start_age": 66, "n_income": 3}
    params = lifecycle_regimes.default_params(bequest=True) | {"taste_shock_scale": 0.05}
    options = {"taste_shocks": True, "bequest": True}
    fine = solve(
        model=lifecycle_regimes.build_model(**shape, n_savings=400, **options), params=params
    )
    grid = solve(
        model=lifecycle_regimes.build_model(**shape, n_wealth=200, n_consumption=1000, **options),
        params=params,
        method="grid",
    )
    assert fine.method == "dcegm"
    h, dc = 19.8 / 199, 19.95 / 999
    wealth = np.linspace(2.0, 15.0, 40)
    for period in range(5):
        for regime, names, sizes in (
            ("working", ("pref_type", "income"), [2, 3]),
            ("retired", ("pref_type",), [2]),
        ):
            for row in code_combinations(sizes):
                states = {k: np.full(wealth.shape, v) for k, v in zip(names, row, strict=True)}
                states["wealth"] = wealth
                ours = fine.policy(period=period, regime=regime, states=states)
                theirs = grid.policy(period=period, regime=regime, states=states)
                same = ours.get("retirement", 0) == theirs.get("retirement", 0)
                assert np.mean(same) > 0.9
                gap = np.abs(ours["consumption"] - theirs["consumption"])
                assert gap[same].max() <= h + dc
                gap = np.abs(
                    fine.value(period=period, regime=regime, states=states)
                    - grid.value(period=period, regime=regime, states=states)
                )
                assert (gap <= (h + dc) / 2 / ours["consumption"] ** 2).all()
                if regime == "working":
                    np.testing.assert_allclose(
                        fine.choice_probabilities(period=period, regime=regime, states=states),
                        grid.choice_probabilities(period=period, regime=regime, states=states),
                        atol=0.05,
                    )


# ---------------------------------------------------------------------------------------------
# Simulation and persistence
# ---------------------------------------------------------------------------------------------

SIM_SHAPE = {"n_periods": 10, "start_age": 62, "n_income": 3, "taste_shocks": True}
METHOD_GRIDS = {"dcegm": {"n_savings": 60}, "grid": {"n_wealth": 30, "n_consumption": 30}}


def initial_states(n: int) -> dict:
    return {
        "pref_type": np.arange(n) % 2,
        "income": np.arange(n) % 3,
        "wealth": np.linspace(1, 8, n),
    }


@pytest.mark.parametrize("method", ["dcegm", "grid"])
def test_restated_model_simulates_the_single_regime_paths(x64, method, single_model_without_kinks):
    """Without mortality the draws (income, the retirement choice) use the same key streams."""
    from project.simulation import simulate

    params = lifecycle.DEFAULT_PARAMS | {"taste_shock_scale": 0.05}
    shape = SIM_SHAPE | METHOD_GRIDS[method]
    single = solve(model=lifecycle.build_model(**shape), params=params, method=method)
    regimes = solve(
        model=lifecycle_regimes.build_model(**shape, survival=False), params=params, method=method
    )
    n = 200
    init = initial_states(n)
    lagged = np.zeros(n, dtype=int)
    ours = simulate(
        params=params,
        initial_conditions=init | {"regime": ["working"] * n},
        solution=regimes,
        seed=3,
    ).to_dataframe()
    theirs = simulate(
        params=params,
        initial_conditions=init | {"lagged_retirement": lagged},
        solution=single,
        seed=3,
    ).to_dataframe()
    for column in ("wealth", "consumption", "value"):
        np.testing.assert_allclose(ours[column], theirs[column], rtol=0, atol=1e-10)
    retired = (ours["regime"] == "retired").to_numpy()
    np.testing.assert_array_equal(retired, (theirs["lagged_retirement"] == "retired").to_numpy())
    assert 0 < retired.mean() < 1
    working = ~retired
    np.testing.assert_array_equal(
        ours["retirement"][working].astype(str), theirs["retirement"][working].astype(str)
    )
    assert ours.loc[retired, ["retirement", "income"]].isna().all().all()


@pytest.fixture(scope="module")
def mortal_simulation():
    from project.simulation import simulate

    model = lifecycle_regimes.build_model(**SIM_SHAPE, n_savings=60, bequest=True)
    params = lifecycle_regimes.default_params(bequest=True) | {"taste_shock_scale": 0.05}
    solution = solve(model=model, params=params)
    n = 3000
    init = initial_states(n) | {"regime": ["working"] * n}
    result = simulate(params=params, initial_conditions=init, solution=solution, seed=7)
    return model, params, solution, init, result


def test_death_is_absorbing_and_follows_the_survival_probabilities(mortal_simulation):
    model, params, _, _, result = mortal_simulation
    frame = result.to_dataframe()
    dead = (frame["regime"] == "dead").to_numpy().reshape(result.n_subjects, -1)
    assert (np.diff(dead.astype(int), axis=1) >= 0).all()  # nobody comes back
    alive = ~dead
    ages = np.asarray(model.ages)[: dead.shape[1] - 1]
    survival = np.asarray(
        lifecycle_regimes.survival_probability(
            ages, params["mortality_intercept"], params["mortality_slope"]
        )
    )
    deaths = (alive[:, :-1] & dead[:, 1:]).sum(axis=0)
    at_risk = alive[:, :-1].sum(axis=0)
    expected = at_risk * (1 - survival)
    assert (np.abs(deaths - expected) <= 4 * np.sqrt(expected * survival) + 1).all()
    rows = frame[frame["regime"] == "dead"]
    assert rows[["consumption", "retirement", "income", "pref_type"]].isna().all().all()
    bequest = lifecycle_regimes.bequest_value(
        rows["wealth"].to_numpy(), params["crra"], params["bequest_weight"], params["bequest_shift"]
    )
    np.testing.assert_allclose(rows["value"], bequest, rtol=1e-5)


def test_regime_simulation_does_not_depend_on_the_chunk_size(mortal_simulation):
    from project.simulation import simulate

    _, params, solution, init, result = mortal_simulation
    chunked = simulate(
        params=params, initial_conditions=init, solution=solution, seed=7, subject_batch_size=777
    )
    assert result.to_dataframe().equals(chunked.to_dataframe())


def test_a_subject_simulated_alone_equals_its_row_among_all(mortal_simulation):
    """A subject's rows do not depend on who shares its chunk: in chunks of one, each regime
    meets its subjects alone, and the rows equal those of the whole population bit for bit."""
    from project.simulation import simulate

    _, params, solution, init, result = mortal_simulation
    frame = result.to_dataframe()
    visited = frame.groupby("subject_id", observed=True)["regime"].agg(
        lambda regimes: frozenset(regimes.astype(str))
    )
    # one subject of each path through the regimes: their chunks of one meet each regime alone
    chosen = sorted(int(paths.index[0]) for _, paths in visited.groupby(visited))
    assert len(chosen) >= 3, f"too few paths through the regimes: {sorted(set(visited))}"
    n = max(chosen) + 1
    first = {k: list(v)[:n] for k, v in init.items()}
    alone = simulate(
        params=params, initial_conditions=first, solution=solution, seed=7, subject_batch_size=1
    ).to_dataframe()
    for subject in chosen:
        got = alone[alone["subject_id"] == subject].reset_index(drop=True)
        expected = frame[frame["subject_id"] == subject].reset_index(drop=True)
        pd.testing.assert_frame_equal(got, expected, check_exact=True)


def test_regime_solution_and_bundle_survive_save_and_load(mortal_simulation, tmp_path):
    from project.persist import load_bundle, save_bundle
    from project.persist.solution import load_solution, save_solution
    from project.simulation import simulate

    model, params, solution, init, result = mortal_simulation
    save_solution(solution=solution, directory=tmp_path / "solution")
    loaded = load_solution(directory=tmp_path / "solution", model=model)
    states = {"pref_type": [0, 1], "income": [1, 2], "wealth": [2.0, 5.0]}
    for regime, chosen in (("working", states), ("retired", {"pref_type": [0], "wealth": [3.0]})):
        np.testing.assert_array_equal(
            loaded.value(period=3, regime=regime, states=chosen),
            solution.value(period=3, regime=regime, states=chosen),
        )
    again = simulate(params=params, initial_conditions=init, solution=loaded, seed=7)
    assert again.to_dataframe().equals(result.to_dataframe())
    save_bundle(result=result, directory=tmp_path / "bundle", additional_targets=["utility"])
    back = load_bundle(directory=tmp_path / "bundle", model=model)
    assert back.to_dataframe().equals(result.to_dataframe())
    table = back.to_dataframe(additional_targets=["utility", "labor_income"])
    dead = (table["regime"] == "dead").to_numpy()
    assert table.loc[dead, "utility"].isna().all()
    assert table.loc[(table["regime"] == "retired").to_numpy(), "labor_income"].isna().all()


def test_a_solution_without_regimes_does_not_load_as_one_with(mortal_simulation, tmp_path):
    from project.errors import CheckpointError
    from project.persist.solution import load_solution, save_solution

    model, *_ = mortal_simulation
    single = lifecycle.build_model(n_periods=3, n_wealth=10, n_consumption=10)
    save_solution(
        solution=solve(model=single, params=lifecycle.DEFAULT_PARAMS), directory=tmp_path / "s"
    )
    with pytest.raises(CheckpointError, match="without regimes"):
        load_solution(directory=tmp_path / "s", model=model)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda init: {k: v for k, v in init.items() if k != "regime"}, "need a 'regime' entry"),
        (lambda init: init | {"regime": ["workng"] * 4}, "not categories"),
        (lambda init: {k: v for k, v in init.items() if k != "income"}, "needs the state 'income'"),
        (lambda init: init | {"health": [0] * 4}, "unknown states \\['health'\\]"),
        (lambda init: init | {"wealth": [1.0, 2.0, 99.0, 3.0]}, "outside"),
    ],
)
def test_bad_initial_regimes_and_states_raise(mortal_simulation, change, match):
    from project.errors import InitialConditionsError
    from project.simulation import simulate

    _, params, solution, *_ = mortal_simulation
    init = {
        "regime": ["working", "working", "retired", "working"],
        "pref_type": [0, 1, 0, 1],
        "income": [0, 1, 2, 0],
        "wealth": [1.0, 2.0, 3.0, 4.0],
    }
    with pytest.raises(InitialConditionsError, match=match):
        simulate(params=params, initial_conditions=change(init), solution=solution, seed=0)


def test_a_retiree_may_omit_the_states_of_working_life(mortal_simulation):
    from project.simulation import simulate

    _, params, solution, *_ = mortal_simulation
    init = {
        "regime": ["retired", "working"],
        "pref_type": [0, 1],
        "income": [None, 1],
        "wealth": [3.0, 2.0],
    }
    frame = simulate(
        params=params, initial_conditions=init, solution=solution, seed=0
    ).to_dataframe()
    assert frame.loc[frame["subject_id"] == 0, "income"].isna().all()


def test_initial_conditions_of_a_regime_model_are_drawn_per_regime():
    from project.simulation import draw_initial_conditions

    model = lifecycle_regimes.build_model(n_periods=3, n_wealth=10, n_consumption=10)
    drawn = draw_initial_conditions(
        model=model,
        n_subjects=200,
        seed=1,
        distribution={
            "regime": {"probabilities": [0.5, 0.5, 0.0]},
            "pref_type": {"probabilities": [0.5, 0.5]},
            "income": {"label": "node_2"},
            "wealth": {"uniform": [1.0, 5.0]},
        },
    )
    retired = drawn["regime"] == model.code("retired")
    assert 0 < retired.mean() < 1
    assert (drawn["income"][retired] == -1).all()
    assert (drawn["income"][~retired] == 2).all()


@pytest.mark.parametrize("log_level", ["warning", "debug"])
def test_nans_raise_by_default_located_in_the_regime_that_has_them(log_level):
    from project.errors import InvalidValueFunctionError

    working = ijrs.build_model(n_wealth=10, n_consumption=10, n_periods=3)
    broken = Model(
        name="broken",
        states=working.states,
        actions=working.actions,
        functions=working.functions | {"utility": lambda consumption: jnp.sqrt(consumption - 50)},
        constraints=working.constraints,
        n_periods=3,
    )
    model = RegimeModel(
        name="x",
        regimes={"working": working, "broken": broken},
        transitions={"working": lambda: {"working": 1.0}, "broken": lambda: {"broken": 1.0}},
    )
    with pytest.raises(
        InvalidValueFunctionError, match=r"grid search, regime 'broken'.*Regime 'broken': V is NaN"
    ):
        solve(model=model, params=ijrs.DEFAULT_PARAMS, method="grid", log_level=log_level)


# ---------------------------------------------------------------------------------------------
# Memory planning with regimes
# ---------------------------------------------------------------------------------------------


def regime_program_memory(model, params, *, structure: bool = True):
    """Return (XLA's buffer assignment of the regime program, the predicted peak) in bytes."""
    from project.model.params import pack_params, params_on_host
    from project.regimes.grid import _program, regime_grid_points
    from project.regimes.memory import predict_regime_memory
    from project.solver.plan import general_plan, plan_for
    from project.solver.selection import choose_kernels

    plans = {r: plan_for(v) if structure else general_plan(v) for r, v in model.regimes.items()}
    names = {r: choose_kernels(p, unit_slope=None)[0].name for r, p in plans.items()}
    flat = pack_params(params_on_host(model=model, params=params))
    compiled = _program(model, plans, names).lower(flat, regime_grid_points(model)).compile()
    analysis = compiled.memory_analysis()
    xla = (
        analysis.temp_size_in_bytes
        + analysis.output_size_in_bytes
        + analysis.argument_size_in_bytes
    )
    return xla, predict_regime_memory(model, plans, names).total


@pytest.mark.parametrize("structure", [True, False], ids=["row", "general"])
@pytest.mark.parametrize("case", ["lifecycle", "mortal"])
def test_regime_prediction_is_within_a_quarter_of_xlas_buffer_assignment(x64, case, structure):
    if case == "lifecycle":
        model = lifecycle_regimes.build_model(
            n_wealth=300, n_consumption=100, n_periods=3, taste_shocks=True
        )
        params = lifecycle_regimes.default_params() | {"taste_shock_scale": 0.01}
    else:
        model = mortal(precautionary.build_model(n_wealth=1000, n_consumption=200, n_periods=3))
        params = precautionary.DEFAULT_PARAMS | {"survival": SURVIVAL}
    xla, predicted = regime_program_memory(model, params, structure=structure)
    assert abs(predicted / xla - 1) <= 0.25, (predicted, xla)


def test_a_memory_limit_splays_regimes_and_leaves_v_alike(x64, caplog):
    from project.regimes.memory import predict_regime_memory
    from project.solver.plan import plan_for

    model = lifecycle_regimes.build_model(n_wealth=300, n_consumption=100, n_periods=3)
    params = lifecycle_regimes.default_params()
    whole = solve(model=model, params=params, method="grid")
    plans = {r: plan_for(v) for r, v in model.regimes.items()}
    names = dict.fromkeys(plans, "row")
    unsplayed = predict_regime_memory(model, plans, names).total
    with caplog.at_level(logging.INFO, logger="project.solver"):
        limited = solve(
            model=model,
            params=params,
            method="grid",
            memory_limit=int(0.8 * unsplayed),
            log_level="progress",
        )
    assert "splayed in chunks of" in caplog.text
    for regime in model.regimes:
        np.testing.assert_array_equal(
            limited.solution(regime).values, whole.solution(regime).values
        )
    with pytest.raises(MemoryPlanError, match="regime solve needs about"):
        solve(model=model, params=params, method="grid", memory_limit=1000)
    with pytest.raises(MemoryPlanError, match="memory_limit"):
        solve(model=model, params=params, memory_limit="plenty")
    with pytest.raises(MemoryPlanError, match=r"regimes\) by endogenous grids needs"):
        solve(
            model=lifecycle_regimes.build_model(n_periods=3, n_savings=50),
            params=params,
            memory_limit=1000,
        )


def test_a_memory_limit_plans_regime_simulation_chunks(mortal_simulation, caplog):
    from project.simulation import simulate

    _, params, solution, init, result = mortal_simulation
    with caplog.at_level(logging.INFO, logger="project.simulation"):
        limited = simulate(
            params=params,
            initial_conditions=init,
            solution=solution,
            seed=7,
            memory_limit="2MB",
            log_level="progress",
        )
    chunk = int(caplog.text.split("MiB, ")[-1].split(" subjects")[0])
    assert 0 < chunk < result.n_subjects
    assert limited.to_dataframe().equals(result.to_dataframe())
    with pytest.raises(MemoryPlanError, match="even for one subject"):
        simulate(
            params=params, initial_conditions=init, solution=solution, seed=7, memory_limit="1MB"
        )
