"""A param calibrated to a claiming fact jointly with an estimate (``estimation.claiming``,
``estimation.calibrated``, the choice count of ``estimation.choice_count``).

Oracles: a step function with a known crossing; a fixed point with a known solution (the
estimate and the share as closed forms of the param); linear moments and a linear share, whose
implicit-function slopes and covariance are closed forms; the pipeline's model, where nobody
claims at 62 when working costs little and everybody when it costs much, and where the compiled
program's claim count equals the simulated table's; bad inputs raise ``EstimationError`` saying
what to change.
"""

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest

from project.config import SimulationSettings
from project.estimation import EstimationError
from project.estimation.claiming import (
    calibrate,
    calibrate_and_estimate,
    claim_share,
    claiming_ages,
    claiming_table,
    claiming_table_of_counts,
)
from project.models import default_params_of
from project.models import lifecycle_normalised as model_module
from project.simulation import draw_initial_conditions


def steps(x: float) -> float:
    """Return a share that rises in steps of 1/200 with x in [0, 1]."""
    return math.floor(200 * x) / 200


def test_calibrate_finds_the_step_that_crosses_the_target():
    found = calibrate(share_at=steps, target=0.36, bounds=(0.0, 1.0), tolerance=1e-6)
    assert found == pytest.approx(0.36, abs=1e-5)
    assert steps(found - 1e-5) < 0.36 <= steps(found + 1e-5)


def test_calibrate_refuses_a_target_the_bounds_cannot_reach():
    with pytest.raises(EstimationError, match=r"runs from 0\.100 to 0\.500.*target 0\.900"):
        calibrate(share_at=steps, target=0.9, bounds=(0.1, 0.5), tolerance=1e-6)


def test_the_fixed_point_settles_where_the_share_at_the_estimate_meets_the_target():
    # The estimate follows the param (b = 1 + x / 2), the share rises in both: x b / 2. The
    # fixed point of share = 0.3 solves x (1 + x / 2) = 0.6: x = sqrt(2.2) - 1.
    def estimate(x):
        return {"b": 1 + x / 2}

    def share_at(x, estimates):
        return x * estimates["b"] / 2

    rounds = calibrate_and_estimate(
        estimate=estimate,
        share_at=share_at,
        target=0.3,
        start=0.1,
        bounds=(0.0, 2.0),
        tolerance=1e-8,
        max_rounds=60,
    )
    assert rounds[-1].calibrated == pytest.approx(math.sqrt(2.2) - 1, abs=1e-6)
    assert rounds[-1].share == pytest.approx(0.3, abs=1e-6)
    assert [r.param for r in rounds[1:]] == [r.calibrated for r in rounds[:-1]]
    assert rounds[0].param == 0.1 and len(rounds) > 2


def test_a_fixed_point_that_does_not_settle_is_reported():
    with pytest.raises(EstimationError, match=r"did not settle in 2 rounds"):
        calibrate_and_estimate(
            estimate=lambda x: {"b": 1 + x / 2},
            share_at=lambda x, e: x * e["b"] / 2,
            target=0.3,
            start=0.1,
            bounds=(0.0, 2.0),
            tolerance=1e-8,
            max_rounds=2,
        )


@pytest.fixture(scope="module")
def small_model():
    import jax

    jax.config.update("jax_enable_x64", True)
    try:
        model = model_module.build_model(n_savings=40, taste_shocks=False)
        params = default_params_of(name="lifecycle_normalised", model=model) | {
            "crra": 1.2,
            "beta": 0.95,
        }
        initial = draw_initial_conditions(
            model=model,
            n_subjects=200,
            seed=3,
            distribution=SimulationSettings().initial_distribution,
        )
        yield model, params, initial
    finally:
        jax.config.update("jax_enable_x64", False)


def test_the_share_claiming_at_62_rises_with_the_cost_of_working(small_model, x64):
    """The claim is decided a year before the first pension: at 61 for a claim at 62."""
    model, params, initial = small_model
    tables = [
        claiming_table(
            model=model, params=params | {"work_cost": cost}, initial_conditions=initial, seed=4
        )
        for cost in (0.2, 0.62, 0.8)
    ]
    shares = [claim_share(table, age=61) for table in tables]
    assert shares[0] == 0.0 and shares[-1] == 1.0
    assert np.all(np.diff(shares) >= 0)
    # every worker alive at 61 decides to claim then when work costs much
    assert claiming_ages(tables[-1]) == {61: 1.0}
    ages = claiming_ages(tables[1])
    assert sum(ages.values()) == pytest.approx(1.0) and min(ages) == 61
    assert 60 not in tables[1].index or tables[1].loc[60, "claiming"] == 0  # none before


