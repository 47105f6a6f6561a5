"""Build the period kernel: Q(s, a) = u(s, a) + beta * E[V_{t+1}(s')], maximised over actions.

One jitted kernel serves every non-terminal period (``period`` and ``age`` are run-time
arguments), plus one for the terminal period, so compile time does not grow with the horizon.

The expectation over a stochastic state is formed in one of two ways:

- *pre-contracted*: when its probabilities do not depend on actions and its outcome does not enter
  any law of motion, W = sum_k P_k V_{t+1}[k] is formed once per state point (outside the action
  sweep) and interpolated once per action, exact for linear interpolation;
- *kept*: otherwise the outcomes are swept inside each state-action point and weighted there, so
  the sum fuses with the interpolation and no per-outcome stack of arrays is materialised.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import dags
import jax
import jax.numpy as jnp

from project.grids import Grid
from project.model.spec import DISCOUNT_FACTOR, Model, transition_target
from project.solver.interpolation import interpolate_value

Kernel = Callable[..., tuple[jnp.ndarray, dict[str, jnp.ndarray]]]


@dataclass(frozen=True)
class ExpectationPlan:
    """Which stochastic states are contracted before the action sweep and which are kept.

    ``contraction_inputs`` are the (discrete) states the pre-contracted probabilities depend
    on: W is formed once per period on their grid, before the state sweep, and sliced along
    with those state axes. If a continuous state is among them, W is formed per state point
    inside the sweep instead (``contract_in_sweep``).
    """

    precontracted: tuple[str, ...]
    kept: tuple[str, ...]
    contraction_inputs: tuple[str, ...] = ()
    contract_in_sweep: bool = False

    @classmethod
    def for_model(cls, model: Model) -> ExpectationPlan:
        """Pre-contract every stochastic state whose probabilities ignore actions and outcome."""
        outcome_dependent = model.outcome_dependent_stochastic_states()
        pre, kept = [], []
        for state in model.state_names:
            if state not in model.stochastic_transitions:
                continue
            if state in outcome_dependent or model.depends_on_actions(transition_target(state)):
                kept.append(state)
            else:
                pre.append(state)
        inputs: set[str] = set()
        for state in pre:
            inputs |= model.ancestors(transition_target(state)) & set(model.states)
        ordered = tuple(s for s in model.state_names if s in inputs)
        in_sweep = any(not model.states[s].is_discrete for s in ordered)
        return cls(
            precontracted=tuple(pre),
            kept=tuple(kept),
            contraction_inputs=() if in_sweep else ordered,
            contract_in_sweep=in_sweep,
        )


def compose(model: Model, targets: list[str]) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    """Compose ``targets`` with dags; the result takes one dict of all available inputs."""
    if not targets:
        return lambda env: {}
    func = dags.concatenate_functions(model.dag_functions, targets=targets, return_type="dict")
    arguments = tuple(inspect.signature(func).parameters)
    return lambda env: func(**{a: env[a] for a in arguments})


def sweep(
    func: Callable[[dict[str, jnp.ndarray], Any], Any],
    axes: list[tuple[str, jnp.ndarray, int, bool]],
    carried: Any = None,
) -> Any:
    """Evaluate ``func(values, carried)`` on the product of ``axes``, nested in order.

    Each axis is (name, points, batch_size, slices). An axis with ``batch_size > 0`` is swept with
    ``jax.lax.map`` in chunks of that length (splay), every other axis with ``vmap``. When
    ``slices`` is true, the leading axis of ``carried`` is mapped together with the points, so
    each point sees only its own slice (no gather of the whole array). Outputs gain one leading
    dimension per axis, in order.
    """
    if not axes:
        return func({}, carried)
    name, points, batch_size, slices = axes[0]

    def along_axis(mapped: tuple[jnp.ndarray, Any]) -> Any:
        value, part = mapped
        return sweep(
            lambda inner, c: func({name: value, **inner}, c), axes[1:], part if slices else carried
        )

    mapped = (points, carried if slices else None)
    if batch_size > 0:
        return _map_in_chunks(along_axis, mapped, batch_size=batch_size)
    return jax.vmap(along_axis)(mapped)


def _map_in_chunks(func: Callable[[Any], Any], mapped: Any, *, batch_size: int) -> Any:
    """Apply ``func`` over the leading axis in equal chunks of ``batch_size`` (``lax.map``).

    The axis is padded with copies of its last entry to a multiple of ``batch_size`` and the
    padding is dropped from the result, so every chunk has the same shape: one compiled body,
    and no ragged remainder whose different fusion could change the last bits of the values.
    """
    n = jax.tree.leaves(mapped)[0].shape[0]
    padded_n = -(-n // batch_size) * batch_size
    if padded_n != n:
        mapped = jax.tree.map(
            lambda x: jnp.concatenate([x, jnp.repeat(x[-1:], padded_n - n, axis=0)]), mapped
        )
    result = jax.lax.map(func, mapped, batch_size=batch_size)
    return jax.tree.map(lambda x: x[:n], result)


def weighted_sum(weights: jnp.ndarray, stacked: jnp.ndarray) -> jnp.ndarray:
    """Return sum_k weights[k] * stacked[k], summed in a fixed order.

    Elementwise, unlike a dot product, so the rounding does not depend on how XLA batches it:
    splayed and unsplayed solves stay value-identical.
    """
    total = weights[0] * stacked[0]
    for k in range(1, stacked.shape[0]):
        total = total + weights[k] * stacked[k]
    return total


def _joint_probabilities(probabilities: list[jnp.ndarray]) -> jnp.ndarray:
    joint = jnp.ones(())
    for p in probabilities:
        joint = jnp.multiply.outer(joint, p)
    return joint.ravel()


def build_contraction(model: Model) -> Callable[[jnp.ndarray, dict[str, Any]], jnp.ndarray]:
    """Return ``contract(next_value, env)``: W = E over the pre-contracted states of V_{t+1}."""
    plan = ExpectationPlan.for_model(model)
    per_state = compose(model, [transition_target(s) for s in plan.precontracted])

    def contract(next_value: jnp.ndarray, env: dict[str, Any]) -> jnp.ndarray:
        probabilities = per_state(env)
        axis_names = list(model.state_names)
        expected = next_value
        for state in plan.precontracted:
            expected = weighted_sum(
                probabilities[transition_target(state)],
                jnp.moveaxis(expected, axis_names.index(state), 0),
            )
            axis_names.remove(state)
        return expected

    return contract


def contract_before_sweep(
    model: Model,
    *,
    next_value: jnp.ndarray,
    env: dict[str, Any],
    grid_points: dict[str, jnp.ndarray],
) -> jnp.ndarray:
    """Return W on the grid of the contraction's inputs (leading axes), or V if none applies."""
    plan = ExpectationPlan.for_model(model)
    if not plan.precontracted or plan.contract_in_sweep:
        return next_value
    contract = build_contraction(model)
    axes = [(s, grid_points[s], 0, False) for s in plan.contraction_inputs]
    return sweep(lambda values, _: contract(next_value, env | values), axes)


