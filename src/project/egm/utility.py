"""Utility, its derivative and the two inverses EGM needs, for one discrete context and period.

Marginal utility is ``jax.grad`` of the user's utility in consumption. Its inverse is the user's
``inverse_marginal_utility`` (a function of ``marginal_utility``) where given, else Newton's
method in logs (exact after one step for CRRA utility, whose log marginal utility is linear in
log consumption). The inverse of utility itself, used to store V in consumption-equivalent form,
is the user's ``inverse_utility`` (a function of ``utility_level``) where given, else iterates on
a local CRRA fit (matching u, u' and u'' at the current guess), which is exact in one step for
CRRA and log utility. A closed form saves the iterations' loops, most of a DC-EGM period's time
on small grids. Both inverses report their residual, so a failure (a wrong closed form
included) is reported, not hidden.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from project.egm.structure import EGMStructure
from project.model.names import CLOSED_FORM_INVERSES, INVERSE_MARGINAL_UTILITY, INVERSE_UTILITY
from project.model.spec import Model
from project.solver.sweep import compose

MAX_STEPS = 100
MAX_LOG_STEP = 4.0
LOG_UTILITY_BAND = 1e-6

Env = dict[str, Any]


class Utility:
    """Elementwise u, u', (u')^{-1} and u^{-1} in consumption for a fixed environment."""

    def __init__(self, model: Model, structure: EGMStructure) -> None:
        self.action = structure.action
        self._utility = compose(model, ["utility"])
        self._given_inverse = _given(model, INVERSE_MARGINAL_UTILITY)
        self._given_inverse_utility = _given(model, INVERSE_UTILITY)

    def _scalar(self, env: Env) -> Callable[[jnp.ndarray], jnp.ndarray]:
        return lambda c: self._utility(env | {self.action: c})["utility"]

    def value(self, consumption: jnp.ndarray, env: Env) -> jnp.ndarray:
        """Return u(c)."""
        return _elementwise(self._scalar(env), consumption)

    def marginal(self, consumption: jnp.ndarray, env: Env) -> jnp.ndarray:
        """Return u'(c)."""
        return _elementwise(jax.grad(self._scalar(env)), consumption)

    def inverse_marginal(
        self,
        marginal: jnp.ndarray,
        env: Env,
        *,
        guess: jnp.ndarray,
        tolerance: float,
        active: jnp.ndarray | None = None,
    ) -> tuple[jnp.ndarray, jnp.ndarray]:
        """Return c with u'(c) = ``marginal`` and the relative residual u'(c)/marginal - 1.

        The given closed form where there is one, else Newton's method in logs from ``guess``,
        repeated until every ``active`` residual is below ``tolerance`` (at most ``MAX_STEPS``
        times; default: all are active).
        """
        marginal_of = jax.grad(self._scalar(env))

        def residual(c: jnp.ndarray) -> jnp.ndarray:
            return _elementwise(marginal_of, c) / marginal - 1

        if self._given_inverse is not None:
            given = self._given_inverse
            argument = CLOSED_FORM_INVERSES[INVERSE_MARGINAL_UTILITY]
            c = _elementwise(
                lambda x: given(env | {argument: x})[INVERSE_MARGINAL_UTILITY], marginal
            )
            return c, residual(c)
        log_marginal = jax.grad(lambda y: jnp.log(marginal_of(jnp.exp(y))))

        def step(c: jnp.ndarray) -> jnp.ndarray:
            def one(x: jnp.ndarray, current: jnp.ndarray) -> jnp.ndarray:
                y = jnp.log(current)
                change = (jnp.log(marginal_of(current)) - jnp.log(x)) / log_marginal(y)
                return jnp.exp(y - jnp.clip(change, -MAX_LOG_STEP, MAX_LOG_STEP))

            return jax.vmap(one)(marginal.ravel(), c.ravel()).reshape(marginal.shape)

        start = jnp.broadcast_to(guess, marginal.shape)
        return _iterate(step, residual, start, tolerance=tolerance, active=active)

    def inverse(
        self,
        value: jnp.ndarray,
        env: Env,
        *,
        guess: jnp.ndarray,
        tolerance: float,
        active: jnp.ndarray | None = None,
    ) -> tuple[jnp.ndarray, jnp.ndarray]:
        """Return c with u(c) = ``value`` and the residual (u(c) - value) / (1 + |value|).

        The given closed form where there is one, else iterates on a local CRRA fit from
        ``guess`` until every ``active`` residual is below ``tolerance``.
        """
        u = self._scalar(env)
        du = jax.grad(u)
        ddu = jax.grad(du)

        def residual(c: jnp.ndarray) -> jnp.ndarray:
            return (_elementwise(u, c) - value) / (1 + jnp.abs(value))

        if self._given_inverse_utility is not None:
            given = self._given_inverse_utility
            argument = CLOSED_FORM_INVERSES[INVERSE_UTILITY]
            c = _elementwise(lambda x: given(env | {argument: x})[INVERSE_UTILITY], value)
            return c, residual(c)

        def one(v: jnp.ndarray, c: jnp.ndarray) -> jnp.ndarray:
            level, slope, curvature = u(c), du(c), ddu(c)
            rho = -c * curvature / slope
            near_log = jnp.abs(rho - 1) < LOG_UTILITY_BAND
            safe_rho = jnp.where(near_log, 2.0, rho)
            scale = slope * c**safe_rho
            shifted = level - scale * c ** (1 - safe_rho) / (1 - safe_rho)
            base = (v - shifted) * (1 - safe_rho) / scale
            power = jnp.where(base > 0, base, 1.0) ** (1 / (1 - safe_rho))
            log_fit = c * jnp.exp((v - level) / (slope * c))
            candidate = jnp.where(near_log, log_fit, power)
            fallback = c * jnp.exp(jnp.where(level < v, 1.0, -1.0))
            usable = near_log | (base > 0)
            ratio = jnp.where(usable, candidate / c, fallback / c)
            return c * jnp.clip(ratio, jnp.exp(-10 * MAX_LOG_STEP), jnp.exp(10 * MAX_LOG_STEP))

        def step(c: jnp.ndarray) -> jnp.ndarray:
            return jax.vmap(one)(value.ravel(), c.ravel()).reshape(value.shape)

        start = jnp.broadcast_to(guess, value.shape)
        return _iterate(step, residual, start, tolerance=tolerance, active=active)