def test_a_claiming_age_nobody_works_at_is_refused(small_model, x64):
    model, params, initial = small_model
    table = claiming_table(model=model, params=params, initial_conditions=initial, seed=4)
    with pytest.raises(EstimationError, match=r"No simulated subject decides at age 120"):
        claim_share(table, age=120)


def saved_calibrated(*, share: float, rounds: list[float], value: float):
    """Return an estimate as its product stores a calibration (calibration only)."""
    import pandas as pd

    from project.estimation.products import SavedEstimation

    summary = {
        "settings": {"n_subjects": 5000, "relative_step": 0.01},
        "calibrated": {
            "param": "work_cost",
            "value": value,
            "fact": {"age": 62, "share": 0.36},
            "share": share,
            "rounds": [{"value": r} for r in rounds],
            "claiming_ages": {"62": 0.4, "65": 0.5, "66": 0.1},
            "settings": {"tolerance": 0.001},
        },
    }
    moments = pd.DataFrame(
        {
            "moment": ["log_wealth_income_26_30", "log_wealth_income_56_60"],
            "n_data": [2291.0, 4554.0],
            "n_simulated": [4993.0, 4626.0],
        }
    )
    return SavedEstimation(estimates=pd.DataFrame(), moments=moments, summary=summary)


def test_the_caption_and_the_text_print_the_same_calibration():
    from project.analysis.model_numbers import (
        calibration_notes,
        calibration_numbers,
        calibration_sentence,
    )
    from project.estimation.products import SavedEstimation

    saved = saved_calibrated(share=0.358, rounds=[0.6, 0.621], value=0.6203)
    uncalibrated = SavedEstimation(estimates=saved.estimates, moments=saved.moments, summary={})
    caption = calibration_notes({"robustness": uncalibrated, "baseline": saved})
    own = calibration_numbers(saved)
    assert own["work_cost"] == "0.620" and own["share"] == "35.8 %"
    assert own["round_costs"] == "0.600, 0.621, 0.620"
    assert own["claims_first"] == "40.0 %" and own["claims_early"] == "90.0 %"
    for figure in (own["work_cost"], own["share"], own["target_share"]):
        assert figure in caption and figure in calibration_sentence(saved)
    assert "Baseline" in caption and "Robustness" not in caption
    assert "2 rounds" in calibration_sentence(saved)
    assert calibration_notes({"baseline": uncalibrated}) == ""
    assert calibration_numbers(uncalibrated) == {} and calibration_sentence(uncalibrated) == ""


def test_calibrate_widens_its_bracket_around_a_guess_until_it_holds_the_target():
    calls = []

    def share(x):
        calls.append(x)
        return steps(x)

    found = calibrate(share_at=share, target=0.36, bounds=(0.0, 1.0), tolerance=1e-6, guess=0.2)
    assert found == pytest.approx(0.36, abs=1e-5)
    # brackets of 0.02, 0.08 and 0.32 around the guess: the third holds 0.36
    assert calls[:6] == pytest.approx([0.18, 0.22, 0.12, 0.28, 0.0, 0.52])
    near = []
    calibrate(
        share_at=lambda x: near.append(x) or steps(x),
        target=0.36,
        bounds=(0.0, 1.0),
        tolerance=1e-6,
        guess=0.355,
    )
    assert near[:2] == pytest.approx([0.335, 0.375])  # one bracket: no search of the bounds
    with pytest.raises(EstimationError, match="lies outside"):
        calibrate(share_at=steps, target=0.9, bounds=(0.1, 0.5), tolerance=1e-6, guess=0.3)


