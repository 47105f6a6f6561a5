"""Model specification: every ModelSpecificationError, the params template, age, transitions."""

import jax.numpy as jnp
import numpy as np
import pytest

import project
from project.errors import InvalidTransitionError, ModelSpecificationError, ProjectError
from project.grids import DiscreteGrid, LinSpacedGrid, categories
from project.model import Model
from project.models import lifecycle

Shock = categories("Shock", ["low", "high"])


def _wealth():
    return LinSpacedGrid(start=1.0, stop=5.0, n_points=5, name="wealth")


def _consumption():
    return LinSpacedGrid(start=1.0, stop=5.0, n_points=5, name="consumption")


def utility(consumption):
    return jnp.log(consumption)


def next_wealth(wealth, consumption, r):
    return (1 + r) * (wealth - consumption)


def affordable(consumption, wealth):
    return consumption <= wealth


def _model(**overrides):
    """Return a valid one-state, one-action model with ``overrides`` applied."""
    arguments = {
        "name": "tiny",
        "states": {"wealth": _wealth()},
        "actions": {"consumption": _consumption()},
        "functions": {"utility": utility, "next_wealth": next_wealth},
        "n_periods": 3,
    }
    arguments.update(overrides)
    return Model(**arguments)


def _shock_model(transition, **overrides):
    """Return a valid model with a stochastic two-category ``shock`` state."""
    arguments = {
        "states": {"shock": DiscreteGrid(Shock), "wealth": _wealth()},
        "functions": {
            "utility": lambda consumption, shock: jnp.log(consumption) + shock,
            "next_wealth": lambda wealth, consumption: wealth - consumption + 1.0,
        },
        "constraints": {"affordable": affordable},
        "stochastic_transitions": {"shock": transition},
    }
    arguments.update(overrides)
    return _model(**arguments)


def test_valid_model_builds():
    model = _model()
    assert model.state_names == ("wealth",)
    assert model.action_names == ("consumption",)
    assert model.deterministic_states == ("wealth",)
    assert model.ages == (0.0, 1.0, 2.0)
    assert model.n_periods == 3


def test_model_specification_error_is_a_project_error():
    assert issubclass(ModelSpecificationError, ProjectError)
    assert issubclass(InvalidTransitionError, ProjectError)


# ----------------------------------------------------------------------------------------
# Functions and names
# ----------------------------------------------------------------------------------------


def test_law_of_motion_for_unknown_state():
    functions = {"utility": utility, "next_wealth": next_wealth, "next_foo": lambda wealth: wealth}
    with pytest.raises(
        ModelSpecificationError,
        match=r"'tiny': function 'next_foo' is a law of motion for an unknown state 'foo'",
    ):
        _model(functions=functions)


def test_unknown_next_argument():
    functions = {"utility": lambda consumption, next_xyz: consumption, "next_wealth": next_wealth}
    with pytest.raises(
        ModelSpecificationError, match=r"function 'utility' takes unknown argument 'next_xyz'"
    ):
        _model(functions=functions)


def test_unknown_next_argument_in_constraint():
    with pytest.raises(ModelSpecificationError, match=r"'ok' takes unknown argument 'next_c'"):
        _model(constraints={"ok": lambda next_c: next_c > 0})


def test_cycle_between_auxiliary_functions():
    functions = {
        "utility": lambda first: first,
        "first": lambda second: second,
        "second": lambda first: first,
        "next_wealth": next_wealth,
    }
    with pytest.raises(ModelSpecificationError, match=r"'tiny': .* in a cycle") as info:
        _model(functions=functions)
    assert "first" in str(info.value)
    assert "second" in str(info.value)


def test_state_without_law_of_motion():
    with pytest.raises(ModelSpecificationError, match=r"states \['wealth'\] have no law of motion"):
        _model(functions={"utility": utility})


def test_missing_utility():
    with pytest.raises(ModelSpecificationError, match=r"functions must include 'utility'"):
        _model(functions={"next_wealth": next_wealth})


