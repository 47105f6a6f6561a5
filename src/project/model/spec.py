"""A model states one phase of a life cycle as grids and plain functions composed with ``dags``.

Functions are linked by argument name. An argument can be a state, an action, another function,
``age``, ``period``, the realised next outcome ``next_<state>`` of a stochastic state (in laws of
motion only), or else a parameter. ``beta`` (the discount factor) is always a parameter.

A ``project.regimes.RegimeModel`` holds several models as regimes (working life, retirement,
death), each with its own states, actions and functions, linked by regime transitions; it adds
each regime's transition to that regime's functions through ``_extra_functions``.
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable, Mapping, Sequence
from functools import cached_property
from typing import Any

import dags
import dags.exceptions

from project.actions import ContinuousAction
from project.errors import ModelSpecificationError
from project.grids import ContinuousGrid, DiscreteGrid, Grid, IrregSpacedGrid
from project.model.continuation import validate_continuation_scale
from project.savings_grids import default_savings_grid
from project.shocks import Shock
from project.taste_shocks import TASTE_SHOCK_SCALE

RESERVED_ARGUMENTS = ("age", "period")
DISCOUNT_FACTOR = "beta"
INVERSE_MARGINAL_UTILITY = "inverse_marginal_utility"
INVERSE_UTILITY = "inverse_utility"
CLOSED_FORM_INVERSES = {
    INVERSE_MARGINAL_UTILITY: "marginal_utility",
    INVERSE_UTILITY: "utility_level",
}
"""The closed-form inverses a model may give EGM, each with the name of its argument."""


def transition_target(state: str) -> str:
    """Return the dags name of a stochastic state's probability function."""
    return f"transition_probs_of_{state}"


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
        _validate_statement(
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
        self.ages = _horizon(name=name, n_periods=n_periods, ages=ages)
        self.param_shapes = {k: tuple(v) for k, v in (param_shapes or {}).items()}
        self.shocks = dict(shocks or {})
        self.stated_post_decision_grid = post_decision_grid
        self.taste_shocks = taste_shocks
        _validate_names(self)
        _validate_taste_shocks(self)
        _validate_shocks_and_savings_grid(self)
        _validate_graph(self)
        validate_continuation_scale(self)
        _validate_distributed(self)
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
            names.update(a for a in _arguments(func) if not self._is_known(a))
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


def _arguments(func: Callable[..., Any]) -> list[str]:
    return list(inspect.signature(func).parameters)


def _horizon(
    *, name: str, n_periods: int | None, ages: Sequence[float] | None
) -> tuple[float, ...]:
    if (n_periods is None) == (ages is None):
        msg = f"Model {name!r}: give exactly one of n_periods or ages to set the horizon."
        raise ModelSpecificationError(msg)
    if ages is None:
        if isinstance(n_periods, bool) or not isinstance(n_periods, int) or n_periods < 1:
            msg = f"Model {name!r}: n_periods must be a positive int, got {n_periods!r}."
            raise ModelSpecificationError(msg)
        return tuple(float(t) for t in range(n_periods))
    ages = tuple(float(a) for a in ages)
    if not ages or any(b <= a for a, b in itertools.pairwise(ages)):
        msg = f"Model {name!r}: ages must be non-empty and strictly increasing, got {ages}."
        raise ModelSpecificationError(msg)
    return ages


def _validate_statement(*, name: Any, grids: dict[str, Any], callables: dict[str, Any]) -> None:
    """Raise ``ModelSpecificationError`` for a statement of the wrong types, naming the entry."""
    if not isinstance(name, str) or not name:
        msg = f"A model's name must be a non-empty str, got {name!r}."
        raise ModelSpecificationError(msg)
    for part, value in {**grids, **callables}.items():
        if not isinstance(value, Mapping):
            msg = (
                f"Model {name!r}: {part} must be a mapping of names to "
                f"{'grids' if part in grids else 'functions'}, got {type(value).__name__}."
            )
            raise ModelSpecificationError(msg)
        for key, entry in value.items():
            if not isinstance(key, str) or not key.isidentifier():
                msg = f"Model {name!r}: {part} has the key {key!r}; use Python identifiers."
                raise ModelSpecificationError(msg)
            if part in grids and not isinstance(entry, Grid):
                msg = (
                    f"Model {name!r}: {part}[{key!r}] is {type(entry).__name__}, not a grid. "
                    "Use DiscreteGrid, LinSpacedGrid, LogSpacedGrid or IrregSpacedGrid."
                )
                raise ModelSpecificationError(msg)
            if part in callables and not callable(entry):
                msg = (
                    f"Model {name!r}: {part}[{key!r}] is {type(entry).__name__} {entry!r}, not "
                    "a function. Give a function (a constant can be `lambda: value`)."
                )
                raise ModelSpecificationError(msg)


def _validate_names(model: Model) -> None:
    name = model.name
    computed_states = sorted(s for s, g in model.states.items() if isinstance(g, ContinuousAction))
    if computed_states:
        msg = (
            f"Model {name!r}: states {computed_states} are ContinuousAction, which only an "
            "action can be. Give each state a grid (e.g. LinSpacedGrid or LogSpacedGrid)."
        )
        raise ModelSpecificationError(msg)
    clash = sorted(set(model.states) & set(model.actions))
    if clash:
        msg = f"Model {name!r}: {clash} are both states and actions. Rename one of them."
        raise ModelSpecificationError(msg)
    reserved = sorted(
        (set(model.states) | set(model.actions) | set(model.dag_functions))
        & {*RESERVED_ARGUMENTS, DISCOUNT_FACTOR}
    )
    if reserved:
        msg = f"Model {name!r}: {reserved} are reserved names (age, period, beta). Rename them."
        raise ModelSpecificationError(msg)
    if "utility" not in model.functions:
        msg = f"Model {name!r}: functions must include 'utility'. Add a utility function."
        raise ModelSpecificationError(msg)
    shadowing = sorted(
        (set(model.functions) | set(model.constraints)) & (set(model.states) | set(model.actions))
    )
    if shadowing:
        msg = (
            f"Model {name!r}: functions {shadowing} are named like states or actions and would "
            "shadow their grid values. Rename the functions."
        )
        raise ModelSpecificationError(msg)
    overlap = sorted(set(model.functions) & set(model.constraints))
    if overlap:
        msg = f"Model {name!r}: {overlap} are both functions and constraints. Rename them."
        raise ModelSpecificationError(msg)
    for state, grid in model.stochastic_transitions.items():
        if state not in model.states:
            msg = (
                f"Model {name!r}: stochastic_transitions names {state!r}, which is not a state. "
                f"States are {list(model.states)}."
            )
            raise ModelSpecificationError(msg)
        if not isinstance(model.states[state], DiscreteGrid):
            msg = (
                f"Model {name!r}: stochastic state {state!r} must have a DiscreteGrid; "
                "discretise the process (e.g. Rouwenhorst) first."
            )
            raise ModelSpecificationError(msg)
        if f"next_{state}" in model.functions:
            msg = (
                f"Model {name!r}: state {state!r} has both a stochastic transition and a law of "
                f"motion 'next_{state}'. Keep one of them."
            )
            raise ModelSpecificationError(msg)
        del grid
    missing = [s for s in model.deterministic_states if f"next_{s}" not in model.functions]
    if missing:
        msg = (
            f"Model {name!r}: states {missing} have no law of motion. Add a function "
            f"'next_<state>' for each (identity for a permanent type) or declare them stochastic."
        )
        raise ModelSpecificationError(msg)
    for key in model.functions:
        if key.startswith("next_") and key[5:] not in model.states:
            msg = (
                f"Model {name!r}: function {key!r} is a law of motion for an unknown state "
                f"{key[5:]!r}. States are {list(model.states)}."
            )
            raise ModelSpecificationError(msg)


def _validate_taste_shocks(model: Model) -> None:
    """Require discrete choices with at least two options where taste shocks are asked for."""
    name = model.name
    if not isinstance(model.taste_shocks, bool):
        msg = f"Model {name!r}: taste_shocks must be True or False, got {model.taste_shocks!r}."
        raise ModelSpecificationError(msg)
    taken = set(model.states) | set(model.actions) | set(model.dag_functions)
    if TASTE_SHOCK_SCALE in taken:
        msg = (
            f"Model {name!r}: {TASTE_SHOCK_SCALE!r} is the taste shocks' parameter; rename the "
            "state, action or function of that name."
        )
        raise ModelSpecificationError(msg)
    if not model.taste_shocks:
        return
    n_choices = 1
    for action in model.discrete_actions:
        n_choices *= model.actions[action].n_points
    if n_choices < 2:
        have = model.discrete_actions or "no discrete action"
        msg = (
            f"Model {name!r}: taste_shocks=True needs a discrete choice with at least two "
            f"options, but the model has {have!r} ({n_choices} option). Add a discrete action "
            "or drop taste_shocks."
        )
        raise ModelSpecificationError(msg)


def _validate_graph(model: Model) -> None:
    name = model.name
    for key, func in model.dag_functions.items():
        for argument in _arguments(func):
            if argument.startswith("next_") and not model._is_known(argument):
                msg = (
                    f"Model {name!r}: function {key!r} takes unknown argument {argument!r}. "
                    "A 'next_<state>' argument must be a law of motion or the outcome of a "
                    "stochastic state."
                )
                raise ModelSpecificationError(msg)
    try:
        dags.create_dag(model.dag_functions, targets=None)
    except dags.exceptions.CyclicDependencyError as error:
        msg = f"Model {name!r}: the functions depend on each other in a cycle.\n{error}"
        raise ModelSpecificationError(msg) from error
    outcomes = {f"next_{s}" for s in model.stochastic_transitions}
    period_targets = [
        "utility",
        *model.constraints,
        *map(transition_target, model.stochastic_transitions),
    ]
    for target in period_targets:
        used = sorted(model.ancestors(target) & outcomes)
        if used:
            msg = (
                f"Model {name!r}: {target!r} depends on next-period outcomes {used}. Only laws "
                "of motion may use them; utility, constraints and transitions see the current "
                "period."
            )
            raise ModelSpecificationError(msg)


def _validate_shocks_and_savings_grid(model: Model) -> None:
    """Check the savings grid, shock names, and that only laws of motion read shocks."""
    name = model.name
    grid = model.stated_post_decision_grid
    if grid is not None and not isinstance(grid, ContinuousGrid):
        msg = (
            f"Model {name!r}: post_decision_grid must be a continuous grid (e.g. a "
            f"LogSpacedGrid of savings), got {grid!r}."
        )
        raise ModelSpecificationError(msg)
    for shock_name, shock in model.shocks.items():
        if not isinstance(shock, Shock):
            msg = (
                f"Model {name!r}: shock {shock_name!r} is {shock!r}, not a Shock. Use "
                "DiscreteShock, NormalShock or LogNormalShock from project.shocks."
            )
            raise ModelSpecificationError(msg)
        taken = (
            set(model.states)
            | set(model.actions)
            | set(model.dag_functions)
            | {*RESERVED_ARGUMENTS, DISCOUNT_FACTOR}
        )
        if shock_name in taken or shock_name.startswith("next_"):
            msg = (
                f"Model {name!r}: shock {shock_name!r} is named like a state, action, function "
                "or reserved name. Give it its own name."
            )
            raise ModelSpecificationError(msg)
    if not model.shocks:
        return
    period_targets = [
        "utility",
        *model.constraints,
        *map(transition_target, model.stochastic_transitions),
        *(f"next_{s}" for s in model.stochastic_transitions),
    ]
    for target in period_targets:
        if target not in model.dag_functions:
            continue
        used = sorted(model.ancestors(target) & set(model.shocks))
        if used:
            msg = (
                f"Model {name!r}: {target!r} depends on the iid shocks {used}. A shock is the "
                "realisation between this period and the next: only laws of motion of "
                "deterministic states and 'continuation_scale' may use it. Make a shock that "
                "enters utility a discrete stochastic state instead."
            )
            raise ModelSpecificationError(msg)


def _validate_distributed(model: Model) -> None:
    """Allow ``distributed=True`` only on discrete states whose law of motion is the identity."""
    name = model.name
    for action, grid in model.actions.items():
        if grid.distributed:
            msg = (
                f"Model {name!r}: action {action!r} has distributed=True. Only states that never "
                "transition can be sharded; set distributed=False on the action grid."
            )
            raise ModelSpecificationError(msg)
    for state in model.permanent_states:
        if state in model.stochastic_transitions:
            msg = (
                f"Model {name!r}: state {state!r} has distributed=True but transitions "
                "stochastically. Only a state that never transitions (a permanent type) can be "
                "sharded: each device must find next period's V for its block on itself."
            )
            raise ModelSpecificationError(msg)
        inputs = {a for a in model.ancestors(f"next_{state}") if a not in model.dag_functions}
        if inputs != {state}:
            msg = (
                f"Model {name!r}: state {state!r} has distributed=True but its law of motion "
                f"'next_{state}' depends on {sorted(inputs - {state})}. A sharded state must "
                f"never transition: 'next_{state}' must return {state!r} unchanged."
            )
            raise ModelSpecificationError(msg)
