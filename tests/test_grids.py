"""Grids: every GridInitializationError guard, discrete categories, points and ``locate``."""

import dataclasses
import math
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from project.errors import (
    GridInitializationError,
    InitialConditionsError,
    InitialStateOutsideGridError,
    ProjectError,
    StateOutsideGridError,
)
from project.grids import (
    DiscreteGrid,
    IrregSpacedGrid,
    LinSpacedGrid,
    LogSpacedGrid,
    categories,
    check_within_grid,
    grid_from_description,
    grid_points,
)
from project.points import evenly_spaced, float_dtype


@dataclasses.dataclass(frozen=True)
class Status:
    working: int = 0
    retired: int = 1


def _lin(**knobs):
    return LinSpacedGrid(start=0.0, stop=1.0, n_points=5, name="lin_axis", **knobs)


def _log(**knobs):
    return LogSpacedGrid(start=1.0, stop=100.0, n_points=5, name="log_axis", **knobs)


def _irreg(**knobs):
    return IrregSpacedGrid(points=[0.0, 0.5, 2.0, 5.0], name="irreg_axis", **knobs)


def _discrete(**knobs):
    return DiscreteGrid(Status, **knobs)


CONTINUOUS_FACTORIES = {"lin_axis": _lin, "log_axis": _log, "irreg_axis": _irreg}
ALL_FACTORIES = {**CONTINUOUS_FACTORIES, r"DiscreteGrid\(Status\)": _discrete}


def test_grid_initialization_error_is_a_project_error():
    assert issubclass(GridInitializationError, ProjectError)
    assert issubclass(GridInitializationError, ValueError)


# ----------------------------------------------------------------------------------------
# Knobs: distributed and batch_size
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(CONTINUOUS_FACTORIES))
def test_distributed_continuous_grid_is_rejected_with_explanation(name):
    with pytest.raises(GridInitializationError, match=f"^{name}: distributed=True") as info:
        CONTINUOUS_FACTORIES[name](distributed=True)
    message = str(info.value)
    assert "cannot be sharded" in message
    assert "gather the whole V" in message
    assert "batch_size > 0" in message
    assert "splay" in message


def test_distributed_continuous_grid_default_name_is_in_message():
    with pytest.raises(GridInitializationError, match=r"^LinSpacedGrid\(start=0, stop=1, n_"):
        LinSpacedGrid(start=0, stop=1, n_points=3, distributed=True)


def test_distributed_discrete_grid_is_allowed():
    grid = DiscreteGrid(Status, distributed=True)
    assert grid.distributed
    assert grid.batch_size == 0


def test_batch_size_on_continuous_grid_is_allowed():
    assert _lin(batch_size=2).batch_size == 2


def test_batch_size_together_with_distributed_is_rejected():
    with pytest.raises(
        GridInitializationError,
        match=r"^DiscreteGrid\(Status\): batch_size=2 and distributed=True on the same grid",
    ) as info:
        DiscreteGrid(Status, batch_size=2, distributed=True)
    assert "Choose one" in str(info.value)


@pytest.mark.parametrize("name", list(ALL_FACTORIES))
def test_negative_batch_size_is_rejected(name):
    with pytest.raises(GridInitializationError, match=f"^{name}: batch_size must be >= 0, got -1"):
        ALL_FACTORIES[name](batch_size=-1)


@pytest.mark.parametrize("batch_size", [2.5, True, False, "2", None, 2.0])
@pytest.mark.parametrize("name", list(ALL_FACTORIES))
def test_non_integer_batch_size_is_rejected(name, batch_size):
    with pytest.raises(
        GridInitializationError,
        match=f"^{name}: batch_size must be a non-negative int, got {re_escape(batch_size)}",
    ):
        ALL_FACTORIES[name](batch_size=batch_size)


@pytest.mark.parametrize("distributed", [1, 0, "yes", None])
@pytest.mark.parametrize("name", list(ALL_FACTORIES))
def test_non_bool_distributed_is_rejected(name, distributed):
    with pytest.raises(GridInitializationError, match=f"^{name}: distributed must be True or"):
        ALL_FACTORIES[name](distributed=distributed)


