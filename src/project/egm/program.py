"""The endogenous grid method as one jitted program: a scan over periods, backwards.

Per period and discrete context, on the savings grid ``s_j`` (the post-decision state):

1. next wealth ``w' = next_w(w=s_j, c=0)`` (= a·s_j + b) and its slope ``a`` for every outcome
   of the stochastic states and every node of the iid shocks;
2. ``E[a·u'(c_{t+1}(w'))]`` and ``E[V_{t+1}(w')]`` with next period's consumption and value
   interpolated on its endogenous grid;
3. the Euler equation ``u'(c_j) = beta·E[a·u'(c')]`` inverted for ``c_j``; the endogenous grid
   ``w_j = s_j + c_j``; ``V_j = u(c_j) + beta·E[V']``.

Below the first endogenous point the borrowing limit ``s_0`` binds: ``c = w - s_0`` and
``V(w) = u(w - s_0) + beta·E[V'(s_0)]``, both exact. Node 0 of every period is the point
``(w, c) = (s_0, 0)``, so interpolating consumption over all nodes gives ``c = w - s_0`` there.
V is stored as its consumption equivalent ``nu = u^{-1}(V)``, which is linear in ``w`` for CRRA
utility without income, and interpolated linearly. The last period consumes down to ``s_0``.

The report has one row per period: NaN/inf in the result, a non-monotone endogenous grid, and
the residuals of the two numerical inverses (see ``utility.py``) beyond tolerance.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from project.egm.structure import egm_structure
from project.egm.transitions import Transitions
from project.egm.utility import Utility
from project.model.params import unpack_params
from project.model.spec import DISCOUNT_FACTOR, Model
from project.shocks import shock_tables

REPORT_COLUMNS = ("not_finite", "non_monotone", "inverse_marginal_residual", "inverse_residual")


class EGMArrays(NamedTuple):
    """Per period (leading axis) and context: the endogenous grid and what lives on it."""

    wealth: jax.Array
    consumption: jax.Array
    value_equivalent: jax.Array
    constrained_continuation: jax.Array


def interpolate(x: jnp.ndarray, nodes: jnp.ndarray, values: jnp.ndarray) -> jnp.ndarray:
    """Return the linear interpolation (extrapolated beyond the ends) of ``values`` at ``x``."""
    upper = jnp.clip(jnp.searchsorted(nodes, x, side="right"), 1, nodes.shape[-1] - 1)
    x0, x1 = nodes[upper - 1], nodes[upper]
    y0, y1 = values[upper - 1], values[upper]
    return y0 + (x - x0) * ((y1 - y0) / (x1 - x0))


def value_at(
    wealth: jnp.ndarray,
    *,
    nodes: jnp.ndarray,
    equivalent: jnp.ndarray,
    continuation: jnp.ndarray,
    limit: jnp.ndarray,
    utility: Callable[[jnp.ndarray], jnp.ndarray],
) -> jnp.ndarray:
    """Return V at ``wealth`` from one context's arrays (exact where the limit binds)."""
    constrained = wealth < nodes[1]
    slack = jnp.where(constrained, wealth - limit, 1.0)
    binding = utility(slack) + continuation
    free = utility(interpolate(wealth, nodes[1:], equivalent[1:]))
    return jnp.where(constrained, binding, free)


def consumption_and_value(
    arrays: EGMArrays,
    context: jnp.ndarray | int,
    wealth: jnp.ndarray,
    *,
    limit: jnp.ndarray,
    utility: Callable[[jnp.ndarray], jnp.ndarray],
) -> tuple[jnp.ndarray, jnp.ndarray]:
    """Return consumption and V at ``wealth`` from one period's arrays (contexts flattened)."""
    nodes = arrays.wealth[context]
    consumption = interpolate(wealth, nodes, arrays.consumption[context])
    value = value_at(
        wealth,
        nodes=nodes,
        equivalent=arrays.value_equivalent[context],
        continuation=arrays.constrained_continuation[context],
        limit=limit,
        utility=utility,
    )
    return consumption, value


