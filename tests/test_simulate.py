"""Forward simulation: chunk invariance, seeds, draws, closed form, solver agreement, inputs.

Models are kept small: every distinct chunk shape compiles the simulation step once per model,
so the module-scoped solutions below are shared and the chunk shapes are reused where possible.
"""

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
from test_cake_eating import (
    BETA,
    COMPARE_FROM,
    HIGH,
    LOW,
    RHO,
    R,
    T,
    build_cake_model,
    derived_bounds,
    remaining_sum,
)
from test_cake_eating import N as N_CAKE

from project import (
    InitialConditionsError,
    InitialStateOutsideGridError,
    LinSpacedGrid,
    LogSpacedGrid,
    Model,
    solve,
)
from project.models import ijrs, lifecycle, precautionary
from project.models.income import rouwenhorst_matrix
from project.simulation import (
    draw_initial_conditions,
    simulate,
    validate_initial_conditions,
)
from project.simulation.keys import draw_category, subject_keys

N_SUBJECTS = 10
N_DRAWS = 20_000
DRAW_BATCH = 5_000  # also the "> N" batch size below: one compiled chunk shape fewer
BATCH_SIZES = (0, 1, 7, N_SUBJECTS, DRAW_BATCH)  # 7 does not divide 10; 5,000 > 10
N_INCOME, INCOME_RHO = 5, 0.9


# ---------------------------------------------------------------------------------------------
# Shared solutions (float32, the default precision)
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def precautionary_case():
    model = precautionary.build_model(n_wealth=20, n_consumption=15, n_periods=4)
    params = precautionary.DEFAULT_PARAMS
    return model, params, solve(model=model, params=params)


@pytest.fixture(scope="module")
def lifecycle_case():
    model = lifecycle.build_model(n_wealth=12, n_consumption=12, n_periods=4, start_age=66)
    params = lifecycle.DEFAULT_PARAMS
    return model, params, solve(model=model, params=params)


@pytest.fixture(scope="module")
def ijrs_case():
    model = ijrs.build_model(n_wealth=30, n_consumption=60, n_periods=3)
    params = ijrs.DEFAULT_PARAMS
    return model, params, solve(model=model, params=params)


def precautionary_initial(n: int = N_SUBJECTS) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(11)
    return {"income": rng.integers(0, N_INCOME, n), "wealth": rng.uniform(1.5, 19.5, n)}


def lifecycle_initial(n: int = N_SUBJECTS) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(12)
    return {
        "pref_type": rng.integers(0, 2, n),
        "lagged_retirement": rng.integers(0, 2, n),
        "income": rng.integers(0, N_INCOME, n),
        "wealth": rng.uniform(0.5, 19.5, n),
    }


# ---------------------------------------------------------------------------------------------
# 1. subject_batch_size invariance
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "initial"),
    [("precautionary_case", precautionary_initial), ("lifecycle_case", lifecycle_initial)],
)
def test_results_do_not_depend_on_subject_batch_size(request, case, initial):
    """Chunks of 1, 7 (not dividing N), N and > N give exactly the frame of one pass."""
    _, params, solution = request.getfixturevalue(case)
    conditions = initial()
    frames = {
        batch: simulate(
            params=params,
            initial_conditions=conditions,
            solution=solution,
            seed=5,
            subject_batch_size=batch,
        ).to_dataframe()
        for batch in BATCH_SIZES
    }
    reference = frames[0]
    assert len(reference) == N_SUBJECTS * solution.model.n_periods
    # The draws matter: some subject's income changes over time, so a chunk-dependent key
    # (e.g. the position inside the chunk instead of the global subject id) would show.
    income = reference["income"].cat.codes.to_numpy().reshape(N_SUBJECTS, -1)
    assert (income[:, 1:] != income[:, :1]).any()
    for batch, frame in frames.items():
        pd.testing.assert_frame_equal(frame, reference, check_exact=True, obj=f"batch {batch}")


# ---------------------------------------------------------------------------------------------
# 2. Seeds
# ---------------------------------------------------------------------------------------------


