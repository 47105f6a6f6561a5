"""MSM estimation: recovery, sandwich standard errors, J-test, bad inputs, life-cycle moments."""

import json
import logging

import numpy as np
import optimagic as om
import pandas as pd
import pytest

from project.errors import ProjectError
from project.estimation import (
    EstimationError,
    age_group_means,
    estimate_msm,
    lifecycle_moment_simulator,
)

K = 6
GRID = np.linspace(0.0, 1.0, K)
TRUTH = {"level": 1.5, "slope": -0.8}
SIGMA = 0.5 + GRID  # sd of one observation behind moment k


def curve(params):
    """The closed-form moments: level * exp(slope * t_k) on K points t_k."""
    return params["level"] * np.exp(params["slope"] * GRID)


def curve_jacobian(params):
    base = np.exp(params["slope"] * GRID)
    return np.column_stack([base, params["level"] * GRID * base])


def noisy_curve(*, seed, n):
    """A simulator with fixed noise (common random numbers): curve + mean of n draws."""
    noise = np.random.default_rng(seed).normal(size=(n, K)).mean(axis=0) * SIGMA
    return lambda params: curve(params) + noise


def draw_data(*, seed, n):
    """Data moments from n observations per moment at TRUTH, with their sampling variances."""
    draws = curve(TRUTH) + np.random.default_rng(seed).normal(size=(n, K)) * SIGMA
    return draws.mean(axis=0), draws.var(axis=0, ddof=1) / n


def estimate(**overrides):
    data, variances = draw_data(seed=1, n=400)
    arguments = {
        "simulate_moments": noisy_curve(seed=2, n=800),
        "data_moments": data,
        "data_variances": variances,
        "n_data": 400,
        "n_simulated": 800,
        "start_params": {"level": 1.0, "slope": 0.0},
        "bounds": {"level": (0.1, 5.0), "slope": (-3.0, 3.0)},
    }
    return estimate_msm(**(arguments | overrides))


# ---------------------------------------------------------------------------------------------
# Recovery, standard errors, Jacobian


def test_recovers_truth_within_two_standard_errors():
    result = estimate()
    truth = np.array(list(TRUTH.values()))
    assert result.converged
    assert result.param_names == ("level", "slope")
    assert np.all(np.abs(result.estimates - truth) < 2 * result.standard_errors)
    assert np.all((result.ci_lower < truth) & (truth < result.ci_upper))
    assert result.efficient_weighting


def test_coverage_of_intervals_in_a_small_monte_carlo():
    """Across replications the 95 % intervals cover the truth about 95 % of the time.

    n_simulated = n_data doubles the variance of the estimate (factor 1 + n_data / n_sim):
    without the simulation correction these replications cover 86 % (level) and 87.5 % (slope).
    """
    truth = np.array(list(TRUTH.values()))
    covered = []
    for replication in range(80):
        data, variances = draw_data(seed=1000 + replication, n=200)
        result = estimate_msm(
            simulate_moments=noisy_curve(seed=5000 + replication, n=200),
            data_moments=data,
            data_variances=variances,
            n_data=200,
            n_simulated=200,
            start_params={"level": 1.0, "slope": 0.0},
            bounds={"level": (0.1, 5.0), "slope": (-3.0, 3.0)},
        )
        covered.append((result.ci_lower < truth) & (truth < result.ci_upper))
    coverage = np.mean(covered, axis=0)
    assert np.all((coverage > 0.88) & (coverage <= 1.0)), coverage


def linear_problem(*, seed: int, full_covariance: bool = False):
    """Return a linear moment function's a and B, the data covariance, n_data and data."""
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=K), rng.normal(size=(K, 2))
    if full_covariance:
        root = rng.normal(size=(K, K))
        covariance = root @ root.T / K + np.eye(K) * 0.1
    else:
        covariance = np.diag(rng.uniform(0.01, 0.2, K))
    n_data = rng.integers(100, 1000, K).astype(float)
    data = a + b @ np.array([0.3, -1.2]) + rng.normal(size=K) * 0.1
    return a, b, covariance, n_data, data