def re_escape(value):
    return re.escape(repr(value))


# ----------------------------------------------------------------------------------------
# Continuous grids: points and bounds
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("grid_class", [LinSpacedGrid, LogSpacedGrid])
@pytest.mark.parametrize("n_points", [1, 0, -3, 2.0, True, "5"])
def test_spaced_grid_needs_an_int_of_at_least_two_points(grid_class, n_points):
    with pytest.raises(GridInitializationError, match=r"^axis: n_points must be an int >= 2"):
        grid_class(start=1.0, stop=2.0, n_points=n_points, name="axis")


@pytest.mark.parametrize("points", [[], [1.0]])
def test_irregular_grid_needs_at_least_two_points(points):
    with pytest.raises(GridInitializationError, match=r"^axis: needs at least 2 points"):
        IrregSpacedGrid(points=points, name="axis")


@pytest.mark.parametrize("grid_class", [LinSpacedGrid, LogSpacedGrid])
@pytest.mark.parametrize(("start", "stop"), [(2.0, 2.0), (3.0, 2.0)])
def test_spaced_grid_needs_start_below_stop(grid_class, start, stop):
    with pytest.raises(GridInitializationError, match=r"^axis: start must be < stop"):
        grid_class(start=start, stop=stop, n_points=3, name="axis")


@pytest.mark.parametrize("grid_class", [LinSpacedGrid, LogSpacedGrid])
@pytest.mark.parametrize(("start", "stop"), [(1.0, math.inf), (math.nan, 2.0)])
def test_spaced_grid_needs_finite_bounds(grid_class, start, stop):
    with pytest.raises(GridInitializationError, match=r"^axis: start and stop must be finite"):
        grid_class(start=start, stop=stop, n_points=3, name="axis")


@pytest.mark.parametrize("start", [0.0, -1.0])
def test_log_grid_needs_positive_start(start):
    with pytest.raises(GridInitializationError, match=r"^log_w: a log-spaced grid needs start > 0"):
        LogSpacedGrid(start=start, stop=10.0, n_points=3, name="log_w")


def test_log_grid_default_name_is_in_message():
    with pytest.raises(GridInitializationError, match=r"^LogSpacedGrid\(start=0, stop=10"):
        LogSpacedGrid(start=0, stop=10, n_points=3)


@pytest.mark.parametrize("points", [[0.0, 1.0, 1.0, 2.0], [0.0, 2.0, 1.0], [3.0, 2.0]])
def test_irregular_points_must_be_strictly_increasing(points):
    with pytest.raises(GridInitializationError, match=r"^irr: points must be strictly increasing"):
        IrregSpacedGrid(points=points, name="irr")


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_irregular_points_must_be_finite(bad):
    with pytest.raises(GridInitializationError, match=r"^irr: points must be finite"):
        IrregSpacedGrid(points=[0.0, bad, 2.0], name="irr")


def test_irregular_grid_default_name_is_in_message():
    with pytest.raises(GridInitializationError, match=r"^IrregSpacedGrid\(n_points=2\): points"):
        IrregSpacedGrid(points=[1.0, 0.0])


# ----------------------------------------------------------------------------------------
# Discrete grids
# ----------------------------------------------------------------------------------------


def test_empty_dataclass_category_class_is_rejected():
    @dataclasses.dataclass(frozen=True)
    class Nothing:
        pass

    with pytest.raises(GridInitializationError, match=r"^DiscreteGrid\(Nothing\): .*no categ"):
        DiscreteGrid(Nothing)


def test_empty_plain_category_class_is_rejected():
    class Empty:
        _private = 0

    with pytest.raises(GridInitializationError, match=r"^DiscreteGrid\(Empty\): .*no categ"):
        DiscreteGrid(Empty)


