"""One period of (DC-)EGM for one model: its arrays from next period's arrays of its targets.

Per discrete context and choice, on the savings grid ``s_j`` (the post-decision state):

1. next wealth ``w' = next_w(w=s_j, c=0)`` (= a·s_j + b, given the choice) and its slope ``a``
   for every outcome of the stochastic states and every node of the iid shocks;
2. next period read at ``w'`` in every *target* (``Target``): a plain model reads its own
   arrays (one target, probability 1); a regime reads every regime it may move to, weighted by
   its regime transition, and a terminal regime's value (and its slope in wealth) directly.
   Each alive target gives its choices' consumption and value combined into ``E[V']`` (the
   log-sum over choices with taste shocks, else the maximum) and ``E[a·Σ_d P_d·u'(c'_d)]``;
3. the Euler equation ``u'(c_j) = beta·E[a·u'(c')]`` inverted for ``c_j``; the endogenous grid
   ``w_j = s_j + c_j``; ``V_j = u(c_j) + beta·E[V']``;
4. with discrete actions, the upper envelope (``envelope.py``) drops the points that are not
   optimal and the rest are sorted; without, a non-monotone grid is reported instead.

A model's ``continuation_scale`` (``project.model.continuation``) multiplies next period's value
and marginal value inside both expectations.

Below the first endogenous point the borrowing limit ``s_0`` binds: ``c = w - s_0`` and
``V(w) = u(w - s_0) + beta·E[V'(s_0)]``, both exact. Node 0 of every period is the point
``(w, c) = (s_0, 0)``, so interpolating consumption over all nodes gives ``c = w - s_0`` there.
V is stored as its consumption equivalent ``nu = u^{-1}(V)`` (under the choice's utility) with
its slope, interpolated by cubic Hermite polynomials. Which choices are feasible comes from the
constraints that involve neither ``w`` nor ``c``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from project.egm.choices import EGMArrays, choice_env
from project.egm.envelope import clean_grids
from project.egm.expectations import Target, expectations
from project.egm.invert import invert_euler
from project.egm.kinks import Kinks, kinks_found, mapped_savings, with_kinks
from project.egm.structure import egm_structure
from project.egm.transitions import Transitions
from project.egm.utility import Utility
from project.model.names import DISCOUNT_FACTOR
from project.model.spec import Model
from project.shocks import shock_tables
from project.solver.sweep import compose
from project.taste_shocks import TASTE_SHOCK_SCALE

# Per (context, choice): NaN/inf, non-monotone grid, the two inverses' residuals, runs.
PAIR_FLAGS = 5


class _Shared(NamedTuple):
    """What every (context, choice) pair of one period reads alike."""

    own: jnp.ndarray  # the model's savings grid
    shocks: dict[str, jnp.ndarray]
    shock_weights: jnp.ndarray
    scale: jnp.ndarray  # the taste shocks' (0 without)
    tolerance: float  # of the two numerical inverses
    beta: jnp.ndarray


class EGMPeriod:
    """The EGM step of one model (a plain model, or one regime) and its last period."""

    def __init__(
        self,
        model: Model,
        *,
        window: int,
        name: str | None = None,
        targets: Sequence[Target] | None = None,
        probabilities: Callable[[dict[str, Any]], jnp.ndarray] | None = None,
    ) -> None:
        """Build the step of ``model``, known to its targets as ``name`` (default: its name).

        Without ``targets`` it reads its own next period; ``probabilities(env)`` gives the
        probability of each target at a (context, choice) pair.
        """
        self.model = model
        self.name = name or model.name
        self.structure = egm_structure(model)
        self.utility = Utility(model, self.structure)
        self.transitions = Transitions(model, self.structure)
        self.feasibility = compose(model, list(self.structure.choice_constraints))
        self.targets = tuple(
            targets or (Target(name=self.name, structure=self.structure, utility=self.utility),)
        )
        self.probabilities = probabilities
        self.window = window

    def env(
        self,
        params: Mapping[str, Any],
        codes: jnp.ndarray,
        period: jnp.ndarray,
        names: Sequence[str],
    ) -> dict[str, Any]:
        """Return params, the discrete states ``names`` at ``codes``, period and age."""
        ages = jnp.asarray(np.asarray(self.model.ages), dtype=_dtype(params))
        named = {s: codes[i] for i, s in enumerate(names)}
        return dict(params) | named | {"period": period, "age": ages[period]}

    def feasible(self, params: Mapping[str, Any], period: jnp.ndarray) -> jnp.ndarray:
        """Return whether each discrete choice is allowed in each context: (context, choice)."""
        structure = self.structure

        def one(codes: jnp.ndarray, choice: jnp.ndarray) -> jnp.ndarray:
            env = self.env(params, codes, period, structure.discrete)
            out = self.feasibility(choice_env(structure, env, choice))
            allowed = jnp.asarray(True)
            for constraint in structure.choice_constraints:
                allowed = allowed & jnp.asarray(out[constraint])
            return allowed

        choices = jnp.arange(structure.n_choices)
        contexts = jnp.asarray(structure.contexts)
        return jax.vmap(lambda codes: jax.vmap(lambda d: one(codes, d))(choices))(contexts)

    def terminal(self, savings: jnp.ndarray, *, params: Mapping[str, Any]) -> EGMArrays:
        """Return the last period: consume down to the limit, V = u(c) (nu = c, exact)."""
        structure = self.structure
        spend = savings - savings[0] + (savings[1] - savings[0])
        zero = jnp.zeros((1,), dtype=savings.dtype)
        consumption = jnp.concatenate([zero, spend])
        wealth = jnp.concatenate([savings[:1], savings[0] + spend])
        shape = (structure.n_contexts, structure.n_choices)

        def tile(x: jnp.ndarray) -> jnp.ndarray:
            return jnp.broadcast_to(x, (*shape, *x.shape))

        return EGMArrays(
            wealth=tile(wealth),
            consumption=tile(consumption),
            value_equivalent=tile(consumption),
            equivalent_slope=tile(jnp.ones_like(consumption)),
            constrained_continuation=jnp.zeros(shape, dtype=savings.dtype),
            feasible=self.feasible(params, jnp.int32(self.model.n_periods - 1)),
        )

    def terminal_flags(self, arrays: EGMArrays, *, params: Mapping[str, Any]) -> jnp.ndarray:
        """Return the last period's flags: column 0 marks u(c) not finite at its nodes.

        The last period stores nu = c and V = u(c) is computed where it is read, so a utility
        that is NaN there (at an age, a param) would pass the other periods' checks unseen.
        """
        structure = self.structure
        period = jnp.int32(self.model.n_periods - 1)

        def one(codes: jnp.ndarray, choice: jnp.ndarray, consumption: jnp.ndarray) -> jnp.ndarray:
            env = choice_env(structure, self.env(params, codes, period, structure.kept), choice)
            return ~jnp.all(jnp.isfinite(self.utility.value(consumption[1:], env)))

        choices = jnp.arange(structure.n_choices)
        contexts = jnp.asarray(structure.contexts)
        per_pair = jax.vmap(
            lambda codes, rows: jax.vmap(lambda d, row: one(codes, d, row))(choices, rows)
        )
        bad = per_pair(contexts, arrays.consumption)
        flags = jnp.zeros((*arrays.feasible.shape, PAIR_FLAGS), jnp.int32)
        return flags.at[..., 0].set(bad.astype(jnp.int32))

    def step(
        self,
        carries: Mapping[str, EGMArrays],
        period: jnp.ndarray,
        *,
        params: Mapping[str, Any],
        savings: Mapping[str, jnp.ndarray],
    ) -> tuple[EGMArrays, jnp.ndarray, jnp.ndarray | None]:
        """Return this period's arrays from next period's ``carries`` (per target name).

        Also returns the per-(context, choice) flags (``PAIR_FLAGS`` columns) and, for a
        regime, the probabilities of its targets per (reduced context, choice) pair.
        """
        return self.refined_step(carries, period, params=params, savings=savings)[:3]

    def refined_step(
        self,
        carries: Mapping[str, EGMArrays],
        period: jnp.ndarray,
        *,
        params: Mapping[str, Any],
        savings: Mapping[str, jnp.ndarray],
        kinks: Kinks | None = None,
    ) -> tuple[EGMArrays, jnp.ndarray, jnp.ndarray | None, Kinks | None]:
        """Return ``step``'s results and this period's kinks (``kinks.py``).

        With next period's ``kinks`` (a plain model reading its own next period), each
        (context, choice) moves savings points onto the kinks they lead to; without, the
        savings grid is used as given and no kinks are returned.
        """
        structure = self.structure
        shared = self._shared(params, savings=savings)

        def one_pair(codes: jnp.ndarray, choice: jnp.ndarray, allowed: jnp.ndarray) -> Any:
            return self._pair(
                codes,
                choice,
                allowed,
                carries=carries,
                period=period,
                params=params,
                savings=savings,
                kinks=kinks,
                shared=shared,
            )

        # Folded states (read only by choice constraints) do not change a context's EGM step:
        # run it once per reduced context, where any of its contexts allows the choice.
        feasible = self.feasible(params, period)
        members = jnp.asarray(structure.reduced_members)
        allowed = jnp.any(feasible[members], axis=1)
        # One vmap over all (context, choice) pairs: each nested vmap re-processes every traced
        # operation, which is most of the first call's tracing time.
        reduced = jnp.asarray(structure.reduced_contexts)
        shape = (reduced.shape[0], structure.n_choices)
        pair_context, pair_choice = (x.ravel() for x in jnp.indices(shape))
        per_pair = jax.vmap(one_pair)(reduced[pair_context], pair_choice, allowed.ravel())
        return self._assemble(
            jax.tree.map(lambda x: x.reshape(*shape, *x.shape[1:]), per_pair),
            shape=shape,
            feasible=feasible,
            own=shared.own,
        )

    def _shared(self, params: Mapping[str, Any], *, savings: Mapping[str, jnp.ndarray]) -> _Shared:
        """Return what every (context, choice) pair of a period reads alike."""
        own = savings[self.name]
        dtype = own.dtype
        shocks, shock_weights, _ = shock_tables(self.model.shocks, params)
        shock_weights = shock_weights.astype(dtype)
        shocks = {k: v.astype(dtype) for k, v in shocks.items()}
        scale = params[TASTE_SHOCK_SCALE] if self.model.taste_shocks else jnp.zeros((), dtype)
        return _Shared(
            own=own,
            shocks=shocks,
            shock_weights=shock_weights,
            scale=scale,
            tolerance=float(1e3 * jnp.finfo(dtype).eps),
            beta=params[DISCOUNT_FACTOR],
        )

    def _pair(
        self,
        codes: jnp.ndarray,
        choice: jnp.ndarray,
        allowed: jnp.ndarray,
        *,
        carries: Mapping[str, EGMArrays],
        period: jnp.ndarray,
        params: Mapping[str, Any],
        savings: Mapping[str, jnp.ndarray],
        kinks: Kinks | None,
        shared: _Shared,
    ) -> Any:
        """Return one (context, choice) pair's grids, flags, probabilities and kinks found."""
        structure, own = self.structure, shared.own
        env = choice_env(structure, self.env(params, codes, period, structure.kept), choice)
        probabilities = (
            jnp.ones((1,), own.dtype) if self.probabilities is None else self.probabilities(env)
        )
        grid, position, generation = own, None, None
        if kinks is not None:
            grid, position, generation = self._refined(
                kinks, env, savings=own, shocks=shared.shocks, shock_weights=shared.shock_weights
            )
        marginal, value, guess = expectations(
            self,
            carries,
            env,
            savings=grid,
            target_savings=savings,
            params=params,
            period=period,
            shocks=shared.shocks,
            shock_weights=shared.shock_weights,
            scale=shared.scale,
            probabilities=probabilities,
        )
        solved = invert_euler(
            self.utility,
            grid,
            marginal,
            value,
            guess,
            env=env,
            allowed=allowed,
            beta=shared.beta,
            tolerance=shared.tolerance,
        )
        grids, value_now, constrained, flags = solved
        found = None
        if kinks is not None:
            slots = kinks.wealth.shape[-1]
            found = kinks_found(*grids[:2], position=position, generation=generation, slots=slots)
        continuation = shared.beta * value[0]
        return (grids, value_now, constrained), continuation, flags, probabilities, found

    def _assemble(
        self,
        per_pair: Any,
        *,
        shape: tuple[int, int],
        feasible: jnp.ndarray,
        own: jnp.ndarray,
    ) -> tuple[EGMArrays, jnp.ndarray, jnp.ndarray | None, Kinks | None]:
        """Return the period's arrays, flags, probabilities and kinks from its pairs' results.

        ``shape``: (reduced contexts, choices), the pairs' axes in ``per_pair``.

        With discrete actions the upper envelope cleans each pair's grids; the reduced
        contexts are expanded to all contexts and every grid starts at the borrowing limit.
        """
        structure = self.structure
        (grids, value_now, constrained), continuation, flags, probabilities, found = per_pair
        runs = jnp.ones((*shape, 1), jnp.int32)
        if structure.discrete_actions:

            def flat(x: jnp.ndarray) -> jnp.ndarray:
                return x.reshape(-1, x.shape[-1])

            cleaned, exact, runs = clean_grids(
                tuple(map(flat, grids)), flat(value_now), flat(constrained), window=self.window
            )
            grids = tuple(x.reshape(*shape, -1) for x in cleaned)
            flags = flags.at[..., 1].set((~exact).reshape(shape).astype(jnp.int32))
            runs = runs.reshape(*shape, 1)
        rows = jnp.asarray(structure.reduced_row)
        wealth, consumption, equivalent, slope = (x[rows] for x in grids)
        continuation, flags, runs = continuation[rows], flags[rows], runs[rows]
        found = jax.tree.map(lambda x: x[rows], found)
        full = (structure.n_contexts, structure.n_choices)
        zero = jnp.zeros((*full, 1), dtype=own.dtype)
        start = jnp.broadcast_to(own[:1], (*full, 1))
        arrays = EGMArrays(
            wealth=jnp.concatenate([start, wealth], axis=-1),
            consumption=jnp.concatenate([zero, consumption], axis=-1),
            value_equivalent=jnp.concatenate([zero, equivalent], axis=-1),
            equivalent_slope=jnp.concatenate([zero + 1, slope], axis=-1),
            constrained_continuation=continuation,
            feasible=feasible,
        )
        pair_probabilities = None if self.probabilities is None else probabilities
        return arrays, jnp.concatenate([flags, runs], axis=-1), pair_probabilities, found

    def _refined(
        self,
        kinks: Kinks,
        env: dict[str, Any],
        *,
        savings: jnp.ndarray,
        shocks: dict[str, jnp.ndarray],
        shock_weights: jnp.ndarray,
    ) -> tuple[jnp.ndarray, jnp.ndarray, jnp.ndarray]:
        """Return ``savings`` moved onto the kinks that next period's ``kinks`` leave today."""
        following = self.transitions.next_states(
            env, savings=savings[:1], shocks=shocks, shock_weights=shock_weights
        )
        candidates, generation, weight = mapped_savings(
            kinks,
            context=following.context,
            wealth=following.wealth,
            slope=following.slope,
            weight=following.weight,
            start=savings[0],
        )
        # One slot stays for this period's own limit kink (``kinks_found``).
        return with_kinks(savings, candidates, generation, weight, slots=kinks.wealth.shape[-1] - 1)


def _dtype(params: Mapping[str, Any]) -> Any:
    return jnp.asarray(params[DISCOUNT_FACTOR]).dtype
