"""Solver behaviour: exact small cases, invariances, compile reuse, log levels and dtypes."""

import logging
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from project import (
    DiscreteGrid,
    InvalidValueFunctionError,
    LinSpacedGrid,
    Model,
    ProjectError,
    solve,
)
from project.models import ijrs, lifecycle, precautionary
from project.solver import program as program_module
from project.solver.expectation import ExpectationPlan
from project.solver.solution import Solution


@dataclass(frozen=True)
class Health:
    bad: int = 0
    good: int = 1


@dataclass(frozen=True)
class Work:
    no: int = 0
    yes: int = 1


def two_period_model() -> Model:
    """Working pays 1 + health but costs 1.2 and ruins health next period."""
    return Model(
        name="two_period",
        states={"health": DiscreteGrid(Health)},
        actions={"work": DiscreteGrid(Work)},
        functions={
            "utility": lambda health, work, cost: work * (1 + health) - cost * work,
            "next_health": lambda health, work: jnp.where(work == Work.yes, Health.bad, health),
        },
        n_periods=2,
    )


def test_two_period_discrete_model_is_solved_exactly():
    solution = solve(model=two_period_model(), params={"beta": 0.95, "cost": 1.2})
    # Last period: bad health does not work (1 - 1.2 < 0), good health works (2 - 1.2).
    np.testing.assert_allclose(solution.value_function[1], [0.0, 0.8], rtol=1e-6)
    np.testing.assert_array_equal(solution.policy_indices[1]["work"], [Work.no, Work.yes])
    # First period, good health: work (0.8 + 0.95 * 0) beats rest (0 + 0.95 * 0.8 = 0.76).
    np.testing.assert_allclose(solution.value_function[0], [0.0, 0.8], rtol=1e-6)
    np.testing.assert_array_equal(solution.policy_indices[0]["work"], [Work.no, Work.yes])
    # A patient agent (beta = 1.1 > 1) rests to keep good health: 1.1 * 0.8 = 0.88 > 0.8.
    patient = solve(model=two_period_model(), params={"beta": 1.1, "cost": 1.2})
    np.testing.assert_allclose(patient.value_function[0], [0.0, 0.88], rtol=1e-6)
    np.testing.assert_array_equal(patient.policy_indices[0]["work"], [Work.no, Work.no])


def assert_solutions_identical(left, right):
    for t, (v_left, v_right) in enumerate(
        zip(left.value_function, right.value_function, strict=True)
    ):
        np.testing.assert_array_equal(np.asarray(v_left), np.asarray(v_right), f"V, period {t}")
        for action in left.policy_indices[t]:
            np.testing.assert_array_equal(
                np.asarray(left.policy_indices[t][action]),
                np.asarray(right.policy_indices[t][action]),
            )


@pytest.fixture(params=[1, 16], ids=["two_sweeps", "blocks"])
def block_search(request, monkeypatch):
    """Run a test with the CPU search (two sweeps) and the accelerators' (blocks of 16)."""
    monkeypatch.setattr(program_module, "CPU_ACTION_BLOCK", request.param)
    return request.param


@pytest.mark.parametrize("batch_size", [1, 7, 100])
def test_splay_on_wealth_is_value_identical(batch_size, block_search):
    params = ijrs.DEFAULT_PARAMS
    reference = solve(model=ijrs.build_model(n_wealth=60, n_consumption=80), params=params)
    splayed = solve(
        model=ijrs.build_model(n_wealth=60, n_consumption=80, wealth_batch_size=batch_size),
        params=params,
    )
    assert_solutions_identical(reference, splayed)


@pytest.mark.parametrize(("income_batch", "wealth_batch"), [(2, 0), (1, 9), (3, 16)])
def test_splay_on_stochastic_state_is_value_identical(income_batch, wealth_batch, block_search):
    params = precautionary.DEFAULT_PARAMS
    reference = solve(model=precautionary.build_model(n_wealth=40, n_consumption=70), params=params)
    splayed = solve(
        model=precautionary.build_model(
            n_wealth=40,
            n_consumption=70,
            income_batch_size=income_batch,
            wealth_batch_size=wealth_batch,
        ),
        params=params,
    )
    assert_solutions_identical(reference, splayed)


