"""How next period's V enters Q: the expectation plan and the contraction W = E[V_{t+1}].

The expectation over a stochastic state is formed in one of two ways:

- *pre-contracted*: when its probabilities do not depend on actions and its outcome does not enter
  any law of motion, W = sum_k P_k V_{t+1}[k] is formed once per period on the grid of the
  probabilities' inputs, before the state sweep, and interpolated once per action (exact for
  linear interpolation);
- *kept*: otherwise the outcomes are swept inside each state-action point and weighted there, so
  the sum fuses with the interpolation and no per-outcome stack of arrays is materialised.

Permanent (distributed) states never transition, so next period's V is read on the subject's
own block: their axes lead the prepared array and are sliced together with the state sweep
instead of being interpolated into. Under sharding each device thus reads only its own block.

A regime's next-period value also depends on the discrete actions its regime transition reads
(``Model.continuation_actions``): the array then has one leading axis per such action, before
the state axes, and every reader indexes it by the action's code (``for_actions``). The prepared
array's layout is: sliced state axes, continuation-action axes, W's axes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

from project.model.internal import Fact
from project.model.names import transition_target
from project.model.spec import Model
from project.solver.sweep import compose, sweep, weighted_sum


@dataclass(frozen=True)
class ExpectationPlan:
    """Which stochastic states are pre-contracted or kept, and which state axes are sliced.

    ``contraction_inputs`` are the (discrete) states the pre-contracted probabilities depend on.
    If a continuous state is among them, W is formed per state point inside the sweep instead
    (``contract_in_sweep``). ``sliced`` lists, in V's order, the contraction inputs and the
    permanent states: the leading axes of the prepared array, sliced along with the sweep.
    """

    precontracted: tuple[str, ...]
    kept: tuple[str, ...]
    permanent: tuple[str, ...] = ()
    contraction_inputs: tuple[str, ...] = ()
    contract_in_sweep: bool = False
    sliced: tuple[str, ...] = ()

    @classmethod
    def for_model(cls, model: Model) -> ExpectationPlan:
        """Return the model's plan, derived once per model object (tracing asks for it often)."""
        return EXPECTATION_PLAN.of(model)

    @classmethod
    def _derive(cls, model: Model) -> ExpectationPlan:
        """Pre-contract every stochastic state whose probabilities ignore actions and outcome."""
        outcome_dependent = model.outcome_dependent_stochastic_states()
        pre, kept = [], []
        for state in model.state_names:
            if state not in model.stochastic_transitions:
                continue
            if state in outcome_dependent or model.depends_on_actions(transition_target(state)):
                kept.append(state)
            else:
                pre.append(state)
        inputs: set[str] = set()
        for state in pre:
            inputs |= model.ancestors(transition_target(state)) & set(model.states)
        ordered = tuple(s for s in model.state_names if s in inputs)
        in_sweep = any(not model.states[s].is_discrete for s in ordered)
        contraction_inputs = () if in_sweep else ordered
        permanent = model.permanent_states
        return cls(
            precontracted=tuple(pre),
            kept=tuple(kept),
            permanent=permanent,
            contraction_inputs=contraction_inputs,
            contract_in_sweep=in_sweep,
            sliced=tuple(s for s in model.state_names if s in contraction_inputs or s in permanent),
        )

    def interpolation_axes(self, model: Model) -> list[str]:
        """Return the axes of W looked up per state-action point (after the sliced axes)."""
        return [
            s for s in model.state_names if s not in self.precontracted and s not in self.permanent
        ]

    def value_axes_without_permanent(self, model: Model) -> list[str]:
        """Return V's axes once the permanent axes are sliced off."""
        return [s for s in model.state_names if s not in self.permanent]


EXPECTATION_PLAN: Fact[ExpectationPlan] = Fact("expectation plan", build=ExpectationPlan._derive)


def build_contraction(model: Model) -> Callable[[jnp.ndarray, dict[str, Any]], jnp.ndarray]:
    """Return ``contract(values, env)``: W = E over the pre-contracted states of V_{t+1}.

    ``values`` has V's axes without the permanent ones.
    """
    plan = ExpectationPlan.for_model(model)
    per_state = compose(model, [transition_target(s) for s in plan.precontracted])

    # Before the sweep, W is a reduction: XLA does not fuse a reduction into the interpolation
    # gathers that read W, so W is formed once. Written elementwise, the sum would be fused into
    # every gather and recomputed per state-action point (twice as slow in the precautionary
    # model). Inside the sweep the fixed-order sum keeps splayed solves value-identical.
    combine = weighted_sum if plan.contract_in_sweep else _reduce_outcomes

    def contract(values: jnp.ndarray, env: dict[str, Any]) -> jnp.ndarray:
        probabilities = per_state(env)
        axis_names = plan.value_axes_without_permanent(model)
        expected = values
        for state in plan.precontracted:
            expected = combine(
                probabilities[transition_target(state)],
                jnp.moveaxis(expected, axis_names.index(state), 0),
            )
            axis_names.remove(state)
        return expected

    for _ in model.continuation_actions:
        contract = jax.vmap(contract, in_axes=(0, None))
    return contract


def for_actions(model: Model, part: jnp.ndarray, env: dict[str, Any]) -> jnp.ndarray:
    """Return ``part`` at the codes in ``env`` of the continuation actions (its leading axes)."""
    for action in model.continuation_actions:
        part = part[env[action]]
    return part


def _reduce_outcomes(weights: jnp.ndarray, stacked: jnp.ndarray) -> jnp.ndarray:
    """Return sum_k weights[k] * stacked[k] as one reduction over the leading axis."""
    return jnp.sum(jnp.expand_dims(weights, tuple(range(1, stacked.ndim))) * stacked, axis=0)


def prepare_next_value(
    model: Model,
    *,
    next_value: jnp.ndarray,
    env: dict[str, Any],
    grid_points: dict[str, jnp.ndarray],
) -> jnp.ndarray:
    """Return next period's V prepared for the sweep: sliced axes first, then W's axes."""
    plan = ExpectationPlan.for_model(model)
    lead = len(model.continuation_actions)
    positions = [lead + model.state_names.index(s) for s in plan.permanent]
    moved = jnp.moveaxis(next_value, positions, list(range(len(positions))))
    if not plan.precontracted or plan.contract_in_sweep:
        return moved
    contract = build_contraction(model)
    axes = [(s, grid_points[s], 0, s in plan.permanent) for s in plan.sliced]
    return sweep(lambda values, part: contract(part, env | values), axes, moved)