@pytest.mark.parametrize("full_covariance", [False, True])
def test_linear_sandwich_equals_analytical_formula(full_covariance):
    a, b, covariance, n_data, data = linear_problem(seed=3, full_covariance=full_covariance)
    n_simulated = 500.0
    result = estimate_msm(
        simulate_moments=lambda p: a + b @ np.array([p["x"], p["y"]]),
        data_moments=data,
        data_variances=covariance if full_covariance else np.diag(covariance),
        n_data=n_data,
        n_simulated=n_simulated,
        start_params={"x": 0.0, "y": 0.0},
    )
    weighting = np.linalg.inv(covariance)
    scale = np.sqrt(1 + n_data / n_simulated)
    omega = covariance * np.outer(scale, scale)
    bread = np.linalg.inv(b.T @ weighting @ b)
    expected = bread @ b.T @ weighting @ omega @ weighting @ b @ bread
    np.testing.assert_allclose(result.covariance, expected, rtol=1e-6)
    np.testing.assert_allclose(result.standard_errors, np.sqrt(np.diag(expected)), rtol=1e-6)
    gls = bread @ b.T @ weighting @ (data - a)
    np.testing.assert_allclose(result.estimates, gls, atol=1e-4 * result.standard_errors.min())
    assert not result.efficient_weighting  # n_data differs by moment


@pytest.mark.parametrize("full_covariance", [False, True])
def test_efficient_weighting_gives_the_optimal_gls_estimate_and_its_covariance(full_covariance):
    """W = Omega_s^-1 (simulation noise included): the estimate is GLS under Omega_s, the
    sandwich reduces to (G' Omega_s^-1 G)^-1 and J equals the objective g' Omega_s^-1 g."""
    a, b, covariance, n_data, data = linear_problem(seed=4, full_covariance=full_covariance)
    arguments = {
        "simulate_moments": lambda p: a + b @ np.array([p["x"], p["y"]]),
        "data_moments": data,
        "data_variances": covariance if full_covariance else np.diag(covariance),
        "n_data": n_data,
        "n_simulated": 500.0,
        "start_params": {"x": 0.0, "y": 0.0},
    }
    result = estimate_msm(**arguments, weighting="efficient")
    scale = np.sqrt(1 + n_data / 500.0)
    omega = covariance * np.outer(scale, scale)
    optimal = np.linalg.inv(omega)
    expected = np.linalg.inv(b.T @ optimal @ b)
    np.testing.assert_allclose(result.covariance, expected, rtol=1e-6)
    gls = expected @ b.T @ optimal @ (data - a)
    np.testing.assert_allclose(result.estimates, gls, atol=1e-4 * result.standard_errors.min())
    assert result.efficient_weighting
    assert result.j_statistic == pytest.approx(result.objective, rel=1e-8)
    by_data = estimate_msm(**arguments)  # the data's weighting: other estimate, larger s.e.
    assert not by_data.efficient_weighting
    assert np.all(by_data.standard_errors >= result.standard_errors * (1 - 1e-9))
    with pytest.raises(EstimationError, match="weighting must be one of"):
        estimate_msm(**arguments, weighting="optimal")


def test_finite_difference_jacobian_matches_analytical():
    result = estimate()
    np.testing.assert_allclose(result.jacobian, curve_jacobian(result.params), rtol=1e-6)


# ---------------------------------------------------------------------------------------------
# J-test


def test_exactly_identified_gives_zero_j():
    result = estimate_msm(
        simulate_moments=lambda p: np.array([p["x"] + p["y"], p["x"] - 2 * p["y"]]),
        data_moments=[1.0, -0.5],
        data_variances=[0.01, 0.02],
        n_data=100,
        n_simulated=1000,
        start_params={"x": 0.0, "y": 0.0},
    )
    assert result.j_dof == 0
    assert result.j_statistic == pytest.approx(0.0, abs=1e-8)
    assert np.isnan(result.j_p_value)
    assert result.summary()["j_p_value"] is None


