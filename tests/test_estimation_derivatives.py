"""MSM with exact derivatives: the optimiser and the standard errors use the caller's Jacobian."""

import numpy as np
import pytest

from project.estimation import EstimationError, estimate_msm

GRID = np.linspace(0.0, 1.0, 6)
TRUTH = {"level": 1.5, "slope": -0.8}
SIGMA = 0.5 + GRID


def curve(params):
    return params["level"] * np.exp(params["slope"] * GRID)


def curve_jacobian(params):
    base = np.exp(params["slope"] * GRID)
    return np.column_stack([base, params["level"] * GRID * base])


class Counted:
    """The closed-form moments with fixed simulation noise; counts both kinds of call."""

    def __init__(self, *, jacobian=curve_jacobian):
        self.noise = np.random.default_rng(2).normal(size=(800, GRID.size)).mean(axis=0) * SIGMA
        self.jacobian = jacobian
        self.moment_calls = 0
        self.jacobian_calls = 0

    def __call__(self, params):
        self.moment_calls += 1
        return curve(params) + self.noise

    def with_jacobian(self, params):
        self.jacobian_calls += 1
        return curve(params) + self.noise, self.jacobian(params)


def estimate(simulator, *, exact=True, **overrides):
    draws = curve(TRUTH) + np.random.default_rng(1).normal(size=(400, GRID.size)) * SIGMA
    arguments = {
        "simulate_moments": simulator,
        "data_moments": draws.mean(axis=0),
        "data_variances": draws.var(axis=0, ddof=1) / 400,
        "n_data": 400,
        "n_simulated": 800,
        "start_params": {"level": 1.0, "slope": 0.0},
        "bounds": {"level": (0.1, 5.0), "slope": (-3.0, 3.0)},
        "moments_and_jacobian": simulator.with_jacobian if exact else None,
    }
    return estimate_msm(**(arguments | overrides))


@pytest.mark.parametrize("algorithm", ["scipy_ls_trf", "scipy_lbfgsb"])
def test_exact_derivatives_reach_the_finite_difference_estimate(algorithm):
    reference = estimate(Counted(), exact=False, algorithm=algorithm)
    simulator = Counted()
    result = estimate(simulator, algorithm=algorithm)
    assert result.converged
    np.testing.assert_allclose(result.estimates, reference.estimates, rtol=1e-5)
    np.testing.assert_allclose(result.standard_errors, reference.standard_errors, rtol=1e-4)
    # the check of the start and the search simulated through the exact derivatives only ...
    assert simulator.moment_calls == 0
    assert simulator.jacobian_calls == result.n_simulations
    # ... in fewer simulations than central differences need
    assert result.n_simulations < reference.n_simulations / 2


def test_the_standard_errors_use_the_exact_jacobian():
    result = estimate(Counted(), algorithm="scipy_ls_trf")
    np.testing.assert_array_equal(result.jacobian, curve_jacobian(result.params))


def test_the_optimiser_follows_the_given_derivatives():
    """A Jacobian of the wrong sign sends the search elsewhere: the optimiser really uses it."""
    right = estimate(Counted(), algorithm="scipy_ls_trf")
    wrong = estimate(
        Counted(jacobian=lambda p: -curve_jacobian(p)), algorithm="scipy_ls_trf", on_failure="warn"
    )
    assert np.max(np.abs(wrong.estimates - right.estimates) / right.standard_errors) > 1


def test_a_derivative_free_optimiser_simulates_moments_alone():
    simulator = Counted()
    result = estimate(simulator, algorithm="pounders")
    assert simulator.jacobian_calls == 1  # at the estimate, for the standard errors
    assert simulator.moment_calls == result.n_simulations - 1
    np.testing.assert_array_equal(result.jacobian, curve_jacobian(result.params))


@pytest.mark.parametrize(
    ("jacobian", "match"),
    [
        (lambda p: curve_jacobian(p)[:, :1], r"shape \(6, 1\).*must be \(6, 2\)"),
        (
            lambda p: curve_jacobian(p) * np.where(GRID > 0.5, np.nan, 1.0)[:, None],
            r"not finite .*\('m3', 'level'\)",
        ),
    ],
)
def test_a_bad_jacobian_raises_naming_it(jacobian, match):
    with pytest.raises(EstimationError, match=match):
        estimate(Counted(jacobian=jacobian), algorithm="scipy_ls_trf")


def test_a_likelihood_optimiser_is_refused_with_exact_derivatives():
    with pytest.raises(EstimationError, match="bhhh works on a likelihood criterion"):
        estimate(Counted(), algorithm="bhhh")
