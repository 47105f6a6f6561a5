"""EV1 taste shocks in the grid solver: closed forms, the hard-max limit, kernels, simulation.

Oracles: (1) a two-period model with one 3-option discrete action whose log-sums and logit
probabilities are written out by hand; (2) a model with two discrete actions interleaved with
two continuous ones whose best continuous actions are grid points known in advance, so each
choice's value, the choice order and the conditional continuous actions are known exactly;
(3) the IJRS retirement model, whose taste-shock variant must reduce to the hard maximum.
"""

import math

import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
from oracles.choices import simulated_retirement

from project import (
    DiscreteGrid,
    LinSpacedGrid,
    Model,
    ModelSpecificationError,
    ParamsError,
    solve,
)
from project.grids import categories
from project.models import ijrs
from project.simulation import simulate
from project.solver.plan import plan_for


def log_utility(consumption):
    return jnp.log(consumption)


# ---------------------------------------------------------------------------------------------
# Model 1: one discrete state, one 3-option action, two periods (closed form by hand)
# ---------------------------------------------------------------------------------------------

BONUS = np.array([0.3, -0.2, 0.5])
GAIN, BETA_1 = 0.6, 0.9


def three_options(*, taste_shocks: bool = True) -> Model:
    """Return z in {0, 1}; options 0..2; option 2 leads to z = 1; option 0 is barred at z = 1."""
    return Model(
        name="three_options",
        states={"z": DiscreteGrid(categories("Z", ["low", "high"]))},
        actions={"option": DiscreteGrid(categories("Option", ["a", "b", "c"]))},
        functions={
            "utility": lambda z, option, bonus, gain: bonus[option] + gain * z * (option == 1),
            "next_z": lambda option: (option == 2).astype(jnp.int32),
        },
        constraints={"allowed": lambda z, option: ~((z == 1) & (option == 0))},
        n_periods=2,
        param_shapes={"bonus": (3,)},
        taste_shocks=taste_shocks,
    )


def three_options_params(scale: float) -> dict:
    return {"beta": BETA_1, "bonus": BONUS, "gain": GAIN, "taste_shock_scale": scale}