def test_misspecified_over_identified_model_fails_the_j_test():
    # The data follow a quadratic in t; the model is a straight line.
    data = 1.0 + 2.0 * GRID**2
    result = estimate_msm(
        simulate_moments=lambda p: p["a"] + p["b"] * GRID,
        data_moments=data,
        data_variances=np.full(K, 0.01**2),
        n_data=1000,
        n_simulated=5000,
        start_params={"a": 0.0, "b": 0.0},
    )
    assert result.j_dof == K - 2
    assert result.j_statistic > 100
    assert result.j_p_value < 0.01


def test_j_is_near_its_degrees_of_freedom_when_correctly_specified():
    result = estimate()
    assert result.j_dof == K - 2
    assert result.j_p_value > 0.01


# ---------------------------------------------------------------------------------------------
# Tables, multistart, convergence


def test_tables_and_summary():
    result = estimate(moment_names=[f"t{k}" for k in range(K)])
    estimates = result.to_frame()
    assert list(estimates["param"]) == ["level", "slope"]
    assert {"estimate", "std_error", "ci_lower", "ci_upper", "at_bound", "converged"} <= set(
        estimates
    )
    moments = result.to_frame(table="moments")
    assert list(moments["moment"]) == [f"t{k}" for k in range(K)]
    np.testing.assert_allclose(moments["residual"], moments["simulated"] - moments["data"])
    np.testing.assert_allclose(moments["t_stat"], moments["residual"] / moments["std_error"])
    json.dumps(result.summary())
    with pytest.raises(EstimationError, match="table must be"):
        result.to_frame(table="nonsense")


def test_moment_names_come_from_a_series():
    data, _ = draw_data(seed=1, n=400)
    names = [f"age_{k}" for k in range(K)]
    result = estimate(data_moments=pd.Series(data, index=names))
    assert result.moment_names == tuple(names)


def test_multistart_runs_local_optimisations():
    result = estimate(multistart=om.MultistartOptions(n_samples=20, stopping_maxopt=2, seed=0))
    assert result.converged
    assert result.n_local_optimizations >= 1
    np.testing.assert_allclose(result.estimates, estimate().estimates, atol=1e-3)
    searches = result.local_searches
    assert len(searches) == result.n_local_optimizations
    assert min(s["objective"] for s in searches) == pytest.approx(result.objective, rel=1e-6)
    assert all(set(s["start"]) == set(s["end"]) == {"level", "slope"} for s in searches)
    starts = [tuple(s["start"].values()) for s in searches]
    assert len(set(starts)) == len(starts)  # each from its own sampled point
    single = estimate()
    (only,) = single.local_searches
    assert only["start"] == {"level": 1.0, "slope": 0.0}
    assert only["end"] == single.params
    assert only["objective"] == pytest.approx(single.objective, rel=1e-9)
    assert only["converged"] is True


def test_non_convergence_raises_by_default():
    with pytest.raises(EstimationError, match="did not converge"):
        estimate(algo_options={"stopping_maxiter": 1})


def test_non_convergence_is_recorded_with_warn(caplog):
    with caplog.at_level(logging.WARNING, logger="project.estimation"):
        result = estimate(algo_options={"stopping_maxiter": 1}, on_failure="warn")
    assert not result.converged
    assert "did not converge" in caplog.text
    assert not result.to_frame()["converged"].any()
    assert not result.to_frame(table="moments")["converged"].any()
    assert result.summary()["converged"] is False


def test_estimate_at_a_bound_is_flagged(caplog):
    with caplog.at_level(logging.WARNING, logger="project.estimation"):
        result = estimate(bounds={"level": (0.1, 1.2), "slope": (-3.0, 3.0)})
    assert result.at_bound.tolist() == [True, False]
    assert result.summary()["params_at_bound"] == ["level"]
    assert "ended at a bound" in caplog.text
    # No standard error or interval for the param at its bound; the other keeps its own.
    assert np.isnan([result.standard_errors[0], result.ci_lower[0], result.ci_upper[0]]).all()
    assert np.isfinite([result.standard_errors[1], result.ci_lower[1], result.ci_upper[1]]).all()


