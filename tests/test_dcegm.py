"""DC-EGM against the exact IJRS (2017) solution, its upper envelope, and its bad inputs.

The IJRS model (beta = 0.98, r = 0, wage = 20, delta = 1, 5 periods) has a closed-form solution
at taste-shock scale 0 (``oracles/ijrs_exact.py``). DC-EGM solves it on 500 savings points on
[0, 400], spaced evenly in log(1 + s). Errors are relative to max(|V|, 1): the retiree's V
crosses zero near wealth 5, where a plain relative error has no meaning.
"""

import numpy as np
import pandas as pd
import pytest
from oracles.choices import simulated_retirement
from oracles.ijrs_exact import retiree_value, retirement_date, worker_consumption, worker_value

from project import solve
from project.egm.envelope import upper_envelope
from project.errors import ModelSpecificationError, ParamsError
from project.models import iid_income, ijrs
from project.persist.solution import load_solution, save_solution
from project.simulation import simulate

BETA, DELTA, WAGE = 0.98, 1.0, 20.0
T, N_SAVINGS = 5, 500
WEALTH = np.linspace(1.0, 400.0, 100)


@pytest.fixture(scope="module")
def solution():
    import jax

    jax.config.update("jax_enable_x64", True)
    try:
        yield solve(
            model=ijrs.build_model(n_periods=T, n_savings=N_SAVINGS), params=ijrs.DEFAULT_PARAMS
        )
    finally:
        jax.config.update("jax_enable_x64", False)


def exact(*, lag: int, period: int, wealth: np.ndarray) -> np.ndarray:
    if lag == 1:
        return retiree_value(wealth=wealth, period=period, n_periods=T, beta=BETA)
    return worker_value(
        wealth=wealth, period=period, n_periods=T, beta=BETA, delta=DELTA, wage=WAGE
    )


def kinks(*, period: int) -> np.ndarray:
    """Return the wealth levels where the worker's optimal retirement date switches."""
    fine = np.linspace(0.5, 420.0, 400_001)
    dates = retirement_date(
        wealth=fine, period=period, n_periods=T, beta=BETA, delta=DELTA, wage=WAGE
    )
    return fine[1:][np.diff(dates) != 0]


def savings_step(wealth: np.ndarray, solution) -> np.ndarray:
    """Return the savings grid's step at savings = wealth (an upper bound on the local step)."""
    savings = np.asarray(solution.savings)
    upper = np.clip(np.searchsorted(savings, wealth), 1, savings.size - 1)
    return savings[upper] - savings[upper - 1]


@pytest.mark.parametrize("lag", [0, 1], ids=["worker", "retiree"])
@pytest.mark.parametrize("period", range(T - 1))
def test_value_matches_the_analytical_solution_away_from_kinks(solution, lag, period):
    states = {"lagged_retirement": np.full(WEALTH.shape, lag), "wealth": WEALTH}
    got = solution.value(period=period, states=states)
    want = exact(lag=lag, period=period, wealth=WEALTH)
    error = np.abs(got - want) / np.maximum(np.abs(want), 1.0)
    near = np.zeros(WEALTH.shape, bool)
    if lag == 0:
        for kink in kinks(period=period):
            near |= np.abs(WEALTH - kink) <= 2 * savings_step(np.array([kink]), solution)
    assert near.sum() <= 12
    assert error[~near].max() < 1e-3, (WEALTH[~near][error[~near].argmax()], error.max())


@pytest.mark.parametrize("period", range(T - 1))
def test_consumption_jumps_where_the_retirement_date_switches(solution, period):
    """Each jump of the exact consumption lies within one grid step of DC-EGM's steepest rise."""
    fine = np.linspace(1.0, 400.0, 40_001)
    states = {"lagged_retirement": np.zeros(fine.shape, int), "wealth": fine}
    consumption = solution.policy(period=period, states=states)["consumption"]
    truth = worker_consumption(
        wealth=fine, period=period, n_periods=T, beta=BETA, delta=DELTA, wage=WAGE
    )
    jumps = np.flatnonzero(np.abs(np.diff(truth)) > 0.05)
    assert jumps.size >= 1
    for jump in jumps:
        kink = fine[jump]
        step = float(savings_step(np.array([kink]), solution)[0])
        around = np.flatnonzero(np.abs(fine[:-1] - kink) <= 3 * step)
        steepest = around[np.argmax(np.abs(np.diff(consumption)[around]))]
        assert abs(fine[steepest] - kink) <= step, (kink, fine[steepest], step)


