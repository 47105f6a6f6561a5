"""The Euler equation inverted on one (context, choice)'s savings grid (EGM's core step).

Given E[a·u'(c')] and E[V'] per savings point s_j, ``invert_euler`` solves u'(c_j) =
beta·E[a·u'(c')] for c_j (numerically where u' has no closed-form inverse), forms the endogenous
grid w_j = s_j + c_j and V_j = u(c_j) + beta·E[V'], stores V as its consumption equivalent
nu = u^{-1}(V) with nu's slope, and flags non-finite results, a non-monotone grid and the
inverses' residuals beyond tolerance.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from project.egm.utility import Utility


def invert_euler(
    utility: Utility,
    grid: jnp.ndarray,
    marginal: jnp.ndarray,
    value: jnp.ndarray,
    guess: jnp.ndarray,
    *,
    env: dict[str, Any],
    allowed: jnp.ndarray,
    beta: jnp.ndarray,
    tolerance: float,
) -> tuple[tuple[jnp.ndarray, ...], jnp.ndarray, jnp.ndarray, jnp.ndarray]:
    """Return a pair's (wealth, c, nu, nu's slope), V, the constrained V and its flags.

    The Euler equation inverted for c on the savings ``grid``; V = u(c) + beta·E[V'] and
    its consumption equivalent nu; below the first endogenous point, V of consuming down
    to the limit.
    """
    target = beta * marginal
    infinite = jnp.isposinf(target)
    solved, marginal_residual = utility.inverse_marginal(
        jnp.where(infinite, 1.0, target),
        env,
        guess=jnp.maximum(guess, 1e-3),
        tolerance=tolerance / 10,
        active=jnp.broadcast_to(allowed, target.shape),
    )
    consumption = jnp.where(infinite, 0.0, solved)
    wealth = grid + consumption
    below = wealth < wealth[0]
    # u at c_j and, below the first endogenous point, at consuming down to the limit.
    slack = jnp.where(below, wealth - grid[0], 1.0)
    levels = utility.value(jnp.stack([consumption, slack]), env)
    value_now = levels[0] + beta * value
    # Where E[u'(c')] is infinite (nothing to consume next period at zero savings),
    # c_j = 0 and every later consumption is 0: V's consumption equivalent is 0.
    unbounded = jnp.isneginf(value_now) | infinite
    solved_equivalent, inverse_residual = utility.inverse(
        jnp.where(unbounded, 0.0, value_now),
        env,
        guess=jnp.maximum(consumption, 1e-3),
        tolerance=tolerance / 10,
        active=jnp.broadcast_to(allowed, value_now.shape),
    )
    equivalent = jnp.where(unbounded, 0.0, solved_equivalent)
    constrained = jnp.where(below, levels[1] + beta * value[0], -jnp.inf)
    marginal_error = jnp.max(jnp.where(infinite, 0.0, jnp.abs(marginal_residual)), initial=0.0)
    inverse_error = jnp.max(jnp.where(unbounded, 0.0, jnp.abs(inverse_residual)), initial=0.0)
    flags = jnp.stack(
        [
            ~jnp.all(jnp.isfinite(wealth) & jnp.isfinite(equivalent)),
            jnp.any(jnp.diff(wealth) <= 0) | (wealth[0] < grid[0]),
            marginal_error > tolerance,
            inverse_error > tolerance,
        ]
    ).astype(jnp.int32)
    slope = _equivalent_slope(utility, wealth, consumption, equivalent, env=env)
    return (wealth, consumption, equivalent, slope), value_now, constrained, flags


def _equivalent_slope(
    utility: Utility,
    wealth: jnp.ndarray,
    consumption: jnp.ndarray,
    equivalent: jnp.ndarray,
    *,
    env: dict[str, Any],
) -> jnp.ndarray:
    """Return nu's slope in wealth for the Hermite interpolation between nodes.

    V's slope is u'(c) (envelope condition), so nu = u^{-1}(V) has slope u'(c) / u'(nu).
    Where nu = 0 (nothing to consume) u'(nu) is infinite: the secant to the next node,
    which is exact where nu is linear (CRRA without income).
    """
    marginals = utility.marginal(jnp.stack([consumption, equivalent]), env)
    ratio = marginals[0] / marginals[1]
    step = jnp.diff(wealth, append=wealth[-1:] + 1)
    secant = jnp.diff(equivalent, append=equivalent[-1:]) / jnp.where(step > 0, step, 1.0)
    return jnp.where((equivalent > 0) & jnp.isfinite(ratio), ratio, secant)