def test_duplicate_category_codes_are_rejected():
    @dataclasses.dataclass(frozen=True)
    class Twice:
        low: int = 0
        mid: int = 1
        high: int = 1

    with pytest.raises(
        GridInitializationError, match=r"^DiscreteGrid\(Twice\): duplicate category codes \[1\]"
    ):
        DiscreteGrid(Twice)


@pytest.mark.parametrize("codes", [(0, 2), (1, 2), (-1, 0)])
def test_non_consecutive_category_codes_are_rejected(codes):
    Gappy = dataclasses.make_dataclass(
        "Gappy",
        [
            ("a", int, dataclasses.field(default=codes[0])),
            ("b", int, dataclasses.field(default=codes[1])),
        ],
        frozen=True,
    )
    with pytest.raises(
        GridInitializationError, match=r"^DiscreteGrid\(Gappy\): category codes must be 0\.\.1"
    ):
        DiscreteGrid(Gappy)


@pytest.mark.parametrize("code", [1.0, "1", True])
def test_non_int_category_codes_are_rejected(code):
    class Odd:
        a = 0
        b = code

    with pytest.raises(GridInitializationError, match=r"^DiscreteGrid\(Odd\): categories \['b'\]"):
        DiscreteGrid(Odd)


def test_dataclass_field_without_default_is_rejected():
    @dataclasses.dataclass(frozen=True)
    class NoDefault:
        a: int

    with pytest.raises(GridInitializationError, match=r"^DiscreteGrid\(NoDefault\): categories"):
        DiscreteGrid(NoDefault)


def test_discrete_grid_from_dataclass():
    grid = DiscreteGrid(Status)
    assert grid.name == "Status"
    assert grid.labels == ("working", "retired")
    assert grid.codes == (0, 1)
    assert grid.n_points == 2
    assert grid.is_discrete
    codes = grid.to_jax()
    assert codes.dtype == jnp.int32
    np.testing.assert_array_equal(np.asarray(codes), [0, 1])


def test_discrete_grid_orders_labels_by_code():
    @dataclasses.dataclass(frozen=True)
    class Reordered:
        high: int = 2
        low: int = 0
        mid: int = 1

    grid = DiscreteGrid(Reordered)
    assert grid.labels == ("low", "mid", "high")
    assert grid.codes == (0, 1, 2)


def test_discrete_grid_from_plain_class():
    class Plain:
        no: int = 0
        yes: int = 1

    grid = DiscreteGrid(Plain)
    assert grid.labels == ("no", "yes")
    assert grid.to_jax().dtype == jnp.int32


def test_categories_helper_builds_a_frozen_dataclass():
    Income = categories("Income", ["low", "mid", "high"])
    assert dataclasses.is_dataclass(Income)
    assert Income.__name__ == "Income"
    assert (Income.low, Income.mid, Income.high) == (0, 1, 2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        Income().low = 5
    grid = DiscreteGrid(Income)
    assert grid.name == "Income"
    assert grid.labels == ("low", "mid", "high")
    np.testing.assert_array_equal(np.asarray(grid.to_jax()), [0, 1, 2])
    assert grid.to_jax().dtype == jnp.int32


def test_discrete_grid_describe():
    assert DiscreteGrid(Status, distributed=True).describe() == {
        "kind": "discrete",
        "name": "Status",
        "labels": ["working", "retired"],
        "batch_size": 0,
        "distributed": True,
    }


# ----------------------------------------------------------------------------------------
# Continuous points
# ----------------------------------------------------------------------------------------


def test_lin_grid_points():
    grid = LinSpacedGrid(start=1, stop=3, n_points=5, name="w")
    points = grid.to_jax()
    assert points.dtype == jnp.float32
    assert not grid.is_discrete
    assert grid.n_points == 5
    np.testing.assert_allclose(np.asarray(points), [1.0, 1.5, 2.0, 2.5, 3.0], rtol=1e-6)


def test_log_grid_points():
    grid = LogSpacedGrid(start=1, stop=10_000, n_points=5, name="w")
    points = grid.to_jax()
    assert points.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(points), [1.0, 10.0, 100.0, 1000.0, 10_000.0], rtol=1e-5)