def test_choice_probabilities_are_the_best_choice_at_scale_zero(solution):
    states = {"lagged_retirement": np.zeros(WEALTH.shape, int), "wealth": WEALTH}
    probabilities = solution.choice_probabilities(period=0, states=states)
    dates = retirement_date(wealth=WEALTH, period=0, n_periods=T, beta=BETA, delta=DELTA, wage=WAGE)
    retire_now = dates == 0
    clear = np.ones(WEALTH.shape, bool)
    for kink in kinks(period=0):
        clear &= np.abs(WEALTH - kink) > 2 * savings_step(np.array([kink]), solution)
    np.testing.assert_array_equal(probabilities[clear, 1], retire_now[clear].astype(float))
    assert set(np.unique(probabilities)) <= {0.0, 1.0}
    retired = {"lagged_retirement": np.ones(WEALTH.shape, int), "wealth": WEALTH}
    np.testing.assert_array_equal(solution.choice_probabilities(period=0, states=retired)[:, 1], 1)


def test_taste_shocks_converge_to_the_hard_maximum(x64):
    model = ijrs.build_model(n_periods=T, n_savings=200, taste_shocks=True)
    states = {"lagged_retirement": np.zeros(WEALTH.shape, int), "wealth": WEALTH}
    hard = solve(model=model, params=ijrs.DEFAULT_PARAMS | {"taste_shock_scale": 0.0})
    plain = solve(model=ijrs.build_model(n_periods=T, n_savings=200), params=ijrs.DEFAULT_PARAMS)
    np.testing.assert_array_equal(
        hard.value(period=0, states=states), plain.value(period=0, states=states)
    )
    gaps = []
    for scale in (0.1, 0.01, 0.001):
        smooth = solve(model=model, params=ijrs.DEFAULT_PARAMS | {"taste_shock_scale": scale})
        gap = smooth.value(period=0, states=states) - hard.value(period=0, states=states)
        # The log-sum exceeds the maximum by at most scale·log 2 per remaining decision.
        assert gap.min() > -1e-9
        assert gap.max() <= scale * np.log(2) * T
        gaps.append(gap.max())
        probabilities = smooth.choice_probabilities(period=0, states=states)
        np.testing.assert_allclose(probabilities.sum(axis=-1), 1.0, rtol=1e-12)
        assert ((probabilities > 0) & (probabilities < 1)).any()
    assert gaps[0] > gaps[1] > gaps[2]


def brute_force_envelope(wealth, value):
    """Return the points no other segment of the polyline beats (O(n^2), with backward runs)."""
    kept = np.zeros(wealth.size, bool)
    forward = np.diff(wealth) >= 0
    on_forward = np.zeros(wealth.size, bool)
    on_forward[:-1] |= forward
    on_forward[1:] |= forward
    for i, (x, v) in enumerate(zip(wealth, value, strict=True)):
        best = -np.inf
        for j in range(wealth.size - 1):
            if not forward[j] or j in (i, i - 1):
                continue
            lo, hi = wealth[j], wealth[j + 1]
            if lo <= x <= hi and hi > lo:
                best = max(best, value[j] + (x - lo) * (value[j + 1] - value[j]) / (hi - lo))
        kept[i] = on_forward[i] and not best > v + 1e-12
    return kept


def folded_curve(n_folds):
    """Return a grid that folds back ``n_folds`` times, each fold dominated by what follows."""
    xs, vs = [], []
    start = 0.0
    for fold in range(n_folds + 1):
        x = np.linspace(start, start + 10.0, 40)
        xs.append(x)
        vs.append(np.log1p(x) + 0.1 * fold * (x - start) / 10)
        if fold < n_folds:
            back = np.linspace(start + 10.0, start + 4.0, 8)[1:-1]
            xs.append(back)
            vs.append(np.log1p(back) - 0.5)
        start += 7.0
    return np.concatenate(xs), np.concatenate(vs)


@pytest.mark.parametrize("n_folds", [0, 1, 3])
def test_upper_envelope_keeps_what_a_brute_force_keeps(x64, n_folds):
    wealth, value = folded_curve(n_folds)
    envelope = upper_envelope(
        np.asarray(wealth), np.asarray(value), constrained_value=np.full(wealth.size, -np.inf)
    )
    assert bool(envelope.exact)
    assert int(envelope.n_runs) == n_folds + 1
    np.testing.assert_array_equal(np.asarray(envelope.kept), brute_force_envelope(wealth, value))


