"""Where savings lead: next period's context and wealth for every outcome and shock node.

For savings ``s`` in a discrete context, every combination of a stochastic-state outcome and an
iid-shock node gives a next context (its flat index) and next wealth ``next_w(w=s, c=0)``
(= a·s + b, the savings form), with the slope ``a`` and the combination's probability. The solve
and the Euler-error measure both read next period from here.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from project.egm.structure import EGMStructure
from project.grids import code_combinations
from project.model.continuation import CONTINUATION_SCALE, has_continuation_scale
from project.model.names import transition_target
from project.model.spec import Model
from project.solver.sweep import compose


class NextStates(NamedTuple):
    """Per (outcome, shock node): next context; per savings point also next wealth and slope.

    ``weight`` is the combination's probability; ``scaled_weight`` that times the model's
    ``continuation_scale`` (``project.model.continuation``), the weight of next period's value
    and marginal value in the expectation (``weight`` itself without one).
    """

    context: jnp.ndarray
    wealth: jnp.ndarray
    slope: jnp.ndarray
    weight: jnp.ndarray
    scaled_weight: jnp.ndarray


class Transitions:
    """A model's laws of motion and transition probabilities, evaluated at given savings."""

    def __init__(self, model: Model, structure: EGMStructure) -> None:
        self.structure = structure
        self.law = compose(model, [f"next_{structure.state}"])
        self.discrete_laws = compose(model, [f"next_{s}" for s in structure.deterministic_discrete])
        self.probabilities = compose(model, [transition_target(s) for s in structure.stochastic])
        self.outcomes = code_combinations([model.states[s].n_points for s in structure.stochastic])
        self.scale = compose(model, [CONTINUATION_SCALE]) if has_continuation_scale(model) else None

    def next_states(
        self,
        env: dict[str, Any],
        *,
        savings: jnp.ndarray,
        shocks: dict[str, jnp.ndarray],
        shock_weights: jnp.ndarray,
    ) -> NextStates:
        """Return next states from ``savings`` (1-D) in the context and period of ``env``.

        ``context`` and ``weight`` have shape (outcomes, shock nodes); ``wealth`` and ``slope``
        one more axis, the savings points.
        """
        structure = self.structure
        state, action = structure.state, structure.action
        probabilities = self.probabilities(env)
        joint = jnp.ones((self.outcomes.shape[0],), dtype=savings.dtype)
        for i, s in enumerate(structure.stochastic):
            joint = joint * probabilities[transition_target(s)][self.outcomes[:, i]]

        def per_outcome(codes: jnp.ndarray, shock_point: dict[str, jnp.ndarray]) -> Any:
            outcome_env = env | {f"next_{s}": codes[i] for i, s in enumerate(structure.stochastic)}
            outcome_env |= shock_point
            laws = self.discrete_laws(outcome_env)
            next_codes = [
                codes[structure.stochastic.index(s)]
                if s in structure.stochastic
                else jnp.asarray(laws[f"next_{s}"]).astype(jnp.int32)
                for s in structure.discrete
            ]

            def next_wealth(s: jnp.ndarray) -> jnp.ndarray:
                return self.law(outcome_env | {state: s, action: jnp.zeros_like(s)})[
                    f"next_{state}"
                ]

            wealth, slope = jax.vmap(lambda s: jax.jvp(next_wealth, (s,), (jnp.ones_like(s),)))(
                savings
            )
            scale = (  # traced only where the model states one
                None
                if self.scale is None
                else jnp.asarray(self.scale(outcome_env)[CONTINUATION_SCALE], savings.dtype)
            )
            return structure.context_index(next_codes), wealth, slope, scale

        outcomes = jnp.asarray(self.outcomes)
        if shocks:
            context, wealth, slope, scale = jax.vmap(
                lambda codes: jax.vmap(lambda point: per_outcome(codes, point))(shocks)
            )(outcomes)
        else:
            context, wealth, slope, scale = jax.tree.map(
                lambda x: x[:, None], jax.vmap(lambda codes: per_outcome(codes, {}))(outcomes)
            )
        weight = jnp.multiply.outer(joint, shock_weights)
        scaled = weight if scale is None else weight * scale
        return NextStates(
            context=context, wealth=wealth, slope=slope, weight=weight, scaled_weight=scaled
        )