def test_irregular_grid_points():
    grid = IrregSpacedGrid(points=[0, 0.5, 2, 5], name="w")
    points = grid.to_jax()
    assert points.dtype == jnp.float32
    assert grid.points == (0.0, 0.5, 2.0, 5.0)
    np.testing.assert_array_equal(np.asarray(points), [0.0, 0.5, 2.0, 5.0])


@pytest.mark.parametrize("factory", [_lin, _log, _irreg], ids=["lin", "log", "irreg"])
def test_continuous_grid_describe_round_trips(factory):
    grid = factory(batch_size=3)
    rebuilt = grid_from_description(grid.describe())
    assert type(rebuilt) is type(grid)
    assert rebuilt.describe() == grid.describe()
    np.testing.assert_array_equal(np.asarray(rebuilt.to_jax()), np.asarray(grid.to_jax()))


def test_grid_from_description_rejects_unknown_kind():
    with pytest.raises(GridInitializationError, match="kind 'discrete'"):
        grid_from_description(DiscreteGrid(Status).describe())


# ----------------------------------------------------------------------------------------
# locate: segment and weight, linear in x, with linear extrapolation
# ----------------------------------------------------------------------------------------

LOCATE_GRIDS = {
    "lin": LinSpacedGrid(start=1.0, stop=5.0, n_points=5, name="lin"),
    "log": LogSpacedGrid(start=1.0, stop=16.0, n_points=5, name="log"),
    "irreg": IrregSpacedGrid(points=[1.0, 1.5, 3.0, 4.0, 8.0], name="irreg"),
}


_PADDED_LENGTH = 64
_LOCATORS = {}


def _locate(grid, x):
    """Locate ``x`` as the solver does (jit of vmap over scalars), compiling once per grid."""
    points = grid.to_jax()
    if grid.name not in _LOCATORS:
        _LOCATORS[grid.name] = jax.jit(
            jax.vmap(lambda v, p: grid.locate(v, points=p), in_axes=(0, None))
        )
    x = np.asarray(x, dtype=np.float32).ravel()
    padded = np.resize(x, _PADDED_LENGTH)
    segment, weight = _LOCATORS[grid.name](jnp.asarray(padded), points)
    return np.asarray(points), np.asarray(segment)[: x.size], np.asarray(weight)[: x.size]