def test_the_calibrated_slopes_are_the_implicit_function_theorem_s_on_a_linear_share():
    """Moments m = A theta + b k, share s = c' theta + d k: dk/dtheta = -c / d and dm/dk = b."""
    from types import SimpleNamespace

    from project.estimation.calibrated import _following
    from project.estimation.claiming import calibrated_covariance

    a = np.array([[1.0, 0.2], [0.5, 1.0], [0.3, -0.4]])
    b, c, d = np.array([0.5, -0.2, 0.3]), np.array([0.7, -1.5]), 2.5
    names = ["crra", "beta"]

    def theta(params):
        return np.array([params[n] for n in names])

    problem = SimpleNamespace(
        param="work_cost",
        moments=lambda p: a @ theta(p) + b * p["work_cost"],
        share_at=lambda k, p: float(c @ theta(p) + d * k),
        step=lambda value: 1e-3 * max(abs(value), 0.1),
        settings={"relative_step": 1e-3},
    )

    @dataclasses.dataclass(frozen=True)
    class Result:  # what _following reads of an MSMResult, and replaces
        params: dict
        param_names: tuple
        moment_names: tuple
        estimates: np.ndarray
        jacobian: np.ndarray
        weighting: np.ndarray
        data_covariance: np.ndarray
        n_data: np.ndarray
        n_simulated: np.ndarray
        covariance: np.ndarray | None = None
        standard_errors: np.ndarray | None = None
        ci_lower: np.ndarray | None = None
        ci_upper: np.ndarray | None = None

    result = Result(
        params=dict(zip(names, [1.5, 0.95], strict=True)),
        param_names=tuple(names),
        moment_names=("m1", "m2", "m3"),
        estimates=np.array([1.5, 0.95]),
        jacobian=a,
        weighting=np.diag([1.0, 2.0, 0.5]),
        data_covariance=np.diag([0.1, 0.2, 0.3]),
        n_data=np.full(3, 100.0),
        n_simulated=np.full(3, 1000.0),
    )
    corrected, slopes = _following(problem, result=result, value=0.6)
    gradient = np.array([slopes["cost_gradient"][n] for n in names])
    np.testing.assert_allclose(gradient, -c / d, rtol=1e-8)
    np.testing.assert_allclose(list(slopes["cost_slope"].values()), b, rtol=1e-8)
    expected = calibrated_covariance(result=result, cost_slope=b, cost_gradient=-c / d)
    np.testing.assert_allclose(corrected.covariance, expected, rtol=1e-7)
    np.testing.assert_allclose(corrected.standard_errors, np.sqrt(np.diag(expected)), rtol=1e-7)


def panel_moments(program):
    """Return the drawn moments as the program took them before summing inside the scan.

    The whole panel of the periods read (``build_regime_panel``), each period's ratio (a
    ``vmap`` over periods), the group sums over the panel (``group_sums``) and the counts read
    off the panel: the oracle of ``estimation.drawn``.
    """
    import jax
    import jax.numpy as jnp

    from project.egm.structure import egm_structure
    from project.estimation.choice_count import choice_counter
    from project.estimation.group_sums import group_sums
    from project.estimation.ratios import moment_ratio
    from project.simulation.regime_steps import build_regime_panel

    model, stop, members = program.model, program.stop, program.members
    methods = {r: egm_structure(v).method for r, v in model.regimes.items()}
    ratio_of = jax.vmap(moment_ratio(model), in_axes=(0, 0, 0, None, 0, 0))
    living_codes = jnp.asarray([model.code(r) for r in model.regimes])
    count = choice_counter(model, program.choice)
    panel_of = build_regime_panel(model, methods=methods, stop=stop)

    def drawn(panel, groups):
        codes, states, actions, _ = panel_of(*panel)
        params, periods, ages = panel[4], panel[5], panel[6]
        ratio = ratio_of(codes, states, actions, params, periods[:stop], ages[:stop])
        read = jnp.isin(codes, living_codes) & (ratio > 0)
        totals = group_sums(
            values=jnp.log(jnp.where(read, ratio, 1.0)), members=members, groups=groups
        )
        member = groups[:stop].astype(jnp.int32)
        years = read.sum(axis=1, dtype=jnp.int32) @ member
        living = (read.T.astype(jnp.int32) @ member > 0).sum(axis=0)
        return totals / years, living, count(codes, actions, totals.dtype)

    return drawn


def test_the_moments_summed_in_the_scan_are_the_panel_s_bit_for_bit(small_model, x64):
    """Moments, living subjects and the claim count equal the panel's, to the bit."""
    from project.estimation.choice_count import ChoiceCount
    from project.estimation.lifecycle import LifecycleMoments

    model, params, initial = small_model
    common = {
        "model": model,
        "base_params": params | {"work_cost": 0.6},
        "initial_conditions": initial,
        "seed": 4,
        "age_groups": [(25, 30), (40, 45), (55, 60)],
        "estimated": ("crra", "beta", "work_cost"),
        "choice": ChoiceCount(regime="working", action="claim", label="claim", age=61),
    }
    scanned = LifecycleMoments(**common).program
    reference = LifecycleMoments(**common).program
    reference._moments = lambda: panel_moments(reference)
    assert scanned.stop > 32  # the sums run in windows (more than one window of periods)
    for point in ([1.2, 0.95, 0.55], [2.0, 0.97, 0.62]):
        got = scanned._run(np.array([point]), derivative=False)
        expected = reference._run(np.array([point]), derivative=False)
        assert [x.tobytes() for x in got] == [x.tobytes() for x in expected]
        assert got[-1][0][1] > 0  # some claim


