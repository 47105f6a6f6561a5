"""One row per discrete context: next period's expected V along the continuous state's grid.

For the structure kernels the continuation of a (state, action) pair depends on the discrete
context (discrete states and actions) only through which row of next period's prepared V it
reads, and on the continuous state and action only through where on that row it reads. The row
mixes the kept stochastic outcomes with their probabilities (the pre-contracted ones are already
summed into W by ``prepare_next_value``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from project.model.names import transition_target
from project.solver.expectation import for_actions
from project.solver.interpolation import interpolate_value
from project.solver.plan import SolvePlan
from project.solver.q import joint_probabilities
from project.solver.sweep import compose, weighted_sum

RowFunction = Callable[[dict[str, Any], jnp.ndarray], jnp.ndarray]


def build_row_function(plan: SolvePlan) -> RowFunction:
    """Return ``row(env, part)``: the context's expected next-period V on the state grid.

    ``env`` holds params, period, age and the context's discrete states and actions; ``part`` is
    the prepared next-period V sliced to the context's sliced axes.
    """
    model, expectation = plan.model, plan.expectation
    state = plan.structure.state
    axes = expectation.interpolation_axes(model)
    position = axes.index(state)
    discrete_axes = [(s, model.states[s]) for s in axes if s != state]
    laws = compose(model, [f"next_{s}" for s in model.deterministic_states if s != state])
    kept = expectation.kept
    probabilities = compose(model, [transition_target(s) for s in kept])
    kept_sizes = [model.states[s].n_points for s in kept]

    def row(env: dict[str, Any], part: jnp.ndarray) -> jnp.ndarray:
        values = jnp.moveaxis(for_actions(model, part, env), position, -1)

        def outcome_row(codes: jnp.ndarray) -> jnp.ndarray:
            outcomes = {s: codes[i] for i, s in enumerate(kept)}
            env_outcome = env | {f"next_{s}": c for s, c in outcomes.items()}
            next_states = {k[5:]: v for k, v in laws(env_outcome).items()} | outcomes
            return interpolate_value(
                values=values, axes=discrete_axes, next_states=next_states, grid_points={}
            )

        if not kept:
            return outcome_row(jnp.zeros((0,), dtype=jnp.int32))
        codes = jnp.stack([c.ravel() for c in jnp.indices(kept_sizes, dtype=jnp.int32)], axis=-1)
        out = probabilities(env)
        joint = joint_probabilities([out[transition_target(s)] for s in kept])
        return weighted_sum(joint, jax.vmap(outcome_row)(codes))

    return row
