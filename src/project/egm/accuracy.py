"""Euler-equation errors of a solution (EGM or grid) of a model with EGM's structure.

At a state with consumption ``c = C_t(w)`` and savings above the borrowing limit, the Euler
equation says ``u'(c) = beta·E[a·u'(C_{t+1}(w'))]``. The relative error is
``|(u')^{-1}(beta·E[a·u'(c')]) / c - 1|``, the consumption error (as a share of c) that one
period's optimisation makes given next period's policy; its log10 is the usual accuracy measure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from project.egm.solution import EGMSolution
from project.egm.structure import egm_structure
from project.egm.utility import Utility
from project.model.spec import DISCOUNT_FACTOR, transition_target
from project.points import float_dtype
from project.shocks import shock_tables
from project.solver.evaluate import evaluate_grid_solution
from project.solver.states import validate_states
from project.solver.sweep import compose


def euler_errors(solution: Any, *, period: int, states: Mapping[str, Any]) -> np.ndarray:
    """Return the relative Euler-equation error at ``states`` (NaN where the limit binds).

    ``solution`` is an ``EGMSolution`` or a grid ``Solution`` of a model EGM admits; ``period``
    must have a successor.
    """
    model = solution.model
    structure = egm_structure(model)
    flat, shape = validate_states(model=model, states=states, period=period)
    if period >= model.n_periods - 1:
        msg = (
            f"period={period} has no next period: Euler errors need period < {model.n_periods - 1}."
        )
        raise ValueError(msg)
    dtype = float_dtype()
    consumption = _consumption(solution, period=period, states=flat)
    params = {k: jnp.asarray(v, dtype=dtype) for k, v in solution.params.items()}
    shocks, shock_weights, _ = shock_tables(model.shocks, params)
    law = compose(model, [f"next_{structure.state}"])
    discrete_laws = compose(model, [f"next_{s}" for s in structure.deterministic_discrete])
    probabilities = compose(model, [transition_target(s) for s in structure.stochastic])
    sizes = [model.states[s].n_points for s in structure.stochastic]
    outcomes = (
        np.stack([c.ravel() for c in np.indices(sizes, dtype=np.int32)], axis=-1)
        if sizes
        else np.zeros((1, 0), dtype=np.int32)
    )
    ages = np.asarray(model.ages, dtype=dtype)
    state, action = structure.state, structure.action

    def env_of(row: dict[str, Any], t: int) -> dict[str, Any]:
        return params | row | {"period": jnp.int32(t), "age": jnp.asarray(ages[t])}

    def next_states(row: dict[str, Any], c: jnp.ndarray) -> Any:
        env = env_of(row, period) | {action: c}
        probs = probabilities(env)
        weight = jnp.ones((outcomes.shape[0],), dtype=dtype)
        for i, s in enumerate(structure.stochastic):
            weight = weight * probs[transition_target(s)][outcomes[:, i]]

        def per_outcome(codes: jnp.ndarray, point: dict[str, jnp.ndarray]) -> Any:
            outcome = env | {f"next_{s}": codes[i] for i, s in enumerate(structure.stochastic)}
            outcome |= point
            laws = discrete_laws(outcome)
            nxt = {
                s: codes[structure.stochastic.index(s)]
                if s in structure.stochastic
                else jnp.asarray(laws[f"next_{s}"]).astype(jnp.int32)
                for s in structure.discrete
            }
            wealth, slope = jax.jvp(
                lambda w: law(outcome | {state: w})[f"next_{state}"],
                (outcome[state],),
                (jnp.ones_like(outcome[state]),),
            )
            return nxt | {state: wealth}, slope

        if shocks:
            result = jax.vmap(lambda k: jax.vmap(lambda p: per_outcome(k, p))(shocks))(
                jnp.asarray(outcomes)
            )
        else:
            result = jax.tree.map(
                lambda x: x[:, None],
                jax.vmap(lambda k: per_outcome(k, {}))(jnp.asarray(outcomes)),
            )
        return result, jnp.multiply.outer(weight, shock_weights)

    rows = {s: jnp.asarray(v, dtype=jnp.int32) for s, v in flat.items() if s != state}
    rows[state] = jnp.asarray(flat[state], dtype=dtype)
    (following, slope), weights = jax.vmap(next_states)(rows, jnp.asarray(consumption))
    n, k, m = slope.shape
    following_flat = {s: np.asarray(v).reshape(-1) for s, v in following.items()}
    next_consumption = _consumption(solution, period=period + 1, states=following_flat)
    utility = Utility(model, structure)

    def marginal(c: jnp.ndarray, row: dict[str, Any], t: int) -> jnp.ndarray:
        return utility.marginal(c, env_of(row, t))

    next_rows = {s: jnp.asarray(following_flat[s]) for s in structure.discrete}
    marginal_next = jax.vmap(lambda c, r: marginal(c, r, period + 1))(
        jnp.asarray(next_consumption), next_rows
    ).reshape(n, k, m)
    expected = jnp.sum(weights * slope * marginal_next, axis=(1, 2))
    target = params[DISCOUNT_FACTOR] * expected
    here = {s: rows[s] for s in structure.discrete}
    implied = jax.vmap(
        lambda x, c, r: utility.inverse_marginal(
            x[None], env_of(r, period), guess=c[None], tolerance=1e-14
        )[0][0]
    )(target, jnp.asarray(consumption), here)
    error = np.abs(np.asarray(implied) / consumption - 1)
    limit = float(np.asarray(model.post_decision_grid.to_jax())[0])
    binding = flat[state] - consumption <= limit + 1e-9 * max(1.0, abs(limit))
    return np.where(binding, np.nan, error).reshape(shape)


def _consumption(solution: Any, *, period: int, states: Mapping[str, np.ndarray]) -> np.ndarray:
    action = egm_structure(solution.model).action
    if isinstance(solution, EGMSolution):
        return np.asarray(solution.evaluate_flat(period=period, states=states)[0])
    return evaluate_grid_solution(solution, period=period, states=states)[1][action]
