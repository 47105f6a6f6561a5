"""What a regime reads of next period: W = sum over target regimes of P(target) · V_target.

For a source regime ``r`` with states ``S_r``, next period's value of a target regime ``k`` is
``V_k`` at the next states the source's laws of motion give. The target's states are states of
the source with the same grids (``spec.py``), so ``V_k`` lifts into the source's state space
exactly: its axes are put in the source's order and broadcast along the states it lacks (a
retiree's V does not depend on the worker's income). A terminal regime's value is evaluated on
the source's grid points of the states it reads (linear between them, like V). Then

    W_r[d, s] = sum_k P_k(s, d) · lift(V_k)[s]

where ``d`` runs over the discrete actions the regime transition reads (``continuation_actions``,
leading axes) and ``P`` may depend on discrete states, age and params. The source regime's own
kernels then read ``W_r`` as they read a plain model's next-period V: its stochastic states are
integrated out and its laws of motion locate the next state. Exact, since the regime transition
does not depend on continuous states or actions. A zero probability times an infinite value
(a target state without a feasible action) contributes 0, not NaN.

The checks come back as three flags per period: a probability below 0, probabilities that do not
sum to 1, and a positive probability of moving to a regime whose states the source lacks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from project.errors import InvalidTransitionError
from project.points import float_dtype
from project.regimes.checks import missing_states
from project.regimes.spec import REGIME_TRANSITION, RegimeModel
from project.solver.sweep import compose, sweep

# A probability vector sums to 1 within this many float epsilons times the number of regimes.
SUM_TOLERANCE_EPS = 64
CHECK_COLUMNS = ("negative", "sum", "unreachable")


class RegimeContinuation:
    """Form ``W_r`` for one source regime from next period's values of every regime."""

    def __init__(self, model: RegimeModel, *, source: str) -> None:
        self.model = model
        self.source = source
        view = model.regimes[source]
        self.view = view
        self.transition = compose(view, [REGIME_TRANSITION])
        read = view.ancestors(REGIME_TRANSITION)
        self.actions = view.continuation_actions
        self.read_states = tuple(s for s in view.state_names if s in read)
        self.reachable = tuple(
            not missing_states(model, source=source, target=k) for k in model.regime_names
        )

    @property
    def shape(self) -> tuple[int, ...]:
        """Return the shape of ``W_r``: continuation actions, then the source's states."""
        grids = self.view.actions | self.view.states
        return tuple(grids[n].n_points for n in (*self.actions, *self.view.state_names))

    def probabilities(
        self, params: Mapping[str, Any], grid_points: Mapping[str, jax.Array], period: Any, age: Any
    ) -> jnp.ndarray:
        """Return P(next regime), shape (*actions, *[n or 1 per source state], regimes)."""
        view = self.view
        env = {**params, "period": period, "age": age}
        axes = [(n, grid_points[n], 0, False) for n in (*self.actions, *self.read_states)]

        def at(values: dict[str, jnp.ndarray], _: Any) -> jnp.ndarray:
            out = self.transition(env | values)[REGIME_TRANSITION]
            return view.regime_probabilities(out).astype(float_dtype())

        table = sweep(at, axes)
        lead = len(self.actions)
        for i, state in enumerate(view.state_names):
            if state not in self.read_states:
                table = jnp.expand_dims(table, lead + i)
        return table

    def lift(self, target: str, value: jnp.ndarray) -> jnp.ndarray:
        """Return a target regime's V with the source's state axes (broadcastable)."""
        target_states = self.model.regimes[target].state_names
        order = [s for s in self.view.state_names if s in target_states]
        lifted = jnp.transpose(value, [target_states.index(s) for s in order])
        for i, state in enumerate(self.view.state_names):
            if state not in target_states:
                lifted = jnp.expand_dims(lifted, i)
        return lifted

    def terminal_value(
        self, target: str, params: Mapping[str, Any], grid_points: Mapping[str, jax.Array]
    ) -> jnp.ndarray:
        """Return a terminal regime's value on the source's grid (broadcastable)."""
        spec = self.model.terminal[target]
        dtype = float_dtype()
        if spec.value is None:
            return jnp.zeros((1,) * len(self.view.state_names), dtype)
        read = [s for s in self.view.state_names if s in spec.arguments]
        axes = [(s, grid_points[s], 0, False) for s in read]

        def at(values: dict[str, jnp.ndarray], _: Any) -> jnp.ndarray:
            env = {**params, **values}
            return jnp.asarray(spec.value(**{a: env[a] for a in spec.arguments}), dtype)

        table = sweep(at, axes)
        for i, state in enumerate(self.view.state_names):
            if state not in read:
                table = jnp.expand_dims(table, i)
        return table

    def __call__(
        self,
        next_values: Mapping[str, jnp.ndarray],
        *,
        params: Mapping[str, Any],
        grid_points: Mapping[str, jax.Array],
        period: Any,
        age: Any,
    ) -> tuple[jnp.ndarray, jnp.ndarray]:
        """Return ``W_r`` and the int32 check flags ``CHECK_COLUMNS`` of this period."""
        probabilities = self.probabilities(params, grid_points, period, age)
        lead = len(self.actions)
        total = jnp.zeros(self.shape, probabilities.dtype)
        for k, target in enumerate(self.model.regime_names):
            if not self.reachable[k]:
                continue
            if target in self.model.terminal:
                value = self.terminal_value(target, params, grid_points)
            else:
                value = self.lift(target, next_values[target])
            value = jnp.expand_dims(value, tuple(range(lead)))
            weight = probabilities[..., k]
            total = total + jnp.where(weight > 0, weight * value, 0)
        return total, self.checks(probabilities)

    def checks(self, probabilities: jnp.ndarray) -> jnp.ndarray:
        """Return the int32 flags ``CHECK_COLUMNS`` of these probabilities."""
        return probability_checks(probabilities, reachable=self.reachable)


def probability_checks(probabilities: jnp.ndarray, *, reachable: tuple[bool, ...]) -> jnp.ndarray:
    """Return int32 flags: a negative probability, a bad sum, mass on an unreachable regime.

    ``probabilities`` has the regimes along its last axis.
    """
    n = probabilities.shape[-1]
    tolerance = SUM_TOLERANCE_EPS * n * jnp.finfo(probabilities.dtype).eps
    unreachable = jnp.asarray([not r for r in reachable])
    return jnp.stack(
        [
            jnp.any(probabilities < 0),
            jnp.any(jnp.abs(jnp.sum(probabilities, axis=-1) - 1) > tolerance),
            jnp.any((probabilities > 0) & unreachable),
        ]
    ).astype(jnp.int32)


def raise_for_regime_checks(model: RegimeModel, regime: str, checks: np.ndarray) -> None:
    """Raise ``InvalidTransitionError`` for the first failed check (rows: periods)."""
    failed = np.argwhere(checks > 0)
    if not failed.size:
        return
    period, column = (int(i) for i in failed[0])
    what = {
        "negative": "gives a negative probability",
        "sum": "gives probabilities that do not sum to one",
        "unreachable": (
            "gives a positive probability to a regime whose states this regime lacks (its laws "
            "of motion cannot give them)"
        ),
    }[CHECK_COLUMNS[column]]
    msg = (
        f"Model {model.name!r}: the regime transition of {regime!r} {what} in period {period} "
        f"(age {model.ages[period]:g}). Regimes are {list(model.regime_names)}; check the "
        "transition function and its params."
    )
    raise InvalidTransitionError(msg)
