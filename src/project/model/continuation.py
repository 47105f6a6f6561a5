"""A factor on next period's value inside the expectation: ``continuation_scale``.

A model may state the function ``continuation_scale``. Its value multiplies next period's value
(and so its marginal value) inside the expectation, for every outcome and shock node:

    V_t = u(c) + beta * E[ continuation_scale * V_{t+1}(next states) ].

This is how a model normalised by permanent income states itself: with CRRA utility,
``V(M, P) = P^(1 - rho) v(M / P)``, so a model in ``m = M / P`` with permanent income growing by
``G * psi'`` weights the continuation by ``(G * psi')^(1 - rho)`` (Carroll 2023, "Solution
Methods for Microeconomic Dynamic Stochastic Optimization Problems"). Survival probabilities or
an age profile of discount factors are other uses.

The factor may read params, the age or period, discrete states and actions and the iid shocks;
it may not read a continuous state or action (EGM evaluates it once per outcome and shock
node, not per savings point) nor a stochastic state's next outcome (the grid solver may sum
next period's values over those outcomes before it is applied).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from project.errors import ModelSpecificationError

if TYPE_CHECKING:
    from project.model.spec import Model

CONTINUATION_SCALE = "continuation_scale"


def has_continuation_scale(model: Model) -> bool:
    """Return whether ``model`` weights its continuation by ``continuation_scale``."""
    return CONTINUATION_SCALE in model.functions


def validate_continuation_scale(model: Model) -> None:
    """Refuse a ``continuation_scale`` that reads what it may not (see the module docstring)."""
    if CONTINUATION_SCALE in model.constraints:
        msg = (
            f"Model {model.name!r}: {CONTINUATION_SCALE!r} is a constraint, but it is the factor "
            "on next period's value. State it under functions."
        )
        raise ModelSpecificationError(msg)
    if not has_continuation_scale(model):
        return
    ancestors = model.ancestors(CONTINUATION_SCALE)
    continuous = sorted(
        name
        for name, grid in (model.states | model.actions).items()
        if name in ancestors and not grid.is_discrete
    )
    outcomes = sorted(f"next_{s}" for s in model.stochastic_transitions if f"next_{s}" in ancestors)
    read = [*continuous, *outcomes]
    if read:
        msg = (
            f"Model {model.name!r}: {CONTINUATION_SCALE!r} depends on {sorted(set(read))}. It "
            "may read params, the age or period, discrete states, discrete actions and iid "
            "shocks only: it is evaluated once per next-period outcome and shock node. Move the "
            "dependence into the law of motion or make the state discrete."
        )
        raise ModelSpecificationError(msg)