def test_same_seed_gives_byte_identical_results(precautionary_case):
    _, params, solution = precautionary_case
    runs = [
        simulate(
            params=params,
            initial_conditions=precautionary_initial(),
            solution=solution,
            seed=123,
            subject_batch_size=N_SUBJECTS,
        )
        for _ in range(2)
    ]
    first, second = (r.to_dataframe() for r in runs)
    pd.testing.assert_frame_equal(first, second, check_exact=True)
    codes = [r.to_dataframe(use_labels=False) for r in runs]
    for column in codes[0]:
        assert codes[0][column].dtype == codes[1][column].dtype
        assert codes[0][column].to_numpy().tobytes() == codes[1][column].to_numpy().tobytes()
    assert codes[0].to_numpy().tobytes() == codes[1].to_numpy().tobytes()


def test_different_seeds_give_different_income_draws(precautionary_case):
    _, params, solution = precautionary_case
    conditions = {"income": np.full(N_DRAWS, 2), "wealth": np.full(N_DRAWS, 10.0)}
    income = [
        simulate(
            params=params,
            initial_conditions=conditions,
            solution=solution,
            seed=seed,
            subject_batch_size=DRAW_BATCH,
        ).columns["income"]
        for seed in (1, 2)
    ]
    np.testing.assert_array_equal(income[0][:, 0], income[1][:, 0])  # the given start
    differing = (income[0][:, 1:] != income[1][:, 1:]).mean()
    # Two independent draws from a row of the Rouwenhorst matrix agree with probability
    # sum_k p_k^2 < 0.7 for every row at rho = 0.9; identical seeds would give 0.
    assert differing > 0.2


# ---------------------------------------------------------------------------------------------
# 3. Draws follow the transition probabilities
# ---------------------------------------------------------------------------------------------


def assert_frequencies_match(draws: np.ndarray, probabilities: np.ndarray, what: str) -> None:
    """Every category's share lies within 5 binomial standard errors of its probability."""
    n = draws.size
    share = np.bincount(draws, minlength=probabilities.size) / n
    standard_error = np.sqrt(probabilities * (1 - probabilities) / n)
    tolerance = 5 * standard_error + 1e-12
    assert np.all(np.abs(share - probabilities) <= tolerance), (
        f"{what}: shares {share} vs probabilities {probabilities} (tolerance {tolerance})"
    )


@pytest.mark.parametrize("start_node", [0, 1])
def test_income_draws_follow_the_rouwenhorst_rows(precautionary_case, start_node):
    """Next period's income matches the start node's row; later ones match the current row."""
    _, params, solution = precautionary_case
    matrix = np.asarray(rouwenhorst_matrix(n_nodes=N_INCOME, rho=INCOME_RHO), dtype=float)
    result = simulate(
        params=params,
        initial_conditions={
            "income": np.full(N_DRAWS, start_node),
            "wealth": np.full(N_DRAWS, 10.0),
        },
        solution=solution,
        seed=2024 + start_node,
        subject_batch_size=DRAW_BATCH,
    )
    income = result.columns["income"]
    assert (income[:, 0] == start_node).all()
    assert_frequencies_match(income[:, 1], matrix[start_node], f"from node {start_node}")
    # Period 1 -> 2, conditional on the node reached in period 1 (rows with enough subjects).
    for node in range(N_INCOME):
        reached = income[:, 1] == node
        if reached.sum() >= 1_000:
            assert_frequencies_match(income[reached, 2], matrix[node], f"1->2 from node {node}")


@partial(jax.jit, static_argnames=("n",))
def draw_many(seed, period, probabilities, *, n, stream):
    """Draw for subjects 0..n-1 in ``period`` with the simulation's keys, on one stream."""
    keys = subject_keys(seed=seed, subject_ids=jnp.arange(n, dtype=jnp.int32), period=period)
    return jax.vmap(lambda k: draw_category(key=k, probabilities=probabilities, stream=stream))(
        keys
    )


@pytest.mark.parametrize(
    "probabilities",
    [[0.1, 0.0, 0.3, 0.6], [0.25, 0.25, 0.25, 0.25], [0.0, 0.0, 0.0, 1.0], [0.7, 0.3, 0.0, 0.0]],
)
def test_draw_category_frequencies(probabilities):
    n = 100_000
    p = jnp.asarray(probabilities, dtype=jnp.float32)
    draws = np.asarray(draw_many(7, 0, p, n=n, stream=0))
    assert draws.dtype == np.int32
    assert draws.min() >= 0 and draws.max() < p.size
    expected = np.asarray(probabilities)
    assert (np.bincount(draws, minlength=p.size)[expected == 0] == 0).all(), "p = 0 drawn"
    assert_frequencies_match(draws, expected, f"draw_category {probabilities}")
    # Unnormalised weights give the very same draws (the CDF is divided by its total).
    np.testing.assert_array_equal(draws, np.asarray(draw_many(7, 0, 3.0 * p, n=n, stream=0)))


