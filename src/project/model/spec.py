"""A model states one phase of a life cycle as grids and plain functions composed with ``dags``.

Functions are linked by argument name. An argument can be a state, an action, another function,
``age``, ``period``, the realised next outcome ``next_<state>`` of a stochastic state (in laws of
motion only), or else a parameter. ``beta`` (the discount factor) is always a parameter.

A ``project.regimes.RegimeModel`` holds several models as regimes (working life, retirement,
death), each with its own states, actions and functions, linked by regime transitions; it adds
each regime's transition to that regime's functions through ``_extra_functions``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import cached_property
from typing import Any

import dags
import dags.exceptions

from project.actions import ContinuousAction
from project.errors import ModelSpecificationError
from project.grids import ContinuousGrid, Grid, IrregSpacedGrid
from project.model.checks import (
    arguments_of,
    horizon,
    validate_distributed,
    validate_graph,
    validate_names,
    validate_shocks_and_savings_grid,
    validate_statement,
    validate_taste_shocks,
)
from project.model.continuation import validate_continuation_scale
from project.model.names import (
    CLOSED_FORM_INVERSES,
    DISCOUNT_FACTOR,
    RESERVED_ARGUMENTS,
    transition_target,
)
from project.savings_grids import default_savings_grid
from project.shocks import Shock
from project.taste_shocks import TASTE_SHOCK_SCALE


class Model:
    """A dynamic model: grids, functions, constraints and a horizon.

    Args:
        name: Used in messages and products.
        states: State grids; V's axes follow this order.
        actions: Action grids; continuous actions are searched on their grid, except a
            ``ContinuousAction()`` (``project.actions``), which states no points: EGM/DC-EGM
            computes it (grid search then needs a grid for it instead).
        functions: ``utility``, ``next_<state>`` for every deterministic state, and auxiliaries;
            optionally ``continuation_scale``, a factor on next period's value inside the
            expectation (``project.model.continuation``; e.g. ``(G psi')^(1 - rho)`` in a model
            normalised by permanent income).
        constraints: Functions returning True where an action is feasible.
        stochastic_transitions: For each stochastic (discrete) state, a function returning the
            probability vector over its categories next period.
        n_periods: Number of periods; or give ``ages`` (one per period) instead.
        param_shapes: Shapes of array-valued parameters; every other parameter is a scalar.
        shocks: iid shocks by name (``project.shocks``); laws of motion may take them as the
            realisation between this period and the next (so may ``continuation_scale``). They
            are integrated out, not V axes.
        post_decision_grid: The grid of the post-decision state (savings ``w - c`` of the one
            continuous state ``w`` and action ``c``) on which the endogenous grid method inverts
            the Euler equation. Its start is the borrowing limit. Without it EGM/DC-EGM uses
            ``default_savings_grid(stop=<the continuous state's last point>)`` (borrowing limit
            0); ``solve(method=None)`` then picks EGM/DC-EGM only for a model with a
            ``ContinuousAction`` (a model whose actions all have grids is solved on its grids).
        taste_shocks: Add iid extreme-value (EV1) shocks to the value of each combination of the
            discrete actions, with the parameter ``taste_shock_scale`` (>= 0; 0 is the hard
            maximum). V is then the scaled log-sum over discrete choices, which are taken with
            logit probabilities (``project.taste_shocks``).
    """

    def __init__(
        self,
        *,
        name: str,
        states: Mapping[str, Grid],
        actions: Mapping[str, Grid],
        functions: Mapping[str, Callable[..., Any]],
        constraints: Mapping[str, Callable[..., Any]] | None = None,
        stochastic_transitions: Mapping[str, Callable[..., Any]] | None = None,
        n_periods: int | None = None,
        ages: Sequence[float] | None = None,
        param_shapes: Mapping[str, tuple[int, ...]] | None = None,
        shocks: Mapping[str, Shock] | None = None,
        post_decision_grid: ContinuousGrid | None = None,
        taste_shocks: bool = False,
    ) -> None:
        validate_statement(
            name=name,
            grids={"states": states, "actions": actions},
            callables={
                "functions": functions,
                "constraints": constraints or {},
                "stochastic_transitions": stochastic_transitions or {},
            },
        )
        self.name = name
        self.states = dict(states)
        self.actions = dict(actions)
        self.functions = dict(functions)
        self.constraints = dict(constraints or {})
        self.stochastic_transitions = dict(stochastic_transitions or {})
        self.ages = horizon(name=name, n_periods=n_periods, ages=ages)
        self.param_shapes = {k: tuple(v) for k, v in (param_shapes or {}).items()}
        self.shocks = dict(shocks or {})
        self.stated_post_decision_grid = post_decision_grid
        self.taste_shocks = taste_shocks
        validate_names(self)
        validate_taste_shocks(self)
        validate_shocks_and_savings_grid(self)
        validate_graph(self)
        validate_continuation_scale(self)
        validate_distributed(self)
        unknown_shapes = sorted(set(self.param_shapes) - set(self.params_template))
        if unknown_shapes:
            msg = (
                f"Model {name!r}: param_shapes names {unknown_shapes}, which are not parameters "
                f"of any function. Parameters are {sorted(self.params_template)}."
            )
            raise ModelSpecificationError(msg)

    @property
    def n_periods(self) -> int:
        """Return the number of periods."""
        return len(self.ages)

    @property
    def state_names(self) -> tuple[str, ...]:
        """Return state names in V's axis order."""
        return tuple(self.states)

    @property
    def action_names(self) -> tuple[str, ...]:
        """Return action names in the order of the policy's action product."""
        return tuple(self.actions)

    @property
    def discrete_actions(self) -> tuple[str, ...]:
        """Return the discrete actions, in the model's order (the choices taste shocks act on)."""
        return tuple(a for a, g in self.actions.items() if g.is_discrete)

    @property
    def computed_actions(self) -> tuple[str, ...]:
        """Return the actions stated as ``ContinuousAction`` (computed by EGM, no points)."""
        return tuple(a for a, g in self.actions.items() if isinstance(g, ContinuousAction))

    @cached_property
    def post_decision_grid(self) -> ContinuousGrid | None:
        """Return the savings grid EGM uses: the stated one, else the default.

        The default is ``default_savings_grid(stop=<last point of the continuous state>)``;
        None where the model has no single continuous state (EGM does not apply then).
        """
        if self.stated_post_decision_grid is not None:
            return self.stated_post_decision_grid
        continuous = [g for g in self.states.values() if not g.is_discrete]
        if len(continuous) != 1:
            return None
        return default_savings_grid(stop=_last_point(continuous[0]))

    @property
    def permanent_states(self) -> tuple[str, ...]:
        """Return the states marked ``distributed`` (validated never to transition)."""
        return tuple(s for s, g in self.states.items() if g.distributed)

    @property
    def deterministic_states(self) -> tuple[str, ...]:
        """Return states with a law of motion ``next_<state>``."""
        return tuple(s for s in self.states if s not in self.stochastic_transitions)

    @cached_property
    def dag_functions(self) -> dict[str, Callable[..., Any]]:
        """Return every function under its dags name (constraints and transitions included)."""
        combined = dict(self.functions) | dict(self.constraints)
        for state, func in self.stochastic_transitions.items():
            combined[transition_target(state)] = func
        return combined | self._extra_functions()

    def _extra_functions(self) -> dict[str, Callable[..., Any]]:
        """Return functions a subclass adds to the graph (a regime: its regime transition)."""
        return {}

    def transition_targets(self) -> list[str]:
        """Return every target that shapes next period: laws of motion, transitions."""
        return [f"next_{s}" for s in self.deterministic_states] + [
            transition_target(s) for s in self.stochastic_transitions
        ]

    @property
    def continuation_actions(self) -> tuple[str, ...]:
        """Return the discrete actions next period's value array has leading axes for.

        Empty for a plain model; a regime's continuation depends on the discrete actions its
        regime transition reads (``project.regimes``).
        """
        return ()

    @cached_property
    def params_template(self) -> dict[str, tuple[int, ...]]:
        """Return every parameter with its expected shape (``()`` for scalars), sorted by name."""
        names = {DISCOUNT_FACTOR}
        for func in self.dag_functions.values():
            names.update(a for a in arguments_of(func) if not self._is_known(a))
        for shock in self.shocks.values():
            names.update(shock.parameters)
        if self.taste_shocks:
            names.add(TASTE_SHOCK_SCALE)
        return {n: self.param_shapes.get(n, ()) for n in sorted(names)}

    def ancestors(self, target: str) -> set[str]:
        """Return every name that ``target`` depends on (functions and inputs)."""
        if target not in self._ancestors:
            self._ancestors[target] = frozenset(
                dags.get_ancestors(self.dag_functions, targets=[target])
            )
        return set(self._ancestors[target])

    @cached_property
    def _ancestors(self) -> dict[str, frozenset[str]]:
        """Return the cache of ``ancestors`` (a model is not changed after construction)."""
        return {}

    def depends_on_actions(self, target: str) -> bool:
        """Return whether ``target`` depends on any action."""
        return bool(self.ancestors(target) & set(self.actions))

    def outcome_dependent_stochastic_states(self) -> set[str]:
        """Return stochastic states whose realised outcome enters a law of motion."""
        used: set[str] = set()
        for state in self.deterministic_states:
            used |= self.ancestors(f"next_{state}")
        return {s for s in self.stochastic_transitions if f"next_{s}" in used}

    def _is_known(self, argument: str) -> bool:
        return (
            argument in self.states
            or argument in self.actions
            or argument in self.dag_functions
            or argument in RESERVED_ARGUMENTS
            or argument in self.shocks
            or any(
                argument == given and inverse in self.functions
                for inverse, given in CLOSED_FORM_INVERSES.items()
            )
            or (argument.startswith("next_") and argument[5:] in self.stochastic_transitions)
        )

    def describe(self) -> dict[str, Any]:
        """Return a JSON-serialisable description of the model."""
        return {
            "name": self.name,
            "states": {k: g.describe() for k, g in self.states.items()},
            "actions": {k: g.describe() for k, g in self.actions.items()},
            "stochastic_states": sorted(self.stochastic_transitions),
            "functions": sorted(self.functions),
            "constraints": sorted(self.constraints),
            "ages": list(self.ages),
            "params": {k: list(v) for k, v in self.params_template.items()},
            "shocks": {k: s.describe() for k, s in self.shocks.items()},
            "post_decision_grid": _described_savings_grid(self),
            "taste_shocks": self.taste_shocks,
        }


def _described_savings_grid(model: Model) -> dict[str, Any] | None:
    """Return the stated savings grid's description; with a ContinuousAction, the one EGM uses.

    A model whose actions all have grids and that states none describes None (as before the
    default existed), so its description does not change.
    """
    grid = model.post_decision_grid if model.computed_actions else model.stated_post_decision_grid
    return None if grid is None else grid.describe()


def _last_point(grid: Grid) -> float:
    """Return the last (largest) point of a continuous grid without computing its points."""
    if isinstance(grid, IrregSpacedGrid):
        return float(grid.points[-1])
    return float(grid.stop)  # type: ignore[attr-defined]
