"""Reading a solved period at a state: each discrete choice's consumption and value, combined.

Arrays hold, per discrete context and choice, the endogenous wealth nodes (node 0 is the
borrowing limit), consumption there and V in consumption-equivalent form (see ``program.py``).
At wealth ``w`` each feasible choice gives ``(c_d, v_d)``; V is their log-sum with the taste-shock
scale (the maximum at scale 0) and choice ``d`` is taken with its logit probability. Without
discrete actions there is one choice and V is its value. The solve (next period's expectation),
evaluation and simulation all read a period through ``at_state``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from project.egm.search import lift
from project.egm.structure import EGMStructure
from project.egm.utility import Utility
from project.taste_shocks import log_sum_and_probabilities


class EGMArrays(NamedTuple):
    """Per period (leading axis), context and choice: the endogenous grid and what lives on it.

    ``wealth``, ``consumption``, ``value_equivalent`` (nu = u^{-1}(V)) and its slope in wealth
    ``equivalent_slope`` (u'(c)/u'(nu)) end in the node axis; ``constrained_continuation``
    (beta·E[V'] at the limit) and ``feasible`` (the choice is allowed) end in the choice axis.
    """

    wealth: jax.Array
    consumption: jax.Array
    value_equivalent: jax.Array
    equivalent_slope: jax.Array
    constrained_continuation: jax.Array
    feasible: jax.Array


class AtState(NamedTuple):
    """Per choice (leading axis): consumption, value (-inf if infeasible), probability; and V."""

    consumption: jnp.ndarray
    value: jnp.ndarray
    probability: jnp.ndarray
    total: jnp.ndarray
    marginal: jnp.ndarray | None


class _Row(NamedTuple):
    """One context's and choice's row of a node-ending array, read element by element.

    Indexing the row's elements straight from the whole array, instead of slicing the row
    first, keeps a vmapped read (the simulation: one context per subject) from copying a whole
    row for every subject. Every index is non-negative, so none is wrapped: the wrapping, three
    operations per index, was a sixth of the estimation program's trace.
    """

    table: jax.Array
    context: jnp.ndarray | int
    choice: jnp.ndarray

    def __getitem__(self, index: jnp.ndarray) -> jnp.ndarray:
        return self.table.at[self.context, self.choice, index].get(wrap_negative_indices=False)


def _count_at_most(nodes: _Row, x: jnp.ndarray, *, unroll: bool = False) -> jnp.ndarray:
    """Return how many nodes are at most ``x`` (``searchsorted(..., side="right")``).

    A binary search of ceil(log2(n + 1)) steps that reads one node per step (``search.lift``
    from a count of 0); a NaN node counts as larger than every ``x``, as in
    ``jnp.searchsorted``. ``unroll`` writes the steps out (a longer compile).
    """
    n = nodes.table.shape[-1]

    def passes(count: jnp.ndarray) -> jnp.ndarray:
        return (count <= n) & (nodes[jnp.minimum(count, n) - 1] <= x)

    start = jnp.zeros(jnp.shape(x), jnp.int32)
    return lift(start, steps=max(1, n).bit_length(), passes=passes, unroll=unroll)


def _between(x: jnp.ndarray, nodes: _Row, values: _Row, upper: jnp.ndarray) -> jnp.ndarray:
    """Return ``values`` interpolated linearly at ``x`` on the segment ending at ``upper``."""
    x0, x1 = nodes[upper - 1], nodes[upper]
    return values[upper - 1] + (x - x0) * ((values[upper] - values[upper - 1]) / (x1 - x0))


def _hermite(
    x: jnp.ndarray, nodes: _Row, values: _Row, slopes: _Row, upper: jnp.ndarray
) -> jnp.ndarray:
    """Return the cubic Hermite interpolation of ``values`` with ``slopes`` at ``x``.

    On the segment ending at ``upper``; beyond the ends it extends the end's tangent.
    """
    x0, x1 = nodes[upper - 1], nodes[upper]
    y0, y1 = values[upper - 1], values[upper]
    m0, m1 = slopes[upper - 1], slopes[upper]
    h = x1 - x0
    t = (x - x0) / h
    t2, t3 = t * t, t * t * t
    cubic = (
        (2 * t3 - 3 * t2 + 1) * y0
        + (t3 - 2 * t2 + t) * h * m0
        + (3 * t2 - 2 * t3) * y1
        + (t3 - t2) * h * m1
    )
    below = y0 + (x - x0) * m0
    above = y1 + (x - x1) * m1
    return jnp.where(t < 0, below, jnp.where(t > 1, above, cubic))


def choice_env(structure: EGMStructure, env: dict[str, Any], choice: jnp.ndarray) -> dict[str, Any]:
    """Return ``env`` with the discrete actions of flat choice ``choice``.

    An action whose codes are the choices themselves (one discrete action) is ``choice``; the
    others are read from their column of the code combinations.
    """
    dtype = jax.dtypes.canonicalize_dtype(structure.choices.dtype)
    codes = {}
    for i, action in enumerate(structure.discrete_actions):
        column = structure.choices[:, i]
        if np.array_equal(column, np.arange(column.size)):
            codes[action] = jnp.asarray(choice, dtype=dtype)
        else:
            codes[action] = jnp.asarray(column).at[choice].get(wrap_negative_indices=False)
    return env | codes


def at_state(
    arrays: EGMArrays,
    context: jnp.ndarray | int,
    wealth: jnp.ndarray,
    *,
    structure: EGMStructure,
    utility: Utility,
    env: dict[str, Any],
    limit: jnp.ndarray,
    scale: jnp.ndarray,
    with_marginal: bool = False,
    unroll: bool = False,
) -> AtState:
    """Return every choice's consumption and value at ``wealth`` in ``context``, and V.

    ``arrays`` hold one period with contexts flattened (context, choice, node); ``env`` holds
    params, the discrete states, period and age. ``with_marginal`` adds Σ_d P_d·u'_d(c_d);
    ``unroll`` writes out the search for ``wealth``'s segment (``_count_at_most``).
    """

    def one(choice: jnp.ndarray) -> tuple[jnp.ndarray, ...]:
        return _choice_at(
            arrays,
            context,
            wealth,
            choice,
            structure=structure,
            utility=utility,
            env=env,
            limit=limit,
            with_marginal=with_marginal,
            unroll=unroll,
        )

    choices = jnp.arange(structure.n_choices)
    consumption, value, marginal = jax.vmap(one)(choices)
    feasible = arrays.feasible[context].reshape((-1,) + (1,) * wealth.ndim)
    value = jnp.where(feasible, value, -jnp.inf)
    if structure.n_choices == 1:
        probability = jnp.ones_like(value)
        total = value[0]
    else:
        total, probability = log_sum_and_probabilities(value, scale=scale, axis=0)
    expected_marginal = None
    if with_marginal:
        expected_marginal = jnp.sum(jnp.where(probability > 0, probability * marginal, 0), axis=0)
    return AtState(
        consumption=consumption,
        value=value,
        probability=probability,
        total=total,
        marginal=expected_marginal,
    )


def at_only_choice(
    arrays: EGMArrays,
    context: jnp.ndarray | int,
    wealth: jnp.ndarray,
    *,
    structure: EGMStructure,
    utility: Utility,
    env: dict[str, Any],
    limit: jnp.ndarray,
    unroll: bool = False,
) -> tuple[jnp.ndarray, jnp.ndarray, jnp.ndarray]:
    """Return the choice, its consumption and V where ``context`` allows one choice only.

    What ``at_state`` gives there, to the bit (V is the one feasible choice's value: the
    maximum, or the log-sum, of it and the others' -inf), reading one choice instead of all.
    """
    choice = jnp.argmax(arrays.feasible[context]).astype(jnp.int32)
    consumption, value, _ = _choice_at(
        arrays,
        context,
        wealth,
        choice,
        structure=structure,
        utility=utility,
        env=env,
        limit=limit,
        with_marginal=False,
        unroll=unroll,
    )
    return choice, consumption, value


def _choice_at(
    arrays: EGMArrays,
    context: jnp.ndarray | int,
    wealth: jnp.ndarray,
    choice: jnp.ndarray,
    *,
    structure: EGMStructure,
    utility: Utility,
    env: dict[str, Any],
    limit: jnp.ndarray,
    with_marginal: bool,
    unroll: bool,
) -> tuple[jnp.ndarray, jnp.ndarray, jnp.ndarray]:
    """Return choice ``choice``'s consumption, value and marginal utility (or consumption)."""
    here = choice_env(structure, env, choice)

    def row(table: jax.Array) -> _Row:
        return _Row(table, context, choice)

    nodes = row(arrays.wealth)
    # One search serves both: V interpolates from node 1 on (node 0 is the limit, where V
    # is the exact constrained value instead).
    upper = jnp.clip(_count_at_most(nodes, wealth, unroll=unroll), 1, arrays.wealth.shape[-1] - 1)
    consumption = _between(wealth, nodes, row(arrays.consumption), upper)
    equivalent = _hermite(
        wealth,
        nodes,
        row(arrays.value_equivalent),
        row(arrays.equivalent_slope),
        jnp.maximum(upper, 2),
    )
    # Below node 1 the limit binds: V = u(w - limit) + beta·E[V'(limit)], exactly.
    constrained = wealth < nodes[1]
    level = utility.value(jnp.where(constrained, wealth - limit, equivalent), here)
    value = level + jnp.where(constrained, arrays.constrained_continuation[context, choice], 0)
    marginal = utility.marginal(consumption, here) if with_marginal else consumption
    return consumption, value, marginal
