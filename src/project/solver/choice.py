"""Pick the best action: a running maximum over the loop action, then the other actions.

Every kernel hands ``running_best`` a function giving Q for loop-action indices (vectorised over
everything else). The search keeps one value per state, so Q is never stored whole and memory
does not grow with the action grid. ``finish`` then applies the discrete constraints, expands
folded state axes and picks the best of the other actions. Ties go to the first action in the
model's flat action order, as ``jnp.argmax`` over the whole product would; a NaN in Q makes V
NaN (so the checks see it). With taste shocks V is instead the log-sum over the discrete
choices of their best values (the policy is still the maximiser: the most likely choice).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp

from project.model.spec import Model
from project.solver.plan import SolvePlan
from project.solver.sweep import compose, sweep
from project.taste_shocks import TASTE_SHOCK_SCALE, log_sum

# Loop steps unrolled per iteration on CPU (amortises the loop's own overhead).
UNROLL = 4
# The second sweep accepts Q within 8 units in the last place of |V| + 1 below the maximum V:
# the two sweeps are separate XLA loops and may round Q differently (by 1 ulp, measured).
TIE_ULPS = 8
GROUPED_MIN_PAIRS = 10**5
"""From this many (state, action) pairs, in float64, the shift kernel's search sweeps once by
groups (``_grouped``, reading its continuation per element) instead of twice. Measured on this
project's 2-core CPU (IJRS and precautionary, T = 5, interleaved): 12-27 % faster at 500x500 and
500x2000, V and policies the same bit for bit; at 100x100 and 100x500 no faster, and its compile
0.2-0.3 s longer. Not in float32: there V stays the same but, where Q is flat near its maximum,
the grouped search's exact first maximum and the two sweeps' first point within ``TIE_ULPS``
of it differ (2,131 of 12,500 policy entries at precautionary 500x500)."""


def search_by_groups(*, n_states: int, n_points: int, float_bytes: int) -> bool:
    """Return whether the shift search of ``n_points`` actions for ``n_states`` states groups."""
    return float_bytes >= 8 and n_states * n_points >= GROUPED_MIN_PAIRS


def running_best(
    q_of_indices: Callable[[jnp.ndarray], jnp.ndarray],
    *,
    n_points: int,
    block: int,
    q_at: Callable[[jnp.ndarray], jnp.ndarray] | None = None,
) -> tuple[jnp.ndarray, jnp.ndarray]:
    """Return (max Q, int32 first argmax) over ``n_points`` loop-action points.

    ``q_of_indices(indices)`` returns Q for the loop-action points ``indices`` (a 1-D array)
    along its last axis. With ``block == 1`` (CPU) the search is two sweeps over the points,
    each one fused, vectorised update per point:

    1. the running maximum V;
    2. the first point whose Q reaches V up to rounding (``tie_tolerance``): the two sweeps
       are separate compiled loops, which may round the same Q differently in the last bits.

    Where Q is expensive per point, ``q_at(indices)`` gives Q at per-element indices of shape
    ``(*q_shape, k)``, and the second sweep is replaced by ``_grouped``: the first sweep also
    keeps the maximum of each group of about sqrt(n) points, and only each state's first group
    holding the maximum is evaluated again, pointwise (V is read there, with the policy).

    A joint (max, argmax) update would not do: XLA:CPU splits it into two loops over the
    states that both recompute Q and store its inputs in between (3x slower). Larger blocks
    (accelerators) evaluate Q on whole blocks and keep (max, first argmax) across blocks.
    A NaN in Q makes V NaN. The index is -1 where the second sweep found no point (NaN, or a
    rounding difference beyond the tolerance); ``finish`` reports and replaces it.
    """
    if block > 1:
        return _blocks(q_of_indices, n_points=n_points, block=block)
    if q_at is not None:
        return _grouped(q_of_indices, q_at, n_points=n_points)
    shape = jax.eval_shape(q_of_indices, jnp.zeros((1,), dtype=jnp.int32))
    unroll = min(UNROLL, n_points)

    def q_at(j: jnp.ndarray) -> jnp.ndarray:
        return q_of_indices(j[None])[..., 0]

    def raise_best(j: jnp.ndarray, best: jnp.ndarray) -> jnp.ndarray:
        return jnp.maximum(best, q_at(j))

    lowest = jnp.full(shape.shape[:-1], -jnp.inf, dtype=shape.dtype)
    best = jax.lax.fori_loop(0, n_points, raise_best, lowest, unroll=unroll)

    reachable = best - tie_tolerance(best)

    def find_first(j: jnp.ndarray, index: jnp.ndarray) -> jnp.ndarray:
        return jnp.where((index < 0) & (q_at(j) >= reachable), j, index)

    unset = jnp.full(shape.shape[:-1], -1, dtype=jnp.int32)
    index = jax.lax.fori_loop(0, n_points, find_first, unset, unroll=unroll)
    return best, index


def _grouped(
    q_of_indices: Callable[[jnp.ndarray], jnp.ndarray],
    q_at: Callable[[jnp.ndarray], jnp.ndarray],
    *,
    n_points: int,
) -> tuple[jnp.ndarray, jnp.ndarray]:
    """Return (max, first argmax): a max-only sweep by groups, then the winning group again."""
    group = max(1, math.isqrt(n_points - 1) + 1)
    n_groups = -(-n_points // group)
    shape = jax.eval_shape(q_of_indices, jnp.zeros((1,), dtype=jnp.int32))
    lowest = jnp.full(shape.shape[:-1], -jnp.inf, dtype=shape.dtype)

    def group_max(first: jnp.ndarray) -> jnp.ndarray:
        def raise_best(k: jnp.ndarray, best: jnp.ndarray) -> jnp.ndarray:
            index = jnp.minimum(first + k, n_points - 1)
            return jnp.maximum(best, q_of_indices(index[None])[..., 0])

        return jax.lax.fori_loop(0, group, raise_best, lowest, unroll=min(UNROLL, group))

    firsts = jnp.arange(n_groups, dtype=jnp.int32) * group
    maxima = jax.lax.map(group_max, firsts)
    winner = first_argmax(maxima, axis=0)
    indices = jnp.minimum(winner[..., None] * group + jnp.arange(group), n_points - 1)
    q = q_at(indices.astype(jnp.int32))
    local = first_argmax(q, axis=-1)[..., None]
    value = jnp.take_along_axis(q, local, axis=-1)[..., 0]
    return value, jnp.take_along_axis(indices, local, axis=-1)[..., 0].astype(jnp.int32)


def tie_tolerance(value: jnp.ndarray) -> jnp.ndarray:
    """Return how far below ``value`` a Q still counts as reaching it (rounding of Q)."""
    resolution = TIE_ULPS * float(jnp.finfo(value.dtype).eps)
    return jnp.where(jnp.isfinite(value), resolution * (jnp.abs(value) + 1), 0)


def _blocks(
    q_of_indices: Callable[[jnp.ndarray], jnp.ndarray], *, n_points: int, block: int
) -> tuple[jnp.ndarray, jnp.ndarray]:
    """Return (max, first argmax), evaluating Q on blocks of ``block`` points at a time."""
    block = min(block, n_points)
    n_blocks = -(-n_points // block)
    offsets = jnp.arange(block, dtype=jnp.int32)

    def block_best(b: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
        q = q_of_indices(jnp.minimum(b * block + offsets, n_points - 1))
        local = first_argmax(q, axis=-1)
        value = jnp.take_along_axis(q, local[..., None], axis=-1)[..., 0]
        return value, (b * block + local).astype(jnp.int32)

    if n_blocks == 1:
        return block_best(jnp.int32(0))

    def body(b: jnp.ndarray, carry: tuple[jnp.ndarray, jnp.ndarray]) -> Any:
        best, index = carry
        value, position = block_best(b)
        better = (value > best) | (jnp.isnan(value) & ~jnp.isnan(best))
        return jnp.where(better, value, best), jnp.where(better, position, index)

    return jax.lax.fori_loop(1, n_blocks, body, block_best(jnp.int32(0)))


def finish(
    plan: SolvePlan,
    *,
    best: jnp.ndarray,
    index: jnp.ndarray,
    env: dict[str, Any],
    grid_points: dict[str, jnp.ndarray],
) -> tuple[jnp.ndarray, dict[str, jnp.ndarray]]:
    """Return V and the policy from per-(swept state, other action) maxima over the loop action.

    ``best`` and ``index`` have the swept states' axes (model order), then the other actions'
    axes. ``env`` holds params, period and age. The loop action's policy keeps -1 where
    ``running_best`` located no point (see ``program``, which counts and replaces it).

    V is the maximum over the other actions; with taste shocks it is the log-sum over the
    discrete choices of each choice's maximum over the continuous actions (``taste_shocks``),
    exactly the maximum at scale 0. The policy is the maximiser in both cases: with taste shocks
    that is the most likely discrete choice and the best continuous actions given it.
    """
    model = plan.model
    expand = tuple(model.state_names.index(s) for s in plan.folded_states)
    best, index = jnp.expand_dims(best, expand), jnp.expand_dims(index, expand)
    if plan.discrete_constraints:
        feasible = _discrete_feasibility(plan, env=env, grid_points=grid_points)
        best = jnp.where(feasible, best, -jnp.inf)
        index = jnp.where(feasible, index, 0)
    other_shape = tuple(model.actions[a].n_points for a in plan.other_actions)
    full = (*plan.state_shape, *other_shape)
    best, index = jnp.broadcast_to(best, full), jnp.broadcast_to(index, full)
    if not model.actions:
        return best, {}
    if not plan.other_actions:
        return best, {plan.loop_action: index}
    value = None
    if model.taste_shocks:
        per_choice = choice_values(
            best, model=model, actions=plan.other_actions, lead=len(plan.state_shape)
        )
        value = log_sum(per_choice, scale=env[TASTE_SHOCK_SCALE], axis=-1)
    highest, policy = _maximiser(plan, best=best, index=index, other_shape=other_shape)
    return (highest if value is None else value), policy


def _maximiser(
    plan: SolvePlan, *, best: jnp.ndarray, index: jnp.ndarray, other_shape: tuple[int, ...]
) -> tuple[jnp.ndarray, dict[str, jnp.ndarray]]:
    """Return the maximum over the other actions and the actions that reach it.

    Ties go to the lowest flat action index (model order); a NaN maximum chooses index 0.
    """
    model = plan.model
    flat_best = best.reshape(*plan.state_shape, -1)
    flat_index = index.reshape(*plan.state_shape, -1)
    highest = jnp.max(flat_best, axis=-1)
    others = jnp.unravel_index(jnp.arange(flat_best.shape[-1]), other_shape)
    per_action = dict(zip(plan.other_actions, others, strict=True))
    if plan.loop_action is not None:
        per_action[plan.loop_action] = flat_index
    action_shape = tuple(g.n_points for g in model.actions.values())
    order = jnp.ravel_multi_index(
        tuple(jnp.broadcast_to(per_action[a], flat_index.shape) for a in model.action_names),
        action_shape,
        mode="clip",
    )
    ties = jnp.where(flat_best == highest[..., None], order, jnp.iinfo(jnp.int32).max)
    chosen = jnp.argmin(ties, axis=-1)[..., None]
    flat_choice = jnp.take_along_axis(order, chosen, axis=-1)[..., 0]
    flat_choice = jnp.where(jnp.isnan(highest), 0, flat_choice)
    positions = dict(
        zip(model.action_names, jnp.unravel_index(flat_choice, action_shape), strict=True)
    )
    if plan.loop_action is not None:
        positions[plan.loop_action] = jnp.take_along_axis(flat_index, chosen, axis=-1)[..., 0]
    policy = {a: positions[a].astype(jnp.int32) for a in model.action_names}
    return highest, policy


def choice_values(
    values: jnp.ndarray, *, model: Model, actions: Sequence[str], lead: int
) -> jnp.ndarray:
    """Return each discrete choice's value: the maximum over the continuous ``actions``.

    ``values`` has ``lead`` leading axes, then one axis per entry of ``actions`` (model order).
    The result has the leading axes and one axis of the discrete choices: the combinations of
    the model's discrete actions flattened in C order (the last discrete action fastest).
    """
    continuous = tuple(lead + i for i, a in enumerate(actions) if not model.actions[a].is_discrete)
    per_choice = jnp.max(values, axis=continuous) if continuous else values
    return per_choice.reshape(*values.shape[:lead], -1)


def _discrete_feasibility(
    plan: SolvePlan, *, env: dict[str, Any], grid_points: dict[str, jnp.ndarray]
) -> jnp.ndarray:
    """Return the discrete constraints on (states, other actions); continuous axes have size 1."""
    model = plan.model
    check = compose(model, list(plan.discrete_constraints))
    names = [*model.state_names, *plan.other_actions]
    grids = model.states | model.actions
    axes = [
        (n, grid_points[n] if grids[n].is_discrete else grid_points[n][:1], 0, False) for n in names
    ]

    def feasible(values: dict[str, jnp.ndarray], _: Any) -> jnp.ndarray:
        out = check(env | values)
        result = jnp.asarray(True)
        for constraint in plan.discrete_constraints:
            result = result & out[constraint]
        return result

    return sweep(feasible, axes)


def first_argmax(x: jnp.ndarray, *, axis: int) -> jnp.ndarray:
    """Return the int32 index of the first maximum along ``axis`` (the first NaN, if any).

    Equal to ``jnp.argmax``, but as a max reduction and a min reduction of positions, which
    XLA:CPU vectorises; it runs ``argmax``'s joint (value, index) reduction as a scalar loop.
    """
    best = jnp.max(x, axis=axis, keepdims=True)
    hit = (x == best) | jnp.isnan(x)
    positions = jax.lax.broadcasted_iota(jnp.int32, x.shape, axis % x.ndim)
    first = jnp.min(jnp.where(hit, positions, x.shape[axis]), axis=axis)
    return jnp.minimum(first, x.shape[axis] - 1)


def best_choice(q: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
    """Return (max, int32 first argmax) of a flat Q, reading the max through the index."""
    index = first_argmax(q, axis=-1)
    return q[index], index
