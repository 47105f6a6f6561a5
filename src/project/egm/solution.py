"""A model solved by EGM: consumption and V on each period's endogenous grid, evaluable anywhere."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from project.egm.program import EGMArrays, consumption_and_value
from project.egm.structure import EGMStructure, egm_structure
from project.egm.utility import Utility
from project.model.spec import Model
from project.points import float_dtype
from project.solver.grid_cache import grid_points_of
from project.solver.states import validate_states

_EVALUATORS: weakref.WeakKeyDictionary[Model, Callable[..., Any]] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class EGMSolution:
    """Per period (leading axis) and discrete context: the endogenous grid and what lives on it.

    ``arrays.wealth[t, *codes]`` are the endogenous wealth nodes (node 0 is the borrowing limit),
    ``arrays.consumption`` the consumption there, ``arrays.value_equivalent`` V in
    consumption-equivalent form (u^{-1}(V); node 0 unused) and
    ``arrays.constrained_continuation`` beta·E[V'] at the limit (V where the limit binds).
    ``savings`` is the post-decision grid the solve used.
    """

    model: Model
    params: Mapping[str, Any]
    arrays: EGMArrays
    savings: jax.Array

    method = "egm"

    @property
    def kernels(self) -> tuple[str, ...]:
        """Return the method of every period (for metadata shared with grid solutions)."""
        return ("egm",) * self.model.n_periods

    def period_arrays(self, period: int) -> EGMArrays:
        """Return one period's arrays with the contexts flattened: (context, node)."""
        n_contexts = self.structure.n_contexts
        depth = 1 + len(self.structure.discrete_shape)
        return jax.tree.map(lambda x: x[period].reshape(n_contexts, *x.shape[depth:]), self.arrays)

    @cached_property
    def value_function(self) -> tuple[jax.Array, ...]:
        """Return V of every period on the model's state grids (axes as in a grid solution)."""
        points = grid_points_of(self.model)
        mesh = jnp.meshgrid(*(points[s] for s in self.model.state_names), indexing="ij")
        states = dict(zip(self.model.state_names, (m.ravel() for m in mesh), strict=True))
        shape = mesh[0].shape
        return tuple(
            self.evaluate_flat(period=t, states=states)[1].reshape(shape)
            for t in range(self.model.n_periods)
        )

    @cached_property
    def structure(self) -> EGMStructure:
        """Return the roles of the model's names."""
        return egm_structure(self.model)

    def value(self, *, period: int, states: Mapping[str, Any]) -> np.ndarray:
        """Return V of ``period`` at ``states`` (arrays broadcast together)."""
        return self._evaluate(period=period, states=states)[1]

    def policy(self, *, period: int, states: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """Return the optimal consumption of ``period`` at ``states``, interpolated."""
        return {self.structure.action: self._evaluate(period=period, states=states)[0]}

    def _evaluate(self, *, period: int, states: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        flat, shape = validate_states(model=self.model, states=states, period=period)
        consumption, value = self.evaluate_flat(period=period, states=flat)
        return np.asarray(consumption).reshape(shape), np.asarray(value).reshape(shape)

    def evaluate_flat(
        self, *, period: int | jax.Array, states: Mapping[str, Any]
    ) -> tuple[jax.Array, jax.Array]:
        """Return (consumption, V) at validated flat ``states`` (no checks; for simulation)."""
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


def _evaluator(model: Model) -> Callable[..., Any]:
    if model not in _EVALUATORS:
        _EVALUATORS[model] = _build(model)
    return _EVALUATORS[model]


def point_evaluator(model: Model) -> Callable[..., tuple[jnp.ndarray, jnp.ndarray]]:
    """Return ``one(arrays, codes, wealth, params, period, age, limit) -> (c, V)`` at one state.

    ``arrays`` hold one period with contexts flattened (context, node); ``codes`` are the
    discrete states in the structure's order.
    """
    structure = egm_structure(model)
    utility = Utility(model, structure)

    def one(arrays, codes, wealth, params, period, age, limit):  # noqa: ANN001, ANN202
        env = params | {s: codes[i] for i, s in enumerate(structure.discrete)}
        env |= {"period": period, "age": age}
        return consumption_and_value(
            arrays,
            structure.context_index(codes),
            wealth,
            limit=limit,
            utility=lambda c: utility.value(c, env),
        )

    return one


def _build(model: Model) -> Callable[..., Any]:
    one = point_evaluator(model)

    def evaluate(arrays, codes, wealth, params, period, age, limit):  # noqa: ANN001, ANN202
        return jax.vmap(one, in_axes=(None, 0, 0, None, None, None, None))(
            arrays, codes, wealth, params, period, age, limit
        )

    return jax.jit(evaluate)