def build_program(model: Model) -> Callable[[jax.Array, jax.Array], tuple[EGMArrays, jax.Array]]:
    """Return the jitted ``program(flat_params, savings) -> (arrays, report)``."""
    structure = egm_structure(model)
    utility = Utility(model, structure)
    transitions = Transitions(model, structure)
    n_periods = model.n_periods

    def program(flat_params: jax.Array, savings: jax.Array) -> tuple[EGMArrays, jax.Array]:
        params = unpack_params(model=model, flat=flat_params)
        dtype = savings.dtype
        ages = jnp.asarray(np.asarray(model.ages), dtype=dtype)
        contexts = jnp.asarray(structure.contexts)
        shocks, shock_weights, _ = shock_tables(model.shocks, params)
        shock_weights = shock_weights.astype(dtype)
        shocks = {k: v.astype(dtype) for k, v in shocks.items()}
        tolerance = float(1e3 * jnp.finfo(dtype).eps)

        def env_of(codes: jnp.ndarray, period: jnp.ndarray) -> dict[str, Any]:
            named = {s: codes[i] for i, s in enumerate(structure.discrete)}
            return params | named | {"period": period, "age": ages[period]}

        terminal = _terminal(savings, n_contexts=structure.n_contexts)

        def period_step(carry: EGMArrays, period: jnp.ndarray) -> tuple[EGMArrays, Any]:
            def one_context(codes: jnp.ndarray) -> tuple[EGMArrays, jnp.ndarray]:
                env = env_of(codes, period)
                marginal, value, guess = _expectations(
                    transitions,
                    env,
                    savings=savings,
                    next_arrays=carry,
                    next_env=lambda next_codes: env_of(next_codes, period + 1),
                    contexts=contexts,
                    shocks=shocks,
                    shock_weights=shock_weights,
                    utility=utility,
                )
                target = params[DISCOUNT_FACTOR] * marginal
                infinite = jnp.isposinf(target)
                solved, marginal_residual = utility.inverse_marginal(
                    jnp.where(infinite, 1.0, target),
                    env,
                    guess=jnp.maximum(guess, 1e-3),
                    tolerance=tolerance / 10,
                )
                consumption = jnp.where(infinite, 0.0, solved)
                value_now = utility.value(consumption, env) + params[DISCOUNT_FACTOR] * value
                # Where E[u'(c')] is infinite (nothing to consume next period at zero savings),
                # c_j = 0 and every later consumption is 0: V's consumption equivalent is 0.
                unbounded = jnp.isneginf(value_now) | infinite
                solved_equivalent, inverse_residual = utility.inverse(
                    jnp.where(unbounded, 0.0, value_now),
                    env,
                    guess=jnp.maximum(consumption, 1e-3),
                    tolerance=tolerance / 10,
                )
                equivalent = jnp.where(unbounded, 0.0, solved_equivalent)
                wealth = savings + consumption
                marginal_error = jnp.max(
                    jnp.where(infinite, 0.0, jnp.abs(marginal_residual)), initial=0.0
                )
                inverse_error = jnp.max(
                    jnp.where(unbounded, 0.0, jnp.abs(inverse_residual)), initial=0.0
                )
                zero = jnp.zeros((1,), dtype=dtype)
                arrays = EGMArrays(
                    wealth=jnp.concatenate([savings[:1], wealth]),
                    consumption=jnp.concatenate([zero, consumption]),
                    value_equivalent=jnp.concatenate([zero, equivalent]),
                    constrained_continuation=params[DISCOUNT_FACTOR] * value[0],
                )
                flags = jnp.stack(
                    [
                        ~jnp.all(jnp.isfinite(wealth) & jnp.isfinite(equivalent)),
                        jnp.any(jnp.diff(wealth) <= 0) | (wealth[0] < savings[0]),
                        marginal_error > tolerance,
                        inverse_error > tolerance,
                    ]
                )
                return arrays, flags

            arrays, flags = jax.vmap(one_context)(contexts)
            return arrays, (arrays, jnp.any(flags, axis=0))

        steps = jnp.arange(n_periods - 1, dtype=jnp.int32)
        _, (history, flags) = jax.lax.scan(period_step, terminal, steps, reverse=True)
        stacked = jax.tree.map(
            lambda earlier, last: jnp.concatenate([earlier, last[None]]), history, terminal
        )
        report = jnp.concatenate([flags, jnp.zeros((1, len(REPORT_COLUMNS)), bool)])
        return stacked, report.astype(jnp.int32)

    return jax.jit(program)


def _terminal(savings: jnp.ndarray, *, n_contexts: int) -> EGMArrays:
    """Return the last period: consume down to the limit, V = u(c) (nu = c, exact)."""
    spend = savings - savings[0] + (savings[1] - savings[0])
    zero = jnp.zeros((1,), dtype=savings.dtype)
    consumption = jnp.concatenate([zero, spend])
    wealth = jnp.concatenate([savings[:1], savings[0] + spend])

    def tile(x: jnp.ndarray) -> jnp.ndarray:
        return jnp.broadcast_to(x, (n_contexts, *x.shape))

    return EGMArrays(
        wealth=tile(wealth),
        consumption=tile(consumption),
        value_equivalent=tile(consumption),
        constrained_continuation=jnp.zeros((n_contexts,), dtype=savings.dtype),
    )


def _expectations(
    transitions: Transitions,
    env: dict[str, Any],
    *,
    savings: jnp.ndarray,
    next_arrays: EGMArrays,
    next_env: Callable[[jnp.ndarray], dict[str, Any]],
    contexts: jnp.ndarray,
    shocks: dict[str, jnp.ndarray],
    shock_weights: jnp.ndarray,
    utility: Utility,
) -> tuple[jnp.ndarray, ...]:
    """Return E[a·u'(c')], E[V'] and E[c'] per savings point."""
    following = transitions.next_states(
        env, savings=savings, shocks=shocks, shock_weights=shock_weights
    )

    def per_pair(context: jnp.ndarray, wealth: jnp.ndarray, slope: jnp.ndarray) -> Any:
        next_period = next_env(contexts[context])
        consumption, value = consumption_and_value(
            next_arrays,
            context,
            wealth,
            limit=savings[0],
            utility=lambda c: utility.value(c, next_period),
        )
        return slope * utility.marginal(consumption, next_period), value, consumption

    parts = jax.vmap(jax.vmap(per_pair))(following.context, following.wealth, following.slope)
    return tuple(jnp.tensordot(following.weight, part, axes=2) for part in parts)