def _check_linear(points, segment, weight, x):
    left, right = points[segment], points[segment + 1]
    np.testing.assert_allclose(left + weight * (right - left), x, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(
        weight, (np.asarray(x) - left) / (right - left), rtol=1e-5, atol=1e-5
    )


@pytest.mark.parametrize("kind", list(LOCATE_GRIDS))
def test_locate_on_grid_points(kind):
    grid = LOCATE_GRIDS[kind]
    points, segment, weight = _locate(grid, np.asarray(grid.to_jax()))
    assert segment.dtype == np.int32
    assert np.all((segment >= 0) & (segment <= grid.n_points - 2))
    _check_linear(points, segment, weight, points)
    # On a grid point the weight is (numerically) 0 or 1.
    assert np.all(np.minimum(np.abs(weight), np.abs(weight - 1)) < 1e-5)


@pytest.mark.parametrize("kind", list(LOCATE_GRIDS))
def test_locate_last_point_uses_last_segment_with_weight_one(kind):
    grid = LOCATE_GRIDS[kind]
    _, segment, weight = _locate(grid, [grid.to_jax()[-1]])
    assert segment[0] == grid.n_points - 2
    np.testing.assert_allclose(weight[0], 1.0, atol=1e-5)


@pytest.mark.parametrize("kind", list(LOCATE_GRIDS))
def test_locate_between_points(kind):
    grid = LOCATE_GRIDS[kind]
    points = np.asarray(grid.to_jax())
    fractions = np.repeat([0.25, 0.5, 0.9], grid.n_points - 1)
    x = np.tile(points[:-1], 3) + fractions * np.tile(np.diff(points), 3)
    _, segment, weight = _locate(grid, x)
    np.testing.assert_array_equal(segment, np.tile(np.arange(grid.n_points - 1), 3))
    # Linear in x, also on the log grid (not linear in log x).
    np.testing.assert_allclose(weight, fractions, rtol=1e-4)


@pytest.mark.parametrize("kind", list(LOCATE_GRIDS))
def test_locate_below_grid_extrapolates_from_first_segment(kind):
    grid = LOCATE_GRIDS[kind]
    x = [0.9, 0.5, -2.0]
    points, segment, weight = _locate(grid, x)
    np.testing.assert_array_equal(segment, 0)
    assert np.all(weight < 0)
    _check_linear(points, segment, weight, x)


def test_locate_log_grid_non_positive_x_uses_first_segment():
    grid = LOCATE_GRIDS["log"]
    points, segment, weight = _locate(grid, [0.0, -1.0])
    np.testing.assert_array_equal(segment, 0)
    assert np.all(np.isfinite(weight))
    np.testing.assert_allclose(weight, [-1.0, -2.0], rtol=1e-6)
    _check_linear(points, segment, weight, [0.0, -1.0])


@pytest.mark.parametrize("kind", list(LOCATE_GRIDS))
def test_locate_above_grid_extrapolates_from_last_segment(kind):
    grid = LOCATE_GRIDS[kind]
    x = [float(grid.to_jax()[-1]) + 0.1, 20.0, 100.0]
    points, segment, weight = _locate(grid, x)
    np.testing.assert_array_equal(segment, grid.n_points - 2)
    assert np.all(weight > 1)
    _check_linear(points, segment, weight, x)


@pytest.mark.parametrize("kind", list(LOCATE_GRIDS))
def test_interpolation_reproduces_affine_function_in_and_out_of_grid(kind):
    grid = LOCATE_GRIDS[kind]
    points = np.asarray(grid.to_jax())

    def affine(v):
        return 3.0 * np.asarray(v) - 2.0

    inside = np.concatenate([points, np.linspace(points[0], points[-1], 17)])
    outside = np.asarray([-3.0, 0.0, 0.5, points[-1] + 1.0, 25.0, 60.0])
    x = np.concatenate([inside, outside])
    _, segment, weight = _locate(grid, x)
    values = affine(points)
    interpolated = (1 - weight) * values[segment] + weight * values[segment + 1]
    np.testing.assert_allclose(interpolated, affine(x), rtol=1e-5, atol=1e-4)


EVENLY_SPACED = [
    ("linspace", 1.0, 400.0, 100),
    ("linspace", 1.0, 400.0, 2000),
    ("linspace", 1.0, 20.0, 500),
    ("linspace", 0.1, 5.0, 500),
    ("linspace", -3.7, 11.25, 77),
    ("linspace", 0.0, 1.0, 2),
    ("logspace", 0.5, 300.0, 250),
    ("logspace", 1e-3, 1.0, 33),
]


@pytest.mark.parametrize("x64_enabled", [False, True])
def test_batched_grid_points_equal_eager_jax_linspace_bit_for_bit(x64_enabled):
    """The benchmark specification builds grids with JAX's linspace; one ulp can flip c <= w."""
    jax.config.update("jax_enable_x64", x64_enabled)
    try:
        batched = evenly_spaced(EVENLY_SPACED)
        for (kind, start, stop, n_points), points in zip(EVENLY_SPACED, batched, strict=True):
            if kind == "linspace":
                reference = np.asarray(jnp.linspace(start, stop, n_points))
            else:
                # Inside, jnp's points; the ends are start and stop exactly (tested below).
                spaced = jnp.exp(jnp.linspace(math.log(start), math.log(stop), n_points))
                reference = np.asarray(spaced).copy()
                reference[[0, -1]] = start, stop
            assert points.dtype == reference.dtype == float_dtype()
            np.testing.assert_array_equal(np.asarray(points), reference)
    finally:
        jax.config.update("jax_enable_x64", False)


def test_grid_points_of_a_model_match_each_grids_own_points():
    grids = {
        "wealth": LinSpacedGrid(start=1, stop=400, n_points=50, name="wealth"),
        "income": LogSpacedGrid(start=0.5, stop=3, n_points=7, name="income"),
        "shock": IrregSpacedGrid(points=[-1.0, 0.0, 2.5], name="shock"),
        "status": DiscreteGrid(categories("Status", ["a", "b", "c"])),
    }
    points = grid_points(grids)
    assert list(points) == list(grids)
    for name, grid in grids.items():
        np.testing.assert_array_equal(np.asarray(points[name]), np.asarray(grid.to_jax()))
    assert points["status"].dtype == jnp.int32
    np.testing.assert_array_equal(np.asarray(points["status"]), [0, 1, 2])


# ----------------------------------------------------------------------------------------
# Exact endpoints: a state given at a grid's start or stop lies on the grid
# ----------------------------------------------------------------------------------------

# (grid, start, stop). Before exact endpoints, exp(log(start)) missed start (or stop) on every
# log grid here in at least one precision: 0.1 became 0.10000000000000002 in float64.
ENDPOINT_GRIDS = {
    "lin-0.1": (LinSpacedGrid(start=0.1, stop=0.7, n_points=7, name="lin"), 0.1, 0.7),
    "lin-negative": (LinSpacedGrid(start=-3.7, stop=11.3, n_points=77, name="lin"), -3.7, 11.3),
    "log-0.1": (LogSpacedGrid(start=0.1, stop=400.0, n_points=50, name="log"), 0.1, 400.0),
    "log-1e-3": (LogSpacedGrid(start=1e-3, stop=3.3, n_points=33, name="log"), 1e-3, 3.3),
    "log-0.3": (LogSpacedGrid(start=0.3, stop=7.0, n_points=9, name="log"), 0.3, 7.0),
    "log-2-points": (LogSpacedGrid(start=0.1, stop=0.2, n_points=2, name="log"), 0.1, 0.2),
    "irreg": (IrregSpacedGrid(points=[0.1, 0.2, 0.7, 3.3], name="irreg"), 0.1, 3.3),
}


@pytest.mark.parametrize("precision", ["float32", "float64"])
@pytest.mark.parametrize("case", list(ENDPOINT_GRIDS))
def test_points_are_exactly_start_and_stop_at_both_ends(request, case, precision):
    if precision == "float64":
        request.getfixturevalue("x64")
    grid, start, stop = ENDPOINT_GRIDS[case]
    dtype = float_dtype()
    assert dtype == np.dtype(precision)
    expected = np.asarray([start, stop], dtype=dtype)
    for made in (grid.to_jax(), grid_points({"x": grid})["x"]):
        points = np.asarray(made)
        assert points.dtype == dtype
        assert points[[0, -1]].tobytes() == expected.tobytes(), points[[0, -1]].tolist()
        assert np.all(np.diff(points) > 0)
    if precision == "float64":
        assert (float(points[0]), float(points[-1])) == (start, stop)


def test_log_grid_starting_at_one_tenth_starts_at_one_tenth_in_float64(x64):
    points = np.asarray(LogSpacedGrid(start=0.1, stop=400.0, n_points=50).to_jax())
    assert repr(float(points[0])) == "0.1"
    assert repr(float(points[-1])) == "400.0"


# ----------------------------------------------------------------------------------------
# check_within_grid
# ----------------------------------------------------------------------------------------


def test_state_outside_grid_errors_are_project_errors():
    assert issubclass(StateOutsideGridError, ProjectError)
    assert issubclass(StateOutsideGridError, ValueError)
    assert issubclass(InitialStateOutsideGridError, InitialConditionsError)
    assert issubclass(InitialStateOutsideGridError, StateOutsideGridError)


@pytest.mark.parametrize("precision", ["float32", "float64"])
def test_values_at_the_grid_ends_are_within_the_grid(request, precision):
    if precision == "float64":
        request.getfixturevalue("x64")
    grid = LogSpacedGrid(start=0.1, stop=400.0, n_points=50, name="wealth_grid")
    check_within_grid(name="wealth", grid=grid, values=[0.1, 400.0, 3.0, 0.1], what="State")
    check_within_grid(name="wealth", grid=grid, values=np.float64(0.1), what="State")


def test_value_just_below_the_grid_is_named_with_full_precision(x64):
    grid = LogSpacedGrid(start=0.1, stop=400.0, n_points=50, name="wealth_grid")
    below = np.nextafter(0.1, 0.0)
    with pytest.raises(StateOutsideGridError) as info:
        check_within_grid(name="wealth", grid=grid, values=[3.0, below, 400.0], what="State")
    message = str(info.value)
    assert type(info.value) is StateOutsideGridError
    assert message.startswith("State 'wealth': entries [1] (1 in all) have values ")
    assert "[0.09999999999999999]" in message
    assert "the range [0.1, 400.0] of grid 'wealth_grid'" in message
    assert "float64" in message
    assert "move the values into that range or widen the grid" in message


def test_values_outside_the_grid_are_listed_up_to_five():
    grid = LinSpacedGrid(start=1.0, stop=5.0, n_points=5, name="assets")
    values = [2.0, 5.5, np.nan, 0.25, 1.0, -1.0, 7.0, 8.0, 5.0]
    with pytest.raises(StateOutsideGridError) as info:
        check_within_grid(
            name="a", grid=grid, values=values, what="Initial state", index_name="subjects"
        )
    message = str(info.value)
    assert "Initial state 'a': subjects [1, 2, 3, 5, 6, ...] (6 in all)" in message
    assert "have values [5.5, nan, 0.25, -1.0, 7.0, ...]" in message
    assert "[1.0, 5.0] of grid 'assets' (its first and last points in float32)" in message


def test_check_within_grid_names_positions_of_arrays_and_raises_the_given_error():
    grid = IrregSpacedGrid(points=[0.0, 0.5, 2.0], name="irreg_axis")
    values = np.asarray([[0.0, 2.5], [1.0, 2.0]])
    with pytest.raises(InitialStateOutsideGridError, match=r"entries \[\(0, 1\)\] .*\[2\.5\]"):
        check_within_grid(
            name="x", grid=grid, values=values, what="State", error=InitialStateOutsideGridError
        )
    with pytest.raises(StateOutsideGridError, match="'x' must be numeric"):
        check_within_grid(name="x", grid=grid, values=["a"], what="State")


@pytest.mark.parametrize(
    ("points", "match"),
    [
        (["a", "b"], r"point 0 is 'a' \(str\), not a real number"),
        ([0.0, None], r"point 1 is None \(NoneType\)"),
        ([0.0, True], r"point 1 is True \(bool\)"),
        (3.0, r"points must be a sequence of numbers"),
        ("0123", r"points must be a sequence of numbers"),
    ],
)
def test_irregular_points_that_are_no_numbers_are_named(points, match):
    from project.grids import IrregSpacedGrid

    with pytest.raises(GridInitializationError, match=match):
        IrregSpacedGrid(points=points)


@pytest.mark.parametrize(("start", "stop"), [("0", 1.0), (0.0, None), (False, 1.0)])
def test_bounds_that_are_no_numbers_are_named(start, stop):
    with pytest.raises(GridInitializationError, match=r"must be a real number"):
        LinSpacedGrid(start=start, stop=stop, n_points=3)


@pytest.mark.parametrize("given", [[0, 1], {"working": 0}, "retired", None])
def test_a_discrete_grid_needs_a_class(given):
    with pytest.raises(GridInitializationError, match=r"DiscreteGrid takes a class"):
        DiscreteGrid(given)