def test_draw_category_streams_periods_and_subjects_are_independent():
    n = 100_000
    p = jnp.full(2, 0.5, dtype=jnp.float32)
    base = np.asarray(draw_many(3, 1, p, n=n, stream=0))
    others = {
        "stream 1": np.asarray(draw_many(3, 1, p, n=n, stream=1)),
        "period 2": np.asarray(draw_many(3, 2, p, n=n, stream=0)),
        "seed 4": np.asarray(draw_many(4, 1, p, n=n, stream=0)),
        "next subject": np.roll(base, 1),
    }
    # Independent fair coins agree on half the subjects, within 5 standard errors.
    tolerance = 5 * np.sqrt(0.25 / n)
    for name, other in others.items():
        assert abs((base == other).mean() - 0.5) <= tolerance, name


# ---------------------------------------------------------------------------------------------
# 4. Cake eating against its closed form, from off-grid wealth
# ---------------------------------------------------------------------------------------------

CAKE_PARAMS = {"beta": BETA, "crra": RHO, "interest_factor": R}
CAKE_STEP = (HIGH - LOW) / (N_CAKE - 1)  # wealth step h = consumption step dc


def cake_bounds(period: int, wealth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return (policy bound, value bound) of a simulated subject at exact wealth ``wealth``.

    The simulation maximises Q_grid(c) = u(c) + beta V~(R (w - c)) over the consumption grid at
    the exact, off-grid w, where V~ interpolates the grid V of period t+1 linearly. With
    dc = h the grid step and c* = w / S_t, exactly as in test_cake_eating.py:

    - V~ lies below V_{t+1} (grid V <= exact V at the bracketing nodes, which
      test_cake_eating.py checks on [1, 10]; the test asserts the simulated next wealth lies in
      [1 + h, 10]), and below it by at most e_{t+1} + h^2/8 max|V''_{t+1}|, e_{t+1} the
      derived value bound of period t+1, max|V''| taken at the lowest next wealth reachable
      from the grid point c_near nearest c* (next wealth >= R (w - c* - dc)). So
      eps = beta (e_{t+1} + interpolation).
    - c_near is within dc/2 of c*, so Q(c*) - Q(c_near) <= 1/2 q_max (dc/2)^2 with
      q_max = rho (c* - dc)^(-rho-1) + beta R^2 max|V''_{t+1}|.
    - Q_exact(chosen) >= Q_grid(chosen) >= Q_grid(c_near) >= Q_exact(c*) - choice - eps, and
      Q_exact is concave with |Q''| >= |u''(c)| = rho c^(-rho-1) >= q_min = rho (c* + b)^(-rho-1)
      on [c* - b, c* + b], so (chosen - c*)^2 <= b^2 = 2 (eps + choice) / q_min. b appears in
      q_min: it is found as the fixed point of this equation (the right side grows with b).

    The value: V_sim = max Q_grid <= max Q_exact = v_t(w), and V_sim >= Q_grid(c_near) >=
    v_t(w) - choice - eps. In the terminal period the simulation eats the largest grid point
    c <= w, so 0 <= w - c < dc and 0 <= v_T(w) - V_sim <= u'(w - dc) dc = (w - dc)^(-rho) dc.
    """
    dc = h = CAKE_STEP
    if period == T - 1:
        return np.full_like(wealth, dc), (wealth - dc) ** (-RHO) * dc
    value_bound = derived_bounds()[0]
    s_now, s_next = remaining_sum(period), remaining_sum(period + 1)
    c_star = wealth / s_now
    next_min = R * (wealth - c_star - dc)
    curvature_next = RHO * s_next**RHO * next_min ** (-RHO - 1)
    interpolation = h**2 / 8 * curvature_next
    q_max = RHO * (c_star - dc) ** (-RHO - 1) + BETA * R**2 * curvature_next
    eps = BETA * (value_bound[period + 1] + interpolation)
    choice = 0.5 * q_max * (dc / 2) ** 2
    b = np.full_like(wealth, dc)
    for _ in range(200):
        updated = np.sqrt(2 * (eps + choice) / (RHO * (c_star + b) ** (-RHO - 1)))
        if np.allclose(updated, b, rtol=1e-12, atol=0):
            break
        b = updated
    else:
        pytest.fail("the policy bound's fixed point did not converge")
    return b, eps + choice


@pytest.fixture(scope="module")
def cake_cache():
    return {}


@pytest.fixture
def cake_simulation(x64, cake_cache):
    """Solve and simulate once in float64; later tests reuse the (numpy) result."""
    if "result" not in cake_cache:
        cake_cache["result"] = simulate_cake()
    return cake_cache["result"]


def simulate_cake():
    model = build_cake_model()
    solution = solve(model=model, params=CAKE_PARAMS)
    rng = np.random.default_rng(4)
    wealth = np.sort(np.concatenate([rng.uniform(2.0, 9.0, 30), [2.0 + 1e-3, 9.0 - 1e-3]]))
    grid = np.linspace(LOW, HIGH, N_CAKE)
    assert np.abs(wealth[:, None] - grid[None, :]).min() > 1e-6, "starts must be off the grid"
    result = simulate(
        params=CAKE_PARAMS, initial_conditions={"wealth": wealth}, solution=solution, seed=0
    )
    assert result.columns["wealth"].dtype == np.float64
    return result


def test_cake_wealth_follows_its_law_of_motion_exactly(cake_simulation):
    wealth = cake_simulation.columns["wealth"]
    consumption = cake_simulation.columns["consumption"]
    np.testing.assert_array_equal(wealth[:, 1:], R * (wealth[:, :-1] - consumption[:, :-1]))


def test_cake_consumption_matches_closed_form_within_grid_bound(cake_simulation):
    wealth = cake_simulation.columns["wealth"]
    consumption = cake_simulation.columns["consumption"]
    assert wealth[:, 1 : T - 1].min() >= COMPARE_FROM + CAKE_STEP  # where the bounds hold
    assert wealth.max() <= HIGH
    for period in range(T):
        w = wealth[:, period]
        exact = w / remaining_sum(period)
        bound, _ = cake_bounds(period, w)
        error = consumption[:, period] - exact
        assert np.all(np.abs(error) <= bound + 1e-9), (
            f"period {period}: max error {np.abs(error).max()} vs bound {bound.min()}"
        )
    # The terminal period eats the largest affordable grid point: never more than the cake.
    assert np.all(consumption[:, T - 1] <= wealth[:, T - 1])


def test_cake_simulated_value_matches_closed_form_within_grid_bound(cake_simulation):
    wealth = cake_simulation.columns["wealth"]
    value = cake_simulation.columns["value"]
    for period in range(T):
        w = wealth[:, period]
        exact = remaining_sum(period) ** RHO * w ** (1 - RHO) / (1 - RHO)
        _, bound = cake_bounds(period, w)
        error = value[:, period] - exact
        assert error.max() <= 1e-9, f"period {period}: simulated value above the exact value"
        assert np.all(error >= -bound - 1e-9), f"period {period}: {error.min()} vs {-bound}"


def test_cake_bound_rejects_the_next_periods_policy(cake_simulation):
    """The tolerance is not vacuous: eating w / S_{t+1} instead of w / S_t leaves it."""
    wealth = cake_simulation.columns["wealth"]
    for period in range(T - 1):
        w = wealth[:, period]
        wrong = w / remaining_sum(period + 1) - w / remaining_sum(period)
        assert np.all(np.abs(wrong) > cake_bounds(period, w)[0])


# ---------------------------------------------------------------------------------------------
# 5. Agreement with the solution at on-grid states
# ---------------------------------------------------------------------------------------------


def on_grid_states(model: Model) -> tuple[dict[str, np.ndarray], tuple[np.ndarray, ...]]:
    """Return every grid point as one subject, and the matching index into V's axes."""
    points = [np.asarray(model.states[s].to_jax()) for s in model.state_names]
    indices = np.meshgrid(*[np.arange(p.size) for p in points], indexing="ij")
    flat = tuple(i.ravel() for i in indices)
    return {s: p[i] for s, p, i in zip(model.state_names, points, flat, strict=True)}, flat


@pytest.mark.parametrize("case", ["ijrs_case", "precautionary_case"])
def test_simulation_at_grid_points_reproduces_the_solution(request, case):
    model, params, solution = request.getfixturevalue(case)
    initial, index = on_grid_states(model)
    # precautionary: 100 subjects in chunks of the shape compiled above; ijrs: one pass.
    batch = N_SUBJECTS if case == "precautionary_case" else 0
    result = simulate(
        params=params,
        initial_conditions=initial,
        solution=solution,
        seed=0,
        subject_batch_size=batch,
    )
    value = np.asarray(solution.value_function[0])[index]
    np.testing.assert_allclose(result.columns["value"][:, 0], value, rtol=1e-6, atol=1e-6)
    for action, chosen in solution.policy_values(period=0).items():
        np.testing.assert_array_equal(result.columns[action][:, 0], np.asarray(chosen)[index])


def test_ijrs_initial_conditions_as_labels_codes_and_dataframe_agree(ijrs_case):
    model, params, solution = ijrs_case
    initial, _ = on_grid_states(model)
    labels = np.asarray(["working", "retired"])[initial["lagged_retirement"]]
    variants = {
        "codes": initial,
        "labels": {"lagged_retirement": labels, "wealth": initial["wealth"]},
        "frame": pd.DataFrame(initial),
        "categorical": pd.DataFrame(
            {
                "wealth": initial["wealth"],
                "lagged_retirement": pd.Categorical(labels, categories=["working", "retired"]),
            }
        ),
    }
    frames = {
        name: simulate(
            params=params, initial_conditions=conditions, solution=solution, seed=1
        ).to_dataframe()
        for name, conditions in variants.items()
    }
    for name, frame in frames.items():
        pd.testing.assert_frame_equal(frame, frames["codes"], check_exact=True, obj=name)


# ---------------------------------------------------------------------------------------------
# 6. Invalid initial conditions
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("conditions", "match"),
    [
        ({"wealth": [10.0]}, r"missing states \['lagged_retirement'\]"),
        (
            {"lagged_retirement": [0], "wealth": [10.0], "income": [0]},
            r"unknown states \['income'\]",
        ),
        ({"lagged_retirement": [0, 1], "wealth": [10.0]}, "equal length"),
        ({"lagged_retirement": [], "wealth": []}, "non-empty"),
        (
            {"lagged_retirement": ["working", "sleeping", "retired"], "wealth": [10.0] * 3},
            r"subjects \[1\] \(1 in all\).*'sleeping'",
        ),
        (
            {"lagged_retirement": [0, 7, 1, -1], "wealth": [10.0] * 4},
            r"subjects \[1, 3\] \(2 in all\) have codes outside 0\.\.1",
        ),
        (
            {"lagged_retirement": [0, 0.5], "wealth": [10.0] * 2},
            r"subjects \[1\] \(1 in all\) have codes outside",
        ),
        (
            {"lagged_retirement": [0, 0, 0], "wealth": [10.0, np.nan, np.inf]},
            r"'wealth': subjects \[1, 2\] \(2 in all\) have non-finite values",
        ),
        (
            {"lagged_retirement": [0, 0, 0], "wealth": [0.5, 10.0, 401.0]},
            r"'wealth': subjects \[0, 2\] \(2 in all\) have values \[0\.5, 401\.0\] outside "
            r"the range \[1\.0, 400\.0\] of grid 'wealth'",
        ),
        (
            {"lagged_retirement": [0] * 8, "wealth": [-1.0] * 8},
            r"subjects \[0, 1, 2, 3, 4, \.\.\.\] \(8 in all\)",
        ),
        ({"lagged_retirement": [0, 0], "wealth": ["a", "b"]}, "'wealth' must be numeric"),
    ],
    ids=[
        "missing",
        "unknown",
        "unequal-lengths",
        "empty",
        "invalid-label",
        "invalid-code",
        "fractional-code",
        "non-finite",
        "outside-grid",
        "many-subjects",
        "non-numeric",
    ],
)
def test_bad_initial_conditions_raise(ijrs_case, conditions, match):
    model, params, solution = ijrs_case
    with pytest.raises(InitialConditionsError, match=match):
        validate_initial_conditions(model=model, initial_conditions=conditions)
    with pytest.raises(InitialConditionsError, match=match):
        simulate(params=params, initial_conditions=conditions, solution=solution, seed=0)