def test_name_both_state_and_action():
    with pytest.raises(ModelSpecificationError, match=r"\['wealth'\] are both states and actions"):
        _model(actions={"wealth": _consumption()})


def test_name_both_function_and_constraint():
    with pytest.raises(
        ModelSpecificationError, match=r"\['utility'\] are both functions and constraints"
    ):
        _model(constraints={"utility": affordable})


@pytest.mark.parametrize("reserved", ["age", "period", "beta"])
def test_reserved_name_as_state(reserved):
    with pytest.raises(ModelSpecificationError, match=rf"\['{reserved}'\] are reserved names"):
        _model(states={"wealth": _wealth(), reserved: DiscreteGrid(Shock)})


@pytest.mark.parametrize("reserved", ["age", "beta"])
def test_reserved_name_as_action_or_function(reserved):
    with pytest.raises(ModelSpecificationError, match=rf"\['{reserved}'\] are reserved names"):
        _model(actions={"consumption": _consumption(), reserved: DiscreteGrid(Shock)})
    functions = {"utility": utility, "next_wealth": next_wealth, reserved: lambda wealth: wealth}
    with pytest.raises(ModelSpecificationError, match=rf"\['{reserved}'\] are reserved names"):
        _model(functions=functions)


# ----------------------------------------------------------------------------------------
# Stochastic transitions
# ----------------------------------------------------------------------------------------


def test_stochastic_transition_of_a_non_state():
    with pytest.raises(
        ModelSpecificationError,
        match=r"stochastic_transitions names 'income', which is not a state",
    ):
        _model(stochastic_transitions={"income": lambda: jnp.array([0.5, 0.5])})


def test_stochastic_transition_of_a_continuous_state():
    with pytest.raises(
        ModelSpecificationError, match=r"stochastic state 'wealth' must have a DiscreteGrid"
    ):
        _model(stochastic_transitions={"wealth": lambda: jnp.ones(5) / 5})


def test_stochastic_state_with_a_law_of_motion_too():
    functions = {"utility": utility, "next_wealth": next_wealth, "next_shock": lambda shock: shock}
    with pytest.raises(
        ModelSpecificationError,
        match=r"state 'shock' has both a stochastic transition and a law of motion 'next_shock'",
    ):
        _shock_model(lambda: jnp.array([0.5, 0.5]), functions=functions)


def test_utility_depending_on_next_period_outcome():
    functions = {
        "utility": lambda consumption, next_income: jnp.log(consumption) + next_income,
        "next_wealth": next_wealth,
    }
    with pytest.raises(
        ModelSpecificationError,
        match=r"'utility' depends on next-period outcomes \['next_income'\]",
    ):
        _model(
            states={"wealth": _wealth(), "income": DiscreteGrid(Shock)},
            functions=functions,
            stochastic_transitions={"income": lambda: jnp.array([0.5, 0.5])},
        )


def test_utility_depending_on_next_period_outcome_through_auxiliary():
    functions = {
        "utility": lambda consumption, bonus: jnp.log(consumption) + bonus,
        "bonus": lambda next_income: 2.0 * next_income,
        "next_wealth": next_wealth,
    }
    with pytest.raises(ModelSpecificationError, match=r"'utility' depends on next-period"):
        _model(
            states={"wealth": _wealth(), "income": DiscreteGrid(Shock)},
            functions=functions,
            stochastic_transitions={"income": lambda: jnp.array([0.5, 0.5])},
        )


def test_law_of_motion_may_use_next_period_outcome():
    model = _shock_model(
        lambda shock: jnp.array([0.5, 0.5]),
        functions={
            "utility": utility,
            "next_wealth": lambda wealth, consumption, next_shock: (
                wealth - consumption + next_shock
            ),
        },
    )
    assert model.outcome_dependent_stochastic_states() == {"shock"}
    assert model.deterministic_states == ("wealth",)
    assert "next_shock" not in model.params_template


