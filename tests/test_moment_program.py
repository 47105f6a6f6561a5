"""The estimation's one-program objective and the one-program regime simulation.

Oracles: the scanned simulation equals, bit for bit, the period-by-period simulation it replaced
(the same jitted steps called once per period from Python, as ``simulate`` did before); the
compiled moments equal those of the solve-simulate-table path to rounding; a change of params
never traces the program again; a batch of points equals the points one at a time.
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from small_regimes import DISTRIBUTION, GROUPS, SIZES

from project import InvalidValueFunctionError, solve
from project.estimation.lifecycle import LifecycleMoments
from project.estimation.program import ESTIMATION_WINDOW, envelope_window
from project.models import lifecycle, lifecycle_regimes
from project.simulation import draw_initial_conditions, simulate
from project.simulation.initial import validate_regime_initial_conditions
from project.simulation.regime_steps import period_step
from project.simulation.regimes import filled_states, period_inputs, regime_methods


@pytest.fixture(scope="module", autouse=True)
def float64():
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", False)


@pytest.fixture(scope="module")
def mortal():
    model = lifecycle_regimes.build_model(**SIZES, survival="life_table")
    params = lifecycle_regimes.params_for(model) | {
        "taste_shock_scale": lifecycle.DEFAULT_TASTE_SHOCK_SCALE
    }
    initial = draw_initial_conditions(
        model=model, n_subjects=400, seed=3, distribution=DISTRIBUTION
    )
    return model, params, initial


def period_by_period(*, solution, params, initial, seed):
    """Simulate as ``simulate`` did before the scan: one eager call of the steps per period."""
    model = solution.model
    step = period_step(model, methods=dict(regime_methods(solution)))
    inputs = period_inputs(solution, params=params, start_period=0)
    regime, states = validate_regime_initial_conditions(model=model, initial_conditions=initial)
    codes = jnp.asarray(regime)
    states = {s: jnp.asarray(filled_states(model, s, v)) for s, v in states.items()}
    ids = jnp.arange(regime.size, dtype=jnp.int32)
    history = []
    for t in range(model.n_periods):
        last = t == model.n_periods - 1
        inputs_t = jax.tree.map(lambda x, t=t: x[t], inputs)
        age = jnp.asarray(model.ages[t], dtype=jnp.float64)
        actions, value, following, next_codes = step(
            codes, states, ids, inputs_t, params, jnp.int32(t), age, seed, last=last
        )
        history.append((codes, states, actions, value))
        codes, states = next_codes, following
    return jax.device_get(history)


@pytest.mark.parametrize("method", ["dcegm", "grid"])
def test_the_scanned_simulation_is_the_period_by_period_simulation_bit_for_bit(mortal, method):
    model, params, initial = mortal
    solution = solve(model=model, params=params, method=method, log_level="off")
    result = simulate(params=params, initial_conditions=initial, solution=solution, seed=11)
    checked = {k: jnp.asarray(v) for k, v in params.items()}
    reference = period_by_period(solution=solution, params=checked, initial=initial, seed=11)
    for t, (codes, states, actions, value) in enumerate(reference):
        np.testing.assert_array_equal(result.columns["regime"][:, t], codes)
        np.testing.assert_array_equal(result.columns["value"][:, t], value)
        for name, values in actions.items():
            np.testing.assert_array_equal(result.columns[name][:, t], values)
        wealth = result.columns["wealth"][:, t]
        alive = np.isin(codes, [model.code(r) for r in model.regimes])
        np.testing.assert_array_equal(wealth[alive], states["wealth"][alive])
    dead = result.columns["regime"][:, -1] == model.code("dead")
    assert 0 < dead.sum() < len(dead)  # some die: the regime draws are exercised


def moment_settings(mortal, groups):
    """Return the ``LifecycleMoments`` arguments of the tests: the small model, seed 4."""
    model, params, initial = mortal
    return {
        "model": model,
        "base_params": params,
        "initial_conditions": initial,
        "seed": 4,
        "age_groups": groups,
        "estimated": ("crra", "beta"),
    }


@pytest.fixture(scope="module")
def simulators(mortal):
    common = moment_settings(mortal, GROUPS)
    return LifecycleMoments(**common), LifecycleMoments(**common, compiled=False)


@pytest.mark.parametrize("point", [{"crra": 2.0, "beta": 0.96}, {"crra": 3.5, "beta": 0.9}])
def test_compiled_moments_equal_the_table_moments(simulators, point):
    compiled, tabled = simulators
    assert compiled.program is not None
    assert tabled.program is None
    np.testing.assert_allclose(compiled(point), tabled(point), rtol=1e-12, atol=1e-13)


def test_the_program_counts_the_living_subjects_of_the_table(simulators):
    compiled, tabled = simulators
    point = {"crra": 2.0, "beta": 0.96}
    living = tabled.living_subjects(point)  # subjects_per_group of the simulated table
    assert living[0] > living[-1] > 0
    np.testing.assert_array_equal(compiled.living_subjects(point), living)


def test_a_change_of_params_never_traces_the_program_again(simulators):
    compiled, _ = simulators
    compiled({"crra": 2.5, "beta": 0.95})
    traces = compiled.program.traces
    values = [compiled({"crra": 2.0 + 0.3 * i, "beta": 0.9 + 0.01 * i}) for i in range(4)]
    assert compiled.program.traces == traces
    assert len({tuple(v) for v in values}) == 4  # the moments did move
    # one program for single points (a batch has its own), never widened
    singles = [key for key in compiled.program._compiled if not key[2]]
    assert singles == [(ESTIMATION_WINDOW, False, False, False)]  # window, derivative, batch, table


def test_a_point_asked_for_again_comes_from_the_memo_unchanged(simulators):
    compiled, _ = simulators
    point = {"crra": 2.7, "beta": 0.94}
    first = compiled(point)
    runs = compiled.program.runs
    first[:] = np.nan  # a caller's edit of its copy must not reach the memo
    again = compiled(point)
    assert compiled.program.runs == runs  # the program did not run again
    np.testing.assert_array_equal(
        again, compiled.program._execute(np.array([[2.7, 0.94]]), derivative=False)[0][0]
    )  # the memo holds what a fresh run gives, bit for bit
    fresh = compiled.program._execute(np.array([[2.7, 0.94]]), derivative=False)
    np.testing.assert_array_equal(compiled.living_subjects(point), fresh[-2][0])
    np.testing.assert_array_equal(fresh[-1][0], [0.0, 0.0])  # no choice counted: zeros
    assert compiled.program.runs == runs + 2
    compiled({"crra": 2.7, "beta": 0.94 + 1e-12})  # a different point runs
    assert compiled.program.runs == runs + 3


def test_where_the_solve_fails_the_moments_are_nan_never_numbers(simulators, mortal):
    """Close to crra = 1 V's consumption equivalent overflows: the table path's solve raises,
    and the program gives NaN moments (until 2026-11-27 it gave finite ones from the broken
    solution), for that point only in a batch."""
    compiled, _ = simulators
    model, params, _ = mortal
    broken, fine = {"crra": 0.9999, "beta": 0.96}, {"crra": 2.0, "beta": 0.96}
    with pytest.raises(InvalidValueFunctionError):
        solve(model=model, params=params | broken, method="dcegm")
    assert np.isnan(compiled(broken)).all()
    assert np.isnan(compiled.living_subjects(broken)).all()
    batch = compiled.batch([broken, fine])
    assert np.isnan(batch[0]).all()
    np.testing.assert_allclose(batch[1], compiled(fine), rtol=1e-12, atol=1e-13)


def test_a_batch_equals_its_points_one_at_a_time(simulators):
    compiled, _ = simulators
    points = [{"crra": 1.5, "beta": 0.97}, {"crra": 4.0, "beta": 0.93}, {"crra": 2.2, "beta": 1.0}]
    batch = compiled.batch(points)
    one_by_one = np.stack([compiled(point) for point in points])
    np.testing.assert_allclose(batch, one_by_one, rtol=1e-12, atol=1e-13)
    # a batch (vmap) and a single point (no vmap) are two programs
    assert {key[2] for key in compiled.program._compiled} == {False, True}


def test_variants_that_differ_in_a_param_value_share_one_program(mortal):
    """Params are traced, never baked in: the build's variants reuse one compiled program."""
    model, params, initial = mortal
    texts = []
    for pension in (params["pension"], 0.5 * params["pension"]):
        program = LifecycleMoments(
            model=model,
            base_params=params | {"pension": pension},
            initial_conditions=initial,
            seed=4,
            age_groups=GROUPS,
            estimated=("crra", "beta"),
        ).program
        lowered = program._program(envelope_window(model), False, batched=False).lower(
            jnp.asarray([[2.0, 0.96]]), *program._inputs()
        )
        texts.append(lowered.as_text())
    assert texts[0] == texts[1]