@pytest.mark.parametrize("frame", [False, True])
def test_labels_codes_and_categoricals_are_accepted(ijrs_case, frame):
    model, _, _ = ijrs_case
    wealth = [1.0, 17.5, 400.0]
    variants = [
        {"lagged_retirement": [0, 1, 0], "wealth": wealth},
        {"lagged_retirement": np.asarray([0, 1, 0], dtype=np.int8), "wealth": wealth},
        {"lagged_retirement": ["working", "retired", "working"], "wealth": wealth},
        {
            "lagged_retirement": pd.Categorical(
                ["working", "retired", "working"], categories=["retired", "working"]
            ),
            "wealth": wealth,
        },
    ]
    for conditions in variants:
        given = pd.DataFrame(conditions) if frame else conditions
        validated = validate_initial_conditions(model=model, initial_conditions=given)
        assert validated["lagged_retirement"].dtype == np.int32
        np.testing.assert_array_equal(validated["lagged_retirement"], [0, 1, 0])
        np.testing.assert_array_equal(validated["wealth"], wealth)


def test_wealth_at_the_grid_bounds_is_accepted_in_float32(lifecycle_case):
    model, _, _ = lifecycle_case
    conditions = {
        "pref_type": [0, 1],
        "lagged_retirement": [0, 0],
        "income": [2, 2],
        "wealth": [0.2, 20.0],  # exactly the grid's start and stop
    }
    validated = validate_initial_conditions(model=model, initial_conditions=conditions)
    np.testing.assert_array_equal(validated["wealth"], [0.2, 20.0])
    drawn = draw_initial_conditions(
        model=model,
        n_subjects=20_000,
        seed=20_261_122,
        distribution={
            "pref_type": {"probabilities": [0.5, 0.5]},
            "lagged_retirement": {"label": "working"},
            "income": {"label": "node_2"},
            "wealth": {"lognormal": [0.5, 0.6], "clip": [0.2, 20.0]},
        },
    )
    assert drawn["wealth"].min() == pytest.approx(0.2)


