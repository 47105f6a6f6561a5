"""Smooth simulated moments: expectations over a taste-shocked exit choice, not draws of it.

With EV1 taste shocks the choice of a regime's discrete action has logit probabilities that are
smooth in the params. Drawing it (as ``simulate`` does) makes the moments step functions of the
params; here each subject's moments are their expectation over the choice instead, so they are
differentiable (``jax.jacfwd``) and an optimiser can use exact derivatives.

Structure it needs (``ExitChoice.of`` checks it): one regime (the *chooser*, e.g. working) has
taste shocks and one binary discrete action whose *stay* value keeps the subject in that regime
and whose other value moves it to regimes without taste shocks (retired, then dead), which
never lead back. A subject's path is then fixed by its exit date: it stays until period ``k``,
exits there, and lives the deterministic exit dynamics afterwards. Per subject the scan carries
the stay path with its probability and one *branch* per earlier exit date (slot ``k``: the path
of exiting in period ``k``, with its probability), so a period costs the chooser's step on the
subjects and the exit regimes' steps on subjects times slots.

Common random numbers: every draw but the exit choice (income, the regime draw's death) uses the
subject's own keys exactly as ``simulate`` does, so the branches of a subject share its income
path and death date, and at a vanishing taste-shock scale the smooth moments equal the drawn ones.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from project.egm.solution import point_evaluator
from project.egm.structure import egm_structure
from project.estimation.errors import EstimationError
from project.points import float_dtype
from project.regimes.spec import REGIME_TRANSITION, RegimeModel
from project.simulation.keys import stream_uniform, subject_keys
from project.simulation.regime_steps import REGIME_STREAM, period_step, regime_at_uniform
from project.simulation.steps import build_advance, choice_actions
from project.solver.sweep import compose


@dataclass(frozen=True)
class ExitChoice:
    """The chooser regime, its binary action and the index of the choice that stays."""

    regime: str
    stay: int

    @classmethod
    def of(cls, model: RegimeModel, *, params: Mapping[str, Any]) -> ExitChoice:
        """Return the model's exit choice; raise ``EstimationError`` where it has none."""
        shocked = [r for r, v in model.regimes.items() if v.taste_shocks]
        if len(shocked) != 1:
            msg = (
                f"Smooth moments need exactly one regime with taste shocks (the exit choice); "
                f"model {model.name!r} has {shocked}. Use drawn moments (smooth=False)."
            )
            raise EstimationError(msg)
        regime = shocked[0]
        structure = egm_structure(model.regimes[regime])
        if structure.n_choices != 2:
            msg = (
                f"Smooth moments need a binary choice in regime {regime!r}; it has "
                f"{structure.n_choices} discrete choices. Use drawn moments (smooth=False)."
            )
            raise EstimationError(msg)
        stays = [c for c in range(2) if _stays(model, regime, choice=c, params=params)]
        if len(stays) != 1:
            msg = (
                f"Smooth moments need exactly one choice of regime {regime!r} that keeps the "
                f"subject there and one that leaves it for good; choices {stays} stay. Use "
                "drawn moments (smooth=False)."
            )
            raise EstimationError(msg)
        return cls(regime=regime, stay=stays[0])


def _stays(model: RegimeModel, regime: str, *, choice: int, params: Mapping[str, Any]) -> bool:
    """Return whether ``choice`` keeps a subject in ``regime`` (first period, first states)."""
    view = model.regimes[regime]
    structure = egm_structure(view)
    codes = np.asarray(structure.choices)[choice]
    env = {name: jnp.asarray(value) for name, value in params.items()}
    env |= {s: model.states[s].to_jax()[0] for s in view.state_names}
    env |= {a: jnp.asarray(codes[i]) for i, a in enumerate(structure.discrete_actions)}
    env |= {"period": jnp.int32(0), "age": jnp.asarray(float(model.ages[0]))}
    out = compose(view, [REGIME_TRANSITION])(env)[REGIME_TRANSITION]
    probabilities = np.asarray(view.regime_probabilities(out))
    return bool(probabilities[model.code(regime)] > 0)


