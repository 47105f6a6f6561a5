"""The best-action search: two sweeps (CPU) or blocks (accelerators) equal np.argmax."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from project.solver.choice import best_choice, first_argmax, running_best


def tie_heavy_table(shape, seed):
    """Q with few distinct values (many exact ties), some -inf and a few repeated maxima."""
    rng = np.random.default_rng(seed)
    table = rng.integers(0, 4, size=shape).astype(np.float64)
    table[rng.random(shape) < 0.2] = -np.inf
    return table


@pytest.mark.parametrize("shape", [(1,), (7,), (5, 13), (3, 4, 64), (2, 101)])
@pytest.mark.parametrize("block", [1, 3, 16, 200])
def test_running_best_finds_the_first_argmax(shape, block):
    table = jnp.asarray(tie_heavy_table(shape, seed=sum(shape) + block))
    best, index = jax.jit(
        lambda t: running_best(lambda i: t[..., i], n_points=shape[-1], block=block)
    )(table)
    expected = np.argmax(np.asarray(table), axis=-1)
    np.testing.assert_array_equal(np.asarray(index), expected)
    np.testing.assert_array_equal(
        np.asarray(best), np.take_along_axis(np.asarray(table), expected[..., None], -1)[..., 0]
    )


@pytest.mark.parametrize("block", [1, 4])
def test_all_infeasible_gives_index_zero_and_nan_makes_the_value_nan(block):
    table = np.full((3, 9), -np.inf)
    table[1, 4] = 2.0
    table[2, 6] = np.nan
    best, index = running_best(lambda i: jnp.asarray(table)[..., i], n_points=9, block=block)
    assert np.isneginf(best[0]) and index[0] == 0
    assert best[1] == 2.0 and index[1] == 4
    assert np.isnan(best[2])


def test_the_last_point_wins_when_it_is_the_unique_max():
    table = jnp.arange(50.0)[None, :]
    for block in (1, 7, 50):
        _, index = running_best(lambda i: table[..., i], n_points=50, block=block)
        assert int(index[0]) == 49


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_first_argmax_equals_numpy_argmax_with_ties_and_nan(axis):
    table = tie_heavy_table((6, 11), seed=3)
    table[2, 5] = np.nan
    table[4, :] = -np.inf
    np.testing.assert_array_equal(
        np.asarray(first_argmax(jnp.asarray(table), axis=axis)), np.argmax(table, axis=axis)
    )


def test_best_choice_reads_the_value_through_the_index():
    q = jnp.asarray([1.0, 3.0, 3.0, -jnp.inf])
    value, index = best_choice(q)
    assert float(value) == 3.0 and int(index) == 1


def sweeps_that_round_differently(table, *, shift):
    """Return q_of_indices whose second trace (the second sweep) subtracts ``shift``."""
    traces = []

    def q_of_indices(indices):
        traces.append(None)
        q = table[..., indices]
        return q if len(traces) <= 2 else q - shift  # traces 1-2: shape probe, first sweep

    return q_of_indices


def test_second_sweep_locates_the_best_action_despite_a_last_bit_difference(x64):
    table = jnp.asarray([[1.0, 7.0, 3.0, 7.0], [2.0, 2.0, 5.0, 4.0]])
    one_ulp = float(jnp.finfo(jnp.float64).eps) * 7.0
    q_of_indices = sweeps_that_round_differently(table, shift=one_ulp)
    best, index = running_best(q_of_indices, n_points=4, block=1)
    np.testing.assert_array_equal(np.asarray(index), [1, 2])
    np.testing.assert_array_equal(np.asarray(best), [7.0, 5.0])


def test_second_sweep_reports_a_real_discrepancy_as_unlocated(x64):
    table = jnp.asarray([[1.0, 7.0, 3.0, 7.0]])
    q_of_indices = sweeps_that_round_differently(table, shift=1e-6)
    _, index = running_best(q_of_indices, n_points=4, block=1)
    assert int(index[0]) == -1


def test_unlocated_policies_are_reported(caplog):
    import logging

    from project.solver.checks import report_flags

    flags = np.asarray([[0, 0, 0, 3], [0, 0, 0, 0]])
    with caplog.at_level(logging.WARNING, logger="project.solver"):
        report_flags(flags, log_level="warning", describe=lambda period: "")
    assert "Period 0: the best action of 3 states was not located" in caplog.text