@pytest.mark.parametrize("precision", ["float32", "float64"])
def test_simulation_from_the_first_point_of_a_log_grid_is_accepted(request, precision):
    """exp(log(0.1)) is 0.10000000000000002: the grid's first point must be 0.1 itself."""
    if precision == "float64":
        request.getfixturevalue("x64")
    model = build_log_wealth_model()
    solution = solve(model=model, params={"beta": 0.9}, log_level="off")
    wealth = [0.1, 10.0, 1.0]
    result = simulate(
        params={"beta": 0.9}, initial_conditions={"wealth": wealth}, solution=solution, seed=0
    )
    expected = np.asarray(wealth, dtype=precision)
    assert result.columns["wealth"][:, 0].tobytes() == expected.tobytes()
    assert np.isfinite(result.columns["value"]).all()


def test_wealth_just_below_a_log_grid_names_the_grid_the_value_and_the_range(x64):
    model = build_log_wealth_model()
    below = np.nextafter(0.1, 0.0)
    with pytest.raises(InitialStateOutsideGridError) as info:
        validate_initial_conditions(model=model, initial_conditions={"wealth": [1.0, below]})
    assert isinstance(info.value, InitialConditionsError)
    message = str(info.value)
    assert message.startswith("Initial state 'wealth': subjects [1] (1 in all)")
    assert "values [0.09999999999999999]" in message
    assert "outside the range [0.1, 10.0] of grid 'log_wealth'" in message
    assert "widen the grid" in message


