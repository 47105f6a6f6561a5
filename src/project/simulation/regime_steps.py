"""One period of a model with regimes, and the scan of periods a panel (or its totals) runs.

``period_step`` steps every subject in its regime: the regime's solution chooses its actions
(grid or EGM), its laws of motion give the next states, and the next regime is the regime
transition's category at the subject's uniform number of stream ``REGIME_STREAM``. A terminal
regime is absorbing: its subjects take no actions and their value is the regime's value
function at the states it reads (0 without one). ``scan_steps`` runs the periods in one
``lax.scan`` and hands each period's record to a reduction: ``build_regime_panel`` keeps them
all (the history), a program of moments can sum them as it goes, with the same bits.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp

from project._xla import jit
from project.model.internal import table
from project.points import float_dtype
from project.regimes.spec import REGIME_TRANSITION, RegimeModel, RegimeView
from project.simulation.initial import MISSING_CODE
from project.simulation.keys import DrawnAhead, category_at, stream_uniform, subject_keys
from project.simulation.steps import steps_for
from project.solver.grid_cache import grid_points_of
from project.solver.sweep import compose

REGIME_STREAM = 1_048_577  # far above any state, shock or taste-shock stream of a regime


def build_regime_panel(
    model: RegimeModel, *, methods: Mapping[str, str], stop: int | None = None
) -> Callable[..., Any]:
    """Return ``panel(codes, states, ids, inputs, params, periods, ages, seed)``, traceable.

    It scans the regular step over every period but the last, then takes the terminal step, and
    returns the history ``(codes, states, actions, value)`` with a leading period axis: the
    regimes and states each period starts with, the actions taken and V there. With ``stop``
    (fewer than the periods given) it scans the regular step over the first ``stop`` periods
    only and returns their history: the same rows, bit for bit, as the whole panel's.
    ``seed`` may be the subjects' numbers drawn ahead (``keys.DrawnAhead`` with a leading period
    axis, at least ``stop`` periods): each period's step reads its own instead of hashing keys.
    """
    steps = scan_steps(model, methods=methods, stop=stop)

    def panel(codes, states, ids, inputs, params, periods, ages, seed):  # noqa: ANN001, ANN202
        def keep(carry, record, period, age):  # noqa: ANN001, ANN202
            del period, age
            return carry, record

        _, history, final = steps(codes, states, ids, inputs, params, periods, ages, seed, keep, ())
        if final is None:
            return history
        return jax.tree.map(lambda h, f: jnp.concatenate([h, f[None]]), history, final)

    return panel


def scan_steps(
    model: RegimeModel, *, methods: Mapping[str, str], stop: int | None = None
) -> Callable[..., Any]:
    """Return ``steps(codes, states, ids, inputs, params, periods, ages, seed, reduce, carry)``.

    The periods of ``build_regime_panel`` (its docstring: ``stop``, ``seed``), each period's
    record ``(codes, states, actions, value)`` handed to ``reduce(carry, record, period, age)
    -> (carry, out)`` inside the scan. Returns ``(carry, outs, final)``: ``outs`` stacked over
    the scanned periods and ``final`` the terminal period's record (``None`` when ``stop`` ends
    the scan early; the caller reduces it, at ``periods[-1]`` and ``ages[-1]``).
    """
    period = period_step(model, methods=methods)

    def steps(codes, states, ids, inputs, params, periods, ages, seed, reduce, carry):  # noqa: ANN001, ANN202
        drawn = seed if isinstance(seed, DrawnAhead) else None

        def body(scanned, x):  # noqa: ANN001, ANN202
            (here_codes, here_states), kept = scanned
            inputs_t, period_t, age_t, drawn_t = x
            randomness = seed if drawn is None else drawn_t
            actions, value, following, next_codes = period(
                here_codes,
                here_states,
                ids,
                inputs_t,
                params,
                period_t,
                age_t,
                randomness,
                last=False,
            )
            kept, out = reduce(kept, (here_codes, here_states, actions, value), period_t, age_t)
            return ((next_codes, following), kept), out

        if stop is not None and stop < periods.shape[0]:
            first = jax.tree.map(lambda x: x[:stop], (inputs, periods, ages, drawn))
            (_, kept), outs = jax.lax.scan(body, ((codes, states), carry), first)
            return kept, outs, None
        head = jax.tree.map(lambda x: x[:-1], (inputs, periods, ages, drawn))
        ((codes, states), kept), outs = jax.lax.scan(body, ((codes, states), carry), head)
        final_inputs = jax.tree.map(lambda x: x[-1], inputs)
        randomness = seed if drawn is None else jax.tree.map(lambda x: x[-1], drawn)
        actions, value, _, _ = period(
            codes, states, ids, final_inputs, params, periods[-1], ages[-1], randomness, last=True
        )
        return kept, outs, (codes, states, actions, value)

    return steps


def period_step(
    model: RegimeModel, *, methods: Mapping[str, str], regimes: Sequence[str] | None = None
) -> Callable[..., Any]:
    """Return one period of a chunk: actions, values, next states and next regimes.

    ``period(codes, states, ids, inputs, params, period, age, seed, last=, uniform=None)``.
    ``regimes`` (all living ones by default) are the regimes it steps; subjects elsewhere keep
    their regime and states, with missing actions. ``uniform``: each subject's number of the
    regime stream (``REGIME_STREAM``), drawn from its key when not given.
    """
    names = tuple(model.regimes) if regimes is None else tuple(regimes)
    steps = {r: steps_for(model.regimes[r], method=methods[r]) for r in names}
    points = {r: grid_points_of(model.regimes[r]) for r in names}
    draws = {r: regime_at_uniform(model.regimes[r]) for r in names}
    terminal = {r: _terminal_value(model, r) for r in model.terminal}

    def period(codes, states, ids, inputs, params, period, age, seed, *, last, uniform=None):  # noqa: ANN001, ANN202
        value = jnp.zeros(codes.shape, float_dtype())
        actions = {a: _missing(model.actions[a], codes.shape) for a in model.actions}
        next_states, next_codes = dict(states), codes
        if uniform is None and not last:
            keys = subject_keys(seed=seed, subject_ids=ids, period=period)
            uniform = jax.vmap(lambda k: stream_uniform(key=k, stream=REGIME_STREAM))(keys)
        for regime in names:
            here = codes == model.code(regime)
            own = {s: states[s] for s in model.regimes[regime].state_names}
            step = steps[regime]["terminal" if last else "regular"]

            def stepped(own, inputs_r, params, period, age, uniform, step=step, regime=regime):  # noqa: ANN001, ANN202
                chosen, regime_value, following = step(
                    own, ids, inputs_r, params, points[regime], period, age, seed
                )
                if last:
                    return chosen, regime_value, following, None
                drawn = jax.vmap(draws[regime], in_axes=(0, 0, 0, None, None, None))(
                    own, chosen, uniform, params, period, age
                )
                return chosen, regime_value, following, drawn

            chosen, regime_value, following, drawn = _where_present(
                here, stepped, own, inputs[regime], params, period, age, uniform
            )
            value = jnp.where(here, regime_value, value)
            for action, values in chosen.items():
                actions[action] = jnp.where(
                    here, values.astype(actions[action].dtype), actions[action]
                )
            if last:
                continue
            for state, values in following.items():
                next_states[state] = jnp.where(here, values, next_states[state])
            next_codes = jnp.where(here, drawn, next_codes)
        for regime, evaluate in terminal.items():
            here = codes == model.code(regime)
            value = jnp.where(here, evaluate(states, params), value)
        return actions, value, next_states, next_codes

    return period


def _where_present(here: jnp.ndarray, run: Callable[..., Any], *args: Any) -> Any:
    """Return ``run(*args)`` where some subject is ``here``, else zeros of its results' shapes.

    A regime nobody is in this period (no one has retired before the earliest claim) is not
    stepped in a traced program: every result is read only where ``here``. Under ``vmap`` both
    branches run. Called eagerly (a period at a time, outside ``jit``) it steps as before: a
    ``lax.cond`` there would compile its branches again at every call.
    """
    if not isinstance(here, jax.core.Tracer):
        return run(*args)
    shapes = jax.eval_shape(run, *args)

    def absent(*_: Any) -> Any:
        return jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shapes)

    return jax.lax.cond(jnp.any(here), run, absent, *args)


def regime_at_uniform(view: RegimeView) -> Callable[..., jax.Array]:
    """Return ``next_regime(states, actions, uniform, params, period, age)`` for one subject.

    The regime transition's category at the subject's uniform number (``category_at``): with
    the uniform of stream ``REGIME_STREAM`` it is ``draw_category``'s draw.
    """
    transition = compose(view, [REGIME_TRANSITION])

    def next_regime(state_values, action_values, uniform, params, period, age):  # noqa: ANN001, ANN202
        env = {**params, **state_values, **action_values, "period": period, "age": age}
        probabilities = view.regime_probabilities(transition(env)[REGIME_TRANSITION])
        return category_at(uniform=uniform, probabilities=probabilities.astype(float_dtype()))

    return next_regime


TERMINAL_VALUES = table("jitted terminal values by regime")
"""Jitted once per model: a repeated simulation (an estimation's) reuses their programs."""


def _terminal_value(model: RegimeModel, regime: str) -> Callable[..., jax.Array]:
    """Return ``value(states, params)`` of a terminal regime, jitted once per model."""
    values = TERMINAL_VALUES.of(model)
    if regime not in values:
        values[regime] = _build_terminal_value(model, regime)
    return values[regime]


def _build_terminal_value(model: RegimeModel, regime: str) -> Callable[..., jax.Array]:
    """Return ``value(states, params)`` of a terminal regime for a chunk of subjects."""
    spec = model.terminal[regime]

    def value(states, params):  # noqa: ANN001, ANN202
        n = next(iter(states.values())).shape[0]
        if spec.value is None:
            return jnp.zeros((n,), float_dtype())
        env = {**params, **states}

        def one(row: dict[str, jax.Array]) -> jax.Array:
            return jnp.asarray(spec.value(**{a: row.get(a, env.get(a)) for a in spec.arguments}))

        read = {a: states[a] for a in spec.arguments if a in states}
        return jax.vmap(one)(read).astype(float_dtype())

    return jit(value)


def _missing(grid: Any, shape: tuple[int, ...]) -> jax.Array:
    if grid.is_discrete:
        return jnp.full(shape, MISSING_CODE, jnp.int32)
    return jnp.full(shape, jnp.nan, float_dtype())