def precautionary_variant(
    *, transition, next_wealth=precautionary.next_wealth, stochastic=True
) -> Model:
    base = precautionary.build_model(n_wealth=30, n_consumption=25)
    functions = dict(base.functions, next_wealth=next_wealth)
    transitions = {"income": transition} if stochastic else {}
    if not stochastic:
        functions["next_income"] = transition
    return Model(
        name="variant",
        states=base.states,
        actions=base.actions,
        functions=functions,
        constraints=base.constraints,
        stochastic_transitions=transitions,
        n_periods=base.n_periods,
    )


def test_identity_transition_equals_deterministic_model():
    params = precautionary.DEFAULT_PARAMS
    stochastic = precautionary_variant(transition=lambda income: jnp.eye(5)[income])
    deterministic = precautionary_variant(transition=lambda income: income, stochastic=False)
    left = solve(model=stochastic, params=params)
    right = solve(model=deterministic, params=params)
    for v_left, v_right in zip(left.value_function, right.value_function, strict=True):
        np.testing.assert_allclose(v_left, v_right, rtol=1e-6, atol=1e-6)
    for p_left, p_right in zip(left.policy_indices, right.policy_indices, strict=True):
        np.testing.assert_array_equal(p_left["consumption"], p_right["consumption"])


def test_kept_expectation_equals_precontracted_expectation(x64):
    """Probabilities that (trivially) depend on an action force the fused per-point path."""
    params = precautionary.DEFAULT_PARAMS
    base = precautionary.build_model(n_wealth=30, n_consumption=25)
    transition = base.stochastic_transitions["income"]
    precontracted = precautionary_variant(transition=transition)

    def action_dependent(income, income_rho, consumption):
        return transition(income, income_rho) + 0.0 * consumption

    kept = precautionary_variant(transition=action_dependent)
    assert ExpectationPlan.for_model(precontracted).precontracted == ("income",)
    assert ExpectationPlan.for_model(kept).kept == ("income",)
    for v_pre, v_kept in zip(
        solve(model=precontracted, params=params).value_function,
        solve(model=kept, params=params).value_function,
        strict=True,
    ):
        np.testing.assert_allclose(v_pre, v_kept, rtol=1e-12, atol=1e-12)


def test_law_of_motion_may_use_the_next_stochastic_outcome(x64):
    """Income that arrives with next period's draw: E over outcomes of V(next wealth(outcome))."""
    params = precautionary.DEFAULT_PARAMS
    base = precautionary.build_model(n_wealth=30, n_consumption=25)
    transition = base.stochastic_transitions["income"]

    def next_wealth_with_next_income(wealth, consumption, income_nodes, next_income, r):
        return (1 + r) * (wealth - consumption) + jnp.exp(income_nodes[next_income])

    model = precautionary_variant(transition=transition, next_wealth=next_wealth_with_next_income)
    assert ExpectationPlan.for_model(model).kept == ("income",)
    solution = solve(model=model, params=params)
    # Check one state-action point of period T-2 by hand.
    v_next = np.asarray(solution.value_function[-1])
    wealth_points = np.linspace(1, 20, 30)
    nodes = np.asarray(base.functions["income_nodes"](0.9, 0.2))
    probs = np.asarray(transition(2, 0.9))
    income, w_index = 2, 10
    c = float(solution.policy_values(period=model.n_periods - 2)["consumption"][income, w_index])
    expected = sum(
        probs[k]
        * np.interp(wealth_points[w_index] - c + np.exp(nodes[k]), wealth_points, v_next[k])
        for k in range(5)
    )
    q = np.log(c) + 0.95 * expected
    np.testing.assert_allclose(solution.value_function[-2][income, w_index], q, rtol=1e-12)


@pytest.mark.parametrize("n_periods", [1, 2, 12])
def test_one_program_compiles_once_whatever_the_horizon(n_periods):
    model = precautionary.build_model(n_wealth=20, n_consumption=20, n_periods=n_periods)
    solve(model=model, params=precautionary.DEFAULT_PARAMS)
    solve(model=model, params=dict(precautionary.DEFAULT_PARAMS, beta=0.9))
    assert program_module.compiled_programs(model) == 1


def test_float32_by_default_and_float64_with_x64():
    model = ijrs.build_model(n_wealth=20, n_consumption=20, n_periods=2)
    assert solve(model=model, params=ijrs.DEFAULT_PARAMS).value_function[0].dtype == jnp.float32
    jax.config.update("jax_enable_x64", True)
    try:
        model64 = ijrs.build_model(n_wealth=20, n_consumption=20, n_periods=2)
        solution = solve(model=model64, params=ijrs.DEFAULT_PARAMS)
        assert solution.value_function[0].dtype == jnp.float64
    finally:
        jax.config.update("jax_enable_x64", False)


