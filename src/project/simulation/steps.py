"""One simulated period for a chunk of subjects: choose actions, then move to next period's states.

A grid solution chooses by maximising Q at each subject's exact state over the action grid (the
Q the solver maximises); with taste shocks it draws the discrete choice from its logit
probabilities first (the stream after those of the stochastic states and iid shocks) and
maximises over the continuous actions given it. An EGM solution reads consumption off its
endogenous grid at the exact state. Both then advance alike: stochastic states are drawn from
their transition probabilities, iid shocks by their node weights (streams after those of the
stochastic states), and the laws of motion give the deterministic states.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp

from project._xla import jit
from project.egm.solution import only_choice_evaluator, point_evaluator
from project.egm.structure import egm_structure
from project.model.internal import table
from project.model.names import transition_target
from project.model.spec import Model
from project.shocks import shock_tables
from project.simulation.keys import draw_category, subject_keys
from project.solver.evaluate import actions_given_choice, build_state_choice
from project.solver.expectation import prepare_next_value
from project.solver.sweep import compose

STEPS = table("simulation steps by method")


def build_advance(model: Model) -> Callable[..., dict[str, jnp.ndarray]]:
    """Return ``advance(states, actions, key, params, period, age, dtype)`` for one subject."""
    stochastic = list(model.stochastic_transitions)
    probabilities = compose(model, [transition_target(s) for s in stochastic])
    laws = compose(model, [f"next_{s}" for s in model.deterministic_states])

    def advance(state_values, actions, key, params, period, age, dtype):  # noqa: ANN001, ANN202
        env = {**params, **state_values, **actions, "period": period, "age": age}
        probs = probabilities(env)
        draws = {
            s: draw_category(key=key, probabilities=probs[transition_target(s)], stream=j)
            for j, s in enumerate(stochastic)
        }
        shocks, weights, _ = shock_tables(model.shocks, params)
        if model.shocks:
            combination = draw_category(
                key=key, probabilities=weights.astype(dtype), stream=len(stochastic)
            )
            env |= {name: values[combination] for name, values in shocks.items()}
        deterministic = laws(env | {f"next_{s}": c for s, c in draws.items()})
        next_states = {s[5:]: v for s, v in deterministic.items()} | draws
        for name, grid in model.states.items():
            kind = jnp.int32 if grid.is_discrete else dtype
            next_states[name] = jnp.asarray(next_states[name]).astype(kind)
        return next_states

    return advance


def taste_shock_stream(model: Model) -> int:
    """Return the key stream of the taste-shocked discrete choice (after states and shocks)."""
    return len(model.stochastic_transitions) + 1


def step_streams(model: Model) -> tuple[int, ...]:
    """Return every key stream a step of ``model`` may draw from (``keys.draw_ahead``'s).

    Its stochastic states and iid shocks (``build_advance``) and its taste-shocked choice.
    """
    return tuple(range(taste_shock_stream(model) + 1))


def build_step(model: Model, *, terminal: bool) -> Callable[..., Any]:
    """Return the jitted grid step: (actions, value, next states) for a chunk of subjects.

    Its arguments are ``(states, ids, expected, params, grid_points, period, age, seed)``.
    With taste shocks the discrete choice is drawn from its logit probabilities with the
    subject's key (``taste_shock_stream``) and the continuous actions maximise Q given it;
    the value is V, the log-sum.
    """
    choose = build_state_choice(model, terminal=terminal)
    advance = build_advance(model)
    choice_stream = taste_shock_stream(model)

    def one_subject(state_values, key, expected, params, grid_points, period, age):  # noqa: ANN001, ANN202
        chosen = choose(state_values, expected, params, grid_points, period, age)
        value, actions = chosen.value, chosen.actions
        if model.taste_shocks:
            choice = draw_category(
                key=key, probabilities=chosen.probabilities, stream=choice_stream
            )
            actions = actions_given_choice(model, q=chosen.q, choice=choice, points=grid_points)
        if terminal:
            return actions, value, state_values
        following = advance(state_values, actions, key, params, period, age, value.dtype)
        return actions, value, following

    def step(states, subject_ids, expected, params, grid_points, period, age, seed):  # noqa: ANN001, ANN202
        keys = subject_keys(seed=seed, subject_ids=subject_ids, period=period)
        return jax.vmap(one_subject, in_axes=(0, 0, None, None, None, None, None))(
            states, keys, expected, params, grid_points, period, age
        )

    return jit(step)


def build_egm_step(model: Model, *, terminal: bool) -> Callable[..., Any]:
    """Return ``egm_step_function``'s step, jitted."""
    return jit(egm_step_function(model, terminal=terminal))


def egm_step_function(model: Model, *, terminal: bool) -> Callable[..., Any]:
    """Return the EGM (and DC-EGM) step, traceable, with the grid step's signature.

    ``expected`` is the pair (period arrays with flattened contexts, borrowing limit);
    ``grid_points`` is unused. With taste shocks the discrete choice is drawn from its logit
    probabilities (``taste_shock_stream``), else it is the best one; consumption is that
    choice's, read off its endogenous grid at the exact state.
    """
    structure = egm_structure(model)
    evaluators = {
        False: point_evaluator(model, unroll=True),
        True: only_choice_evaluator(model, unroll=True),
    }
    advance = build_advance(model)
    choice_stream = taste_shock_stream(model)

    def one_subject(state_values, key, expected, params, period, age, *, only):  # noqa: ANN001, ANN202
        arrays, limit = expected
        codes = (
            jnp.stack([state_values[s] for s in structure.discrete])
            if structure.discrete
            else (jnp.zeros((0,), dtype=jnp.int32))
        )
        wealth = state_values[structure.state]
        at = evaluators[only](arrays, codes, wealth, params, period, age, limit)
        choice = at.choice
        if model.taste_shocks and not only:  # one allowed choice: drawn with probability one
            choice = draw_category(key=key, probabilities=at.probability, stream=choice_stream)
        actions = choice_actions(structure, consumption=at.choice_consumption, choice=choice)
        value = at.value
        if terminal:
            return actions, value, state_values
        return (
            actions,
            value,
            advance(state_values, actions, key, params, period, age, wealth.dtype),
        )

    def step(states, subject_ids, expected, params, grid_points, period, age, seed):  # noqa: ANN001, ANN202
        del grid_points
        keys = subject_keys(seed=seed, subject_ids=subject_ids, period=period)

        def subjects(only):  # noqa: ANN001, ANN202
            return jax.vmap(partial(one_subject, only=only), in_axes=(0, 0, None, None, None, None))

        operands = (states, keys, expected, params, period, age)
        if structure.n_choices == 1:
            return subjects(False)(*operands)
        # A period whose every context allows one choice (a claim before the earliest age)
        # reads that choice alone: the other choices' values decide nothing there, and with
        # taste shocks its probability is one (the log-sum is its value, to the bit).
        only = jnp.all(jnp.sum(expected[0].feasible, axis=-1) == 1)
        return jax.lax.cond(only, subjects(True), subjects(False), *operands)

    return step


def choice_actions(
    structure: Any, *, consumption: jnp.ndarray, choice: jnp.ndarray | int
) -> dict[str, jnp.ndarray]:
    """Return an EGM subject's actions for discrete ``choice``: its consumption and codes."""
    codes = jnp.asarray(structure.choices)[choice]
    actions = {structure.action: consumption[choice]}
    return actions | {a: codes[i] for i, a in enumerate(structure.discrete_actions)}


def steps_for(model: Model, *, method: str) -> dict[str, Callable[..., Any]]:
    """Return the model's cached steps (``terminal``, ``regular``; ``expected`` for grid)."""
    cache = STEPS.of(model)
    if method not in cache:
        if method in ("egm", "dcegm"):
            cache[method] = {
                "terminal": build_egm_step(model, terminal=True),
                "regular": build_egm_step(model, terminal=False),
            }
        else:
            cache[method] = {
                "terminal": build_step(model, terminal=True),
                "regular": build_step(model, terminal=False),
                "expected": jit(
                    lambda next_value, params, grid_points, period, age: prepare_next_value(
                        model,
                        next_value=next_value,
                        grid_points=grid_points,
                        env={**params, "period": period, "age": age},
                    )
                ),
            }
    return cache[method]