def test_the_program_counts_the_claims_the_simulated_table_holds(small_model, x64):
    from project.estimation.choice_count import ChoiceCount
    from project.estimation.held import HeldMoments
    from project.estimation.lifecycle import LifecycleMoments

    model, params, initial = small_model
    choice = ChoiceCount(regime="working", action="claim", label="claim", age=61)
    common = {
        "model": model,
        "base_params": params | {"work_cost": 0.6},
        "initial_conditions": initial,
        "seed": 4,
        "age_groups": [(40, 45), (55, 60)],
        "estimated": ("crra", "beta", "work_cost"),
        "choice": choice,
    }
    program = LifecycleMoments(**common, compiled=True)
    table = LifecycleMoments(**common, compiled=False)
    for cost in (0.55, 0.62):
        point = {"crra": 1.2, "beta": 0.95, "work_cost": cost}
        counted = program.choice_counts(point)
        np.testing.assert_array_equal(counted, table.choice_counts(point))
        by_table = claiming_table(
            model=model, params=params | point, initial_conditions=initial, seed=4
        )
        assert counted[1] / counted[0] == claim_share(by_table, age=61)
        # The claiming table of every age: from the program's own run over every period.
        counts = program.program.choice_table(np.array([1.2, 0.95, cost]))
        by_program = claiming_table_of_counts(ages=np.asarray(model.ages), counts=counts)
        pd.testing.assert_frame_equal(by_program, by_table)
        assert by_table["claiming"].sum() > 0
    held = HeldMoments(program, held={"work_cost": 0.62})
    assert held.estimated == ("crra", "beta")
    point = {"crra": 1.2, "beta": 0.95}
    np.testing.assert_array_equal(held(point), program(point | {"work_cost": 0.62}))
    np.testing.assert_array_equal(
        held.choice_counts(point), program.choice_counts(point | {"work_cost": 0.62})
    )
    with pytest.raises(EstimationError, match="exactly the params"):
        held({"crra": 1.2})
    with pytest.raises(EstimationError, match="some, not all"):
        HeldMoments(program, held={"crra": 1, "beta": 1, "work_cost": 1})


@pytest.mark.parametrize(
    ("fields", "match"),
    [
        ({"regime": "limbo"}, "names no regime"),
        ({"action": "consumption"}, "must be a discrete action"),
        ({"label": "maybe"}, "must be a discrete action"),
        ({"age": 120}, "no age of the model"),
    ],
)
def test_a_choice_count_the_model_cannot_make_is_refused(small_model, fields, match):
    from project.estimation.choice_count import ChoiceCount

    model, _, _ = small_model
    base = {"regime": "working", "action": "claim", "label": "claim", "age": 62}
    with pytest.raises(EstimationError, match=match):
        ChoiceCount(**(base | fields)).period(model)


def test_standard_errors_follow_the_calibrated_param_as_the_fixed_point_does():
    """Linear moments m = A theta + b k with the calibration k = c' theta: the fixed point of
    estimating theta at k and recalibrating k, over many draws of the data moments, has the
    covariance the formula gives; with b = 0 it is the usual sandwich."""
    from types import SimpleNamespace

    from project.estimation.claiming import calibrated_covariance

    rng = np.random.default_rng(0)
    a = np.array([[1.0, 0.2], [0.5, 1.0], [0.3, -0.4], [1.2, 0.7]])
    b = np.array([0.5, -0.2, 0.3, 0.25])
    c = np.array([0.5, -0.6])
    variances = np.array([0.04, 0.02, 0.05, 0.03])
    n_data = np.full(4, 1000.0)
    n_simulated = np.full(4, 4000.0)
    omega = np.diag(variances * (1 + n_data / n_simulated))
    weighting = np.linalg.inv(omega)
    result = SimpleNamespace(
        jacobian=a,
        weighting=weighting,
        data_covariance=np.diag(variances),
        n_data=n_data,
        n_simulated=n_simulated,
    )
    ours = calibrated_covariance(result=result, cost_slope=b, cost_gradient=c)

    projection = np.linalg.solve(a.T @ weighting @ a, a.T @ weighting)
    draws = rng.multivariate_normal(np.zeros(4), omega, size=4000)
    thetas = np.zeros((len(draws), 2))
    for _ in range(100):  # estimate at the cost, recalibrate the cost, for every draw at once
        costs = thetas @ c
        thetas = (draws - costs[:, None] * b) @ projection.T
    np.testing.assert_allclose(ours, np.cov(thetas.T), rtol=0.08, atol=1e-4)
    sandwich = np.linalg.inv(a.T @ weighting @ a)
    fixed = calibrated_covariance(result=result, cost_slope=np.zeros(4), cost_gradient=c)
    np.testing.assert_allclose(fixed, sandwich, rtol=1e-12)
    assert not np.allclose(ours, sandwich, rtol=0.05)
