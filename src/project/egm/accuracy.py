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

from project.egm.structure import egm_structure
from project.egm.transitions import Transitions
from project.egm.utility import Utility
from project.errors import InvalidStatesError, ModelSpecificationError
from project.model.names import DISCOUNT_FACTOR
from project.points import float_dtype
from project.shocks import shock_tables
from project.solver.states import validate_states


def euler_errors(solution: Any, *, period: int, states: Mapping[str, Any]) -> np.ndarray:
    """Return the relative Euler-equation error at ``states`` (NaN where the limit binds).

    ``solution`` is an ``EGMSolution`` or a grid ``Solution`` of a model EGM admits; ``period``
    must have a successor.
    """
    model = solution.model
    structure = egm_structure(model)
    flat, shape = _checked_states(model, structure=structure, states=states, period=period)
    dtype = float_dtype()
    consumption = _consumption(solution, period=period, states=flat)
    savings = flat[structure.state] - consumption
    params = {k: jnp.asarray(v, dtype=dtype) for k, v in solution.params.items()}
    shocks, shock_weights, _ = shock_tables(model.shocks, params)
    transitions = Transitions(model, structure)
    utility = Utility(model, structure)
    ages = jnp.asarray(np.asarray(model.ages, dtype=dtype))
    contexts = jnp.asarray(structure.contexts)

    def env_of(codes: jnp.ndarray, t: int) -> dict[str, Any]:
        named = {s: codes[i] for i, s in enumerate(structure.discrete)}
        return params | named | {"period": jnp.int32(t), "age": ages[t]}

    codes = jnp.asarray(
        np.stack([flat[s] for s in structure.discrete], axis=-1)
        if structure.discrete
        else np.zeros((savings.size, 0), dtype=np.int32)
    )
    following = jax.vmap(
        lambda row, s: transitions.next_states(
            env_of(row, period),
            savings=s[None],
            shocks=shocks,
            shock_weights=shock_weights,
        )
    )(codes, jnp.asarray(savings, dtype=dtype))
    next_codes = np.asarray(contexts[following.context.ravel()])
    next_flat = {s: next_codes[:, i] for i, s in enumerate(structure.discrete)}
    next_flat[structure.state] = np.asarray(following.wealth).reshape(-1)
    next_consumption = _consumption(solution, period=period + 1, states=next_flat)
    marginal = jax.vmap(lambda c, row: utility.marginal(c, env_of(row, period + 1)))(
        jnp.asarray(next_consumption), jnp.asarray(next_codes)
    ).reshape(following.context.shape)
    slope = following.slope[..., 0]
    target = params[DISCOUNT_FACTOR] * jnp.sum(
        following.scaled_weight * slope * marginal, axis=(1, 2)
    )
    implied = jax.vmap(
        lambda x, c, row: utility.inverse_marginal(
            x[None], env_of(row, period), guess=c[None], tolerance=1e-14
        )[0][0]
    )(target, jnp.asarray(consumption), codes)
    error = np.abs(np.asarray(implied) / consumption - 1)
    limit = float(np.asarray(model.post_decision_grid.to_jax())[0])
    binding = savings <= limit + 1e-9 * max(1.0, abs(limit))
    return np.where(binding, np.nan, error).reshape(shape)


def _checked_states(
    model: Any, *, structure: Any, states: Mapping[str, Any], period: int
) -> tuple[dict[str, np.ndarray], tuple[int, ...]]:
    """Return ``states`` validated (flat, and their shape); refuse what has no Euler error."""
    if structure.discrete_actions:
        msg = (
            f"Model {model.name!r} has discrete actions {list(structure.discrete_actions)}: "
            "Euler errors are defined here for models without discrete choices only (the "
            "Euler equation holds per choice, away from the kinks)."
        )
        raise ModelSpecificationError(msg)
    flat, shape = validate_states(model=model, states=states, period=period)
    if period >= model.n_periods - 1:
        msg = (
            f"period={period} has no next period: Euler errors need period < {model.n_periods - 1}."
        )
        raise InvalidStatesError(msg)
    return flat, shape


def _consumption(solution: Any, *, period: int, states: Mapping[str, np.ndarray]) -> np.ndarray:
    action = egm_structure(solution.model).action
    return np.asarray(solution.policy_flat(period=period, states=states)[action])
