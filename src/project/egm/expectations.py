"""What one EGM step reads of next period: its targets and the expectations over them.

``expectations(step, carries, env, ...)`` returns, per savings point of one (context, choice)
pair of ``step`` (an ``EGMPeriod``), E[a·Σ_d P_d·u'(c'_d)], E[V'] and E[Σ_d P_d·c'_d] (the
inversion's start) over every reachable ``Target``: an alive target's arrays read at next
wealth (``choices.at_state``), a terminal target's value and its slope in wealth. Each is
weighted by the shock nodes' weights (times the continuation scale for the marginal and the
value) and, for a regime, by the target's probability.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp

from project.egm.choices import EGMArrays, at_state
from project.egm.structure import EGMStructure
from project.egm.utility import Utility

if TYPE_CHECKING:
    from project.egm.period import EGMPeriod

Reader = Callable[[jnp.ndarray, jnp.ndarray], tuple[jnp.ndarray, ...]]


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


def expectations(
    step: EGMPeriod,
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
    following = step.transitions.next_states(
        env, savings=savings, shocks=shocks, shock_weights=shock_weights
    )
    contexts = jnp.asarray(step.structure.contexts)
    readers = [
        (
            k,
            t,
            _reader(
                step,
                t,
                carries=carries,
                params=params,
                period=period,
                target_savings=target_savings,
                scale=scale,
            ),
        )
        for k, t in enumerate(step.targets)
        if t.reachable
    ]

    def expected(chosen: list[tuple[int, Reader]], pairs: Any, weights: Any) -> Any:
        return _expected(
            step, chosen, pairs, weights, contexts=contexts, probabilities=probabilities
        )

    # A target that reads none of the stochastic states lands in the same context and at
    # the same wealth whatever their outcome: it is read once per shock node.
    invariant = [(k, read) for k, t, read in readers if ignores_outcomes(step, t)]
    varying = [(k, read) for k, t, read in readers if not ignores_outcomes(step, t)]
    pairs = (following.context, following.wealth, following.slope)
    totals = []
    if varying:
        totals.append(expected(varying, pairs, (following.scaled_weight, following.weight)))
    if invariant:
        first = tuple(x[:1] for x in pairs)
        nodes = tuple(
            jnp.sum(w, axis=0, keepdims=True) for w in (following.scaled_weight, following.weight)
        )
        totals.append(expected(invariant, first, nodes))
    return tuple(sum(parts[1:], parts[0]) for parts in zip(*totals, strict=True))


def _reader(
    step: EGMPeriod,
    target: Target,
    *,
    carries: Mapping[str, EGMArrays],
    params: Mapping[str, Any],
    period: jnp.ndarray,
    target_savings: Mapping[str, jnp.ndarray],
    scale: jnp.ndarray,
) -> Reader:
    """Return ``read(codes, wealth)``: the target's marginal, value and consumption guess."""
    if target.structure is None:
        return terminal_reader(step, target, params=params)
    source = step.structure
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
            env=step.env(params, own, period + 1, names),
            limit=target_savings[target.name][0],
            scale=scale,
            with_marginal=True,
        )
        # A start for the inversion only: no derivative flows through it (an
        # infeasible choice's consumption may carry a NaN one, times probability 0).
        guess = jax.lax.stop_gradient(jnp.sum(state.probability * state.consumption, axis=0))
        return state.marginal, state.total, guess

    return read


def _expected(
    step: EGMPeriod,
    chosen: list[tuple[int, Reader]],
    pairs: Any,
    weights: Any,
    *,
    contexts: jnp.ndarray,
    probabilities: jnp.ndarray,
) -> Any:
    """Return the weighted sums over ``pairs`` (context, wealth, slope) of ``chosen``.

    ``weights``: (scaled, plain); the marginal and the value are summed with the weights
    times the continuation scale, the inversion's guess with the plain ones.
    """

    def per_pair(context: jnp.ndarray, wealth: jnp.ndarray, slope: jnp.ndarray) -> Any:
        totals = None
        for k, read in chosen:
            marginal, value, guess = read(contexts[context], wealth)
            parts = (slope * marginal, value, guess)
            if step.probabilities is not None:
                p = probabilities[k]
                parts = tuple(jnp.where(p > 0, p * x, 0) for x in parts)
            if totals is not None:
                parts = tuple(a + b for a, b in zip(totals, parts, strict=True))
            totals = parts
        return totals

    # One vmap over the pairs, flattened (see the pairs in ``EGMPeriod.refined_step``).
    flat = (x.reshape(-1, *x.shape[weights[1].ndim :]) for x in pairs)
    parts = jax.vmap(per_pair)(*flat)
    return tuple(
        jnp.tensordot(weight, part.reshape(*weight.shape, *part.shape[1:]), axes=2)
        for weight, part in zip((weights[0], *weights), parts, strict=True)
    )


def ignores_outcomes(step: EGMPeriod, target: Target) -> bool:
    """Return whether ``target`` is read alike for every stochastic outcome (a regime)."""
    if step.probabilities is None or not step.structure.stochastic:
        return False
    if step.model.outcome_dependent_stochastic_states():
        return False
    read = set() if target.structure is None else set(target.structure.discrete)
    return not read & set(step.structure.stochastic)


def terminal_reader(step: EGMPeriod, target: Target, *, params: Mapping[str, Any]) -> Reader:
    """Return ``read(codes, wealth)``: a terminal value, its slope in wealth, no guess."""
    source = step.structure
    value = target.value

    def read(codes: jnp.ndarray, wealth: jnp.ndarray) -> tuple[jnp.ndarray, ...]:
        zero = jnp.zeros_like(wealth)
        if value is None:
            return zero, zero, zero
        names = list(inspect.signature(value).parameters)
        named = dict(params) | {s: codes[i] for i, s in enumerate(source.discrete)}

        def at(w: jnp.ndarray) -> jnp.ndarray:
            env = named | {source.state: w}
            return jnp.asarray(value(**{a: env[a] for a in names}), w.dtype)

        level, slope = jax.vmap(jax.value_and_grad(at))(wealth)
        return slope, level, zero

    return read