def test_no_interval_crosses_a_bound():
    """An interior estimate whose Wald interval reaches past a bound is truncated at it."""
    free = estimate()
    (level_se, _), (level, _) = free.standard_errors, free.estimates
    lower = level - 0.5 * level_se  # inside the interval, below the estimate
    bounded = estimate(
        bounds={"level": (lower, 10.0), "slope": (-10.0, 10.0)},
        start_params={"level": level, "slope": 0.0},
    )
    assert not bounded.at_bound.any()
    assert bounded.ci_lower[0] == lower
    assert bounded.ci_upper[0] == pytest.approx(level + 1.959964 * level_se, rel=1e-4)
    np.testing.assert_allclose(bounded.ci_lower[1], free.ci_lower[1], rtol=1e-4)


# ---------------------------------------------------------------------------------------------
# Bad inputs


def test_flat_objective_names_the_unidentified_param():
    with pytest.raises(EstimationError, match=r"\['nuisance'\] are not identified"):
        estimate(
            simulate_moments=lambda p: curve({"level": p["level"], "slope": p["slope"]}),
            start_params={"level": 1.0, "slope": 0.0, "nuisance": 0.5},
        )


def test_collinear_params_are_not_separately_identified():
    with pytest.raises(EstimationError, match="not separately identified") as error:
        estimate(
            simulate_moments=lambda p: curve({"level": p["level"], "slope": p["s1"] + p["s2"]}),
            start_params={"level": 1.0, "s1": 0.0, "s2": 0.0},
            bounds=None,
        )
    assert "s1" in str(error.value)
    assert "s2" in str(error.value)


def test_zero_variance_names_the_moment():
    _, variances = draw_data(seed=1, n=400)
    variances[3] = 0.0
    with pytest.raises(EstimationError, match=r"\['m3'\].*weighting matrix"):
        estimate(data_variances=variances)


def test_singular_covariance_is_refused():
    _, variances = draw_data(seed=1, n=400)
    covariance = np.diag(variances)
    covariance[0, 1] = covariance[1, 0] = np.sqrt(variances[0] * variances[1])  # correlation 1
    with pytest.raises(EstimationError, match=r"not positive definite.*'m0'"):
        estimate(data_variances=covariance)


def test_more_params_than_moments_is_refused():
    with pytest.raises(EstimationError, match=r"3 params .* cannot be estimated from 2 moments"):
        estimate_msm(
            simulate_moments=lambda p: np.zeros(2),
            data_moments=[0.0, 1.0],
            data_variances=[1.0, 1.0],
            n_data=10,
            n_simulated=10,
            start_params={"a": 0.0, "b": 0.0, "c": 0.0},
        )


def test_non_finite_moments_at_the_start_are_named():
    def simulator(params):
        moments = curve(params)
        moments[2] = np.nan
        return moments

    with pytest.raises(EstimationError, match=r"\['m2'\] are not finite.*start params"):
        estimate(simulate_moments=simulator)


def test_non_finite_moments_during_the_search_are_named():
    def simulator(params):
        moments = curve(params)
        if params["level"] > 1.2:
            moments[4] = np.inf
        return moments

    with pytest.raises(EstimationError, match=r"\['m4'\] are not finite .* at params"):
        estimate(simulate_moments=simulator)


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        ({"data_variances": np.ones(K - 1)}, r"data_variances has shape \(5,\)"),
        ({"simulate_moments": lambda p: curve(p)[:-1]}, r"returned shape \(5,\)"),
        ({"moment_names": ["a", "b"]}, "moment_names must be 6 unique names"),
        ({"n_data": np.ones(K - 1)}, "n_data must be one number or one per moment"),
        ({"n_simulated": 0}, "n_simulated must be > 0"),
        ({"data_moments": [1.0, np.nan, 2.0, 3.0, 4.0, 5.0]}, r"\['m1'\].*not finite"),
        (
            {"start_params": {"level": 9.0, "slope": 0.0}},
            r"'level', 9, lies outside its bounds \[0.1, 5\]",
        ),
        ({"bounds": {"level": (0.1, 5.0), "speed": (0, 1)}}, r"bounds name params \['speed'\]"),
        ({"bounds": {"level": (2.0, 1.0)}}, r"bounds\['level'\].*lower bound must be below"),
        ({"start_params": {"level": "high", "slope": 0.0}}, "start value of 'level'"),
        ({"start_params": {}}, "start_params must be a non-empty mapping"),
        ({"relative_step": 0.0}, "relative_step must be"),
        ({"on_failure": "ignore"}, "on_failure must be"),
        ({"bounds": None, "multistart": True}, r"params \['level', 'slope'\] have an infinite"),
        ({"algorithm": "no_such_algorithm"}, "optimagic failed in minimize"),
    ],
)
def test_bad_inputs_raise_naming_the_culprit(overrides, match):
    with pytest.raises(EstimationError, match=match):
        estimate(**overrides)