def log_utility(consumption):
    return jnp.log(consumption)


def build_needs_one_model() -> Model:
    """Consumption of at least 1 is required, so wealth below 1 has no feasible action."""
    return Model(
        name="needs_one",
        states={"wealth": LinSpacedGrid(start=0.5, stop=6.0, n_points=12, name="wealth")},
        actions={"consumption": LinSpacedGrid(start=1.0, stop=6.0, n_points=11, name="c")},
        functions={
            "utility": log_utility,
            "next_wealth": lambda wealth, consumption: wealth - consumption + 2.0,
        },
        constraints={"affordable": lambda consumption, wealth: consumption <= wealth},
        n_periods=2,
    )


def build_log_wealth_model() -> Model:
    """Wealth on a log grid from 0.1: the first point of a log grid used to miss its start."""
    return Model(
        name="log_wealth",
        states={"wealth": LogSpacedGrid(start=0.1, stop=10.0, n_points=15, name="log_wealth")},
        actions={"consumption": LinSpacedGrid(start=0.01, stop=10.0, n_points=20, name="c")},
        functions={
            "utility": log_utility,
            "next_wealth": lambda wealth, consumption: 1.05 * (wealth - consumption) + 0.2,
        },
        constraints={"affordable": lambda consumption, wealth: consumption <= wealth},
        n_periods=2,
    )