def build_q_function(model: Model, *, terminal: bool) -> Callable[..., jnp.ndarray]:
    """Return ``q(state_values, expected, params, grid_points, period, age)`` -> Q over actions.

    ``expected`` is next period's V, already contracted over the pre-contracted stochastic states
    and sliced to this state point's contraction inputs (see ``contract_before_sweep``).
    """
    plan = ExpectationPlan.for_model(model)
    contract = build_contraction(model)
    kept_targets = [] if terminal else [transition_target(s) for s in plan.kept]
    per_action = compose(model, ["utility", *model.constraints, *kept_targets])
    per_outcome = compose(model, [f"next_{s}" for s in model.deterministic_states])
    grids: dict[str, Grid] = dict(model.states)
    kept_sizes = [grids[s].n_points for s in plan.kept]
    remaining_axes = [(s, g) for s, g in grids.items() if s not in plan.precontracted]

    def q_function(
        state_values: dict[str, jnp.ndarray],
        expected: jnp.ndarray | None,
        params: dict[str, jnp.ndarray],
        grid_points: dict[str, jnp.ndarray],
        period: jnp.ndarray,
        age: jnp.ndarray,
    ) -> jnp.ndarray:
        env = {**params, **state_values, "period": period, "age": age}
        if not terminal and plan.contract_in_sweep:
            expected = contract(expected, env)

        def action_value(action_values: dict[str, jnp.ndarray], _: Any) -> jnp.ndarray:
            env_action = env | action_values
            out = per_action(env_action)
            feasible = jnp.asarray(True)
            for constraint in model.constraints:
                feasible = feasible & out[constraint]
            if terminal:
                return jnp.where(feasible, out["utility"], -jnp.inf)

            def outcome_value(codes: jnp.ndarray) -> jnp.ndarray:
                outcomes = {s: codes[i] for i, s in enumerate(plan.kept)}
                env_outcome = env_action | {f"next_{s}": c for s, c in outcomes.items()}
                next_states = {k[5:]: v for k, v in per_outcome(env_outcome).items()}
                return interpolate_value(
                    values=expected,
                    axes=remaining_axes,
                    next_states=next_states | outcomes,
                    grid_points=grid_points,
                )

            if plan.kept:
                codes = jnp.stack(
                    [c.ravel() for c in jnp.indices(kept_sizes, dtype=jnp.int32)], axis=-1
                )
                joint = _joint_probabilities([out[transition_target(s)] for s in plan.kept])
                continuation = weighted_sum(joint, jax.vmap(outcome_value)(codes))
            else:
                continuation = outcome_value(jnp.zeros((0,), dtype=jnp.int32))
            q = out["utility"] + params[DISCOUNT_FACTOR] * continuation
            return jnp.where(feasible, q, -jnp.inf)

        action_axes = [(a, grid_points[a], 0, False) for a in model.action_names]
        return sweep(action_value, action_axes)

    return q_function