def test_a_panel_stopped_early_is_the_whole_panel_s_first_periods_bit_for_bit(mortal):
    from project.simulation.regime_steps import build_regime_panel

    model, params, initial = mortal
    solution = solve(model=model, params=params, log_level="off")
    methods = dict(regime_methods(solution))
    checked = {k: jnp.asarray(v) for k, v in params.items()}
    inputs = period_inputs(solution, params=checked, start_period=0)
    regime, states = validate_regime_initial_conditions(model=model, initial_conditions=initial)
    arguments = (
        jnp.asarray(regime),
        {s: jnp.asarray(filled_states(model, s, v)) for s, v in states.items()},
        jnp.arange(regime.size, dtype=jnp.int32),
        inputs,
        checked,
        jnp.arange(model.n_periods, dtype=jnp.int32),
        jnp.asarray(np.asarray(model.ages), dtype=jnp.float64),
        11,
    )
    whole = jax.device_get(jax.jit(build_regime_panel(model, methods=methods))(*arguments))
    panel = build_regime_panel(model, methods=methods, stop=5)
    stopped = jax.device_get(jax.jit(panel)(*arguments))
    assert stopped[0].shape[0] == 5
    for early, full in zip(jax.tree.leaves(stopped), jax.tree.leaves(whole), strict=True):
        np.testing.assert_array_equal(early, full[:5])