def test_a_narrow_window_reports_a_far_overlap(x64):
    """Runs overlapping runs two away are seen by window 2 and reported by window 1."""
    xs, vs = [], []
    for fold, start in enumerate([0.0, 3.0, 1.0]):
        x = np.linspace(start, start + 10.0, 30)
        xs += [x, np.linspace(start + 10.0, start + 0.5, 6)[1:-1]] if fold < 2 else [x]
        vs += (
            [np.log1p(x) + 0.05 * fold, np.log1p(xs[-1]) - 1.0]
            if fold < 2
            else [np.log1p(x) + 0.05 * fold]
        )
    wealth, value = np.concatenate(xs), np.concatenate(vs)
    bound = np.full(wealth.size, -np.inf)
    narrow = upper_envelope(np.asarray(wealth), np.asarray(value), constrained_value=bound)
    wide = upper_envelope(np.asarray(wealth), np.asarray(value), constrained_value=bound, window=2)
    assert not bool(narrow.exact)
    assert bool(wide.exact)
    np.testing.assert_array_equal(np.asarray(wide.kept), brute_force_envelope(wealth, value))


def test_dcegm_on_a_model_without_discrete_actions_says_use_egm():
    model = iid_income.build_model()
    with pytest.raises(ModelSpecificationError, match=r"no discrete action.*method='egm'"):
        solve(model=model, params=iid_income.DEFAULT_PARAMS, method="dcegm")


@pytest.mark.parametrize("scale", [-0.1, np.nan])
def test_a_bad_taste_shock_scale_is_refused(scale):
    model = ijrs.build_model(n_periods=3, n_savings=20, taste_shocks=True)
    with pytest.raises(ParamsError, match=r"taste_shock_scale.*>= 0"):
        solve(model=model, params=ijrs.DEFAULT_PARAMS | {"taste_shock_scale": scale})


@pytest.fixture(scope="module")
def taste_case():
    model = ijrs.build_model(n_periods=T, n_savings=200, taste_shocks=True)
    params = ijrs.DEFAULT_PARAMS | {"taste_shock_scale": 0.5}
    return model, params, solve(model=model, params=params)


def test_simulated_choices_follow_the_logit_probabilities(taste_case):
    model, params, solution = taste_case
    assert solution.method == "dcegm"
    periods = simulated_retirement(model=model, params=params, solution=solution)
    for period, (rows, states, probability) in enumerate(periods):
        if period == 0:
            assert 0.02 < probability.mean() < 0.98  # the draws matter
        retired = states["lagged_retirement"] == 1
        np.testing.assert_array_equal(rows["retirement"].to_numpy()[retired], 1)
        # Consumption is the drawn choice's, read at the exact state.
        at = solution.evaluate_flat(period=period, states=states)
        chosen = rows["retirement"].to_numpy()
        want = np.asarray(at.choice_consumption)[np.arange(len(rows)), chosen]
        np.testing.assert_allclose(rows["consumption"].to_numpy(), want, rtol=1e-6)
        np.testing.assert_allclose(rows["value"].to_numpy(), np.asarray(at.value), rtol=1e-6)


def test_dcegm_simulation_does_not_depend_on_subject_batch_size(taste_case):
    _, params, solution = taste_case
    rng = np.random.default_rng(4)
    initial = {"lagged_retirement": np.zeros(10, dtype=int), "wealth": rng.uniform(20, 120, 10)}
    frames = [
        simulate(
            params=params,
            initial_conditions=initial,
            solution=solution,
            seed=5,
            subject_batch_size=batch,
        ).to_dataframe()
        for batch in (0, 3)
    ]
    pd.testing.assert_frame_equal(frames[1], frames[0], check_exact=True)


def test_dcegm_solution_survives_save_and_load(taste_case, tmp_path):
    model, _, solution = taste_case
    save_solution(solution=solution, directory=tmp_path / "solution")
    loaded = load_solution(directory=tmp_path / "solution", model=model)
    assert loaded.method == "dcegm"
    states = {"lagged_retirement": np.zeros(WEALTH.shape, int), "wealth": WEALTH}
    np.testing.assert_array_equal(
        loaded.choice_probabilities(period=1, states=states),
        solution.choice_probabilities(period=1, states=states),
    )
    np.testing.assert_array_equal(
        loaded.value(period=0, states=states), solution.value(period=0, states=states)
    )