def _iterate(
    step: Callable[[jnp.ndarray], jnp.ndarray],
    residual: Callable[[jnp.ndarray], jnp.ndarray],
    start: jnp.ndarray,
    *,
    tolerance: float,
    active: jnp.ndarray | None = None,
) -> tuple[jnp.ndarray, jnp.ndarray]:
    """Apply ``step`` until every ``active`` |residual| <= ``tolerance``; return both.

    At least one step and at most ``MAX_STEPS``; a NaN residual counts as done (the report flags
    it). Inactive points (those the caller discards) do not hold the loop. ``step`` appears in
    the program once, inside the loop (tracing and compiling it twice cost first-call time).
    """
    active = jnp.ones(start.shape, bool) if active is None else active

    def unfinished(state: tuple[Any, jnp.ndarray, jnp.ndarray]) -> jnp.ndarray:
        count, _, error = state
        pending = jnp.any(active & (jnp.abs(error) > tolerance))
        return (count == 0) | ((count < MAX_STEPS) & pending)

    def again(state: tuple[Any, jnp.ndarray, jnp.ndarray]) -> tuple[Any, jnp.ndarray, jnp.ndarray]:
        count, estimate, _ = state
        improved = step(estimate)
        return count + 1, improved, residual(improved)

    initial = (0, start, jnp.zeros_like(start))
    _, estimate, error = jax.lax.while_loop(unfinished, again, initial)
    return estimate, error


def _given(model: Model, name: str) -> Callable[[Env], dict[str, Any]] | None:
    """Return the model's closed-form inverse ``name`` composed, or None where not given."""
    return compose(model, [name]) if name in model.functions else None


def _elementwise(func: Callable[[jnp.ndarray], jnp.ndarray], x: jnp.ndarray) -> jnp.ndarray:
    return jax.vmap(func)(x.ravel()).reshape(x.shape)
