"""Savings-grid constructors: ends, order, density near the borrowing limit, bad inputs."""

import math

import numpy as np
import pytest

import project
from project import GridInitializationError, IrregSpacedGrid
from project.models import iid_income
from project.savings_grids import default_savings_grid, exponential_grid, log1p_grid, power_grid

CONSTRUCTORS = {
    "log1p": log1p_grid,
    "power": power_grid,
    "exponential": exponential_grid,
}


@pytest.mark.parametrize("kind", CONSTRUCTORS)
@pytest.mark.parametrize(("start", "stop", "n_points"), [(0.0, 20.0, 500), (-1.5, 3.0, 2)])
def test_grid_starts_and_stops_exactly_and_increases(kind, start, stop, n_points):
    grid = CONSTRUCTORS[kind](start=start, stop=stop, n_points=n_points)
    points = np.asarray(grid.points)
    assert isinstance(grid, IrregSpacedGrid)
    assert grid.name == "savings"
    assert points.size == n_points
    assert points[0] == start
    assert points[-1] == stop
    assert np.all(np.diff(points) > 0)
    assert np.all(np.diff(np.asarray(grid.to_jax())) > 0)


@pytest.mark.parametrize("kind", CONSTRUCTORS)
def test_grid_is_denser_near_start_than_linspace(kind):
    points = np.asarray(CONSTRUCTORS[kind](start=0.0, stop=20.0, n_points=101).points)
    steps = np.diff(points)
    assert np.all(np.diff(steps) > 0)  # steps grow away from the borrowing limit
    assert steps[0] < 0.2 * (20.0 / 100)
    assert np.sum(points < 2.0) > 25  # an evenly spaced grid has 10 below 2


def test_log1p_grid_is_even_in_log1p_of_distance_from_start():
    points = np.asarray(log1p_grid(start=1.0, stop=11.0, n_points=6).points)
    np.testing.assert_allclose(np.log1p(points - 1.0), np.linspace(0, math.log(11), 6), atol=1e-14)


def test_power_grid_formula_and_exponent_one_is_evenly_spaced():
    cubic = np.asarray(power_grid(stop=8.0, n_points=5, exponent=3.0).points)
    np.testing.assert_allclose(cubic, 8.0 * np.linspace(0, 1, 5) ** 3)
    even = np.asarray(power_grid(start=-1.0, stop=1.0, n_points=5, exponent=1.0).points)
    np.testing.assert_allclose(even, np.linspace(-1, 1, 5), atol=1e-15)


def test_exponential_grid_matches_hark_nesting_and_one_nest_is_log1p():
    nested = np.asarray(exponential_grid(stop=20.0, n_points=48, n_nests=3).points)
    top = math.log1p(math.log1p(math.log1p(20.0)))
    expected = np.expm1(np.expm1(np.expm1(np.linspace(0.0, top, 48))))
    np.testing.assert_allclose(nested, expected, rtol=1e-12)
    one = exponential_grid(stop=20.0, n_points=30, n_nests=1).points
    assert one == log1p_grid(stop=20.0, n_points=30).points
    three = exponential_grid(stop=20.0, n_points=30, n_nests=3).points
    four = exponential_grid(stop=20.0, n_points=30, n_nests=4).points
    assert four[1] < three[1] < one[1]  # each nest crowds the start more


def test_default_is_log1p_and_matches_the_model_grid():
    default = default_savings_grid(stop=20.0)
    assert default.n_points == 500
    assert default.points == log1p_grid(stop=20.0, n_points=500).points
    model = iid_income.build_model(n_savings=500)
    assert model.post_decision_grid.points == default.points


def test_exported_from_project():
    for name in ("log1p_grid", "power_grid", "exponential_grid", "default_savings_grid"):
        assert getattr(project, name) is getattr(project.savings_grids, name)
        assert name in project.__all__


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"stop": 20.0, "n_points": 1}, "n_points must be an int >= 2"),
        ({"stop": 20.0, "n_points": 10.0}, "n_points must be an int >= 2"),
        ({"stop": 20.0, "n_points": True}, "n_points must be an int >= 2"),
        ({"stop": 0.0, "n_points": 10}, "stop must be > start"),
        ({"stop": 1.0, "n_points": 10, "start": 2.0}, "stop must be > start"),
        ({"stop": float("inf"), "n_points": 10}, "stop must be a finite real number"),
        ({"stop": "20", "n_points": 10}, "stop must be a finite real number"),
        ({"stop": 20.0, "n_points": 10, "start": float("nan")}, "start must be a finite real"),
    ],
)
@pytest.mark.parametrize("kind", CONSTRUCTORS)
def test_bad_inputs_raise_grid_initialization_error(kind, kwargs, match):
    with pytest.raises(GridInitializationError, match=match):
        CONSTRUCTORS[kind](**kwargs)


@pytest.mark.parametrize("exponent", [0.0, -1.0, float("nan"), "2"])
def test_power_grid_needs_a_positive_exponent(exponent):
    with pytest.raises(GridInitializationError, match="exponent must be a real number > 0"):
        power_grid(stop=20.0, n_points=10, exponent=exponent)


@pytest.mark.parametrize("n_nests", [0, -1, 2.0, True])
def test_exponential_grid_needs_a_positive_int_of_nests(n_nests):
    with pytest.raises(GridInitializationError, match="n_nests must be an int >= 1"):
        exponential_grid(stop=20.0, n_points=10, n_nests=n_nests)


def test_points_too_dense_for_the_working_precision_raise():
    # float32 (x64 off) holds 1e6 to 0.0625: steps of 1e-3 would round onto each other.
    with pytest.raises(GridInitializationError, match="too dense near 1e"):
        log1p_grid(start=1e6, stop=1e6 + 1, n_points=1000)


def test_default_savings_grid_is_keyword_only():
    with pytest.raises(TypeError):
        default_savings_grid(20.0)  # type: ignore[misc]


def test_a_refined_exponential_grid_subdivides_its_first_interval_geometrically():
    from project.savings_grids import exponential_grid

    plain = np.asarray(exponential_grid(stop=40.0, n_points=138).points)
    refined = np.asarray(exponential_grid(stop=40.0, n_points=150, n_refined=12).points)
    assert refined.size == 150 and refined[0] == 0.0 and refined[-1] == 40.0
    np.testing.assert_array_equal(refined[13:], plain[1:])  # the rest is the plain grid's
    inner = refined[1:14]  # 1e-7, ..., the plain grid's first point: one ratio between them
    ratios = inner[1:] / inner[:-1]
    np.testing.assert_allclose(ratios, ratios[0], rtol=1e-12)
    assert inner[0] == pytest.approx(1e-7, rel=1e-12)
    with pytest.raises(GridInitializationError, match="0 < smallest < the first step"):
        exponential_grid(stop=40.0, n_points=150, n_refined=12, smallest=1.0)
    with pytest.raises(GridInitializationError, match="n_refined must be an int"):
        exponential_grid(stop=40.0, n_points=150, n_refined=1.5)