# ----------------------------------------------------------------------------------------
# Horizon and parameter shapes
# ----------------------------------------------------------------------------------------


def test_neither_n_periods_nor_ages():
    with pytest.raises(ModelSpecificationError, match=r"exactly one of n_periods or ages"):
        _model(n_periods=None)


def test_both_n_periods_and_ages():
    with pytest.raises(ModelSpecificationError, match=r"exactly one of n_periods or ages"):
        _model(n_periods=3, ages=[50, 51, 52])


@pytest.mark.parametrize("ages", [[50, 52, 52], [50, 49], [60, 61, 59], []])
def test_ages_must_be_strictly_increasing(ages):
    with pytest.raises(ModelSpecificationError, match=r"ages must be non-empty and strictly"):
        _model(n_periods=None, ages=ages)


@pytest.mark.parametrize("n_periods", [0, -1, 2.0, True])
def test_n_periods_must_be_a_positive_int(n_periods):
    with pytest.raises(ModelSpecificationError, match=r"n_periods must be a positive int"):
        _model(n_periods=n_periods)


def test_ages_set_the_horizon():
    model = _model(n_periods=None, ages=range(50, 54))
    assert model.ages == (50.0, 51.0, 52.0, 53.0)
    assert model.n_periods == 4


@pytest.mark.parametrize("bad", ["gamma", "wealth", "consumption", "next_wealth"])
def test_param_shapes_naming_a_non_parameter(bad):
    with pytest.raises(
        ModelSpecificationError, match=rf"param_shapes names \['{bad}'\], which are not param"
    ):
        _model(param_shapes={bad: (2,)})


def test_param_shapes_set_the_template_shape():
    assert _model(param_shapes={"r": [3]}).params_template == {"beta": (), "r": (3,)}


# ----------------------------------------------------------------------------------------
# Params template
# ----------------------------------------------------------------------------------------


def test_params_template_holds_free_arguments_only():
    functions = {
        "utility": lambda consumption, wealth, age, period, bonus, gamma: consumption * gamma,
        "bonus": lambda wealth, delta: delta * wealth,
        "next_wealth": next_wealth,
    }
    model = _model(
        functions=functions,
        constraints={"cap": lambda consumption, cap_level: consumption <= cap_level},
    )
    assert model.params_template == {
        "beta": (),
        "cap_level": (),
        "delta": (),
        "gamma": (),
        "r": (),
    }
    assert list(model.params_template) == sorted(model.params_template)


def test_params_template_always_holds_beta():
    functions = {"utility": utility, "next_wealth": lambda wealth: wealth}
    assert _model(functions=functions).params_template == {"beta": ()}


def test_params_template_includes_transition_params():
    model = _shock_model(lambda shock, persistence: jnp.array([persistence, 1 - persistence]))
    assert model.params_template == {"beta": (), "persistence": ()}


def test_lifecycle_params_template():
    model = lifecycle.build_model(n_wealth=5, n_consumption=5, n_income=3, n_periods=3)
    assert model.params_template == {
        "beta": (),
        "crra": (),
        "disutility_of_work": (2,),
        "income_rho": (),
        "income_sigma": (),
        "mandatory_retirement_age": (),
        "pension": (),
        "r": (),
        "wage": (),
    }
    assert set(model.params_template) == set(lifecycle.DEFAULT_PARAMS)


# ----------------------------------------------------------------------------------------
# Solving: age is available to functions; transitions are checked per period
# ----------------------------------------------------------------------------------------