def _state_axes(
    model: Model, *, grid_points: dict[str, jnp.ndarray], terminal: bool, splay: bool = True
) -> list[tuple[str, jnp.ndarray, int, bool]]:
    sliced = () if terminal else ExpectationPlan.for_model(model).contraction_inputs
    return [
        (s, grid_points[s], g.batch_size if splay else 0, s in sliced)
        for s, g in model.states.items()
    ]


def _expected(
    model: Model,
    *,
    terminal: bool,
    next_value: jnp.ndarray | None,
    params: dict[str, jnp.ndarray],
    grid_points: dict[str, jnp.ndarray],
    period: jnp.ndarray,
    age: jnp.ndarray,
) -> jnp.ndarray | None:
    if terminal:
        return None
    env = {**params, "period": period, "age": age}
    return contract_before_sweep(model, next_value=next_value, env=env, grid_points=grid_points)


def best_choice(q: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
    """Return (max, first argmax) of a flat Q, reading the max through the index.

    A fused ``jnp.max`` + ``jnp.argmax`` is about 40% faster on CPU, but XLA then fuses the Q
    computation differently in splayed and unsplayed kernels and the values differ in the last
    bit; splay must stay value-identical, so the max is read back through the index instead.
    """
    index = jnp.argmax(q)
    return q[index], index.astype(jnp.int32)


def build_period_kernel(model: Model, *, terminal: bool) -> Kernel:
    """Return the jitted kernel ``(next_value, params, grid_points, period, age) -> (V, policy)``.

    ``policy`` maps each action to the int32 index of its optimal grid point per state.
    """
    q_function = build_q_function(model, terminal=terminal)
    action_shape = tuple(g.n_points for g in model.actions.values())

    def kernel(next_value, params, grid_points, period, age):  # noqa: ANN001, ANN202
        expected = _expected(
            model,
            terminal=terminal,
            next_value=next_value,
            params=params,
            grid_points=grid_points,
            period=period,
            age=age,
        )

        def best(
            state_values: dict[str, jnp.ndarray], part: jnp.ndarray | None
        ) -> tuple[jnp.ndarray, jnp.ndarray]:
            q = q_function(state_values, part, params, grid_points, period, age).ravel()
            return best_choice(q)

        axes = _state_axes(model, grid_points=grid_points, terminal=terminal)
        value, flat_index = sweep(best, axes, expected)
        indices = jnp.unravel_index(flat_index, action_shape) if action_shape else ()
        policy = {a: i.astype(jnp.int32) for a, i in zip(model.action_names, indices, strict=True)}
        return value, policy

    return jax.jit(kernel)


def build_q_kernel(model: Model, *, terminal: bool) -> Callable[..., jnp.ndarray]:
    """Return a jitted function giving Q on the full state x action product (debugging only)."""
    q_function = build_q_function(model, terminal=terminal)

    def q_all(next_value, params, grid_points, period, age):  # noqa: ANN001, ANN202
        expected = _expected(
            model,
            terminal=terminal,
            next_value=next_value,
            params=params,
            grid_points=grid_points,
            period=period,
            age=age,
        )
        axes = _state_axes(model, grid_points=grid_points, terminal=terminal, splay=False)
        return sweep(
            lambda values, part: q_function(values, part, params, grid_points, period, age),
            axes,
            expected,
        )

    return jax.jit(q_all)