@pytest.mark.parametrize("stop", [None, 6])
def test_a_panel_from_numbers_drawn_ahead_is_the_panel_from_the_seed_bit_for_bit(mortal, stop):
    from project.simulation.keys import draw_ahead
    from project.simulation.regime_steps import build_regime_panel
    from project.simulation.regimes import draw_streams

    model, params, initial = mortal
    solution = solve(model=model, params=params, log_level="off")
    methods = dict(regime_methods(solution))
    checked = {k: jnp.asarray(v) for k, v in params.items()}
    regime, states = validate_regime_initial_conditions(model=model, initial_conditions=initial)
    ids = jnp.arange(regime.size, dtype=jnp.int32)
    periods = jnp.arange(model.n_periods, dtype=jnp.int32)
    arguments = (
        jnp.asarray(regime),
        {s: jnp.asarray(filled_states(model, s, v)) for s, v in states.items()},
        ids,
        period_inputs(solution, params=checked, start_period=0),
        checked,
        periods,
        jnp.asarray(np.asarray(model.ages), dtype=jnp.float64),
    )
    panel = jax.jit(build_regime_panel(model, methods=methods, stop=stop))
    drawn = draw_ahead(
        seed=11, subject_ids=ids, periods=periods[:stop], streams=draw_streams(model)
    )
    from_seed = jax.device_get(panel(*arguments, 11))
    ahead = jax.device_get(panel(*arguments, drawn))
    other_seed = jax.device_get(panel(*arguments, 12))
    for with_seed, with_numbers in zip(
        jax.tree.leaves(from_seed), jax.tree.leaves(ahead), strict=True
    ):
        np.testing.assert_array_equal(with_numbers, with_seed)
    assert not np.array_equal(from_seed[1]["wealth"], other_seed[1]["wealth"])