def test_age_is_available_to_functions():
    # u = age * c with c <= wealth and wealth constant: V_T(w) = age_T * w and
    # V_t(w) = age_t * w + beta * V_{t+1}(w); with ages 60, 61, 62 and beta 0.5 that is
    # 106 w, 92 w and 62 w. Using the period (0, 1, 2) instead would give 0.75 w, 2 w and 2 w.
    model = _model(
        functions={
            "utility": lambda consumption, age: age * consumption,
            "next_wealth": lambda wealth: wealth,
        },
        constraints={"affordable": affordable},
        n_periods=None,
        ages=[60, 61, 62],
    )
    assert model.params_template == {"beta": ()}
    solution = project.solve(model=model, params={"beta": 0.5})
    wealth = np.arange(1.0, 6.0)
    for period, factor in enumerate([106.0, 92.0, 62.0]):
        value = np.asarray(solution.value_function[period])
        assert value.dtype == np.float32
        np.testing.assert_allclose(value, factor * wealth, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(solution.policy_values(period=0)["consumption"]), wealth)


def test_valid_stochastic_transition_solves():
    model = _shock_model(
        lambda shock: jnp.where(shock == 0, jnp.array([0.9, 0.1]), jnp.array([0.2, 0.8]))
    )
    solution = project.solve(model=model, params={"beta": 0.9})
    assert len(solution.value_function) == 3
    assert solution.value_function[0].shape == (2, 5)
    assert np.all(np.isfinite(np.asarray(solution.value_function[0])))


def test_negative_probabilities_in_some_periods():
    def transition(period):
        return jnp.where(period >= 2, jnp.array([1.25, -0.25]), jnp.array([0.5, 0.5]))

    model = _shock_model(transition, n_periods=None, ages=[50, 51, 52, 53])
    with pytest.raises(
        InvalidTransitionError,
        match=r"transition probabilities of state 'shock' in period 2 \(age 52\) are invalid",
    ) as info:
        project.solve(model=model, params={"beta": 0.9})
    assert "-0.25" in str(info.value)


def test_probabilities_not_summing_to_one_in_some_periods():
    def transition(age):
        return jnp.where(age >= 51, jnp.array([0.7, 0.7]), jnp.array([0.3, 0.7]))

    model = _shock_model(transition, n_periods=None, ages=[50, 51, 52, 53])
    with pytest.raises(
        InvalidTransitionError, match=r"state 'shock' in period 1 \(age 51\) are invalid"
    ):
        project.solve(model=model, params={"beta": 0.9})


def test_a_quiet_solve_leaves_invalid_probabilities_for_the_next_checked_solve():
    """'off' checks nothing, and remembers nothing that would let a later solve skip a check."""

    def transition(age):
        return jnp.where(age >= 51, jnp.array([0.7, 0.7]), jnp.array([0.3, 0.7]))

    model = _shock_model(transition, n_periods=None, ages=[50, 51, 52, 53])
    project.solve(model=model, params={"beta": 0.9}, log_level="off")
    project.solve(model=model, params={"beta": 0.9}, log_level="off")
    with pytest.raises(InvalidTransitionError, match=r"'shock' in period 1 \(age 51\)"):
        project.solve(model=model, params={"beta": 0.9})


def test_bad_probabilities_at_one_state_point_only():
    def transition(shock, period):
        bad = (period == 1) & (shock == 1)
        return jnp.where(bad, jnp.array([0.5, 0.6]), jnp.array([0.5, 0.5]))

    model = _shock_model(transition)
    with pytest.raises(InvalidTransitionError, match=r"'shock' in period 1 .*\['shock'\]"):
        project.solve(model=model, params={"beta": 0.9})


def test_wrong_number_of_probabilities():
    model = _shock_model(lambda shock: jnp.array([0.2, 0.3, 0.5]))
    with pytest.raises(
        ModelSpecificationError,
        match=r"transition of 'shock' returns 3 probabilities, but 'shock' has 2 categories",
    ):
        project.solve(model=model, params={"beta": 0.9})


def test_function_named_like_a_state_is_rejected():
    from project.models import ijrs

    base = ijrs.build_model(n_wealth=5, n_consumption=5, n_periods=2)
    with pytest.raises(ModelSpecificationError, match=r"named like states or actions"):
        Model(
            name="shadow",
            states=base.states,
            actions=base.actions,
            functions=dict(base.functions, wealth=lambda: 1.0),
            constraints=base.constraints,
            n_periods=2,
        )