def nan_model() -> Model:
    """Log of (wealth - 3) is NaN for wealth < 3 in the last period."""
    return Model(
        name="nan_model",
        states={"wealth": LinSpacedGrid(start=1, stop=5, n_points=5, name="wealth")},
        actions={"consumption": LinSpacedGrid(start=1, stop=5, n_points=5, name="consumption")},
        functions={
            "utility": lambda consumption, wealth: jnp.log(wealth - 3.0) + consumption,
            "next_wealth": lambda wealth, consumption: wealth - consumption + 1,
        },
        n_periods=2,
    )


@pytest.mark.parametrize("log_level", ["warning", "debug"])
def test_nan_in_v_raises_by_default_naming_period_and_dimensions(log_level):
    with pytest.raises(InvalidValueFunctionError, match=r"grid search.*period 1") as info:
        solve(model=nan_model(), params={"beta": 0.9}, log_level=log_level)
    message = str(info.value)
    assert "wealth at indices [0, 1] (2 of 5) = [1, 2]" in message
    assert "consumption at indices [0, 1, 2, 3, 4]" in message
    assert "on_invalid='warn'" in message


def test_on_invalid_warn_warns_and_continues(caplog):
    with caplog.at_level(logging.WARNING, logger="project.solver"):
        solution = solve(model=nan_model(), params={"beta": 0.9}, on_invalid="warn")
    assert np.isnan(np.asarray(solution.value_function[0])).any()
    assert "period 1 contains NaN values (and so do periods [0]); continuing" in caplog.text


def test_on_invalid_warn_at_debug_locates_the_nans_in_the_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="project.solver"):
        solve(model=nan_model(), params={"beta": 0.9}, on_invalid="warn", log_level="debug")
    assert "wealth at indices [0, 1]" in caplog.text


def test_an_unknown_on_invalid_is_refused():
    with pytest.raises(ProjectError, match=r"on_invalid must be 'raise'.*or 'warn'.*'ignore'"):
        solve(model=nan_model(), params={"beta": 0.9}, on_invalid="ignore")


def test_off_log_level_neither_checks_nor_logs(caplog):
    with caplog.at_level(logging.DEBUG, logger="project.solver"):
        solve(model=nan_model(), params={"beta": 0.9}, log_level="off")
    assert caplog.text == ""


def test_progress_log_level_reports_each_periods_kernel_and_why(caplog):
    model = precautionary.build_model(n_wealth=10, n_consumption=10, n_periods=3)
    with caplog.at_level(logging.INFO, logger="project.solver"):
        solve(model=model, params=precautionary.DEFAULT_PARAMS, log_level="progress")
    assert "Periods 0-1 (ages 0-1): shift kernel: next_wealth = a·(wealth - consumption)" in (
        caplog.text
    )
    assert "Period 2 (age 2): shift kernel: the last period reads V = 0" in caplog.text
    assert "Solved 'precautionary': 3 periods in" in caplog.text


def test_states_without_feasible_action_get_minus_inf_and_are_reported(caplog):
    model = ijrs.build_model(n_wealth=10, n_consumption=10, n_periods=2)
    infeasible = Model(
        name="infeasible",
        states=model.states,
        actions=model.actions,
        functions=model.functions,
        constraints=dict(model.constraints, rich_only=lambda wealth: wealth > 100),
        n_periods=2,
    )
    with caplog.at_level(logging.WARNING, logger="project.solver"):
        # Period 0 reads -inf next-period values and gets NaN: warn instead of raising.
        solution = solve(model=infeasible, params=ijrs.DEFAULT_PARAMS, on_invalid="warn")
    wealth = np.linspace(1, 400, 10)
    assert np.isneginf(np.asarray(solution.value_function[1])[:, wealth <= 100]).all()
    assert np.isfinite(np.asarray(solution.value_function[1])[:, wealth > 100]).all()
    assert "have no feasible action" in caplog.text


def test_unknown_log_level_raises():
    with pytest.raises(ProjectError, match="log_level must be one of"):
        solve(model=two_period_model(), params={"beta": 0.9, "cost": 1.0}, log_level="loud")


