"""The life-cycle model normalised by permanent income (``project.models.lifecycle_normalised``).

Oracles: a retiree who cannot die and leaves no bequest is a perfect-foresight consumer with a
pension of one a year, whose consumption away from the borrowing limit has a closed form;
claiming is impossible before 62 and never forced; the profiles' validation refuses a profile
of the wrong length.
"""

import numpy as np
import pytest

from project.dispatch import solve
from project.errors import ParamsError
from project.models import lifecycle_normalised as model_module
from project.models import lifecycle_normalised_params as vendored
from project.models import normalised_units

AGES = np.arange(model_module.FIRST_AGE, model_module.LAST_AGE + 1)


@pytest.fixture(scope="module")
def solved():
    import jax

    jax.config.update("jax_enable_x64", True)
    try:
        params = vendored.default_params()
        yield params, solve(model=model_module.build_model(), params=params)
    finally:
        jax.config.update("jax_enable_x64", False)


def test_nobody_claims_before_62_and_the_old_do(solved, x64):
    """A claim is decided in the last working year: from 61 for a first pension at 62."""
    _, solution = solved
    wealth = {"wealth": np.array([0.5, 1.0, 3.0, 10.0])}
    for period, age in enumerate(AGES[:-1]):
        claims = np.asarray(
            solution.choice_probabilities(period=period, states=wealth, regime="working")
        )[:, 1]
        if age + model_module.CLAIM_LAG < model_module.EARLIEST_CLAIM:  # decided a year ahead
            assert np.all(claims == 0), age
        if age >= 75:
            assert np.all(claims > 0.99), age


def test_values_are_finite_and_rise_with_wealth(solved, x64):
    _, solution = solved
    wealth = {"wealth": np.linspace(0.2, 30.0, 40)}
    for regime in ("working", "retired"):
        for period in (0, 30, 45, 70):
            value = solution.value(period=period, states=wealth, regime=regime)
            assert np.all(np.isfinite(value)) and np.all(np.diff(value) > 0), (regime, period)


def test_an_immortal_retiree_without_bequest_is_the_perfect_foresight_consumer(x64):
    immortal = {"survival_probabilities": np.ones(AGES.size), "bequest_weight": 0.0}
    params = vendored.default_params() | immortal
    solution = solve(model=model_module.build_model(), params=params)
    beta, crra, rate = params["beta"], params["crra"], params["interest_factor"]
    growth = (beta * rate) ** (1 / crra) / rate
    for period in (50, 60, 70):
        remaining = AGES.size - 1 - period
        pensions = sum(rate**-s for s in range(1, remaining + 1))
        propensity = 1 / sum(growth**s for s in range(remaining + 1))
        wealth = np.array([20.0, 30.0])
        expected = propensity * (wealth + pensions)
        ours = solution.policy(period=period, states={"wealth": wealth}, regime="retired")
        np.testing.assert_allclose(ours["consumption"], expected, rtol=1e-6)


def test_a_profile_of_the_wrong_length_is_refused():
    short = {
        name: np.ones(AGES.size - 1)
        for name in ("income_growth", "permanent_shock_sd", "transitory_shock_sd", "survival")
    }
    with pytest.raises(ParamsError, match=r"one entry per age 25\.\.99"):
        model_module.model_params(**short)


@pytest.fixture(scope="module")
def panel(solved):
    """A small simulated panel of the solved model with its income units, and its seed."""
    import jax

    from project.config import SimulationSettings
    from project.simulation import draw_initial_conditions, simulate

    params, solution = solved
    jax.config.update("jax_enable_x64", True)
    try:
        model = solution.model
        initial = draw_initial_conditions(
            model=model,
            n_subjects=150,
            seed=1,
            distribution=SimulationSettings().initial_distribution,
        )
        frame = simulate(
            params=params, initial_conditions=initial, solution=solution, seed=7
        ).to_dataframe()
        units = {
            seed: normalised_units.income_units(panel=frame, model=model, params=params, seed=seed)
            for seed in (7, 8)
        }
        yield params, frame, units
    finally:
        jax.config.update("jax_enable_x64", False)


def _transitory_gap(params, frame, units):
    """Return how far each worker's implied transitory income lies from the nearest node.

    With the right units, m' = R (m - c) u / u' + theta' exactly: theta' is a node of the
    period's transitory income (or zero, unemployed).
    """
    following = frame.groupby("subject_id").shift(-1)
    next_units = np.roll(units, -1)
    rows = (
        (frame["regime"] == "working")
        & (frame["claim"] == "working")
        & (following["regime"] == "working")
    ).to_numpy()
    rate = params["interest_factor"]
    saved = (frame["wealth"] - frame["consumption"]).to_numpy()
    theta = following["wealth"].to_numpy() - rate * saved * units / next_units
    period = frame["period"].to_numpy()[rows]
    risk = np.asarray(params["unemployment_risk"])[period]
    nodes = np.asarray(params["transitory_nodes"])[period] / (1 - risk)[:, None]
    nodes = np.concatenate([nodes, np.zeros((rows.sum(), 1))], axis=1)
    return np.min(np.abs(nodes - theta[rows][:, None]), axis=1)