def test_the_drawn_moments_keep_no_panel_of_subject_years(simulators):
    """The compiled program sums as it simulates: no period's row is written into a panel.

    Before, the scan wrote every period's regimes, states and actions into arrays of periods x
    subjects (a dynamic update of one row per period) and the sums read them back; that panel
    was the program's largest temporary. Now the scan's carry holds running sums only.
    """
    compiled, _ = simulators
    program = compiled.program
    point = np.array([[2.5, 0.95]])
    program.batch(point)
    jitted = [v for k, v in program._compiled.items() if k[1:] == (False, False, False)][-1]
    text = jitted.lower(jnp.asarray(point), *program._inputs()).compile().as_text()
    subjects = int(program.ids.shape[0])
    updated = re.findall(rf"\[(\d+),{subjects}\](?:\{{[\d,]*\}})? [^\n]*dynamic-update-slice", text)
    assert subjects == 400 and updated  # the carry's rows of groups are updated so
    assert not {str(program.stop - 1), str(program.stop)} & set(updated), sorted(set(updated))


def test_moments_of_early_groups_stop_the_simulation_and_equal_the_table_moments(mortal):
    model = mortal[0]
    common = moment_settings(mortal, GROUPS[:2])
    compiled = LifecycleMoments(**common)
    assert compiled.program.stop == 5 < model.n_periods  # ages 63-67 of 63-70
    point = {"crra": 2.5, "beta": 0.95}
    tabled = LifecycleMoments(**common, compiled=False)
    np.testing.assert_allclose(compiled(point), tabled(point), rtol=1e-12, atol=1e-13)
    whole = LifecycleMoments(**common)
    whole.program.stop = model.n_periods  # before its first call builds the program
    np.testing.assert_array_equal(compiled(point), whole(point))  # the same sums, bit for bit


def test_a_regime_nobody_is_in_is_skipped_and_gives_zeros_nobody_reads():
    """``_where_present`` runs a regime's step in a program only where some subject is in it."""
    from project.simulation.regime_steps import _where_present

    def run(x):
        return x * 2, {"next": (x + 1).astype(jnp.int32)}

    x = jnp.arange(3.0) + 1

    def stepped(here):
        return _where_present(here, run, x)

    some = jax.jit(stepped)(jnp.array([False, True, False]))
    nobody = jax.jit(stepped)(jnp.zeros(3, bool))
    np.testing.assert_array_equal(some[0], [2.0, 4.0, 6.0])
    np.testing.assert_array_equal(some[1]["next"], [2, 3, 4])
    np.testing.assert_array_equal(nobody[0], [0.0, 0.0, 0.0])
    assert nobody[1]["next"].dtype == jnp.int32 and not nobody[1]["next"].any()
    eager = stepped(jnp.zeros(3, bool))  # outside a program: stepped, as before
    np.testing.assert_array_equal(eager[0], [2.0, 4.0, 6.0])


@pytest.mark.parametrize("smooth", [False, True])
def test_skipping_the_empty_regimes_leaves_the_moments_bit_for_bit(mortal, monkeypatch, smooth):
    """The program with empty regimes skipped equals the one stepping every regime always.

    Everyone starts working, so the retired regime is empty at first. Drawn moments, a batch
    (where ``vmap`` runs both branches) and the smooth moments with their exact Jacobian.
    """
    from project.simulation import regime_steps

    common = moment_settings(mortal, GROUPS) | {"smooth": smooth}
    assert set(np.asarray(mortal[2]["regime"]).tolist()) == {mortal[0].code("working")}
    points = np.array([[2.5, 0.95], [3.0, 0.9]])
    skipping = LifecycleMoments(**common).program
    results = [
        skipping._run(points[:1], derivative=smooth),
        skipping._run(points, derivative=False),
    ]
    monkeypatch.setattr(regime_steps, "_where_present", lambda here, run, *args: run(*args))
    stepping = LifecycleMoments(**common).program
    expected = [
        stepping._run(points[:1], derivative=smooth),
        stepping._run(points, derivative=False),
    ]
    for got, want in zip(results, expected, strict=True):
        assert [x.tobytes() for x in got] == [x.tobytes() for x in want]
