"""Smooth simulated moments (expectations over the taste-shocked exit choice) and their Jacobian.

Oracles: at a vanishing taste-shock scale the smooth moments equal the drawn ones (every branch
weight is 0 or 1); over many seeds the drawn moments average to the smooth ones (the smooth
moments are the drawn ones' expectation over the exit choice, income and deaths held fixed);
the forward-mode Jacobian matches central finite differences; derivatives through infeasible
choices are finite.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from small_regimes import DISTRIBUTION, GROUPS, SIZES

from project.estimation.errors import EstimationError
from project.estimation.lifecycle import LifecycleMoments
from project.models import lifecycle, lifecycle_regimes
from project.simulation import draw_initial_conditions
from project.taste_shocks import log_sum, log_sum_and_probabilities

POINT = {"crra": 2.0, "beta": 0.95}


@pytest.fixture(scope="module", autouse=True)
def float64():
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", False)


def moments(*, smooth: bool, scale: float = lifecycle.DEFAULT_TASTE_SHOCK_SCALE, n: int = 400):
    model = lifecycle_regimes.build_model(**SIZES, survival="life_table")
    params = lifecycle_regimes.params_for(model) | {"taste_shock_scale": scale}
    initial = draw_initial_conditions(model=model, n_subjects=n, seed=3, distribution=DISTRIBUTION)
    return LifecycleMoments(
        model=model,
        base_params=params,
        initial_conditions=initial,
        seed=11,
        age_groups=GROUPS,
        estimated=("crra", "beta"),
        smooth=smooth,
    )


def test_smooth_equals_drawn_where_the_choice_is_certain():
    smooth, drawn = moments(smooth=True, scale=1e-9), moments(smooth=False, scale=1e-9)
    np.testing.assert_allclose(smooth(POINT), drawn(POINT), rtol=1e-12)


@pytest.fixture(scope="module")
def default_scale():
    """Smooth and drawn moments at the default taste-shock scale (compiled once per module)."""
    return moments(smooth=True), moments(smooth=False)


def test_drawn_moments_average_to_the_smooth_ones(default_scale):
    smooth, drawn = default_scale
    seed = smooth.program.seed
    gaps = []
    for other in range(24):  # the seed is an input of the program: no recompiles
        smooth.program.seed = drawn.program.seed = other
        gaps.append(drawn(POINT) - smooth(POINT))
    smooth.program.seed = drawn.program.seed = seed
    gaps = np.array(gaps)
    assert np.abs(gaps).max() > 1e-4  # drawn choices do differ from their expectation
    z = gaps.mean(axis=0) / (gaps.std(axis=0, ddof=1) / np.sqrt(len(gaps)))
    assert np.all(np.abs(z) < 4), z


def test_jacobian_matches_central_differences(default_scale):
    simulator, _ = default_scale
    values, jacobian = simulator.jacobian(POINT)
    np.testing.assert_allclose(values, simulator(POINT), rtol=1e-12)
    step = 1e-6
    columns = []
    for name, value in POINT.items():
        up = simulator({**POINT, name: value + step})
        down = simulator({**POINT, name: value - step})
        columns.append((up - down) / (2 * step))
    differences = np.stack(columns, axis=1)
    assert np.all(np.isfinite(jacobian))
    np.testing.assert_allclose(jacobian, differences, rtol=1e-5, atol=1e-8)
    traces = simulator.program.traces
    simulator.jacobian({"crra": 2.5, "beta": 0.93})
    assert simulator.program.traces == traces  # new params reuse the compiled Jacobian


def test_the_expected_living_are_the_drawn_living(default_scale):
    """Death does not depend on the retirement choice here: its expectation is the draw's count."""
    smooth, drawn = default_scale
    living = drawn.living_subjects(POINT)
    assert living[0] > living[-1] > 0  # some die between the groups
    np.testing.assert_allclose(smooth.living_subjects(POINT), living, rtol=1e-12)


def test_smooth_moments_need_a_taste_shocked_exit_choice():
    model = lifecycle_regimes.build_model(**SIZES | {"taste_shocks": False}, survival="life_table")
    params = lifecycle_regimes.params_for(model)
    initial = draw_initial_conditions(model=model, n_subjects=10, seed=3, distribution=DISTRIBUTION)
    with pytest.raises(EstimationError, match="exactly one regime with taste shocks"):
        LifecycleMoments(
            model=model,
            base_params=params,
            initial_conditions=initial,
            seed=1,
            age_groups=GROUPS,
            estimated=("crra",),
            smooth=True,
        )


def test_infeasible_choices_give_finite_derivatives():
    values = jnp.array([-jnp.inf, -1.0, -1.5])

    def both(scale, shift):
        total, probabilities = log_sum_and_probabilities(values + shift, scale=scale, axis=0)
        return total, probabilities, log_sum(values + shift, scale=scale, axis=0)

    _, tangents = jax.jvp(both, (jnp.asarray(0.1), jnp.asarray(0.0)), (1.0, 1.0))
    for tangent in tangents:
        assert np.all(np.isfinite(tangent))
    assert float(tangents[1][0]) == 0.0  # the infeasible choice's probability stays zero