def build_smooth_totals(
    model: RegimeModel, *, methods: Mapping[str, str], exit_choice: ExitChoice
) -> Callable[..., Any]:
    """Return ``run(codes, states, ids, inputs, params, periods, ages, seed, record)``.

    ``record(codes, states, actions, weights, period, age)`` reduces one record of a period
    (subjects, or subjects times slots, flattened) to a tuple of weighted sums; ``run`` returns
    their totals over every period and path.
    """
    chooser = exit_choice.regime
    choose = _chooser_step(model, chooser=chooser, stay=exit_choice.stay)
    others = period_step(model, methods=methods, regimes=[r for r in model.regimes if r != chooser])
    code = model.code(chooser)
    dead = min(model.code(r) for r in model.terminal)

    def one_period(carry, inputs, period, age, slot, *, ids, params, seed, record, last):  # noqa: ANN001, ANN202
        (codes, states, weight), (b_codes, b_states, b_weight), totals = carry
        n, slots = codes.shape[0], b_codes.shape[0] // codes.shape[0]
        keys = subject_keys(seed=seed, subject_ids=ids, period=period)
        uniform = jax.vmap(lambda k: stream_uniform(key=k, stream=REGIME_STREAM))(keys)
        inside = codes == code
        stay, leave, p_leave = choose(
            states, keys, uniform, inputs[chooser], params, period, age, last=last
        )
        p_leave = jnp.where(inside, p_leave, 0.0)
        actions, _, moved, codes_next = others(
            codes, states, ids, inputs, params, period, age, seed, last=last, uniform=uniform
        )
        on_path = {a: jnp.where(inside, stay[0][a], v) for a, v in actions.items()}
        leaving = {a: jnp.where(inside, leave[0][a], v) for a, v in actions.items()}
        b_ids, b_uniform = jnp.repeat(ids, slots), jnp.repeat(uniform, slots)
        branch = (b_codes, b_states, b_ids, inputs, params, period, age, seed)
        b_actions, _, b_moved, b_next = others(*branch, last=last, uniform=b_uniform)
        for records in (
            (codes, states, on_path, weight * (1 - p_leave)),
            (codes, states, leaving, weight * p_leave),
            (b_codes, b_states, b_actions, b_weight),
        ):
            totals = _add(totals, record(*records, period, age))
        if last:
            return totals
        spawn = (jnp.arange(n * slots) % slots) == slot
        b_codes = jnp.where(spawn, jnp.repeat(jnp.where(inside, leave[2], dead), slots), b_next)
        b_states = {
            s: jnp.where(spawn, jnp.repeat(jnp.where(inside, leave[1][s], v), slots), b_moved[s])
            for s, v in states.items()
        }
        b_weight = jnp.where(spawn, jnp.repeat(weight * p_leave, slots), b_weight)
        states = {s: jnp.where(inside, stay[1][s], moved[s]) for s in states}
        codes = jnp.where(inside, stay[2], codes_next)
        return (codes, states, weight * (1 - p_leave)), (b_codes, b_states, b_weight), totals

    return _runner(model, one_period, dead=dead)


def _runner(model: RegimeModel, one_period: Callable[..., Any], *, dead: int) -> Callable[..., Any]:
    """Return ``run``: ``one_period`` scanned over every period but the last, then the last.

    The carry starts with every subject on its path (weight 1) and no branch yet (``slots``
    branches per subject, dead and weight 0, one spawned per period).
    """

    def run(codes, states, ids, inputs, params, periods, ages, seed, record):  # noqa: ANN001, ANN202
        n, slots = codes.shape[0], periods.shape[0] - 1
        dtype = float_dtype()
        branches = (
            jnp.full((n * slots,), dead, jnp.int32),
            {s: jnp.repeat(v, slots) for s, v in states.items()},
            jnp.zeros((n * slots,), dtype),
        )
        blank = jnp.zeros(codes.shape, dtype)
        shapes = jax.eval_shape(
            lambda: record(codes, states, _no_actions(model, codes), blank, periods[0], ages[0])
        )
        zero = jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), shapes)
        carry = ((codes, states, jnp.ones(codes.shape, dtype)), branches, zero)

        fixed = {"ids": ids, "params": params, "seed": seed, "record": record}

        def body(carry, x):  # noqa: ANN001, ANN202
            return one_period(carry, *x, **fixed, last=False), None

        head = jax.tree.map(lambda x: x[:-1], inputs)
        xs = (head, periods[:-1], ages[:-1], jnp.arange(slots))
        carry, _ = jax.lax.scan(body, carry, xs)
        final = jax.tree.map(lambda x: x[-1], inputs)
        return one_period(carry, final, periods[-1], ages[-1], jnp.int32(slots), **fixed, last=True)

    return run


def _chooser_step(model: RegimeModel, *, chooser: str, stay: int) -> Callable[..., Any]:
    """Return ``choose(states, keys, uniform, inputs, params, period, age, last)``.

    Per subject: the stay and the exit choice's (actions, next states, next regime) and the
    exit probability, all at the subject's exact state (``point_evaluator``).
    """
    view = model.regimes[chooser]
    structure = egm_structure(view)
    evaluate = point_evaluator(view)
    advance = build_advance(view)
    next_regime = regime_at_uniform(view)
    leave = 1 - stay

    def one(state_values, key, uniform, inputs, params, period, age, *, last):  # noqa: ANN001, ANN202
        arrays, limit = inputs
        codes = jnp.stack([state_values[s] for s in structure.discrete])
        wealth = state_values[structure.state]
        at = evaluate(arrays, codes, wealth, params, period, age, limit)
        outcomes = []
        for choice in (stay, leave):
            actions = choice_actions(structure, consumption=at.choice_consumption, choice=choice)
            if last:
                outcomes.append((actions, state_values, jnp.int32(0)))
                continue
            following = advance(state_values, actions, key, params, period, age, wealth.dtype)
            drawn = next_regime(state_values, actions, uniform, params, period, age)
            outcomes.append((actions, following, drawn))
        return outcomes[0], outcomes[1], at.probability[leave]

    def choose(states, keys, uniform, inputs, params, period, age, *, last):  # noqa: ANN001, ANN202
        own = {s: states[s] for s in view.state_names}
        per_subject = jax.vmap(partial(one, last=last), in_axes=(0, 0, 0, None, None, None, None))
        return per_subject(own, keys, uniform, inputs, params, period, age)

    return choose


def _add(totals: tuple[jax.Array, ...], more: tuple[jax.Array, ...]) -> tuple[jax.Array, ...]:
    return tuple(a + b for a, b in zip(totals, more, strict=True))


def _no_actions(model: RegimeModel, codes: jax.Array) -> dict[str, jax.Array]:
    """Return zeros for every action of the model (codes int32, numbers in float)."""
    return {
        a: jnp.zeros(codes.shape, jnp.int32 if g.is_discrete else float_dtype())
        for a, g in model.actions.items()
    }
