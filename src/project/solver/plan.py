"""Plan a solve from the model alone: which action to loop over, what to fold, which structure.

Every kernel evaluates Q for one block of the *loop action* at a time (the last continuous
action, else the last action; with taste shocks never a discrete one), vectorised over all
states and the other actions, and keeps a running maximum and first argmax: Q is never stored
whole. The plan also decides:

- *discrete constraints*: constraints on discrete states, discrete actions, age and params only.
  They are applied once per period to the per-action maxima, not to every (state, action) pair;
- *folded states*: discrete states that appear in discrete constraints only (a lagged retirement
  status that just restricts the retirement choice). The kernels never sweep their axis: V is
  the maximum over the discrete actions those constraints allow, expanded along the axis;
- the *structure*: with one continuous state whose continuation depends on the discrete
  context only through one row of next period's expected V, the ``row`` kernel interpolates
  in that row; where its law of motion also has the savings form ``a·(w - c) + b`` (proved in
  ``structure.py``), the ``lattice`` and ``shift`` kernels replace the per-pair interpolation
  by windows into the row.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

from project.grids import Grid, LinSpacedGrid
from project.model.continuation import CONTINUATION_SCALE, has_continuation_scale
from project.model.internal import Fact
from project.model.names import RESERVED_ARGUMENTS
from project.model.spec import Model
from project.points import float_dtype
from project.solver.expectation import ExpectationPlan
from project.solver.structure import SavingsProof, prove_savings_form
from project.solver.sweep import composed_function

# Steps whose ratio is within this relative distance of a whole number are commensurate.
STEP_RATIO_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Structure:
    """The exact structure the structure kernels exploit, or why the model lacks it.

    ``kind`` is "lattice" (savings form on commensurate evenly spaced grids, any slope),
    "shift" (savings form on an evenly spaced state grid: needs slope a == 1, which
    ``unit_slope`` says holds for all params, else it is checked per (params, period), and
    periods where it fails use "row"), "row" (one continuous state whose continuation is one
    row per discrete context), or None (the general kernel).
    """

    kind: str | None
    reason: str
    state: str | None = None
    action: str | None = None
    unit_slope: bool = False
    step_ratio: int = 0


@dataclass(frozen=True)
class SolvePlan:
    """Static facts about a model that every kernel and the program builder share."""

    model: Model
    loop_action: str | None
    other_actions: tuple[str, ...]
    folded_states: tuple[str, ...]
    swept_states: tuple[str, ...]
    loop_constraints: tuple[str, ...]
    discrete_constraints: tuple[str, ...]
    expectation: ExpectationPlan
    structure: Structure

    @property
    def state_shape(self) -> tuple[int, ...]:
        """Return V's shape (one axis per state, in the model's order)."""
        return tuple(g.n_points for g in self.model.states.values())


def plan_for(model: Model) -> SolvePlan:
    """Return the model's plan, derived once per model object."""
    return PLAN.of(model)


def general_plan(model: Model) -> SolvePlan:
    """Return the model's plan without structure: every period runs the general kernel."""
    return dataclasses.replace(
        plan_for(model), structure=Structure(kind=None, reason="structure kernels switched off")
    )


def _derive(model: Model) -> SolvePlan:
    continuous = {n for n, g in (model.states | model.actions).items() if not g.is_discrete}
    discrete_constraints = tuple(
        c for c in model.constraints if not model.ancestors(c) & continuous
    )
    loop_constraints = tuple(c for c in model.constraints if c not in discrete_constraints)
    used: set[str] = set()
    for target in ("utility", *loop_constraints, *_transition_targets(model)):
        used |= model.ancestors(target)
    folded = tuple(
        s
        for s, g in model.states.items()
        if g.is_discrete and s not in used and s not in model.permanent_states
    )
    loop_action = _loop_action(model)
    return SolvePlan(
        model=model,
        loop_action=loop_action,
        other_actions=tuple(a for a in model.actions if a != loop_action),
        folded_states=folded,
        swept_states=tuple(s for s in model.states if s not in folded),
        loop_constraints=loop_constraints,
        discrete_constraints=discrete_constraints,
        expectation=ExpectationPlan.for_model(model),
        structure=_structure(model),
    )


PLAN: Fact[SolvePlan] = Fact("solve plan", build=_derive)


def _transition_targets(model: Model) -> list[str]:
    """Return every law of motion and transition target (a regime's transition included)."""
    return model.transition_targets()


def _loop_action(model: Model) -> str | None:
    """Return the last continuous action, else the last action; never a taste-shocked choice.

    With taste shocks each discrete choice's value enters V's log-sum, so a running maximum
    must not fold a discrete action away: without a continuous action there is no loop action,
    and Q is evaluated on the whole (discrete) action product at once.
    """
    continuous = [a for a, g in model.actions.items() if not g.is_discrete]
    if continuous:
        return continuous[-1]
    if model.taste_shocks:
        return None
    return model.action_names[-1] if model.actions else None