def test_default_model_solves_with_finite_values():
    model = lifecycle.build_model(n_wealth=30, n_consumption=30, n_periods=6, start_age=65)
    solution = solve(model=model, params=lifecycle.DEFAULT_PARAMS, log_level="debug")
    v0 = np.asarray(solution.value_function[0])
    assert v0.shape == (2, 2, 5, 30)
    assert np.isfinite(v0).all()
    # More wealth is better, and the leisure-loving type values work less.
    assert (np.diff(v0, axis=-1) >= 0).all()
    assert (v0[1, 0] <= v0[0, 0] + 1e-6).all()


def test_value_function_is_every_period_of_values_from_one_program():
    from project.solver.solution import split_periods

    model = precautionary.build_model(n_wealth=12, n_consumption=9, n_periods=4)
    solved = solve(model=model, params=precautionary.DEFAULT_PARAMS, log_level="off")
    solution = Solution(  # without the solve's own per-period V: taken apart when read
        model=model, params=solved.params, values=solved.values, policies=solved.policies
    )
    before = split_periods._cache_size()
    periods = solution.value_function
    assert len(periods) == 4
    for t, value in enumerate(periods):
        np.testing.assert_array_equal(np.asarray(value), np.asarray(solution.values[t]))
    assert split_periods._cache_size() == before + 1  # one program for all periods


@pytest.mark.parametrize("limit", [2**24, 0], ids=["small-v-output-apart", "large-v-on-read"])
def test_value_function_is_the_solve_programs_output_where_v_is_small(monkeypatch, limit):
    from project.solver import memory, solution

    monkeypatch.setattr(memory, "PERIOD_OUTPUT_BYTES", limit)
    split = solution.split_periods
    splits = []
    monkeypatch.setattr(solution, "split_periods", lambda v: splits.append(1) or split(v))
    model = precautionary.build_model(n_wealth=12, n_consumption=9, n_periods=4)
    solved = solve(model=model, params=precautionary.DEFAULT_PARAMS)
    assert len(solved.value_function) == 4
    assert splits == ([] if limit else [1])
    for t, value in enumerate(solved.value_function):
        np.testing.assert_array_equal(np.asarray(value), np.asarray(solved.values[t]))


@pytest.mark.parametrize("r", [0.0, 0.03], ids=["shift-kernel", "row-kernel"])
def test_quiet_solves_equal_the_checked_solve_whether_or_not_the_params_are_known(r):
    """'off' reads the report only to learn the slopes of new params; known ones run blind."""
    model = precautionary.build_model(n_wealth=12, n_consumption=9, n_periods=4)
    params = precautionary.DEFAULT_PARAMS | {"r": r}
    new = solve(model=model, params=params, log_level="off")
    checked = solve(model=model, params=params)
    known = solve(model=model, params=params, log_level="off")
    other = solve(model=model, params=params | {"r": 0.03 - r}, log_level="off")
    assert set(checked.kernels) == {"shift" if r == 0 else "row"}
    assert set(other.kernels) == {"row" if r == 0 else "shift"}
    for quiet in (new, known):
        assert quiet.kernels == checked.kernels
        np.testing.assert_array_equal(np.asarray(quiet.values), np.asarray(checked.values))
        for action, indices in checked.policies.items():
            np.testing.assert_array_equal(np.asarray(quiet.policies[action]), np.asarray(indices))


def test_params_values_are_checked_until_a_solve_of_them_ran(monkeypatch):
    """Known params skip the check of their values; bad ones never become known."""
    from project.solver import solve as grid_solve

    check = grid_solve.check_param_values
    checked = []
    monkeypatch.setattr(
        grid_solve, "check_param_values", lambda **k: checked.append(1) or check(**k)
    )
    model = precautionary.build_model(n_wealth=12, n_consumption=9, n_periods=3)
    good = precautionary.DEFAULT_PARAMS
    for level in ("warning", "off", "warning"):
        solve(model=model, params=good, log_level=level)
    assert checked == [1]  # the first solve only
    for level in ("warning", "off", "warning"):
        with pytest.raises(ProjectError, match=r"\['beta'\] are not finite"):
            solve(model=model, params=good | {"beta": float("nan")}, log_level=level)
        with pytest.raises(ProjectError, match=r"discount factor 'beta' must be > 0"):
            solve(model=model, params=good | {"beta": -0.5}, log_level=level)
    assert len(checked) == 7
    solve(model=model, params=good | {"beta": 0.9}, log_level="off")
    assert len(checked) == 8  # new params: checked