def test_estimation_error_is_a_project_error():
    assert issubclass(EstimationError, ProjectError)
    assert issubclass(EstimationError, ValueError)


# ---------------------------------------------------------------------------------------------
# The life-cycle adapter (a tiny model: 40 periods from age 30, small grids, 400 subjects)

AGE_GROUPS = [(30, 35), (35, 40), (40, 45), (45, 50), (50, 55), (55, 60), (60, 65)]
DISTRIBUTION = {
    "pref_type": {"probabilities": [0.5, 0.5]},
    "lagged_retirement": {"label": "working"},
    "income": {"label": "node_1"},
    "wealth": {"uniform": [0.2, 1.0]},
}


@pytest.fixture(scope="module")
def lifecycle_setup():
    import jax

    from project.models import lifecycle
    from project.simulation import draw_initial_conditions

    jax.config.update("jax_enable_x64", True)
    model = lifecycle.build_model(
        n_wealth=10,
        n_consumption=10,
        n_income=3,
        n_periods=40,
        start_age=30,
        n_savings=15,
        taste_shocks=True,
    )
    base = lifecycle.default_params() | {"taste_shock_scale": lifecycle.DEFAULT_TASTE_SHOCK_SCALE}

    def simulator(*, seed, n_subjects=400):  # one panel size: one compile
        initial = draw_initial_conditions(
            model=model, n_subjects=n_subjects, seed=seed, distribution=DISTRIBUTION
        )
        return lifecycle_moment_simulator(
            model=model,
            base_params=base,
            initial_conditions=initial,
            seed=seed + 1,
            age_groups=AGE_GROUPS,
        )

    yield model, base, simulator
    jax.config.update("jax_enable_x64", False)


def test_lifecycle_moments_are_finite_and_deterministic(lifecycle_setup):
    _, _, simulator = lifecycle_setup
    simulate_moments = simulator(seed=10)
    first = simulate_moments({"crra": 2.0, "beta": 0.96})
    second = simulate_moments({"crra": 2.0, "beta": 0.96})
    assert first.shape == (len(AGE_GROUPS),)
    assert np.isfinite(first).all()
    assert first.tobytes() == second.tobytes()
    assert simulate_moments.moment_names[0] == "log_wealth_income_31_35"
    assert first.tobytes() != simulator(seed=20)({"crra": 2.0, "beta": 0.96}).tobytes()


def test_more_risk_aversion_raises_young_wealth_to_income(lifecycle_setup):
    """Precautionary saving: higher crra -> more wealth relative to income before 50."""
    _, _, simulator = lifecycle_setup
    simulate_moments = simulator(seed=10)
    low = simulate_moments({"crra": 1.5, "beta": 0.96})
    high = simulate_moments({"crra": 3.0, "beta": 0.96})
    assert np.all(high[:4] > low[:4] + 0.02), (low, high)
    patient = simulate_moments({"crra": 1.5, "beta": 0.98})
    assert np.all(patient[:4] > low[:4]), (low, patient)


