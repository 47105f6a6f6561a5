"""A model of several regimes: life-cycle phases with their own states, actions and functions.

Each regime is a ``Model`` (working life: income, a retirement choice; retirement: no income
process, no choice) or a ``TerminalRegime`` (death: no states or choices, a given value such as
zero or a bequest). Every regime that is not terminal has a *regime transition*: a function of
the regime's states, actions, functions, ``age``, ``period`` and params, like any model function,
returning next period's regime as

- a dict ``{regime name: probability}`` (regimes left out have probability 0), the clearest form:
  ``{"working": survival * (1 - retirement), "retired": survival * retirement, "dead": 1 -
  survival}``;
- a probability vector over all regimes, in the order of ``regimes``;
- or the int code of the next regime (its position in ``regimes``).

Moving to a regime needs next period's value of each of its states: the source regime computes
them with its own laws of motion, so the target's states must be states of the source (with the
same grid; a terminal regime's value reads the states it names). Regime transitions may depend on
discrete states and discrete actions, age, period and params, not on continuous states or actions.
All regimes share the horizon (``ages``), the discount factor ``beta`` and every parameter of the
same name. The solver sees each regime as a ``RegimeView``: the regime's model with its regime
transition added to its functions.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from functools import cached_property
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from project.errors import ModelSpecificationError
from project.grids import DiscreteGrid, categories
from project.model.internal import Fact
from project.model.names import RESERVED_ARGUMENTS
from project.model.spec import Model
from project.regimes.checks import check_horizons, check_shared_states, check_transitions
from project.regimes.names import REGIME_TRANSITION


class TerminalRegime:
    """An absorbing regime without choices (death) whose value is given, not solved.

    Args:
        value: ``None`` (V = 0), or a function of states of the regimes that lead here and of
            params (a bequest motive, say ``bequest_weight * log(wealth)``). It is evaluated at
            next period's states as the source regime's laws of motion give them.
        param_shapes: Shapes of array-valued parameters of ``value``.
    """

    def __init__(
        self,
        *,
        value: Callable[..., Any] | None = None,
        param_shapes: Mapping[str, tuple[int, ...]] | None = None,
    ) -> None:
        if value is not None and not callable(value):
            msg = f"TerminalRegime: value must be a function or None (V = 0), got {value!r}."
            raise ModelSpecificationError(msg)
        self.value = value
        self.param_shapes = {k: tuple(v) for k, v in (param_shapes or {}).items()}

    @property
    def arguments(self) -> tuple[str, ...]:
        """Return the value function's argument names (states it reads, then params)."""
        return () if self.value is None else tuple(inspect.signature(self.value).parameters)


class RegimeView(Model):
    """One regime as the solver sees it: the regime's model plus its regime transition."""

    def __init__(
        self, *, regime: Model, name: str, transition: Callable[..., Any], regimes: tuple[str, ...]
    ) -> None:
        self._transition = transition
        self.regime = name
        self.regime_names = regimes
        super().__init__(
            name=regime.name,
            states=regime.states,
            actions=regime.actions,
            functions=regime.functions,
            constraints=regime.constraints,
            stochastic_transitions=regime.stochastic_transitions,
            ages=regime.ages,
            param_shapes=regime.param_shapes,
            shocks=regime.shocks,
            post_decision_grid=regime.stated_post_decision_grid,
            taste_shocks=regime.taste_shocks,
        )

    def _extra_functions(self) -> dict[str, Callable[..., Any]]:
        return {REGIME_TRANSITION: self._transition}

    def transition_targets(self) -> list[str]:
        """Return the laws of motion, the state transitions and the regime transition."""
        return [*super().transition_targets(), REGIME_TRANSITION]

    @property
    def continuation_actions(self) -> tuple[str, ...]:
        """Return the discrete actions the regime transition reads (next period's V depends on)."""
        read = self.ancestors(REGIME_TRANSITION)
        return tuple(a for a in self.discrete_actions if a in read)

    @cached_property
    def transition_kind(self) -> str:
        """Return what the regime transition returns: "dict", "vector" or "code"."""
        return _transition_kind(self)

    def regime_probabilities(self, out: Any) -> jnp.ndarray:
        """Return the probability vector over all regimes from the transition's output ``out``."""
        kind = self.transition_kind
        if kind == "dict":
            zero = jnp.zeros(())
            return jnp.stack([jnp.asarray(out.get(r, zero)) for r in self.regime_names])
        if kind == "code":
            return jax.nn.one_hot(out, len(self.regime_names))
        return jnp.asarray(out)

    @cached_property
    def named_targets(self) -> tuple[str, ...]:
        """Return the regimes a dict-valued transition names (none for the other kinds).

        Vectors and codes name no regime: the solve checks that they give no probability to a
        regime this one cannot move to (``continuation.py``).
        """
        if self.transition_kind != "dict":
            return ()
        return tuple(r for r in self.regime_names if r in _output_shape(self))


