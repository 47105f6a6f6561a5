"""The endogenous grid method (EGM, and DC-EGM with discrete choices) as one jitted program.

A scan over periods, backwards. Per period, discrete context and discrete choice, on the savings
grid ``s_j`` (the post-decision state):

1. next wealth ``w' = next_w(w=s_j, c=0)`` (= a·s_j + b, given the choice) and its slope ``a``
   for every outcome of the stochastic states and every node of the iid shocks;
2. next period read at ``w'`` (``choices.at_state``): each next choice's consumption and value,
   combined into ``E[V']`` (the log-sum over choices with taste shocks, else the maximum) and
   ``E[a·Σ_d P_d·u'(c'_d)]``;
3. the Euler equation ``u'(c_j) = beta·E[a·u'(c')]`` inverted for ``c_j``; the endogenous grid
   ``w_j = s_j + c_j``; ``V_j = u(c_j) + beta·E[V']``;
4. with discrete actions, the upper envelope (``envelope.py``) drops the points that are not
   optimal and the rest are sorted; without, a non-monotone grid is reported instead.

Below the first endogenous point the borrowing limit ``s_0`` binds: ``c = w - s_0`` and
``V(w) = u(w - s_0) + beta·E[V'(s_0)]``, both exact. Node 0 of every period is the point
``(w, c) = (s_0, 0)``, so interpolating consumption over all nodes gives ``c = w - s_0`` there.
V is stored as its consumption equivalent ``nu = u^{-1}(V)`` (under the choice's utility), which
is linear in ``w`` for CRRA utility without income, and interpolated linearly. The last period
consumes down to ``s_0``. Which choices are feasible comes from the constraints that involve
neither ``w`` nor ``c``.

The report has one row per period: NaN/inf in the result, a non-monotone endogenous grid (EGM)
or an envelope window too narrow (DC-EGM), the residuals of the two numerical inverses (see
``utility.py``) beyond tolerance, a context without a feasible choice, and the most runs of
increasing wealth seen in one endogenous grid.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from project._xla import quick_compile_options
from project.egm.choices import EGMArrays, at_state, choice_env
from project.egm.envelope import clean_grids
from project.egm.structure import EGMStructure, egm_structure
from project.egm.transitions import Transitions
from project.egm.utility import Utility
from project.model.params import unpack_params
from project.model.spec import DISCOUNT_FACTOR, Model
from project.shocks import shock_tables
from project.solver.sweep import compose
from project.taste_shocks import TASTE_SHOCK_SCALE

REPORT_COLUMNS = (
    "not_finite",
    "non_monotone",
    "inverse_marginal_residual",
    "inverse_residual",
    "no_feasible_choice",
    "runs",
)


def build_program(
    model: Model, *, window: int
) -> Callable[[jax.Array, jax.Array], tuple[EGMArrays, jax.Array]]:
    """Return the jitted ``program(flat_params, savings) -> (arrays, report)``.

    ``window`` is how many neighbouring runs the upper envelope compares (DC-EGM only).
    """
    structure = egm_structure(model)
    utility = Utility(model, structure)
    transitions = Transitions(model, structure)
    feasibility = compose(model, list(structure.choice_constraints))
    n_periods = model.n_periods
    with_envelope = bool(structure.discrete_actions)

    def program(flat_params: jax.Array, savings: jax.Array) -> tuple[EGMArrays, jax.Array]:
        params = unpack_params(model=model, flat=flat_params)
        dtype = savings.dtype
        ages = jnp.asarray(np.asarray(model.ages), dtype=dtype)
        contexts = jnp.asarray(structure.contexts)
        reduced = jnp.asarray(structure.reduced_contexts)
        rows = jnp.asarray(structure.reduced_row)
        members = jnp.asarray(structure.reduced_members)
        choices = jnp.arange(structure.n_choices)
        shocks, shock_weights, _ = shock_tables(model.shocks, params)
        shock_weights = shock_weights.astype(dtype)
        shocks = {k: v.astype(dtype) for k, v in shocks.items()}
        scale = params[TASTE_SHOCK_SCALE] if model.taste_shocks else jnp.zeros((), dtype)
        tolerance = float(1e3 * jnp.finfo(dtype).eps)
        beta = params[DISCOUNT_FACTOR]

        def env_of(
            codes: jnp.ndarray, period: jnp.ndarray, names: tuple[str, ...] = structure.discrete
        ) -> dict[str, Any]:
            named = {s: codes[i] for i, s in enumerate(names)}
            return params | named | {"period": period, "age": ages[period]}

        def choice_allowed(env: dict[str, Any]) -> jnp.ndarray:
            out = feasibility(env)
            allowed = jnp.asarray(True)
            for constraint in structure.choice_constraints:
                allowed = allowed & jnp.asarray(out[constraint])
            return allowed

        def feasible_in(period: jnp.ndarray) -> jnp.ndarray:
            def one(codes: jnp.ndarray, choice: jnp.ndarray) -> jnp.ndarray:
                return choice_allowed(choice_env(structure, env_of(codes, period), choice))

            return jax.vmap(lambda codes: jax.vmap(lambda d: one(codes, d))(choices))(contexts)

        def period_step(carry: EGMArrays, period: jnp.ndarray) -> tuple[EGMArrays, Any]:
            def one_pair(
                codes: jnp.ndarray, choice: jnp.ndarray, allowed: jnp.ndarray
            ) -> tuple[Any, ...]:
                env = choice_env(structure, env_of(codes, period, structure.kept), choice)
                marginal, value, guess = _expectations(
                    transitions,
                    env,
                    savings=savings,
                    next_env=lambda next_codes: env_of(next_codes, period + 1),
                    shocks=shocks,
                    shock_weights=shock_weights,
                    read=lambda context, wealth, next_env: at_state(
                        carry,
                        context,
                        wealth,
                        structure=structure,
                        utility=utility,
                        env=next_env,
                        limit=savings[0],
                        scale=scale,
                        with_marginal=True,
                    ),
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
                wealth = savings + consumption
                below = wealth < wealth[0]
                # u at c_j and, below the first endogenous point, at consuming down to the limit.
                slack = jnp.where(below, wealth - savings[0], 1.0)
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
                        jnp.any(jnp.diff(wealth) <= 0) | (wealth[0] < savings[0]),
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
                secant = jnp.diff(equivalent, append=equivalent[-1:]) / jnp.where(
                    step > 0, step, 1.0
                )
                slope = jnp.where((equivalent > 0) & jnp.isfinite(ratio), ratio, secant)
                grids = (wealth, consumption, equivalent, slope)
                return (grids, value_now, constrained), beta * value[0], flags

            # Folded states (read only by choice constraints) do not change a context's EGM
            # step: run it once per reduced context, where any of its contexts allows the choice.
            feasible = feasible_in(period)
            allowed = jnp.any(feasible[members], axis=1)
            # One vmap over all (context, choice) pairs: each nested vmap re-processes every
            # traced operation, which is most of the first call's tracing time.
            shape = (reduced.shape[0], structure.n_choices)
            pair_context, pair_choice = (x.ravel() for x in jnp.indices(shape))
            per_pair = jax.vmap(one_pair)(reduced[pair_context], pair_choice, allowed.ravel())
            (grids, value_now, constrained), continuation, flags = jax.tree.map(
                lambda x: x.reshape(*shape, *x.shape[1:]), per_pair
            )
            runs = jnp.ones((*shape, 1), jnp.int32)
            if with_envelope:

                def flat(x: jnp.ndarray) -> jnp.ndarray:
                    return x.reshape(-1, x.shape[-1])

                cleaned, exact, runs = clean_grids(
                    tuple(map(flat, grids)), flat(value_now), flat(constrained), window=window
                )
                grids = tuple(x.reshape(*shape, -1) for x in cleaned)
                flags = flags.at[..., 1].set((~exact).reshape(shape).astype(jnp.int32))
                runs = runs.reshape(*shape, 1)
            wealth, consumption, equivalent, slope = (x[rows] for x in grids)
            continuation, flags, runs = continuation[rows], flags[rows], runs[rows]
            shape = (structure.n_contexts, structure.n_choices)
            zero = jnp.zeros((*shape, 1), dtype=dtype)
            start = jnp.broadcast_to(savings[:1], (*shape, 1))
            arrays = EGMArrays(
                wealth=jnp.concatenate([start, wealth], axis=-1),
                consumption=jnp.concatenate([zero, consumption], axis=-1),
                value_equivalent=jnp.concatenate([zero, equivalent], axis=-1),
                equivalent_slope=jnp.concatenate([zero + 1, slope], axis=-1),
                constrained_continuation=continuation,
                feasible=feasible,
            )
            report = _period_report(jnp.concatenate([flags, runs], axis=-1), feasible)
            return arrays, (arrays, report)

        last = jnp.int32(n_periods - 1)
        terminal = _terminal(savings, structure=structure, feasible=feasible_in(last))
        terminal_report = _period_report(
            jnp.zeros((structure.n_contexts, structure.n_choices, 5), jnp.int32), terminal.feasible
        )
        steps = jnp.arange(n_periods - 1, dtype=jnp.int32)
        _, (history, reports) = jax.lax.scan(period_step, terminal, steps, reverse=True)
        stacked = jax.tree.map(
            lambda earlier, final: jnp.concatenate([earlier, final[None]]), history, terminal
        )
        return stacked, jnp.concatenate([reports, terminal_report[None]])

    return jax.jit(program, compiler_options=quick_compile_options())


def _period_report(flags: jnp.ndarray, feasible: jnp.ndarray) -> jnp.ndarray:
    """Return one report row from per-(context, choice) flags; infeasible choices ignored."""
    checked = jnp.where(feasible[..., None], flags[..., :4], 0)
    any_flag = jnp.any(checked > 0, axis=(0, 1)).astype(jnp.int32)
    no_choice = jnp.any(~jnp.any(feasible, axis=1)).astype(jnp.int32)
    runs = jnp.max(jnp.where(feasible, flags[..., 4], 0))
    return jnp.concatenate([any_flag, no_choice[None], runs[None]])


def _terminal(savings: jnp.ndarray, *, structure: EGMStructure, feasible: jnp.ndarray) -> EGMArrays:
    """Return the last period: consume down to the limit, V = u(c) (nu = c, exact)."""
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
        feasible=feasible,
    )


def _expectations(
    transitions: Transitions,
    env: dict[str, Any],
    *,
    savings: jnp.ndarray,
    next_env: Callable[[jnp.ndarray], dict[str, Any]],
    shocks: dict[str, jnp.ndarray],
    shock_weights: jnp.ndarray,
    read: Callable[..., Any],
) -> tuple[jnp.ndarray, ...]:
    """Return E[a·Σ P·u'(c')], E[V'] and E[Σ P·c'] per savings point."""
    following = transitions.next_states(
        env, savings=savings, shocks=shocks, shock_weights=shock_weights
    )
    contexts = jnp.asarray(transitions.structure.contexts)

    def per_pair(context: jnp.ndarray, wealth: jnp.ndarray, slope: jnp.ndarray) -> Any:
        state = read(context, wealth, next_env(contexts[context]))
        guess = jnp.sum(state.probability * state.consumption, axis=0)
        return slope * state.marginal, state.total, guess

    # One vmap over the (outcome, node) pairs, flattened (see the pairs in ``period_step``).
    pairs = following.weight.shape
    flat = (
        x.reshape(-1, *x.shape[2:]) for x in (following.context, following.wealth, following.slope)
    )
    parts = jax.vmap(per_pair)(*flat)
    return tuple(
        jnp.tensordot(following.weight, part.reshape(*pairs, *part.shape[1:]), axes=2)
        for part in parts
    )