def test_lifecycle_adapter_refuses_bad_input(lifecycle_setup):
    model, base, simulator = lifecycle_setup
    simulate_moments = simulator(seed=10)
    with pytest.raises(EstimationError, match=r"unexpected \['pension'\]"):
        simulate_moments({"crra": 2.0, "beta": 0.96, "pension": 0.5})
    with pytest.raises(EstimationError, match=r"missing \['beta'\]"):
        simulate_moments({"crra": 2.0})
    initial = simulate_moments.initial_conditions
    arguments = {"model": model, "base_params": base, "initial_conditions": initial, "seed": 1}
    with pytest.raises(EstimationError, match=r"Age group \(70, 75\) holds no age"):
        lifecycle_moment_simulator(**arguments, age_groups=[(70, 75)])
    with pytest.raises(EstimationError, match="overlap"):
        lifecycle_moment_simulator(**arguments, age_groups=[(30, 40), (35, 45)])
    with pytest.raises(EstimationError, match="'disutility_of_work' must be a scalar"):
        lifecycle_moment_simulator(
            **arguments, age_groups=AGE_GROUPS, estimated=("disutility_of_work",)
        )


def test_lifecycle_estimate_recovers_crra_and_beta(lifecycle_setup):
    """Data from 400 subjects at the truth (one seed), simulation of 400 with another."""
    _, _, simulator = lifecycle_setup
    truth = {"crra": 2.0, "beta": 0.96}
    data_frame = simulator(seed=30).frame(truth)
    per_subject = [
        data_frame[(data_frame["age"] > lo) & (data_frame["age"] <= hi)]
        .groupby("subject_id")["log_wealth_income"]
        .mean()
        for lo, hi in AGE_GROUPS
    ]
    data = age_group_means(frame=data_frame, age_groups=AGE_GROUPS)
    variances = np.array([values.var(ddof=1) / len(values) for values in per_subject])
    simulate_moments = simulator(seed=40)
    result = estimate_msm(
        simulate_moments=simulate_moments,
        data_moments=data,
        data_variances=variances,
        n_data=400,
        n_simulated=400,
        start_params={"crra": 3.0, "beta": 0.94},
        bounds={"crra": (1.2, 6.0), "beta": (0.85, 0.995)},
        moment_names=simulate_moments.moment_names,
        algorithm="pounders",
        algo_options={
            "trustregion_initial_radius": 0.01,
            "convergence_gtol_abs": 1e-5,
            "convergence_gtol_rel": 1e-5,
        },
        relative_step=1e-3,
    )
    estimates = np.array([result.params["crra"], result.params["beta"]])
    assert result.converged
    assert np.all(np.abs(estimates - np.array([2.0, 0.96])) < 2 * result.standard_errors)
    assert np.all(result.standard_errors < np.array([1.0, 0.01]))


def test_the_sensitivity_is_the_estimate_s_response_to_a_data_moment():
    """Linear moments: re-estimating after one data moment rises by eps moves the estimates by
    eps times that moment's column of (G'WG)^-1 G'W."""
    from project.estimation.profiles import sensitivity

    a, b, covariance, _, data = linear_problem(seed=5)
    arguments = {
        "simulate_moments": lambda p: a + b @ np.array([p["x"], p["y"]]),
        "data_variances": np.diag(covariance),
        "n_data": 100.0,
        "n_simulated": 500.0,
        "start_params": {"x": 0.0, "y": 0.0},
    }
    base = estimate_msm(data_moments=data, **arguments)
    shift = np.zeros(K)
    shift[2] = 0.01
    moved = estimate_msm(data_moments=data + shift, **arguments)
    np.testing.assert_allclose(
        moved.estimates - base.estimates, sensitivity(base)[:, 2] * 0.01, rtol=1e-4, atol=1e-9
    )


def linear_slice_problem():
    """Return the moment function, the slope matrix and the MSM result of a linear model."""
    a, b, covariance, _, data = linear_problem(seed=6)

    def simulate(p):
        return a + b @ np.array([p["x"], p["y"]])

    result = estimate_msm(
        simulate_moments=simulate,
        data_moments=data,
        data_variances=np.diag(covariance),
        n_data=100.0,
        n_simulated=500.0,
        start_params={"x": 1.0, "y": 0.0},
        bounds={"x": (0.25, 5.0), "y": (-5.0, 5.0)},
    )
    return simulate, b, result