def test_subjects_without_a_feasible_first_action_are_named():
    model = build_needs_one_model()
    solution = solve(model=model, params={"beta": 0.9}, log_level="off")
    conditions = {"wealth": np.array([2.0, 0.6, 3.0, 0.99, 1.0])}
    with pytest.raises(InitialConditionsError, match=r"subjects \[1, 3\] \(2 in all\) have no"):
        simulate(params={"beta": 0.9}, initial_conditions=conditions, solution=solution, seed=0)
    feasible = simulate(
        params={"beta": 0.9},
        initial_conditions={"wealth": np.array([2.0, 3.0, 1.0, 4.5, 6.0])},
        solution=solution,
        seed=0,
    )
    assert np.isfinite(feasible.columns["value"]).all()


@pytest.mark.parametrize("batch", [-1, 2.5, True, "3", None])
def test_invalid_subject_batch_size_raises(precautionary_case, batch):
    _, params, solution = precautionary_case
    with pytest.raises(InitialConditionsError, match="subject_batch_size"):
        simulate(
            params=params,
            initial_conditions=precautionary_initial(),
            solution=solution,
            seed=0,
            subject_batch_size=batch,
        )


# ---------------------------------------------------------------------------------------------
# 7. Starting in a later period
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "initial", "start_period"),
    [
        ("precautionary_case", precautionary_initial, 1),
        # Not 3: a subject's wealth in period 3 lies below the grid (it was extrapolated).
        ("precautionary_case", precautionary_initial, 2),
        ("lifecycle_case", lifecycle_initial, 1),
        ("lifecycle_case", lifecycle_initial, 3),  # the last period alone
    ],
)
def test_simulation_from_period_k_continues_the_full_run_exactly(
    request, case, initial, start_period
):
    """Draws use the true period: restarting from the states in period k changes nothing."""
    model, params, solution = request.getfixturevalue(case)
    full = simulate(params=params, initial_conditions=initial(), solution=solution, seed=5)
    at_k = {name: full.columns[name][:, start_period] for name in model.state_names}
    late = simulate(
        params=params,
        initial_conditions=at_k,
        solution=solution,
        seed=5,
        start_period=start_period,
    )
    assert (full.start_period, late.start_period) == (0, start_period)
    assert list(late.periods) == list(range(start_period, model.n_periods))
    assert late.ages == full.ages
    for name, values in full.columns.items():
        expected = np.ascontiguousarray(values[:, start_period:])
        assert late.columns[name].shape == expected.shape, name
        assert late.columns[name].dtype == expected.dtype, name
        assert late.columns[name].tobytes() == expected.tobytes(), name
    if start_period == 1:
        # The draws matter: income changes after period 1 for some subject.
        income = late.columns["income"]
        assert (income[:, 1:] != income[:, :1]).any()
    frame = late.to_dataframe(additional_targets="all")
    expected_frame = full.to_dataframe(additional_targets="all")
    expected_frame = expected_frame[expected_frame["period"] >= start_period]
    pd.testing.assert_frame_equal(frame, expected_frame.reset_index(drop=True), check_exact=True)
    assert frame["period"].iloc[0] == start_period
    assert frame["age"].iloc[0] == model.ages[start_period]


@pytest.mark.parametrize(
    ("start_period", "match"),
    [
        (-1, r"start_period=-1 is not a period of the model, which has periods 0\.\.3\. Give"),
        (4, r"start_period=4 is not a period of the model, which has periods 0\.\.3"),
        (1.0, r"start_period must be an int, got 1\.0 \(float\)\. Give the period .* 0\.\.3"),
        ("1", r"start_period must be an int, got '1' \(str\)"),
        (True, r"start_period must be an int, got True \(bool\)"),
        (None, r"start_period must be an int, got None"),
    ],
)
def test_invalid_start_period_raises(precautionary_case, start_period, match):
    _, params, solution = precautionary_case
    with pytest.raises(InitialConditionsError, match=match):
        simulate(
            params=params,
            initial_conditions=precautionary_initial(),
            solution=solution,
            seed=0,
            start_period=start_period,
        )