class RegimeModel:
    """Several regimes over one horizon, linked by regime transitions.

    Args:
        name: Used in messages and products.
        regimes: Regime name -> ``Model`` or ``TerminalRegime``, in code order (the first is code
            0). At least one regime is a ``Model``; every model shares the same ``ages``.
        transitions: For every regime that is a ``Model``, its regime transition (see the module
            docstring).
    """

    def __init__(
        self,
        *,
        name: str,
        regimes: Mapping[str, Model | TerminalRegime],
        transitions: Mapping[str, Callable[..., Any]],
    ) -> None:
        self.name = name
        _check_regimes(name, regimes, transitions)
        self.regime_names = tuple(regimes)
        self.terminal = {r: g for r, g in regimes.items() if isinstance(g, TerminalRegime)}
        self.regimes = {
            r: RegimeView(regime=g, name=r, transition=transitions[r], regimes=self.regime_names)
            for r, g in regimes.items()
            if isinstance(g, Model)
        }
        self.ages = next(iter(self.regimes.values())).ages
        check_horizons(self)
        check_shared_states(self)
        check_transitions(self)
        self.params_template = _params_template(self)

    @property
    def n_periods(self) -> int:
        """Return the number of periods."""
        return len(self.ages)

    @property
    def taste_shocks(self) -> bool:
        """Return whether any regime has taste shocks (the parameter is shared)."""
        return any(v.taste_shocks for v in self.regimes.values())

    @cached_property
    def regime_grid(self) -> DiscreteGrid:
        """Return the regimes as categories (codes in ``regime_names`` order)."""
        return DiscreteGrid(categories("Regime", list(self.regime_names)))

    def code(self, regime: str) -> int:
        """Return the code of ``regime`` (its position in ``regime_names``)."""
        if regime not in self.regime_names:
            msg = (
                f"Model {self.name!r} has no regime {regime!r}; its regimes are "
                f"{list(self.regime_names)}."
            )
            raise ModelSpecificationError(msg)
        return self.regime_names.index(regime)

    @cached_property
    def state_names(self) -> tuple[str, ...]:
        """Return every state of any regime, in order of first appearance."""
        names: dict[str, None] = {}
        for view in self.regimes.values():
            names |= dict.fromkeys(view.state_names)
        return tuple(names)

    @cached_property
    def states(self) -> dict[str, Any]:
        """Return every state's grid (shared states have one grid)."""
        grids: dict[str, Any] = {}
        for view in self.regimes.values():
            grids |= view.states
        return grids

    @cached_property
    def actions(self) -> dict[str, Any]:
        """Return every action's grid (an action of several regimes has one grid)."""
        grids: dict[str, Any] = {}
        for view in self.regimes.values():
            grids |= view.actions
        return grids

    @property
    def permanent_states(self) -> tuple[str, ...]:
        """Return no state: sharding is not supported with regimes yet (``check_horizons``)."""
        return ()

    def describe(self) -> dict[str, Any]:
        """Return a JSON-serialisable description: every state and action, and each regime."""
        return {
            "name": self.name,
            "states": {k: g.describe() for k, g in self.states.items()},
            "actions": {k: g.describe() for k, g in self.actions.items()},
            "regime_names": list(self.regime_names),
            "regimes": {
                r: (
                    self.regimes[r].describe() | {"transition": self.regimes[r].transition_kind}
                    if r in self.regimes
                    else {"terminal": True, "value": list(self.terminal[r].arguments)}
                )
                for r in self.regime_names
            },
            "ages": list(self.ages),
            "params": {k: list(v) for k, v in self.params_template.items()},
        }