def test_the_criterion_slices_are_the_quadratic_of_a_linear_model():
    """g'Wg along param i through an interior minimum is c + h^2 (G'WG)_ii, minimal at h = 0."""
    from project.estimation.profiles import criterion_profiles

    simulate, b, result = linear_slice_problem()
    profiles = criterion_profiles(simulate_moments=simulate, result=result, n_points=5)
    curvature = np.diag(b.T @ result.weighting @ b)
    for i, name in enumerate(("x", "y")):
        values = np.array(profiles[name]["values"])
        assert values.min() >= result.lower_bounds[i] and values.max() <= result.upper_bounds[i]
        assert result.estimates[i] in values
        gaps = values - result.estimates[i]
        expected = result.objective + gaps**2 * curvature[i]
        np.testing.assert_allclose(profiles[name]["criterion"], expected, rtol=1e-4)


def test_a_slice_holds_the_estimate_once_in_place_of_its_middle_point():
    """Its middle point is the estimate up to rounding: it is not simulated a second time."""
    from project.estimation.profiles import _slice_points

    estimate = 0.1 + 0.2  # 0.30000000000000004: the middle of the slice only up to rounding
    values = _slice_points(estimate - 0.25, estimate + 0.25, n_points=5, estimate=estimate)
    assert len(values) == 5
    assert estimate in values
    np.testing.assert_allclose(np.diff(values), 0.125, rtol=1e-12)
    cut = _slice_points(0.25, estimate + 0.25, n_points=5, estimate=estimate)  # a bound cuts it
    assert len(cut) == 6
    assert estimate in cut
    assert np.all(np.diff(cut) > 0)


def test_a_slice_point_without_finite_moments_is_a_gap_not_a_number():
    """Where the moments are not finite (the solve failed there), the slice records None."""
    from project.estimation.profiles import criterion_profiles

    simulate, _, result = linear_slice_problem()
    edge = result.params["x"] + 1e-3  # a model undefined above this x

    def broken_above(p):
        return simulate(p) if p["x"] <= edge else np.full(len(result.data_moments), np.nan)

    profiles = criterion_profiles(simulate_moments=broken_above, result=result, n_points=5)
    values, criterion = profiles["x"]["values"], profiles["x"]["criterion"]
    assert [c is None for c in criterion] == [v > edge for v in values]
    assert any(c is None for c in criterion) and any(c is not None for c in criterion)
    assert all(c is not None for c in profiles["y"]["criterion"])


def test_the_simulation_share_is_the_simulated_means_variance_over_the_datas():
    """Means of n_data and of n_simulated draws of one distribution: the simulated mean's
    variance over the data mean's is n_data / n_simulated, and the table's largest is read."""
    from project.estimation.inputs import largest_simulation_share, simulation_variance_share

    rng = np.random.default_rng(1)
    n_data, n_simulated, draws = 300, 1200, 4000
    data_means = rng.lognormal(0.0, 0.8, size=(draws, n_data)).mean(axis=1)
    simulated_means = rng.lognormal(0.0, 0.8, size=(draws, n_simulated)).mean(axis=1)
    share = simulation_variance_share(n_data=n_data, n_simulated=n_simulated)
    assert share == pytest.approx(0.25)
    assert simulated_means.var() / data_means.var() == pytest.approx(float(share), rel=0.1)
    table = pd.DataFrame({"n_data": [4942.4, 2432.0], "n_simulated": [59_844.0, 48_300.0]})
    assert largest_simulation_share(table) == pytest.approx(4942.4 / 59_844.0)


def test_step_standard_errors_of_linear_moments_are_the_sandwichs_at_any_step():
    """m(theta) = A theta: every central difference is exact, so each step gives (A'WA)^-1."""
    from types import SimpleNamespace

    from project.estimation.inference import step_standard_errors

    a = np.array([[1.0, 0.3], [0.2, 2.0], [0.5, -0.7]])
    weighting = np.diag([4.0, 1.0, 2.0])
    result = SimpleNamespace(
        params={"x": 0.5, "y": -1.2},
        param_names=("x", "y"),
        moment_names=("m1", "m2", "m3"),
        weighting=weighting,
    )
    expected = np.sqrt(np.diag(np.linalg.inv(a.T @ weighting @ a)))
    for step in (1e-1, 1e-3):
        errors = step_standard_errors(
            simulate_moments=lambda p: a @ np.array([p["x"], p["y"]]), result=result, step=step
        )
        np.testing.assert_allclose([errors["x"], errors["y"]], expected, rtol=1e-7)