def test_numpy_int_start_period_is_accepted(precautionary_case):
    _, params, solution = precautionary_case
    result = simulate(
        params=params,
        initial_conditions=precautionary_initial(),
        solution=solution,
        seed=0,
        start_period=np.int64(2),
    )
    assert result.start_period == 2
    assert type(result.start_period) is int
    assert result.columns["value"].shape == (N_SUBJECTS, 2)


# ---------------------------------------------------------------------------------------------
# 8. draw_initial_conditions
# ---------------------------------------------------------------------------------------------

DISTRIBUTION = {
    "pref_type": {"probabilities": [0.3, 0.7]},
    "lagged_retirement": {"label": "retired"},
    "income": {"value": 3},
    "wealth": {"lognormal": [0.5, 0.6], "clip": [0.5, 19.0]},
}


def test_draw_initial_conditions_is_deterministic_in_its_seed(lifecycle_case):
    model, _, _ = lifecycle_case
    n = 4_000
    first, second, other = (
        draw_initial_conditions(model=model, n_subjects=n, seed=s, distribution=DISTRIBUTION)
        for s in (9, 9, 10)
    )
    assert list(first) == list(model.state_names)
    for name in model.state_names:
        assert first[name].tobytes() == second[name].tobytes()
    assert (first["wealth"] != other["wealth"]).mean() > 0.9
    assert (first["pref_type"] != other["pref_type"]).any()
    assert first["pref_type"].dtype == np.int32
    assert (first["lagged_retirement"] == 1).all()
    assert (first["income"] == 3).all()
    assert first["wealth"].min() >= 0.5 and first["wealth"].max() <= 19.0
    assert abs(first["pref_type"].mean() - 0.7) <= 5 * np.sqrt(0.21 / n)
    uniform = draw_initial_conditions(
        model=model,
        n_subjects=n,
        seed=9,
        distribution=DISTRIBUTION | {"wealth": {"uniform": [1.0, 2.0]}},
    )
    assert uniform["wealth"].min() >= 1.0 and uniform["wealth"].max() <= 2.0
    assert abs(uniform["wealth"].mean() - 1.5) <= 5 * np.sqrt(1 / 12 / n)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"wealth": {"normal": [0.0, 1.0]}}, "Unknown initial distribution"),
        (
            {"wealth": {"uniform": [0.0, 30.0]}},
            r"have values \[2\d\.\d+, .*\] outside the range \[0\.20000000298023224, 20\.0\] "
            "of grid 'wealth'",
        ),
        ({"income": {"value": 7}}, "codes outside"),
    ],
    ids=["unknown-spec", "outside-grid", "invalid-code"],
)
def test_draw_initial_conditions_validates(lifecycle_case, change, match):
    model, _, _ = lifecycle_case
    with pytest.raises(InitialConditionsError, match=match):
        draw_initial_conditions(
            model=model, n_subjects=50, seed=0, distribution=DISTRIBUTION | change
        )


def test_draw_initial_conditions_needs_every_state(lifecycle_case):
    model, _, _ = lifecycle_case
    missing = {k: v for k, v in DISTRIBUTION.items() if k != "income"}
    with pytest.raises(InitialConditionsError, match="no entry for state 'income'"):
        draw_initial_conditions(model=model, n_subjects=5, seed=0, distribution=missing)


@pytest.mark.parametrize(
    "change",
    [
        {"lagged_retirement": {"label": "sleeping"}},
        {"lagged_retirement": {"probabilities": [0.5, 0.2, 0.3]}},
    ],
    ids=["unknown-label", "wrong-number-of-probabilities"],
)
def test_draw_initial_conditions_rejects_bad_discrete_specs_by_state(lifecycle_case, change):
    model, _, _ = lifecycle_case
    with pytest.raises(InitialConditionsError, match="lagged_retirement"):
        draw_initial_conditions(
            model=model, n_subjects=50, seed=0, distribution=DISTRIBUTION | change
        )
