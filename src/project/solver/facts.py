"""Facts about a model at given params: the savings slope and the transition check.

Two things depend on the params rather than on the model alone:

- whether the slope ``a`` of the savings law of motion is exactly 1 in a period (``r = 0``),
  which the shift kernel needs (``plan.Structure``);
- whether the transition probabilities are non-negative and sum to one.

Both are computed inside the solve program (``program_facts``, a few reductions) and come back
with the NaN/Inf flags in the solve's one transfer, so they cost no extra compile or sync. The
host remembers, per (model, params fingerprint), the slope pattern and that the transitions
passed, so a repeated solve picks its kernels right away and checks transitions once.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from project.model.internal import Fact
from project.model.spec import Model
from project.solver.plan import SolvePlan
from project.solver.sweep import compose, sweep
from project.solver.transitions import transition_stats, transitions_valid

# Fingerprints remembered per model (least recently used dropped first).
MAX_CACHED_PARAMS = 64


@dataclass(frozen=True)
class KnownFacts:
    """What earlier solves established for one (model, params)."""

    unit_slope: tuple[bool, ...] | None
    transitions_valid: bool


KNOWN = Fact("what solves of recent params established", build=lambda _model: OrderedDict())
LAST_SLOPES: Fact[tuple[bool, ...]] = Fact(
    "the last solve's slope pattern", build=lambda model: (True,) * model.n_periods
)


def fingerprint(flat_params: np.ndarray) -> bytes:
    """Return a key of packed params: their dtype and raw bytes (not hashed: they are few)."""
    return flat_params.dtype.str.encode() + np.ascontiguousarray(flat_params).tobytes()


def known_facts(model: Model, *, key: bytes) -> KnownFacts | None:
    """Return what earlier solves of these params established, if any."""
    cache = KNOWN.of(model)
    if key not in cache:
        return None
    cache.move_to_end(key)
    return cache[key]


def remember_facts(model: Model, *, key: bytes, facts: KnownFacts) -> None:
    """Remember the facts of these params (and the slope pattern as the next guess)."""
    cache = KNOWN.of(model)
    cache[key] = facts
    while len(cache) > MAX_CACHED_PARAMS:
        cache.popitem(last=False)
    if facts.unit_slope is not None:
        LAST_SLOPES.put(model, facts.unit_slope)


def slope_guess(model: Model) -> tuple[bool, ...]:
    """Return the slope pattern to assume for unseen params: the last one seen, else all 1."""
    return LAST_SLOPES.of(model)


def inherit_slope_guess(model: Model, *, base: Model) -> None:
    """Let ``model``, a copy of ``base`` with other batch sizes, guess ``base``'s last slopes."""
    if LAST_SLOPES.known(base):
        LAST_SLOPES.put(model, LAST_SLOPES.of(base))


def needs_slope_probe(plan: SolvePlan) -> bool:
    """Return whether the shift kernel's slope must be checked per (params, period)."""
    return plan.structure.kind == "shift" and not plan.structure.unit_slope


def fact_columns(plan: SolvePlan) -> tuple[str, ...]:
    """Return the names of the facts ``program_facts`` computes, one report column each."""
    slope = ("unit_slope",) if needs_slope_probe(plan) else ()
    return (*slope, *(f"valid:{s}" for s in plan.model.stochastic_transitions))


def program_facts(
    plan: SolvePlan,
    *,
    params: dict[str, jnp.ndarray],
    grid_points: dict[str, jnp.ndarray],
    periods: jnp.ndarray,
    ages: jnp.ndarray,
) -> list[jnp.ndarray]:
    """Return the facts computed inside the solve program (traceable), per ``fact_columns``.

    ``unit_slope``: per period, whether d next_w / d w == 1 in every discrete context (only
    when ``needs_slope_probe``); ``valid:<state>``: per period, whether the state's transition
    probabilities are non-negative and sum to one (``transitions.transitions_valid``).
    """
    facts = []
    if needs_slope_probe(plan):
        facts.append(
            jax.vmap(
                lambda period, age: _slope_is_one(
                    plan, env={**params, "period": period, "age": age}, grid_points=grid_points
                )
            )(periods, ages)
        )
    stats = transition_stats(
        plan.model, params=params, grid_points=grid_points, periods=periods, ages=ages
    )
    facts.extend(transitions_valid(lowest, worst_sum) for lowest, worst_sum in stats.values())
    return facts


def _slope_is_one(
    plan: SolvePlan, *, env: dict[str, Any], grid_points: dict[str, jnp.ndarray]
) -> jnp.ndarray:
    """Return whether d next_w / d w is exactly 1 in every discrete context of one period."""
    model = plan.model
    state, action = plan.structure.state, plan.structure.action
    law = compose(model, [f"next_{state}"])
    ancestors = model.ancestors(f"next_{state}")
    grids = model.states | model.actions
    inputs = [n for n, g in grids.items() if g.is_discrete and n in ancestors]
    env = env | {action: grid_points[action][0]}
    start = grid_points[state][0]

    def slope(values: dict[str, jnp.ndarray], _: Any) -> jnp.ndarray:
        def next_state(w: jnp.ndarray) -> jnp.ndarray:
            return law(env | values | {state: w})[f"next_{state}"]

        return jax.jvp(next_state, (start,), (jnp.ones_like(start),))[1]

    slopes = sweep(slope, [(n, grid_points[n], 0, False) for n in inputs])
    return jnp.all(slopes == 1)
