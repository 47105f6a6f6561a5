"""The whole backward induction as one jitted program.

The last period reads a next-period V of zeros. Periods that run the same kernel form a
segment; a segment of more than one period is a ``lax.scan`` (one compiled body, so compile
time does not grow with the horizon), a single period is called directly. Unrolling the periods
instead was never faster and compiled 1.6-1.9x slower at T = 5 and 13x slower at T = 50
(docs/tuning.md). The program takes the
packed params and the grid points, and returns V and the policy of every period stacked along a
leading period axis, plus the small int32 *report*: per period the NaN/Inf flags
(``checks.py``) and the params facts (``facts.py``), read back in one transfer; and where V is
small (``memory.outputs_periods``) V of each period apart, so that reading ``value_function``
runs no second program. Nothing runs on the host between periods. With a mesh, V and the policy
are sharded along the permanent states.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from project._xla import jit
from project.devices import mesh_key, value_spec
from project.model.internal import table
from project.model.params import unpack_params
from project.model.spec import Model
from project.points import float_dtype
from project.solver.checks import value_flags
from project.solver.facts import program_facts
from project.solver.kernels import build_kernel
from project.solver.memory import outputs_periods
from project.solver.plan import SolvePlan

# On CPU one loop-action point per step vectorises best; accelerators take large blocks.
CPU_ACTION_BLOCK = 1
# On accelerators, at most this many Q points (states x other actions x block) per step.
ACCELERATOR_BLOCK_POINTS = 2**26

# (V stacked, the policies stacked, the report, V of each period or () where V is large)
Program = Callable[..., tuple[jax.Array, dict[str, jax.Array], jax.Array, tuple[jax.Array, ...]]]
# The report's first columns (checks.value_flags); facts.fact_columns follow.
FLAG_COLUMNS = ("nan", "posinf", "neginf", "unlocated")

PROGRAMS = table("grid-search programs by kernels, mesh and dtype")


def action_block(plan: SolvePlan, *, backend: str) -> int:
    """Return how many loop-action points each step of the running maximum evaluates."""
    if plan.loop_action is None:
        return 1
    n_loop = plan.model.actions[plan.loop_action].n_points
    if backend == "cpu":
        return CPU_ACTION_BLOCK
    grids = plan.model.states | plan.model.actions
    per_point = int(np.prod([grids[s].n_points for s in (*plan.swept_states, *plan.other_actions)]))
    return max(1, min(n_loop, ACCELERATOR_BLOCK_POINTS // max(per_point, 1)))


def solve_program(plan: SolvePlan, *, kernels: tuple[str, ...], mesh: Mesh | None) -> Program:
    """Return the jitted program for these per-period kernels, built once and reused."""
    backend = jax.default_backend() if mesh is None else mesh.devices.flat[0].platform
    block = action_block(plan, backend=backend)
    key = (kernels, plan.structure, mesh_key(mesh), block, float_dtype())
    programs = PROGRAMS.of(plan.model)
    if key not in programs:
        programs[key] = jit(_build(plan, kernels=kernels, mesh=mesh, block=block))
    return programs[key]


def _build(
    plan: SolvePlan, *, kernels: tuple[str, ...], mesh: Mesh | None, block: int
) -> Callable[..., Any]:
    model = plan.model
    sharding = None if mesh is None else NamedSharding(mesh, value_spec(model))
    built = {
        name: kernel_step(plan, build_kernel(name, plan, block=block, mesh=mesh), sharding=sharding)
        for name in set(kernels)
    }
    ages = np.asarray(model.ages, dtype=float_dtype())
    apart = outputs_periods(model)

    def step(name: str, next_value: Any, params: Any, grid_points: Any, period: Any, age: Any):  # noqa: ANN202
        return built[name](next_value, params, grid_points, period, age)

    def program(flat_params, grid_points):  # noqa: ANN001, ANN202
        params = unpack_params(model=model, flat=flat_params)
        periods = jnp.arange(model.n_periods, dtype=jnp.int32)
        facts = program_facts(
            plan, params=params, grid_points=grid_points, periods=periods, ages=jnp.asarray(ages)
        )
        pieces = []
        next_value = jnp.zeros(plan.state_shape, ages.dtype)
        if sharding is not None:
            next_value = jax.lax.with_sharding_constraint(next_value, sharding)
        for name, first, stop in reversed(_segments(kernels)):
            if stop - first == 1:
                out = step(name, next_value, params, grid_points, jnp.int32(first), ages[first])
                next_value = out[0]
                pieces.insert(0, jax.tree.map(lambda x: x[None], out))
                continue

            def body(carry, period_and_age, name=name):  # noqa: ANN001, ANN202
                out = step(name, carry, params, grid_points, *period_and_age)
                return out[0], out

            xs = (jnp.arange(first, stop, dtype=jnp.int32), jnp.asarray(ages[first:stop]))
            next_value, stacked = jax.lax.scan(body, next_value, xs, reverse=True)
            pieces.insert(0, stacked)
        values, policies, flags = jax.tree.map(lambda *xs: jnp.concatenate(xs), *pieces)
        report = jnp.concatenate(
            [flags, *(jnp.asarray(f, dtype=jnp.int32)[:, None] for f in facts)], axis=1
        )
        if sharding is not None:
            stacked_sharding = NamedSharding(mesh, PartitionSpec(None, *value_spec(model)))
            values = jax.lax.with_sharding_constraint(values, stacked_sharding)
            policies = jax.lax.with_sharding_constraint(policies, stacked_sharding)
        periods = tuple(values[t] for t in range(model.n_periods)) if apart else ()
        if sharding is not None:
            periods = tuple(jax.lax.with_sharding_constraint(v, sharding) for v in periods)
        return values, policies, report, periods

    return program


def kernel_step(
    plan: SolvePlan, kernel: Callable[..., Any], *, sharding: NamedSharding | None = None
) -> Callable[..., tuple[jax.Array, dict[str, jax.Array], jax.Array]]:
    """Return ``step(next_value, params, grid_points, period, age) -> (V, policy, flags)``.

    The loop action's policy is -1 where the search located no point: those states are counted
    (``checks.value_flags``) and their index set to 0.
    """

    def step(next_value: Any, params: Any, grid_points: Any, period: Any, age: Any) -> Any:
        value, policy = kernel(next_value, params, grid_points, period, age)
        unlocated = jnp.zeros((), dtype=jnp.int32)
        if plan.loop_action is not None:
            loop_policy = policy[plan.loop_action]
            unlocated = jnp.sum((loop_policy < 0) & ~jnp.isnan(value), dtype=jnp.int32)
            policy = policy | {plan.loop_action: jnp.maximum(loop_policy, 0)}
        if sharding is not None:
            value = jax.lax.with_sharding_constraint(value, sharding)
            policy = jax.lax.with_sharding_constraint(policy, sharding)
        return value, policy, value_flags(value, unlocated=unlocated)

    return step


def _segments(kernels: tuple[str, ...]) -> list[tuple[str, int, int]]:
    """Return runs of periods with the same kernel as (name, first period, stop)."""
    segments: list[tuple[str, int, int]] = []
    for period, name in enumerate(kernels):
        if segments and segments[-1][0] == name:
            segments[-1] = (name, segments[-1][1], period + 1)
        else:
            segments.append((name, period, period + 1))
    return segments


def compiled_programs(model: Model) -> int:
    """Return how many solve programs have been compiled for ``model`` (all meshes, choices)."""
    return sum(program._cache_size() for program in PROGRAMS.of(model).values())