def test_the_step_sentence_prints_the_other_steps_standard_errors_or_none():
    from project.analysis.estimation_text import step_sentence
    from project.estimation.products import SavedEstimation

    summary = {
        "settings": {"relative_step": 0.001},
        "param_names": ["crra", "beta"],
        "searches": {
            "multistart": {
                "kept": True,
                "std_errors_by_step": {"0.01": {"beta": 0.000589, "crra": 0.04151}},
            }
        },
    }
    estimates = pd.DataFrame({"param": ["crra", "beta"], "std_error": [0.0427, 0.00056]})
    saved = SavedEstimation(estimates=estimates, moments=pd.DataFrame(), summary=summary)
    sentence = step_sentence(saved)
    assert "differences of 0.1 % of each estimate; steps of 1 %" in sentence
    assert "0.042 for \u03b3 (\u22123 %) and 0.00059 for \u03b2 (+5 %)." in sentence
    summary["searches"]["multistart"].pop("std_errors_by_step")
    assert step_sentence(saved).endswith("0.1 % of each estimate.")


def test_the_correlation_sentence_prints_the_summary_correlation_and_its_direction():
    from project.analysis.estimation_text import correlation_sentence
    from project.estimation.products import SavedEstimation

    estimates = pd.DataFrame({"param": ["crra", "beta"], "estimate": [0.84, 0.9745]})
    summary = {
        "param_names": ["crra", "beta"],
        "covariance": [[0.0016, -0.0000192], [-0.0000192, 3.6e-7]],
    }
    saved = SavedEstimation(estimates=estimates, moments=pd.DataFrame(), summary=summary)
    sentence = correlation_sentence(saved)
    assert "correlated at \u22120.80:" in sentence
    assert "a higher \u03b3 with a lower \u03b2" in sentence
    assert "less patience" in sentence
    summary["covariance"] = [[0.0016, 0.0000192], [0.0000192, 3.6e-7]]
    sentence = correlation_sentence(saved)
    assert "correlated at 0.80:" in sentence
    assert "a higher \u03b3 with a higher \u03b2" in sentence
    assert "patience)" not in sentence


def test_a_multistart_keeps_the_end_point_with_the_lowest_criterion_not_the_reported_one():
    """optimagic keeps the local search whose last reported value is lowest; pounders may report
    a value that is not the criterion at its end point, so the end points are compared anew."""
    from types import SimpleNamespace

    from project.estimation.search import best_end_point

    first = SimpleNamespace(params=np.array([1.0, 0.9]), success=True, message="first")
    second = SimpleNamespace(params=np.array([1.2, 0.8]), success=False, message="second")
    raw = SimpleNamespace(
        params=first.params,  # the optimiser's pick (by its own stale value)
        success=True,
        message="picked",
        multistart_info=SimpleNamespace(local_optima=[first, second]),
    )
    criterion = {1.0: 5.0, 1.2: 4.9}
    params, converged, message = best_end_point(raw, criterion=lambda v: criterion[float(v[0])])
    np.testing.assert_array_equal(params, second.params)
    assert (converged, message) == (False, "second")
    nan_second = {1.0: 5.0, 1.2: float("nan")}
    params, _, _ = best_end_point(raw, criterion=lambda v: nan_second[float(v[0])])
    np.testing.assert_array_equal(params, first.params)
    single = SimpleNamespace(
        params=np.array([3.0]), success=True, message="ok", multistart_info=None
    )
    params, converged, message = best_end_point(single, criterion=lambda v: 1 / 0)  # not called
    assert params.tolist() == [3.0] and converged and message == "ok"
