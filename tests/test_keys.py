"""The simulation's keys and uniforms against JAX's own generator (``jax.random``), bit for bit."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from project.errors import SimulationError
from project.points import precision
from project.simulation.keys import (
    category_at,
    draw_ahead,
    draw_category,
    fold_in,
    root_key,
    stream_uniform,
    subject_keys,
)


def jax_uniforms(seed, ids, period, stream, dtype):
    """Return ``jax.random``'s uniforms of the subjects' stream (the generator keys.py matches)."""
    base = jax.random.key(seed)
    keys = jax.vmap(lambda i: jax.random.fold_in(base, i))(ids)
    keys = jax.vmap(lambda k: jax.random.fold_in(k, period))(keys)
    return jax.vmap(lambda k: jax.random.uniform(jax.random.fold_in(k, stream), dtype=dtype))(keys)


def our_uniforms(seed, ids, period, stream, dtype):
    keys = subject_keys(seed=seed, subject_ids=ids, period=period)
    return jax.vmap(lambda k: stream_uniform(key=k, stream=stream, dtype=dtype))(keys)


@pytest.mark.parametrize("x64", [True, False])
@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    first=st.integers(0, 2**31 - 1000),
    period=st.integers(0, 200),
    stream=st.integers(0, 2**20 + 1),
)
def test_uniforms_equal_jax_random_bit_for_bit(x64, seed, first, period, stream):
    with precision(x64=x64):
        dtype = jnp.float64 if x64 else jnp.float32
        ids = jnp.arange(first, first + 257, dtype=jnp.int32)
        ours = our_uniforms(seed, ids, jnp.int32(period), stream, dtype)
        theirs = jax_uniforms(seed, ids, jnp.int32(period), stream, dtype)
        assert ours.dtype == theirs.dtype == dtype
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
        assert float(ours.min()) >= 0.0 and float(ours.max()) < 1.0


@pytest.mark.parametrize("seed", [0, 1, 2**32 - 1, 2**32, 2**40 + 12345, -1])
def test_keys_of_64_bit_seeds_equal_jax_random(seed):
    with precision(x64=True):
        ours = fold_in(root_key(jnp.int64(seed)), jnp.int32(7))
        theirs = jax.random.key_data(jax.random.fold_in(jax.random.key(jnp.int64(seed)), 7))
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))


def test_draws_inside_a_jit_equal_those_outside():
    probabilities = jnp.asarray([0.2, 0.5, 0.3])
    ids = jnp.arange(500, dtype=jnp.int32)

    def draws(period):
        keys = subject_keys(seed=3, subject_ids=ids, period=period)
        return jax.vmap(lambda k: draw_category(key=k, probabilities=probabilities, stream=2))(keys)

    np.testing.assert_array_equal(draws(jnp.int32(4)), jax.jit(draws)(jnp.int32(4)))
    assert not np.array_equal(draws(jnp.int32(4)), draws(jnp.int32(5)))


@pytest.mark.parametrize("x64", [True, False])
def test_numbers_drawn_ahead_are_the_keys_numbers_bit_for_bit(x64):
    ids = jnp.arange(300, dtype=jnp.int32)
    periods = jnp.arange(4, dtype=jnp.int32)
    streams = (0, 2, 1_048_577)
    with precision(x64=x64):
        dtype = jnp.float64 if x64 else jnp.float32
        drawn = jax.jit(draw_ahead, static_argnames="streams")(
            seed=7, subject_ids=ids, periods=periods, streams=streams
        )
        for t in range(4):
            keys = subject_keys(seed=7, subject_ids=ids, period=periods[t])
            row = jax.tree.map(lambda x, t=t: x[t], drawn)
            assert subject_keys(seed=row, subject_ids=ids, period=periods[t]) is row
            probabilities = jnp.asarray([0.1, 0.25, 0.4, 0.25], dtype)
            for stream in streams:
                expected = our_uniforms(7, ids, periods[t], stream, dtype)
                np.testing.assert_array_equal(stream_uniform(key=row, stream=stream), expected)
                # A category drawn from the numbers is the one drawn from the key.
                by_key = jax.vmap(
                    lambda k, s=stream, p=probabilities: draw_category(
                        key=k, probabilities=p, stream=s
                    )
                )(keys)
                by_number = jax.vmap(
                    lambda r, s=stream, p=probabilities: draw_category(
                        key=r, probabilities=p, stream=s
                    )
                )(row)
                np.testing.assert_array_equal(by_number, by_key)


def test_a_stream_not_drawn_ahead_or_in_another_precision_is_refused():
    with precision(x64=True):
        drawn = draw_ahead(seed=1, subject_ids=jnp.arange(5), periods=jnp.arange(2), streams=(0, 1))
        with pytest.raises(SimulationError, match=r"stream 3 .*\(streams \[0, 1\]\)"):
            stream_uniform(key=drawn, stream=3)
        with pytest.raises(SimulationError, match=r"in float64, but a step asks for float32"):
            stream_uniform(key=drawn, stream=1, dtype=jnp.float32)


def flushed(x: np.ndarray) -> np.ndarray:
    """Return ``x`` with float32 subnormals as zero, as XLA computes (denormals are zero).

    A CI run drew weights [7.5e-39, 1.0] and uniform 0: numpy's bound 7.5e-39 puts 0 in the
    first category, XLA's (0) in the second.
    """
    return np.where(np.abs(x) < np.finfo(np.float32).tiny, np.float32(0), x).astype(np.float32)


@settings(max_examples=30, deadline=None)
@given(
    weights=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=70).filter(
        # > 0 in float32 as XLA computes it (subnormals are zero): a distribution to draw from
        lambda w: np.cumsum(flushed(np.asarray(w, np.float32)))[-1] > 0
    ),
    uniform=st.floats(0.0, 1.0, exclude_max=True),
)
@example(weights=[7.538326164063258e-39, 1.0], uniform=0.0)  # a subnormal weight (CI found it)
@example(weights=[1.0], uniform=0.5)  # no bound
@example(weights=[0.2, 0.3, 0.5], uniform=0.2)  # fewer bounds than a row, at a bound
@example(weights=[1 / 17] * 17, uniform=0.99)  # one row of 16 bounds, full
@example(weights=[1 / 18] * 18, uniform=0.97)  # 17 bounds: a second row
@example(weights=[1 / 34] * 34, uniform=0.985)  # 33 bounds: three rows
def test_the_category_counted_in_rows_is_the_inverse_cdf(weights, uniform):
    probabilities = jnp.asarray(weights, jnp.float32)
    cdf = np.cumsum(flushed(np.asarray(probabilities)))
    bounds = flushed((cdf[:-1] / cdf[-1]).astype(np.float32))
    expected = min(int(np.sum(flushed(np.float32(uniform)) >= bounds)), len(weights) - 1)
    got = category_at(uniform=jnp.float32(uniform), probabilities=probabilities)
    assert int(got) == expected
