"""A model solved by EGM or DC-EGM: per choice, consumption and V on each period's endogenous grid.

Evaluable anywhere: V (the log-sum over discrete choices with taste shocks, else the maximum), the
policy (the most likely discrete choice and consumption given it) and the choice probabilities.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from project._xla import jit
from project.egm.choices import EGMArrays, at_only_choice, at_state
from project.egm.structure import EGMStructure, egm_structure
from project.egm.utility import Utility
from project.model.internal import Fact
from project.model.solution import NO_REGIMES, refuse_regime
from project.model.spec import Model
from project.points import float_dtype
from project.solver.choice import first_argmax
from project.solver.grid_cache import grid_points_of
from project.solver.solution import split_periods
from project.solver.states import validate_states
from project.taste_shocks import TASTE_SHOCK_SCALE


@dataclass(frozen=True)
class EGMSolution:
    """Per period (leading axis), discrete context and choice: the endogenous grid and its values.

    ``arrays.wealth[t, *codes, d]`` are the endogenous wealth nodes of choice ``d`` (node 0 is
    the borrowing limit; one choice without discrete actions), ``arrays.consumption`` the
    consumption there, ``arrays.value_equivalent`` V in consumption-equivalent form (u^{-1}(V);
    node 0 unused), ``arrays.constrained_continuation`` beta·E[V'] at the limit (V where the
    limit binds) and ``arrays.feasible`` whether the choice is allowed. ``savings`` is the
    post-decision grid the solve used.
    """

    model: Model
    params: Mapping[str, Any]
    arrays: EGMArrays
    savings: jax.Array

    @property
    def method(self) -> str:
        """Return "dcegm" for a model with discrete actions, else "egm"."""
        return self.structure.method

    @property
    def kernels(self) -> tuple[str, ...]:
        """Return the method of every period (for metadata shared with grid solutions)."""
        return (self.method,) * self.model.n_periods

    @property
    def regimes(self) -> Mapping[str, Any]:
        """Return no regimes: a model without regimes (``SolutionInterface``)."""
        return NO_REGIMES

    def period_arrays(self, period: int | jax.Array) -> EGMArrays:
        """Return one period's arrays with the contexts flattened: (context, choice, ...)."""
        return period_slice(self.arrays, period=period, structure=self.structure)

    @cached_property
    def value_function(self) -> tuple[jax.Array, ...]:
        """Return V of every period on the model's state grids (axes as in a grid solution)."""
        return split_periods(self.grid_values)

    @cached_property
    def grid_values(self) -> jax.Array:
        """Return V on the state grids, all periods in one array (period, *state axes)."""
        structure, dtype = self.structure, float_dtype()
        points = grid_points_of(self.model)
        mesh = jnp.meshgrid(*(points[s] for s in self.model.state_names), indexing="ij")
        states = dict(zip(self.model.state_names, (m.ravel() for m in mesh), strict=True))
        wealth = jnp.asarray(states[structure.state], dtype=dtype)
        codes = (
            jnp.stack([states[s].astype(jnp.int32) for s in structure.discrete], axis=-1)
            if structure.discrete
            else jnp.zeros((wealth.shape[0], 0), dtype=jnp.int32)
        )
        params = {k: jnp.asarray(v, dtype=dtype) for k, v in self.params.items()}
        depth = 1 + len(structure.discrete_shape)
        n_periods, n_contexts = self.model.n_periods, structure.n_contexts
        arrays = jax.tree.map(
            lambda x: x.reshape(n_periods, n_contexts, *x.shape[depth:]), self.arrays
        )
        ages = jnp.asarray(np.asarray(self.model.ages, dtype=dtype))
        values = _grid_evaluator(self.model)(arrays, codes, wealth, params, ages, self.savings[0])
        return values.reshape(n_periods, *mesh[0].shape)

    @cached_property
    def structure(self) -> EGMStructure:
        """Return the roles of the model's names."""
        return egm_structure(self.model)

    def value(
        self, *, period: int, states: Mapping[str, Any], regime: str | None = None
    ) -> np.ndarray:
        """Return V of ``period`` at ``states`` (arrays broadcast together)."""
        refuse_regime(model_name=self.model.name, regime=regime)
        return self._evaluate(period=period, states=states)[1]

    def policy(
        self, *, period: int, states: Mapping[str, Any], regime: str | None = None
    ) -> dict[str, np.ndarray]:
        """Return the policy of ``period`` at ``states``, interpolated.

        With discrete actions: the most likely choice (the best at taste-shock scale 0) and
        consumption given that choice.
        """
        refuse_regime(model_name=self.model.name, regime=regime)
        flat, shape = validate_states(
            model=self.model, states=states, period=period, method=self.method
        )
        policy = self.policy_flat(period=period, states=flat)
        return {a: v.reshape(shape) for a, v in policy.items()}

    def policy_flat(self, *, period: int, states: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """Return the policy at flat ``states`` as ``validate_states`` gives them, unchecked."""
        at = self.evaluate_flat(period=period, states=states)
        structure = self.structure
        chosen = np.asarray(at.choice)
        policy = {structure.action: np.asarray(at.consumption)}
        for i, action in enumerate(structure.discrete_actions):
            policy[action] = structure.choices[chosen, i]
        return policy

    def choice_probabilities(
        self, *, period: int, states: Mapping[str, Any], regime: str | None = None
    ) -> np.ndarray:
        """Return the probability of each discrete choice at ``states``: shape (*states, choice).

        Choices are the combinations of the discrete actions' codes in C order (the rows of
        ``structure.choices``); at taste-shock scale 0 the best choice has probability one.
        """
        refuse_regime(model_name=self.model.name, regime=regime)
        flat, shape = validate_states(
            model=self.model, states=states, period=period, method=self.method
        )
        probabilities = np.asarray(self.evaluate_flat(period=period, states=flat).probability)
        return probabilities.reshape(*shape, self.structure.n_choices)

    def _evaluate(self, *, period: int, states: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        flat, shape = validate_states(
            model=self.model, states=states, period=period, method=self.method
        )
        at = self.evaluate_flat(period=period, states=flat)
        return np.asarray(at.consumption).reshape(shape), np.asarray(at.value).reshape(shape)

    def evaluate_flat(self, *, period: int | jax.Array, states: Mapping[str, Any]) -> Evaluated:
        """Return consumption, V, the choice and probabilities at validated flat ``states``."""
        structure, dtype = self.structure, float_dtype()
        arrays = self.period_arrays(period)
        codes = (
            jnp.stack(
                [jnp.asarray(states[s], dtype=jnp.int32) for s in structure.discrete], axis=-1
            )
            if structure.discrete
            else None
        )
        wealth = jnp.asarray(states[structure.state], dtype=dtype)
        if codes is None:
            codes = jnp.zeros((wealth.shape[0], 0), dtype=jnp.int32)
        params = {k: jnp.asarray(v, dtype=dtype) for k, v in self.params.items()}
        age = jnp.asarray(np.asarray(self.model.ages, dtype=dtype))[period]
        return _evaluator(self.model)(
            arrays,
            codes,
            wealth,
            params,
            jnp.asarray(period, dtype=jnp.int32),
            age,
            self.savings[0],
        )


def period_slice(
    arrays: EGMArrays, *, period: int | jax.Array, structure: EGMStructure
) -> EGMArrays:
    """Return ``period``'s arrays, contexts flattened (traceable): (context, choice, ...)."""
    depth = 1 + len(structure.discrete_shape)
    return jax.tree.map(lambda x: x[period].reshape(structure.n_contexts, *x.shape[depth:]), arrays)


def _evaluator(model: Model) -> Callable[..., Any]:
    return EVALUATOR.of(model)


class Evaluated(NamedTuple):
    """At each state: the likeliest choice, consumption given it, V; per choice P and c."""

    consumption: jax.Array
    value: jax.Array
    choice: jax.Array
    probability: jax.Array
    choice_consumption: jax.Array


def point_evaluator(model: Model, *, unroll: bool = False) -> Callable[..., Evaluated]:
    """Return ``one(arrays, codes, wealth, params, period, age, limit) -> Evaluated``.

    ``arrays`` hold one period with contexts flattened (context, choice, node); ``codes`` are
    the discrete states in the structure's order. ``unroll`` writes out the search for the
    wealth's segment (``at_state``): faster over many subjects, slower to compile.
    """
    structure = egm_structure(model)
    utility = Utility(model, structure)

    def one(arrays, codes, wealth, params, period, age, limit):  # noqa: ANN001, ANN202
        env = _state_env(structure, params=params, codes=codes, period=period, age=age)
        scale = params[TASTE_SHOCK_SCALE] if model.taste_shocks else jnp.zeros((), wealth.dtype)
        state = at_state(
            arrays,
            structure.context_index(codes),
            wealth,
            structure=structure,
            utility=utility,
            env=env,
            limit=limit,
            scale=scale,
            unroll=unroll,
        )
        choice = first_argmax(state.probability, axis=0)
        return Evaluated(
            consumption=state.consumption[choice],
            value=state.total,
            choice=choice,
            probability=state.probability,
            choice_consumption=state.consumption,
        )

    return one


def only_choice_evaluator(model: Model, *, unroll: bool = False) -> Callable[..., Evaluated]:
    """Return ``point_evaluator``'s ``one`` for a period whose every context allows one choice.

    Its ``Evaluated`` equals ``point_evaluator``'s there (the same choice, consumption, V and
    probabilities, to the bit: with taste shocks the log-sum of one finite value and -inf is
    that value), from that choice alone; the other choices' consumption reads 0.
    """
    structure = egm_structure(model)
    utility = Utility(model, structure)

    def one(arrays, codes, wealth, params, period, age, limit):  # noqa: ANN001, ANN202
        env = _state_env(structure, params=params, codes=codes, period=period, age=age)
        choice, consumption, value = at_only_choice(
            arrays,
            structure.context_index(codes),
            wealth,
            structure=structure,
            utility=utility,
            env=env,
            limit=limit,
            unroll=unroll,
        )
        chosen = jnp.arange(structure.n_choices) == choice
        return Evaluated(
            consumption=consumption,
            value=value,
            choice=choice,
            probability=chosen.astype(wealth.dtype),
            choice_consumption=jnp.where(chosen, consumption, 0.0),
        )

    return one


def _state_env(
    structure: EGMStructure, *, params: Mapping[str, Any], codes: Any, period: Any, age: Any
) -> dict[str, Any]:
    """Return what the model's functions read at a state: params, discrete states, period, age."""
    env = dict(params) | {s: codes[i] for i, s in enumerate(structure.discrete)}
    return env | {"period": period, "age": age}


def _grid_evaluator(model: Model) -> Callable[..., Any]:
    """Return the jitted V at flat states for every period at once (``grid_values``)."""
    return GRID_EVALUATOR.of(model)


def _build_grid_evaluator(model: Model) -> Callable[..., Any]:
    one = point_evaluator(model)

    def period_values(arrays, codes, wealth, params, period, age, limit):  # noqa: ANN001, ANN202
        per_state = jax.vmap(one, in_axes=(None, 0, 0, None, None, None, None))
        return per_state(arrays, codes, wealth, params, period, age, limit).value

    def values(arrays, codes, wealth, params, ages, limit):  # noqa: ANN001, ANN202
        periods = jnp.arange(ages.shape[0], dtype=jnp.int32)
        per_period = jax.vmap(period_values, in_axes=(0, None, None, None, 0, 0, None))
        return per_period(arrays, codes, wealth, params, periods, ages, limit)

    return jit(values)


def _build(model: Model) -> Callable[..., Any]:
    one = point_evaluator(model)

    def evaluate(arrays, codes, wealth, params, period, age, limit):  # noqa: ANN001, ANN202
        return jax.vmap(one, in_axes=(None, 0, 0, None, None, None, None))(
            arrays, codes, wealth, params, period, age, limit
        )

    return jit(evaluate)


EVALUATOR: Fact[Callable[..., Any]] = Fact("EGM evaluator at flat states", build=_build)
GRID_EVALUATOR: Fact[Callable[..., Any]] = Fact(
    "EGM evaluator of every period", build=_build_grid_evaluator
)
