"""The block-wise best-action search equals a plain first argmax over the whole action grid."""

import jax.numpy as jnp
import numpy as np
import pytest

from project.models import ijrs, precautionary
from project.solver import choice, solve


def q_table_function(table: jnp.ndarray, names: list[str]):
    """Return ``q_of(points)`` reading Q from ``table`` at integer-valued action points."""

    def q_of(points: dict[str, jnp.ndarray]) -> jnp.ndarray:
        grids = jnp.meshgrid(*(points[n] for n in names), indexing="ij")
        return table[tuple(g.astype(jnp.int32) for g in grids)]

    return q_of


def plain_best(table: np.ndarray) -> tuple[float, int]:
    flat = table.ravel()
    index = int(np.argmax(flat))
    return flat[index], index


@pytest.mark.parametrize("shape", [(70,), (2, 97), (3, 2, 64), (1000,), (2, 1031)])
def test_block_search_finds_the_first_argmax(shape):
    rng = np.random.default_rng(sum(shape))
    # Few distinct values: many ties, so the *first* argmax is what is tested.
    table = rng.integers(0, 5, size=shape).astype(np.float64)
    table[..., -1] = table.max()  # a tie on the padded last point must not win over an earlier one
    names = [f"a{i}" for i in range(len(shape))]
    points = {n: jnp.arange(s) * 1.0 for n, s in zip(names, shape, strict=True)}
    value, index = choice.best_action(
        q_of=q_table_function(jnp.asarray(table), names), action_points=points
    )
    expected_value, expected_index = plain_best(table)
    assert int(index) == expected_index
    assert float(value) == expected_value


def test_block_search_picks_the_last_point_and_handles_infeasible_and_nan():
    n = 101  # 11 blocks of 10 with 9 padded copies of the last point
    names = ["a"]
    points = {"a": jnp.arange(n) * 1.0}
    rising = jnp.arange(n) * 1.0
    value, index = choice.best_action(q_of=q_table_function(rising, names), action_points=points)
    assert (int(index), float(value)) == (n - 1, n - 1)

    infeasible = jnp.full(n, -jnp.inf)
    value, index = choice.best_action(
        q_of=q_table_function(infeasible, names), action_points=points
    )
    assert (int(index), float(value)) == (0, -np.inf)

    poisoned = rising.at[37].set(jnp.nan)
    value, index = choice.best_action(q_of=q_table_function(poisoned, names), action_points=points)
    assert int(index) == 37
    assert np.isnan(float(value))


@pytest.mark.parametrize(
    ("module", "sizes"),
    [
        (ijrs, {"n_wealth": 40, "n_consumption": 150}),
        (precautionary, {"n_wealth": 40, "n_consumption": 90}),
    ],
)
def test_blocked_solve_equals_plain_argmax_solve(monkeypatch, module, sizes):
    params = module.DEFAULT_PARAMS
    monkeypatch.setattr(choice, "MIN_Q_POINTS_FOR_BLOCKS", 0)
    blocked = solve(model=module.build_model(**sizes), params=params)
    monkeypatch.setattr(choice, "MIN_Q_POINTS_FOR_BLOCKS", 10**12)
    plain = solve(model=module.build_model(**sizes), params=params)
    for t in range(len(plain.value_function)):
        np.testing.assert_array_equal(plain.value_function[t], blocked.value_function[t])
        for action, indices in plain.policy[t].items():
            np.testing.assert_array_equal(indices, blocked.policy[t][action])


def test_only_large_models_use_the_block_search():
    assert not choice.use_blocks(choice.MIN_Q_POINTS_FOR_BLOCKS - 1)
    assert choice.use_blocks(choice.MIN_Q_POINTS_FOR_BLOCKS)
    # IJRS 500 x 2000: 2 x 500 states, 2 x 2000 actions.
    assert choice.use_blocks(2 * 500 * 2 * 2000)
    assert not choice.use_blocks(2 * 100 * 2 * 500)


def test_block_size_stays_at_most_32_and_skips_short_axes():
    assert choice.block_size(choice.MIN_POINTS_FOR_BLOCKS - 1) == 0
    assert choice.block_size(100) == 10
    assert choice.block_size(20_000) == 32