def test_dcegm_and_the_grid_solver_agree_with_taste_shocks(x64):
    """At scale 0.5 both solve the same smooth problem: they agree within the grid's steps.

    The grid solver (100 wealth, 991 consumption points on [1, 400]) picks consumption on its
    grid with next period's V interpolated between wealth points 4.03 apart; DC-EGM is exact up
    to interpolation on 500 savings points. Consumption must agree within one wealth step of the
    grid and V within the value of one consumption step, u'(c)·dc.
    """
    params = ijrs.DEFAULT_PARAMS | {"taste_shock_scale": 0.5}
    fine = solve(
        model=ijrs.build_model(n_periods=T, n_savings=500, taste_shocks=True), params=params
    )
    grid_model = ijrs.build_model(n_periods=T, n_wealth=100, n_consumption=991, taste_shocks=True)
    grid = solve(model=grid_model, params=params, method="grid")
    wealth_step, consumption_step = 399 / 99, 399 / 990
    wealth = np.linspace(20.0, 400.0, 100)
    for period in range(T - 1):
        states = {"lagged_retirement": np.zeros(wealth.shape, int), "wealth": wealth}
        ours, theirs = (
            fine.policy(period=period, states=states),
            grid.policy(period=period, states=states),
        )
        np.testing.assert_array_equal(ours["retirement"], theirs["retirement"])
        assert np.abs(ours["consumption"] - theirs["consumption"]).max() <= wealth_step
        gap = np.abs(
            fine.value(period=period, states=states) - grid.value(period=period, states=states)
        )
        assert (gap <= consumption_step / ours["consumption"]).all()
        np.testing.assert_allclose(
            fine.choice_probabilities(period=period, states=states),
            grid.choice_probabilities(period=period, states=states),
            atol=0.01,
        )


def restated(model, *, name, functions):
    """Return the IJRS ``model`` under ``name`` with ``functions`` instead of its own."""
    from project.model import Model

    return Model(
        name=name,
        states=model.states,
        actions=model.actions,
        functions=functions,
        constraints=model.constraints,
        n_periods=T,
        post_decision_grid=model.post_decision_grid,
        taste_shocks=True,
    )


def assert_same_values(one, other, *, rtol=0.0):
    """Assert V of both solutions agree for workers and retirees in every period."""
    for period in range(T):
        for lag in (0, 1):
            states = {"lagged_retirement": np.full(WEALTH.shape, lag), "wealth": WEALTH}
            np.testing.assert_allclose(
                one.value(period=period, states=states),
                other.value(period=period, states=states),
                rtol=rtol,
                atol=0,
            )


def test_folding_states_only_constraints_read_changes_nothing(x64):
    """Lagged retirement enters only a choice constraint: the step runs once for both values.

    A utility that also reads it (times zero) stops the folding; V must be the same.
    """
    from project.egm.structure import egm_structure

    folded = ijrs.build_model(n_periods=T, n_savings=100, taste_shocks=True)
    assert egm_structure(folded).folded == ("lagged_retirement",)

    def utility(consumption, working, delta, lagged_retirement):
        return ijrs.utility(consumption, working, delta) + 0.0 * lagged_retirement

    unfolded = restated(
        folded, name="ijrs_unfolded", functions=folded.functions | {"utility": utility}
    )
    assert egm_structure(unfolded).folded == ()
    params = ijrs.DEFAULT_PARAMS | {"taste_shock_scale": 0.05}
    assert_same_values(solve(model=folded, params=params), solve(model=unfolded, params=params))


def test_closed_form_inverses_give_the_iterated_solution(x64):
    """IJRS states both inverses in closed form; without them, EGM iterates to the same V."""
    given = ijrs.build_model(n_periods=T, n_savings=N_SAVINGS, taste_shocks=True)
    assert {"inverse_utility", "inverse_marginal_utility"} <= set(given.functions)
    iterated = restated(
        given,
        name="ijrs_iterated",
        functions={k: f for k, f in given.functions.items() if not k.startswith("inverse_")},
    )
    params = ijrs.DEFAULT_PARAMS | {"taste_shock_scale": 0.01}
    assert_same_values(
        solve(model=given, params=params), solve(model=iterated, params=params), rtol=1e-12
    )