def test_income_units_are_the_normaliser_the_simulation_drew(panel):
    """The units redrawn after the simulation turn its normalised laws of motion into levels:
    a worker's implied transitory income is a node to rounding, a claimant's move to the
    pension is exact, a retiree's unit never moves; other draws (seed) break the first."""
    params, frame, units = panel
    ours, other = units[7], units[8]
    assert _transitory_gap(params, frame, ours).max() < 1e-10
    assert np.median(_transitory_gap(params, frame, other)) > 1e-3
    following = frame.groupby("subject_id").shift(-1)
    next_units = np.roll(ours, -1)
    claims = ((frame["claim"] == "claim") & (following["regime"] == "retired")).to_numpy()
    rate = params["interest_factor"]
    saved = (frame["wealth"] - frame["consumption"]).to_numpy()
    levels = following["wealth"].to_numpy() * next_units
    np.testing.assert_allclose(
        levels[claims], (rate * saved * ours + next_units)[claims], rtol=1e-12
    )
    retired = ((frame["regime"] == "retired") & (following["regime"] == "retired")).to_numpy()
    np.testing.assert_array_equal(next_units[retired], ours[retired])
    assert np.all(ours[frame["period"].to_numpy() == 0] == 1.0)
    assert np.isnan(ours[(frame["regime"] == "dead").to_numpy()]).all()


def test_income_units_need_the_panel_in_its_own_order(panel):
    params, frame, _ = panel
    shuffled = frame.sample(frac=1.0, random_state=0)
    with pytest.raises(ParamsError, match="sorted by subject_id, then period"):
        normalised_units.income_units(panel=shuffled, model=None, params=params, seed=7)


@pytest.mark.parametrize("calibration", ["notes2026", "hark2019"])
def test_the_working_profiles_stop_before_the_published_retirement_drop(calibration):
    """The published profiles end working life with a riskless transition that applies their
    replacement rate (0.6821 or 0.7); the model pays its own pension on a claim, so its
    income keeps growing by at most a few percent and stays risky at every age."""
    profiles = vendored.income_profiles(calibration=calibration)
    growth = profiles["income_growth"]
    assert growth.shape == AGES.shape
    assert np.all((growth > 0.95) & (growth < 1.05)), growth.min()
    assert np.all(profiles["permanent_shock_sd"] > 0) and np.all(
        profiles["transitory_shock_sd"] > 0
    )
    last = model_module.FIRST_AGE + vendored.working_years(calibration=calibration) - 1
    assert last == {"notes2026": 64, "hark2019": 63}[calibration]


def test_a_claim_decided_at_61_is_priced_at_the_factor_of_62():
    """The pension of a worker deciding at age t is the factor of her claiming age t + 1."""
    params = vendored.default_params()
    factors = np.asarray(params["claiming_factor"])
    at = {int(age): factors[i] for i, age in enumerate(AGES)}
    assert at[60] == 1.0  # no claim can be decided yet
    assert at[61] == model_module.CLAIMING_FACTORS[62]
    assert at[66] == model_module.CLAIMING_FACTORS[67] == 1.0
    assert at[69] == at[80] == model_module.CLAIMING_FACTORS[70]
    allowed = model_module.claim_age(np.array([1, 1, 0]), np.array([60.0, 61.0, 30.0]))
    assert np.asarray(allowed).tolist() == [False, True, True]


@pytest.mark.parametrize("taste_shocks", [False, True])
def test_a_period_allowing_one_choice_is_read_from_it_alone_to_the_bit(x64, taste_shocks):
    """Before the earliest claim every context allows working only: the simulation reads that
    choice alone (``only_choice_evaluator``), and its choice, consumption, V and probabilities
    equal those of reading every choice (``point_evaluator``) bit for bit, constrained states
    included, with taste shocks too (the log-sum of a value and -inf is the value)."""
    import jax
    import jax.numpy as jnp

    from project.egm.solution import only_choice_evaluator, point_evaluator

    params = vendored.default_params()
    if not taste_shocks:
        params.pop("taste_shock_scale")
    solution = solve(model=model_module.build_model(taste_shocks=taste_shocks), params=params)
    working = solution.solution("working")
    view = solution.model.regimes["working"]
    wealth = jnp.concatenate([jnp.geomspace(1e-4, 30.0, 400), jnp.asarray([0.0, 1e-9, 45.0])])
    codes = jnp.zeros((wealth.size, 0), dtype=jnp.int32)
    values = {k: jnp.asarray(v) for k, v in working.params.items()}
    limit = working.savings[0]
    singles = []
    for period in (0, 15, 35, 36, 50):
        arrays = working.period_arrays(period)
        single = bool(jnp.all(jnp.sum(arrays.feasible, axis=-1) == 1))
        singles.append(single)
        if not single:
            continue
        age = jnp.asarray(AGES[period], dtype=wealth.dtype)
        read = {
            name: jax.jit(
                jax.vmap(evaluator(view, unroll=True), in_axes=(None, 0, 0, None, None, None, None))
            )(arrays, codes, wealth, values, jnp.int32(period), age, limit)
            for name, evaluator in (("all", point_evaluator), ("one", only_choice_evaluator))
        }
        every, one = read["all"], read["one"]
        np.testing.assert_array_equal(one.choice, every.choice)
        np.testing.assert_array_equal(one.value, every.value)
        chosen = np.arange(wealth.size), np.asarray(every.choice)
        np.testing.assert_array_equal(
            np.asarray(one.choice_consumption)[chosen], np.asarray(every.choice_consumption)[chosen]
        )
        np.testing.assert_array_equal(one.probability, every.probability)
    # working ages before 61 allow one choice; from 61 on, the claim too
    assert singles == [True, True, True, False, False]
