"""``backward_stacked`` is the reverse scan with the terminal row appended, value for value."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from project.egm.program import backward_stacked


def _step(carry, t):
    """A step whose outputs depend on the period, the carry and the carry's history."""
    level, trail = carry
    level = 0.5 * level + jnp.sin(t.astype(level.dtype) + level)
    trail = None if trail is None else trail * 1.5 - level[0]
    out = {"level": level, "report": jnp.stack([t, t * 2]).astype(jnp.int32)}
    return (level, trail), (out, level.sum() > 0)


def _by_scan(carry, last, n_periods):
    steps = jnp.arange(n_periods - 1, dtype=jnp.int32)
    _, history = jax.lax.scan(_step, carry, steps, reverse=True)
    return jax.tree.map(lambda h, f: jnp.concatenate([h, f[None]]), history, last)


@pytest.mark.parametrize("n_periods", [1, 2, 5])
@pytest.mark.parametrize("trail", [None, 1.25])
def test_the_stacks_are_the_reverse_scan_s_and_the_last_row(x64, n_periods, trail):
    level = jnp.linspace(-1.0, 2.0, 7)
    carry = (level, None if trail is None else jnp.asarray(trail))
    last = ({"level": level + 3.0, "report": jnp.array([9, 9], jnp.int32)}, jnp.asarray(True))

    got = jax.jit(lambda c, end: backward_stacked(_step, carry=c, last=end, n_periods=n_periods))(
        carry, last
    )
    want = jax.jit(lambda c, end: _by_scan(c, end, n_periods))(carry, last)

    assert jax.tree.structure(got) == jax.tree.structure(want)
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        assert g.dtype == w.dtype
        assert g.shape == (n_periods, *np.shape(w)[1:])
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    # The period each row holds: row t was written by the step at t (the last row is ``last``).
    reports = np.asarray(got[0]["report"])
    np.testing.assert_array_equal(reports[:-1, 0], np.arange(n_periods - 1))
    np.testing.assert_array_equal(reports[-1], [9, 9])
