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

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from project.egm.choices import EGMArrays, at_state, choice_env
from project.egm.envelope import clean_grids
from project.egm.kinks import Kinks, kinks_found, mapped_savings, with_kinks
from project.egm.structure import EGMStructure, egm_structure
from project.egm.transitions import Transitions
from project.egm.utility import Utility
from project.model.names import DISCOUNT_FACTOR
from project.model.spec import Model
from project.shocks import shock_tables
from project.solver.sweep import compose
from project.taste_shocks import TASTE_SHOCK_SCALE

# Per (context, choice): NaN/inf, non-monotone grid, the two inverses' residuals, runs.
PAIR_FLAGS = 5


@dataclass(frozen=True)
class Target:
    """What next period is read from: a model's arrays, or a terminal regime's value.

    ``structure`` and ``utility`` describe an alive target's arrays (its discrete states are
    among the source's). A terminal target has ``structure=None`` and ``value``, a function of
    states and params (``None``: V = 0). ``reachable=False``: the source cannot form the
    target's states, so it must give it probability 0 (the caller checks).
    """

    name: str
    structure: EGMStructure | None = None
    utility: Utility | None = None
    value: Callable[..., Any] | None = None
    reachable: bool = True


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
        structure, utility, model = self.structure, self.utility, self.model
        own = savings[self.name]
        dtype = own.dtype
        shocks, shock_weights, _ = shock_tables(model.shocks, params)
        shock_weights = shock_weights.astype(dtype)
        shocks = {k: v.astype(dtype) for k, v in shocks.items()}
        scale = params[TASTE_SHOCK_SCALE] if model.taste_shocks else jnp.zeros((), dtype)
        tolerance = float(1e3 * jnp.finfo(dtype).eps)
        beta = params[DISCOUNT_FACTOR]

        def one_pair(codes: jnp.ndarray, choice: jnp.ndarray, allowed: jnp.ndarray) -> Any:
            env = choice_env(structure, self.env(params, codes, period, structure.kept), choice)
            probabilities = (
                jnp.ones((1,), dtype) if self.probabilities is None else self.probabilities(env)
            )
            grid, position, generation = own, None, None
            if kinks is not None:
                grid, position, generation = self._refined(
                    kinks, env, savings=own, shocks=shocks, shock_weights=shock_weights
                )
            marginal, value, guess = self._expectations(
                carries,
                env,
                savings=grid,
                target_savings=savings,
                params=params,
                period=period,
                shocks=shocks,
                shock_weights=shock_weights,
                scale=scale,
                probabilities=probabilities,
            )
            target = beta * marginal
            infinite = jnp.isposinf(target)
            solved, marginal_residual = utility.inverse_marginal(
                jnp.where(infinite, 1.0, target),
                env,
                guess=jnp.maximum(guess, 1e-3),
                tolerance=tolerance / 10,
                active=jnp.broadcast_to(allowed, target.shape),
            )
            consumption = jnp.where(infinite, 0.0, solved)
            wealth = grid + consumption
            below = wealth < wealth[0]
            # u at c_j and, below the first endogenous point, at consuming down to the limit.
            slack = jnp.where(below, wealth - grid[0], 1.0)
            levels = utility.value(jnp.stack([consumption, slack]), env)
            value_now = levels[0] + beta * value
            # Where E[u'(c')] is infinite (nothing to consume next period at zero savings),
            # c_j = 0 and every later consumption is 0: V's consumption equivalent is 0.
            unbounded = jnp.isneginf(value_now) | infinite
            solved_equivalent, inverse_residual = utility.inverse(
                jnp.where(unbounded, 0.0, value_now),
                env,
                guess=jnp.maximum(consumption, 1e-3),
                tolerance=tolerance / 10,
                active=jnp.broadcast_to(allowed, value_now.shape),
            )
            equivalent = jnp.where(unbounded, 0.0, solved_equivalent)
            constrained = jnp.where(below, levels[1] + beta * value[0], -jnp.inf)
            marginal_error = jnp.max(
                jnp.where(infinite, 0.0, jnp.abs(marginal_residual)), initial=0.0
            )
            inverse_error = jnp.max(
                jnp.where(unbounded, 0.0, jnp.abs(inverse_residual)), initial=0.0
            )
            flags = jnp.stack(
                [
                    ~jnp.all(jnp.isfinite(wealth) & jnp.isfinite(equivalent)),
                    jnp.any(jnp.diff(wealth) <= 0) | (wealth[0] < grid[0]),
                    marginal_error > tolerance,
                    inverse_error > tolerance,
                ]
            ).astype(jnp.int32)
            # V's slope is u'(c) (envelope condition), so nu = u^{-1}(V) has slope
            # u'(c) / u'(nu): the Hermite interpolation of nu between nodes uses it.
            marginals = utility.marginal(jnp.stack([consumption, equivalent]), env)
            ratio = marginals[0] / marginals[1]
            # Where nu = 0 (nothing to consume) u'(nu) is infinite: use the secant to the
            # next node, which is exact where nu is linear (CRRA without income).
            step = jnp.diff(wealth, append=wealth[-1:] + 1)
            secant = jnp.diff(equivalent, append=equivalent[-1:]) / jnp.where(step > 0, step, 1.0)
            slope = jnp.where((equivalent > 0) & jnp.isfinite(ratio), ratio, secant)
            grids = (wealth, consumption, equivalent, slope)
            found = None
            if kinks is not None:
                found = kinks_found(
                    wealth,
                    consumption,
                    position=position,
                    generation=generation,
                    slots=kinks.wealth.shape[-1],
                )
            return (grids, value_now, constrained), beta * value[0], flags, probabilities, found

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
        (grids, value_now, constrained), continuation, flags, probabilities, found = jax.tree.map(
            lambda x: x.reshape(*shape, *x.shape[1:]), per_pair
        )
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
        zero = jnp.zeros((*full, 1), dtype=dtype)
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

    def _expectations(
        self,
        carries: Mapping[str, EGMArrays],
        env: dict[str, Any],
        *,
        savings: jnp.ndarray,
        target_savings: Mapping[str, jnp.ndarray],
        params: Mapping[str, Any],
        period: jnp.ndarray,
        shocks: dict[str, jnp.ndarray],
        shock_weights: jnp.ndarray,
        scale: jnp.ndarray,
        probabilities: jnp.ndarray,
    ) -> tuple[jnp.ndarray, ...]:
        """Return E[a·Σ P·u'(c')], E[V'] and E[Σ P·c'] per savings point, over targets."""
        following = self.transitions.next_states(
            env, savings=savings, shocks=shocks, shock_weights=shock_weights
        )
        contexts = jnp.asarray(self.structure.contexts)
        source = self.structure

        def reader(target: Target) -> Callable[..., Any]:
            if target.structure is None:
                return self._terminal_reader(target, params=params)
            names = target.structure.discrete
            positions = jnp.asarray([source.discrete.index(s) for s in names], dtype=jnp.int32)

            def read(codes: jnp.ndarray, wealth: jnp.ndarray) -> tuple[jnp.ndarray, ...]:
                own = codes[positions]
                state = at_state(
                    carries[target.name],
                    target.structure.context_index(own),
                    wealth,
                    structure=target.structure,
                    utility=target.utility,
                    env=self.env(params, own, period + 1, names),
                    limit=target_savings[target.name][0],
                    scale=scale,
                    with_marginal=True,
                )
                # A start for the inversion only: no derivative flows through it (an
                # infeasible choice's consumption may carry a NaN one, times probability 0).
                guess = jax.lax.stop_gradient(
                    jnp.sum(state.probability * state.consumption, axis=0)
                )
                return state.marginal, state.total, guess

            return read

        readers = [(k, t, reader(t)) for k, t in enumerate(self.targets) if t.reachable]

        def expected(chosen: list[tuple[int, Callable[..., Any]]], pairs: Any, weights: Any) -> Any:
            """Return the weighted sums over ``pairs`` (context, wealth, slope) of ``chosen``.

            ``weights``: (scaled, plain); the marginal and the value are summed with the
            weights times the continuation scale, the inversion's guess with the plain ones.
            """

            def per_pair(context: jnp.ndarray, wealth: jnp.ndarray, slope: jnp.ndarray) -> Any:
                totals = None
                for k, read in chosen:
                    marginal, value, guess = read(contexts[context], wealth)
                    parts = (slope * marginal, value, guess)
                    if self.probabilities is not None:
                        p = probabilities[k]
                        parts = tuple(jnp.where(p > 0, p * x, 0) for x in parts)
                    if totals is not None:
                        parts = tuple(a + b for a, b in zip(totals, parts, strict=True))
                    totals = parts
                return totals

            # One vmap over the pairs, flattened (see the pairs in ``step``).
            flat = (x.reshape(-1, *x.shape[weights[1].ndim :]) for x in pairs)
            parts = jax.vmap(per_pair)(*flat)
            return tuple(
                jnp.tensordot(weight, part.reshape(*weight.shape, *part.shape[1:]), axes=2)
                for weight, part in zip((weights[0], *weights), parts, strict=True)
            )

        # A target that reads none of the stochastic states lands in the same context and at
        # the same wealth whatever their outcome: it is read once per shock node.
        invariant = [(k, read) for k, t, read in readers if self._ignores_outcomes(t)]
        varying = [(k, read) for k, t, read in readers if not self._ignores_outcomes(t)]
        pairs = (following.context, following.wealth, following.slope)
        totals = []
        if varying:
            totals.append(expected(varying, pairs, (following.scaled_weight, following.weight)))
        if invariant:
            first = tuple(x[:1] for x in pairs)
            nodes = tuple(
                jnp.sum(w, axis=0, keepdims=True)
                for w in (following.scaled_weight, following.weight)
            )
            totals.append(expected(invariant, first, nodes))
        return tuple(sum(parts[1:], parts[0]) for parts in zip(*totals, strict=True))

    def _ignores_outcomes(self, target: Target) -> bool:
        """Return whether ``target`` is read alike for every stochastic outcome (a regime)."""
        if self.probabilities is None or not self.structure.stochastic:
            return False
        if self.model.outcome_dependent_stochastic_states():
            return False
        read = set() if target.structure is None else set(target.structure.discrete)
        return not read & set(self.structure.stochastic)

    def _terminal_reader(self, target: Target, *, params: Mapping[str, Any]) -> Callable:
        """Return ``read(codes, wealth)``: a terminal value, its slope in wealth, no guess."""
        source = self.structure
        value = target.value

        def read(codes: jnp.ndarray, wealth: jnp.ndarray) -> tuple[jnp.ndarray, ...]:
            zero = jnp.zeros_like(wealth)
            if value is None:
                return zero, zero, zero
            names = _arguments(value)
            named = dict(params) | {s: codes[i] for i, s in enumerate(source.discrete)}

            def at(w: jnp.ndarray) -> jnp.ndarray:
                env = named | {source.state: w}
                return jnp.asarray(value(**{a: env[a] for a in names}), w.dtype)

            level, slope = jax.vmap(jax.value_and_grad(at))(wealth)
            return slope, level, zero

        return read


def _arguments(func: Callable[..., Any]) -> list[str]:
    return list(inspect.signature(func).parameters)


def _dtype(params: Mapping[str, Any]) -> Any:
    return jnp.asarray(params[DISCOUNT_FACTOR]).dtype
