"""Checks of a model's statement: names, horizon, taste shocks, the function graph, shocks.

``Model.__init__`` runs them in order; each raises ``ModelSpecificationError`` saying what is
wrong with the statement and how to restate it.
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import dags
import dags.exceptions

from project.actions import ContinuousAction
from project.errors import ModelSpecificationError
from project.grids import ContinuousGrid, DiscreteGrid, Grid
from project.model.names import DISCOUNT_FACTOR, RESERVED_ARGUMENTS, transition_target
from project.shocks import Shock
from project.taste_shocks import TASTE_SHOCK_SCALE

if TYPE_CHECKING:
    from project.model.spec import Model


def arguments_of(func: Callable[..., Any]) -> list[str]:
    """Return the names of ``func``'s arguments, in order."""
    return list(inspect.signature(func).parameters)


def horizon(*, name: str, n_periods: int | None, ages: Sequence[float] | None) -> tuple[float, ...]:
    """Return the ages of the periods: 0..n_periods-1, or the given strictly increasing ages."""
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


def validate_statement(*, name: Any, grids: dict[str, Any], callables: dict[str, Any]) -> None:
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


def validate_names(model: Model) -> None:
    """Raise for names that clash, shadow a reserved name or are no identifiers."""
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
    validate_laws_of_motion(model)


def validate_laws_of_motion(model: Model) -> None:
    """Raise unless every state has one law: a stochastic transition or ``next_<state>``."""
    name = model.name
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


def validate_taste_shocks(model: Model) -> None:
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


def validate_graph(model: Model) -> None:
    """Raise for a function graph dags cannot compose (a cycle, a wrong argument)."""
    name = model.name
    for key, func in model.dag_functions.items():
        for argument in arguments_of(func):
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


def validate_shocks_and_savings_grid(model: Model) -> None:
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


def validate_distributed(model: Model) -> None:
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