def _structure(model: Model) -> Structure:
    obstacle = _row_obstacle(model)
    if obstacle:
        return Structure(kind=None, reason=obstacle)
    (state,) = [s for s, g in model.states.items() if not g.is_discrete]
    (action,) = [a for a, g in model.actions.items() if not g.is_discrete]
    law = f"next_{state}"
    row = (
        f"one continuous state {state!r}: each pair's continuation is an interpolation in one "
        "row of next period's expected V per discrete context"
    )
    if not isinstance(model.states[state], LinSpacedGrid):
        return Structure(
            kind="row",
            reason=f"{row} (the {state!r} grid is not evenly spaced: no shift or lattice)",
            state=state,
            action=action,
        )
    proof = prove_law_of_motion(model, state=state, action=action)
    if not proof.holds:
        return Structure(
            kind="row",
            reason=f"{row} ({law} is not a·({state} - {action}) + b: {proof.reason})",
            state=state,
            action=action,
        )
    ratio = _step_ratio(model.states[state], model.actions[action])
    savings = f"{law} = a·({state} - {action}) + b"
    common = {"state": state, "action": action, "unit_slope": proof.unit_slope}
    if ratio:
        return Structure(
            kind="lattice",
            reason=(
                f"{savings} and the {state} step is {ratio} x the {action} step: E[V'] is "
                "formed once per point of the savings lattice"
            ),
            step_ratio=ratio,
            **common,
        )
    return Structure(
        kind="shift",
        reason=(
            f"{savings} with a = 1 on an evenly spaced {state} grid: the continuation of each "
            f"{action} point is a shifted window of one row"
        ),
        **common,
    )


def prove_law_of_motion(model: Model, *, state: str, action: str) -> SavingsProof:
    """Return whether ``next_<state>`` is ``a·(state - action) + b`` (``structure.py``)."""
    law = f"next_{state}"
    func, arguments = composed_function(model, [law])
    return prove_savings_form(
        lambda **kwargs: func(**kwargs)[law],
        arguments={a: abstract_argument(model, a) for a in arguments},
        state=state,
        action=action,
    )


def _row_obstacle(model: Model) -> str:
    """Return the first reason the row kernel (and so every structure kernel) does not apply."""
    states = [s for s, g in model.states.items() if not g.is_discrete]
    actions = [a for a, g in model.actions.items() if not g.is_discrete]
    if len(states) != 1 or len(actions) != 1:
        return (
            f"{len(states)} continuous states and {len(actions)} continuous actions (the "
            "structure kernels need one of each)"
        )
    shocked = [t for t in _transition_targets(model) if model.ancestors(t) & set(model.shocks)]
    if shocked:
        return f"{shocked[0]!r} uses iid shocks (integrated inside the general kernel)"
    if has_continuation_scale(model):
        return f"{CONTINUATION_SCALE!r} weights next period's values (in the general kernel)"
    state, action = states[0], actions[0]
    law = f"next_{state}"
    dependent = [
        t for t in _transition_targets(model) if t != law and model.ancestors(t) & {state, action}
    ]
    if dependent:
        return f"{dependent[0]!r} depends on {state!r} or {action!r}"
    outcomes = sorted(
        s for s in model.stochastic_transitions if f"next_{s}" in model.ancestors(law)
    )
    if outcomes:
        return f"{law!r} uses the realised outcome of {outcomes}"
    return ""


def _step_ratio(state_grid: LinSpacedGrid, action_grid: Grid) -> int:
    """Return k when the state step is k (whole) times the action step, else 0."""
    if not isinstance(action_grid, LinSpacedGrid):
        return 0
    state_step = (state_grid.stop - state_grid.start) / (state_grid.n_points - 1)
    action_step = (action_grid.stop - action_grid.start) / (action_grid.n_points - 1)
    ratio = state_step / action_step
    whole = round(ratio)
    if whole >= 1 and math.isclose(ratio, whole, rel_tol=STEP_RATIO_TOLERANCE):
        return whole
    return 0


def abstract_argument(model: Model, name: str) -> jax.ShapeDtypeStruct:
    """Return the abstract scalar (or param array) that ``name`` takes in one state-action point."""
    grids = model.states | model.actions
    working = float_dtype()
    if name in grids:
        return jax.ShapeDtypeStruct((), jnp.int32 if grids[name].is_discrete else working)
    if name == "period" or (name.startswith("next_") and name[5:] in model.stochastic_transitions):
        return jax.ShapeDtypeStruct((), jnp.int32)
    if name in RESERVED_ARGUMENTS:
        return jax.ShapeDtypeStruct((), working)
    shape: Any = model.params_template.get(name, ())
    return jax.ShapeDtypeStruct(shape, working)