def closed_form_three_options(scale: float) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Return V_t(z) and P_t(option | z) for t = 0, 1, by hand."""
    z = np.arange(2)[:, None]
    option = np.arange(3)[None, :]
    utility = BONUS[option] + GAIN * z * (option == 1)
    feasible = ~((z == 1) & (option == 0))

    def log_sum_and_logit(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        weights = np.where(feasible, np.exp(values / scale), 0.0)
        total = scale * np.log(weights.sum(axis=1))
        return total, weights / weights.sum(axis=1, keepdims=True)

    value_1, prob_1 = log_sum_and_logit(utility)
    next_z = (option == 2).astype(int)
    value_0, prob_0 = log_sum_and_logit(utility + BETA_1 * value_1[next_z])
    return [value_0, value_1], [prob_0, prob_1]


@pytest.mark.parametrize("scale", [0.4, 2.0])
def test_three_options_log_sum_and_logit_match_the_closed_form(x64, scale):
    model = three_options()
    solution = solve(model=model, params=three_options_params(scale))
    values, probabilities = closed_form_three_options(scale)
    states = {"z": np.array([0, 1])}
    for period in range(2):
        np.testing.assert_allclose(solution.values[period], values[period], rtol=0, atol=1e-12)
        np.testing.assert_allclose(
            solution.value(period=period, states=states), values[period], rtol=0, atol=1e-12
        )
        got = solution.choice_probabilities(period=period, states=states)
        assert got.shape == (2, 3)
        np.testing.assert_allclose(got, probabilities[period], rtol=0, atol=1e-12)
        assert got[1, 0] == 0  # barred option
        # The policy is the most likely option.
        np.testing.assert_array_equal(
            solution.policies["option"][period], probabilities[period].argmax(axis=1)
        )


def test_discrete_actions_are_never_the_loop_action_with_taste_shocks():
    assert plan_for(three_options()).loop_action is None
    assert plan_for(three_options(taste_shocks=False)).loop_action == "option"


# ---------------------------------------------------------------------------------------------
# Model 2: discrete actions interleaved with continuous ones (choice order, conditional actions)
# ---------------------------------------------------------------------------------------------

EFFORT_GAIN, BETA_2 = 0.6, 0.95
BONUS_2 = np.array([0.1, 0.4, -0.3])


def interleaved(*, taste_shocks: bool = True) -> Model:
    """Return actions (effort, hours, option, extra); hours and extra peak on grid points.

    Each choice's value is bonus[option] + gain·z·effort (the squared terms vanish at the best
    hours 0.5·effort + 0.25·option and extra 0.5), so V and P are closed forms.
    """

    def utility(z, effort, hours, option, extra, bonus, gain):
        target = 0.5 * effort + 0.25 * option
        return bonus[option] + gain * z * effort - (hours - target) ** 2 - (extra - 0.5) ** 2

    return Model(
        name="interleaved",
        states={"z": DiscreteGrid(categories("Z", ["low", "high"]))},
        actions={
            "effort": DiscreteGrid(categories("Effort", ["low", "high"])),
            "hours": LinSpacedGrid(start=0, stop=1, n_points=5),
            "option": DiscreteGrid(categories("Option", ["a", "b", "c"])),
            "extra": LinSpacedGrid(start=0, stop=1, n_points=3),
        },
        functions={"utility": utility, "next_z": lambda z: z},
        n_periods=2,
        param_shapes={"bonus": (3,)},
        taste_shocks=taste_shocks,
    )


def interleaved_params(scale: float) -> dict:
    return {"beta": BETA_2, "bonus": BONUS_2, "gain": EFFORT_GAIN, "taste_shock_scale": scale}


def interleaved_closed_form(scale: float, period: int) -> tuple[np.ndarray, np.ndarray]:
    """Return V(z) and P(choice | z) with choices (effort, option) in C order."""
    z = np.arange(2)[:, None, None]
    choice = BONUS_2[None, None, :] + EFFORT_GAIN * z * np.arange(2)[None, :, None]
    choice = choice.reshape(2, 6)
    top = choice.max(axis=1, keepdims=True)
    last = top[:, 0] + scale * np.log(np.exp((choice - top) / scale).sum(axis=1))
    value = last if period == 1 else (1 + BETA_2) * last
    return value, np.exp((choice - last[:, None]) / scale)


def test_interleaved_choices_are_discrete_actions_in_c_order(x64):
    model = interleaved()
    solution = solve(model=model, params=interleaved_params(0.3))
    codes = solution.choice_codes
    np.testing.assert_array_equal(codes["effort"], [0, 0, 0, 1, 1, 1])
    np.testing.assert_array_equal(codes["option"], [0, 1, 2, 0, 1, 2])
    states = {"z": np.array([[0, 1], [1, 0]])}  # a 2-D state array keeps its shape
    for period in range(2):
        value, probabilities = interleaved_closed_form(0.3, period)
        np.testing.assert_allclose(solution.values[period], value, rtol=0, atol=1e-12)
        got = solution.choice_probabilities(period=period, states=states)
        assert got.shape == (2, 2, 6)
        np.testing.assert_allclose(got, probabilities[states["z"]], rtol=0, atol=1e-12)
        policy = solution.policy(period=period, states={"z": np.array([0, 1])})
        best = probabilities.argmax(axis=1)
        np.testing.assert_array_equal(policy["effort"], codes["effort"][best])
        np.testing.assert_array_equal(policy["option"], codes["option"][best])
        hours = 0.5 * policy["effort"] + 0.25 * codes["option"][best]
        np.testing.assert_allclose(policy["hours"], hours, rtol=0, atol=1e-12)
        np.testing.assert_allclose(policy["extra"], 0.5)


def test_simulated_choices_follow_the_logit_and_continuous_actions_follow_the_choice(x64):
    """Frequencies of the 6 choices within sampling error; hours set by the drawn choice."""
    model = interleaved()
    params = interleaved_params(0.3)
    solution = solve(model=model, params=params)
    n = 6000
    initial = {"z": np.repeat([0, 1], n // 2)}
    frame = simulate(
        params=params, initial_conditions=initial, solution=solution, seed=7
    ).to_dataframe(use_labels=False)
    effort, option = frame["effort"].to_numpy(), frame["option"].to_numpy()
    choice = effort * 3 + option
    np.testing.assert_allclose(frame["hours"], 0.5 * effort + 0.25 * option, rtol=0, atol=1e-12)
    np.testing.assert_allclose(frame["extra"], 0.5, rtol=0, atol=1e-12)
    for period in range(2):
        value, probabilities = interleaved_closed_form(0.3, period)
        rows = frame["period"].to_numpy() == period
        z = frame["z"].to_numpy()[rows]
        # The reported value is V, the log-sum.
        np.testing.assert_allclose(frame["value"][rows], value[z], rtol=0, atol=1e-12)
        for state in range(2):
            drawn = choice[rows][z == state]
            frequency = np.bincount(drawn, minlength=6) / drawn.size
            expected = probabilities[state]
            error = np.sqrt(expected * (1 - expected) / drawn.size)
            assert np.all(np.abs(frequency - expected) <= 4.5 * error + 1e-12), (
                period,
                state,
                frequency,
                expected,
            )
    # Draws differ between periods (stream per period) and subjects.
    by_subject = choice.reshape(n, 2)
    assert (by_subject[:, 0] != by_subject[:, 1]).mean() > 0.3


def test_choice_probabilities_without_taste_shocks_are_one_hot_at_the_policy():
    model = interleaved(taste_shocks=False)
    params = {k: v for k, v in interleaved_params(0.0).items() if k != "taste_shock_scale"}
    solution = solve(model=model, params=params)
    states = {"z": np.array([0, 1])}
    got = solution.choice_probabilities(period=0, states=states)
    policy = solution.policy(period=0, states=states)
    expected = np.zeros((2, 6))
    expected[np.arange(2), policy["effort"] * 3 + policy["option"]] = 1
    np.testing.assert_array_equal(got, expected)


def test_choice_probabilities_need_a_discrete_action():
    model = Model(
        name="cake",
        states={"wealth": LinSpacedGrid(start=1, stop=5, n_points=5)},
        actions={"consumption": LinSpacedGrid(start=1, stop=5, n_points=5)},
        functions={
            "utility": log_utility,
            "next_wealth": lambda wealth, consumption: wealth - consumption + 1,
        },
        constraints={"affordable": lambda wealth, consumption: consumption <= wealth},
        n_periods=2,
    )
    solution = solve(model=model, params={"beta": 0.9})
    with pytest.raises(ModelSpecificationError, match="'cake' has no discrete action"):
        solution.choice_probabilities(period=0, states={"wealth": 2.0})


# ---------------------------------------------------------------------------------------------
# Model 3: IJRS with taste shocks (hard-max limit, kernels, simulation)
# ---------------------------------------------------------------------------------------------

N_PERIODS_IJRS = 3


def with_taste_shocks(model: Model, **changes) -> Model:
    """Return ``model`` with taste shocks (and ``changes`` to its pieces)."""
    pieces = {
        "name": f"{model.name}_taste",
        "states": model.states,
        "actions": model.actions,
        "functions": model.functions,
        "constraints": model.constraints,
        "n_periods": model.n_periods,
        "taste_shocks": True,
    }
    return Model(**(pieces | changes))


@pytest.fixture(scope="module")
def ijrs_models():
    base = ijrs.build_model(n_wealth=20, n_consumption=39, n_periods=N_PERIODS_IJRS)
    return base, with_taste_shocks(base)


@pytest.mark.parametrize("exploit_structure", [True, False])
def test_scale_zero_is_exactly_the_model_without_taste_shocks(x64, ijrs_models, exploit_structure):
    base, taste = ijrs_models
    hard = solve(model=base, params=ijrs.DEFAULT_PARAMS, exploit_structure=exploit_structure)
    params = ijrs.DEFAULT_PARAMS | {"taste_shock_scale": 0.0}
    zero = solve(model=taste, params=params, exploit_structure=exploit_structure)
    assert zero.kernels == hard.kernels
    np.testing.assert_array_equal(np.asarray(zero.values), np.asarray(hard.values))
    for action in base.actions:
        np.testing.assert_array_equal(
            np.asarray(zero.policies[action]), np.asarray(hard.policies[action])
        )


def test_small_scales_converge_to_the_hard_maximum_within_the_log_sum_bound(x64, ijrs_models):
    """0 <= V_scale - V_0 <= scale·log(2)·(1 + beta + ... ) and the error shrinks with scale."""
    base, taste = ijrs_models
    hard = np.asarray(solve(model=base, params=ijrs.DEFAULT_PARAMS).values)
    beta = ijrs.DEFAULT_PARAMS["beta"]
    horizon = np.array([sum(beta**k for k in range(N_PERIODS_IJRS - t)) for t in range(3)])
    errors = []
    for scale in (1e-1, 1e-2, 1e-3):
        params = ijrs.DEFAULT_PARAMS | {"taste_shock_scale": scale}
        gap = np.asarray(solve(model=taste, params=params).values) - hard
        bound = scale * math.log(2) * horizon.reshape(-1, 1, 1)
        assert np.all(gap >= -1e-12)
        assert np.all(gap <= bound + 1e-12)
        errors.append(np.abs(gap).max())
    assert errors[0] > 0
    assert errors[0] > errors[1] >= errors[2]


@pytest.mark.parametrize(
    ("kernel", "n_consumption", "r"),
    [("shift", 30, 0.0), ("row", 30, 0.02), ("lattice", 39, 0.02)],
)
def test_structure_kernels_agree_with_the_general_kernel(x64, kernel, n_consumption, r):
    """Wealth step 21; consumption step 13.76 (no lattice) or 10.5 (lattice, any r)."""
    base = ijrs.build_model(n_wealth=20, n_consumption=n_consumption, n_periods=N_PERIODS_IJRS)
    taste = with_taste_shocks(base)
    params = ijrs.DEFAULT_PARAMS | {"r": r, "taste_shock_scale": 0.5}
    fast = solve(model=taste, params=params)
    general = solve(model=taste, params=params, exploit_structure=False)
    assert set(fast.kernels) == {kernel}
    assert set(general.kernels) == {"general"}
    np.testing.assert_allclose(
        np.asarray(fast.values), np.asarray(general.values), rtol=1e-12, atol=1e-12
    )


@pytest.fixture(scope="module")
def ijrs_taste_case(ijrs_models):
    _, taste = ijrs_models
    params = ijrs.DEFAULT_PARAMS | {"taste_shock_scale": 0.5}
    return taste, params, solve(model=taste, params=params)


def test_simulated_retirement_matches_the_mean_probability(ijrs_taste_case):
    taste, params, solution = ijrs_taste_case
    periods = simulated_retirement(model=taste, params=params, solution=solution)
    for _, states, probability in periods:
        assert 0.02 < probability.mean() < 0.98  # the draws matter
        # Retirement is absorbing: those retired before have probability one.
        retired = states["lagged_retirement"] == 1
        np.testing.assert_array_equal(probability[retired], 1.0)


def test_simulation_does_not_depend_on_subject_batch_size(ijrs_taste_case):
    _, params, solution = ijrs_taste_case
    rng = np.random.default_rng(4)
    initial = {"lagged_retirement": np.zeros(10, dtype=int), "wealth": rng.uniform(20, 120, 10)}
    frames = {
        batch: simulate(
            params=params,
            initial_conditions=initial,
            solution=solution,
            seed=5,
            subject_batch_size=batch,
        ).to_dataframe()
        for batch in (0, 3)  # one pass; chunks of 3 (padded: 3 does not divide 10)
    }
    retirement = frames[0]["retirement"].cat.codes.to_numpy().reshape(10, -1)
    assert (retirement[:, 0] == 0).any()
    assert (retirement[:, 1:] != retirement[:, :1]).any()
    for batch, frame in frames.items():
        pd.testing.assert_frame_equal(frame, frames[0], check_exact=True, obj=f"batch {batch}")


# ---------------------------------------------------------------------------------------------
# Bad inputs
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("scale", [float("nan"), -0.1])
def test_invalid_scale_raises_naming_the_parameter(scale):
    with pytest.raises(ParamsError, match="taste_shock_scale"):
        solve(model=three_options(), params=three_options_params(scale))


def test_missing_scale_raises_naming_the_parameter():
    params = three_options_params(1.0)
    del params["taste_shock_scale"]
    with pytest.raises(ParamsError, match="taste_shock_scale"):
        solve(model=three_options(), params=params)


@pytest.mark.parametrize(
    "actions",
    [
        {"consumption": LinSpacedGrid(start=1, stop=5, n_points=5)},
        {
            "consumption": LinSpacedGrid(start=1, stop=5, n_points=5),
            "single": DiscreteGrid(categories("Single", ["only"])),
        },
    ],
    ids=["no-discrete-action", "one-category"],
)
def test_taste_shocks_need_a_discrete_choice_with_two_options(actions):
    with pytest.raises(ModelSpecificationError, match="taste_shocks=True needs a discrete"):
        Model(
            name="no_choice",
            states={"wealth": LinSpacedGrid(start=1, stop=5, n_points=5)},
            actions=actions,
            functions={
                "utility": log_utility,
                "next_wealth": lambda wealth, consumption: wealth - consumption + 1,
            },
            n_periods=2,
            taste_shocks=True,
        )