def _check_regimes(
    name: str,
    regimes: Mapping[str, Model | TerminalRegime],
    transitions: Mapping[str, Callable[..., Any]],
) -> None:
    if not isinstance(regimes, Mapping) or not regimes:
        msg = f"Model {name!r}: regimes must be a non-empty dict of name -> Model/TerminalRegime."
        raise ModelSpecificationError(msg)
    for regime, spec in regimes.items():
        if not isinstance(regime, str) or not regime.isidentifier():
            msg = (
                f"Model {name!r}: regime name {regime!r} is not an identifier. Use names like "
                "'working' or 'retired'."
            )
            raise ModelSpecificationError(msg)
        if not isinstance(spec, Model | TerminalRegime):
            msg = (
                f"Model {name!r}: regime {regime!r} is {type(spec).__name__}, not a Model or a "
                "TerminalRegime."
            )
            raise ModelSpecificationError(msg)
    solved = [r for r, g in regimes.items() if isinstance(g, Model)]
    if not solved:
        msg = f"Model {name!r}: every regime is terminal; at least one must be a Model."
        raise ModelSpecificationError(msg)
    unknown = sorted(set(transitions) - set(regimes))
    if unknown:
        msg = (
            f"Model {name!r}: transitions are given for unknown regimes {unknown}; the regimes "
            f"are {list(regimes)}."
        )
        raise ModelSpecificationError(msg)
    terminal = sorted(r for r in transitions if r not in solved)
    if terminal:
        msg = (
            f"Model {name!r}: regimes {terminal} are terminal (absorbing) and take no transition. "
            "Remove their entries from transitions."
        )
        raise ModelSpecificationError(msg)
    missing = [r for r in solved if r not in transitions]
    if missing:
        msg = (
            f"Model {name!r}: regimes {missing} have no regime transition. Add transitions[<name>]"
            " returning the next regime's code or probabilities, e.g. {'alive': p, 'dead': 1 - p}."
        )
        raise ModelSpecificationError(msg)
    for regime, func in transitions.items():
        if not callable(func):
            msg = (
                f"Model {name!r}: the transition of regime {regime!r} is not a function: {func!r}."
            )
            raise ModelSpecificationError(msg)


def terminal_params(model: RegimeModel) -> dict[str, tuple[int, ...]]:
    """Return the params of the terminal regimes' values (their non-state arguments)."""
    params: dict[str, tuple[int, ...]] = {}
    for spec in model.terminal.values():
        for argument in spec.arguments:
            if argument not in model.states:
                params[argument] = spec.param_shapes.get(argument, ())
    return params


def _params_template(model: RegimeModel) -> dict[str, tuple[int, ...]]:
    template: dict[str, tuple[int, ...]] = {}
    origin: dict[str, str] = {}
    sources = [(r, v.params_template) for r, v in model.regimes.items()]
    sources.append(("terminal regimes", terminal_params(model)))
    for regime, params in sources:
        for key, shape in params.items():
            if key in RESERVED_ARGUMENTS:
                continue
            if key in template and template[key] != shape:
                msg = (
                    f"Model {model.name!r}: parameter {key!r} has shape {shape} in {regime!r} but "
                    f"{template[key]} in {origin[key]!r}. A parameter shared by regimes needs one "
                    "shape (param_shapes)."
                )
                raise ModelSpecificationError(msg)
            template[key], origin[key] = shape, regime
    return dict(sorted(template.items()))


def _output_shape(view: RegimeView) -> Any:
    """Return the abstract output of the regime transition (``jax.eval_shape``)."""
    return TRANSITION_OUTPUT.of(view)


def _abstract_transition(view: RegimeView) -> Any:
    from project.solver.outputs import abstract_output  # noqa: PLC0415  (imports the solver)

    return abstract_output(view, REGIME_TRANSITION, where=f"Regime {view.regime!r}")


def _transition_kind(view: RegimeView) -> str:
    out = _output_shape(view)
    n = len(view.regime_names)
    if isinstance(out, Mapping):
        unknown = sorted(set(out) - set(view.regime_names))
        if unknown:
            msg = (
                f"Regime {view.regime!r}: its transition names unknown regimes {unknown}; the "
                f"regimes are {list(view.regime_names)}."
            )
            raise ModelSpecificationError(msg)
        bad = sorted(k for k, v in out.items() if getattr(v, "shape", None) != ())
        if bad:
            msg = (
                f"Regime {view.regime!r}: the probabilities of {bad} in its transition are not "
                "scalars."
            )
            raise ModelSpecificationError(msg)
        return "dict"
    shape, dtype = getattr(out, "shape", None), getattr(out, "dtype", None)
    if shape == () and dtype is not None and np.issubdtype(dtype, np.integer):
        return "code"
    if shape == (n,) and dtype is not None and np.issubdtype(dtype, np.floating):
        return "vector"
    msg = (
        f"Regime {view.regime!r}: its transition returns {out!r}; it must return a dict "
        f"{{regime: probability}}, a probability vector of length {n} over "
        f"{list(view.regime_names)}, or the int code of the next regime."
    )
    raise ModelSpecificationError(msg)


TRANSITION_OUTPUT: Fact[Any] = Fact(
    "regime transition's abstract output", build=_abstract_transition
)
