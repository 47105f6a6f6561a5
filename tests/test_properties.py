"""Property-based tests (hypothesis): grids and params for any input, good or bad.

Oracles: a grid built from valid bounds or points holds exactly what it was given, in order;
anything else raises ``GridInitializationError`` (never another exception); params either come
back as finite arrays of the template's shapes or raise ``ParamsError``.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from project.errors import GridInitializationError, ParamsError
from project.grids import IrregSpacedGrid, LinSpacedGrid
from project.model import validate_params
from project.models import lifecycle

SETTINGS = settings(max_examples=150, deadline=None)
MODEL = lifecycle.build_model(n_wealth=5, n_consumption=5, n_income=3, n_periods=2)
finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)
anything = st.one_of(
    st.none(),
    st.booleans(),
    st.text(max_size=3),
    st.floats(),
    st.integers(),
    st.lists(st.floats(), max_size=3),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)


@SETTINGS
@given(start=finite, width=st.floats(min_value=1e-2, max_value=1e6), n_points=st.integers(2, 300))
def test_lin_grids_hold_their_bounds_in_increasing_order(start, width, n_points):
    stop = start + width
    try:
        grid = LinSpacedGrid(start=start, stop=stop, n_points=n_points)
    except GridInitializationError as error:  # too dense for the working precision
        assert "too dense" in str(error)
        step = width / (n_points - 1)
        assert step < 4 * np.spacing(np.float32(max(abs(start), abs(stop))))
        return
    points = np.asarray(grid.to_jax(), dtype=np.float64)
    assert points.shape == (n_points,)
    assert np.all(np.diff(points) > 0)
    assert points[0] == pytest.approx(start, abs=1e-6 * max(1.0, abs(start)))
    assert points[-1] == pytest.approx(stop, abs=1e-6 * max(1.0, abs(stop)))


@SETTINGS
@given(points=st.lists(finite, min_size=2, max_size=40, unique=True))
def test_irregular_grids_keep_sorted_points_and_refuse_unsorted_ones(points):
    ordered = sorted(points)
    grid = IrregSpacedGrid(points=ordered)
    assert grid.points == tuple(float(p) for p in ordered)
    if ordered != points:
        with pytest.raises(GridInitializationError, match="increasing"):
            IrregSpacedGrid(points=points)


@SETTINGS
@given(points=st.one_of(anything, st.lists(anything, max_size=4)))
def test_irregular_grids_from_anything_build_or_raise_our_error(points):
    try:
        grid = IrregSpacedGrid(points=points)
    except GridInitializationError:
        return
    values = np.asarray(grid.points)
    assert values.size >= 2
    assert np.all(np.isfinite(values))
    assert np.all(np.diff(values) > 0)


@SETTINGS
@given(start=anything, stop=anything, n_points=anything)
def test_lin_grids_from_anything_build_or_raise_our_error(start, stop, n_points):
    try:
        grid = LinSpacedGrid(start=start, stop=stop, n_points=n_points)
    except GridInitializationError:
        return
    assert math.isfinite(grid.start) and math.isfinite(grid.stop)
    assert grid.start < grid.stop and grid.n_points >= 2


@SETTINGS
@given(
    changes=st.dictionaries(
        st.sampled_from(sorted(lifecycle.DEFAULT_PARAMS)),
        st.one_of(anything, finite, st.lists(finite, min_size=2, max_size=2)),
        max_size=3,
    )
)
def test_params_are_finite_arrays_of_the_template_or_our_error(changes):
    params = dict(lifecycle.DEFAULT_PARAMS) | changes
    try:
        checked = validate_params(model=MODEL, params=params)
    except ParamsError:
        return
    for name, shape in MODEL.params_template.items():
        value = np.asarray(checked[name])
        assert value.shape == shape
        assert np.all(np.isfinite(value))
    assert float(checked["beta"]) > 0


@SETTINGS
@given(
    nodes=st.lists(finite, min_size=1, max_size=70),
    n_nan=st.integers(0, 3),
    probes=st.lists(finite, min_size=1, max_size=8),
    context=st.integers(0, 1),
)
def test_the_node_search_counts_as_searchsorted_does(nodes, n_nan, probes, context):
    """The element-wise binary search of the EGM read equals ``jnp.searchsorted`` (right).

    On sorted nodes with ties and NaN padding at the end, at the nodes themselves and between
    (``jnp.searchsorted``, not NumPy's: XLA flushes subnormal numbers to zero, NumPy does not).
    """
    import jax.numpy as jnp

    from project.egm.choices import _count_at_most, _Row

    row = np.concatenate([np.sort(np.asarray(nodes)), np.full(n_nan, np.nan)])
    table = np.stack([row - 1.0, row])[:, None, :]  # two contexts x one choice x nodes
    table, x = jnp.asarray(table), jnp.asarray(probes + nodes[:3])  # at JAX's precision
    found = _count_at_most(_Row(table, context, 0), x)
    expected = jnp.searchsorted(table[context, 0], x, side="right")  # what it replaces
    np.testing.assert_array_equal(np.asarray(found), np.asarray(expected))