def test_dcegm_and_the_grid_solver_agree_on_the_default_model(x64):
    """The pipeline's life-cycle model (ages 66-71, 3 income nodes), taste-shock scale 0.05.

    The grid (200 wealth points on [0.2, 20], 1,000 consumption points on [0.05, 20]) errs in
    consumption by up to a wealth step h plus a consumption step dc (next period's V is
    interpolated between wealth points), and in V by the value of that much consumption. A
    logit probability moves by at most |dV| / (4·scale) per unit of value: we allow 0.05.
    """
    from project.grids import code_combinations
    from project.models import lifecycle

    shape = {"n_periods": 6, "start_age": 66, "n_income": 3}
    params = lifecycle.DEFAULT_PARAMS | {"taste_shock_scale": 0.05}
    fine = solve(
        model=lifecycle.build_model(**shape, n_savings=400, taste_shocks=True), params=params
    )
    grid_model = lifecycle.build_model(**shape, n_wealth=200, n_consumption=1000, taste_shocks=True)
    grid = solve(model=grid_model, params=params, method="grid")
    assert fine.method == "dcegm"
    h, dc = 19.8 / 199, 19.95 / 999
    wealth = np.linspace(2.0, 15.0, 40)
    for period in range(5):
        for row in code_combinations([2, 2, 3]):
            states = dict(zip(("pref_type", "lagged_retirement", "income"), row, strict=True))
            states = {k: np.full(wealth.shape, v) for k, v in states.items()} | {"wealth": wealth}
            ours, theirs = (
                fine.policy(period=period, states=states),
                grid.policy(period=period, states=states),
            )
            np.testing.assert_array_equal(ours["retirement"], theirs["retirement"])
            assert np.abs(ours["consumption"] - theirs["consumption"]).max() <= h + dc
            gap = np.abs(
                fine.value(period=period, states=states) - grid.value(period=period, states=states)
            )
            assert (gap <= (h + dc) / 2 / ours["consumption"] ** 2).all()
            np.testing.assert_allclose(
                fine.choice_probabilities(period=period, states=states),
                grid.choice_probabilities(period=period, states=states),
                atol=0.05,
            )


def test_a_dc_model_dcegm_cannot_take_names_the_part_and_suggests_the_grid():
    base = ijrs.build_model(n_periods=3, n_savings=20)

    def utility(consumption, working, delta, wealth):
        return ijrs.utility(consumption, working, delta) + 0.01 * wealth

    from project.model import Model

    model = Model(
        name="wealth_in_utility",
        states=base.states,
        actions=base.actions,
        functions=base.functions | {"utility": utility},
        constraints=base.constraints,
        n_periods=3,
        post_decision_grid=base.post_decision_grid,
    )
    with pytest.raises(
        ModelSpecificationError, match=r"method='dcegm'.*utility depends on 'wealth'.*'grid'"
    ):
        solve(model=model, params=ijrs.DEFAULT_PARAMS, method="dcegm")
    assert solve(model=model, params=ijrs.DEFAULT_PARAMS).method == "grid"


def test_euler_errors_refuse_a_model_with_discrete_choices(solution):
    from project.egm import euler_errors

    states = {"lagged_retirement": [0], "wealth": [10.0]}
    with pytest.raises(ModelSpecificationError, match=r"discrete actions.*Euler errors"):
        euler_errors(solution, period=0, states=states)


@pytest.mark.parametrize("sizes", [[2], [3], [2, 3], [3, 1, 2]])
def test_a_flat_choice_reads_the_codes_of_its_combination(sizes):
    """One action whose codes are the choices is the choice itself; others read their column."""
    from types import SimpleNamespace

    import jax
    import jax.numpy as jnp

    from project.egm.choices import choice_env
    from project.grids import code_combinations

    choices = code_combinations(sizes)
    structure = SimpleNamespace(
        choices=choices, discrete_actions=tuple(f"a{i}" for i in range(len(sizes)))
    )
    read = jax.jit(jax.vmap(lambda c: choice_env(structure, {"kept": 1}, c)))
    env = read(jnp.arange(len(choices), dtype=jnp.int32))
    assert env.pop("kept").tolist() == [1] * len(choices)
    found = np.stack([np.asarray(env[a]) for a in structure.discrete_actions], axis=1)
    np.testing.assert_array_equal(found, choices)
