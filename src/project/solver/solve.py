"""Solve a model by backward induction: plan, choose kernels, run one program, check.

Reading ``solve`` top to bottom is the whole path of a solve:

1. ``plan_for``: static facts of the model (loop action, folded states, structure), once per model;
2. params on the host, packed into one vector, and their fingerprint;
3. ``choose_kernels``: the kernel of every period, with the reason; where that depends on the
   params (the shift kernel's slope) and these params are new, the last pattern seen is assumed;
4. ``solve_program``: the backward induction as one jitted program, built once per choice;
5. one run, then one read of the small report: NaN/Inf flags, slope and transition facts. A
   wrong slope assumption re-runs with the right kernels (and is remembered); the checks follow.
"""

from __future__ import annotations

import logging
import time
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh

from project.devices import check_permanent_states, replicate, state_mesh
from project.grids import grid_points
from project.model.params import pack_params, params_on_host, unpack_params
from project.model.spec import Model
from project.points import float_dtype
from project.solver.checks import LogLevel, check_log_level, nan_locations, report_flags
from project.solver.facts import (
    KnownFacts,
    fact_columns,
    fingerprint,
    known_facts,
    needs_slope_probe,
    remember_facts,
    slope_guess,
)
from project.solver.plan import SolvePlan, general_plan, plan_for
from project.solver.program import FLAG_COLUMNS, compiled_programs, solve_program
from project.solver.q import build_q_kernel
from project.solver.selection import KernelChoice, choose_kernels, log_kernels
from project.solver.solution import Solution
from project.solver.transitions import raise_for_invalid_transitions

logger = logging.getLogger("project.solver")

_GRID_POINTS: weakref.WeakKeyDictionary[Model, dict[Any, dict[str, jax.Array]]] = (
    weakref.WeakKeyDictionary()
)
_DEVICE_PARAMS: weakref.WeakKeyDictionary[Model, tuple[str, Any, Any]] = weakref.WeakKeyDictionary()


def solve(
    *,
    model: Model,
    params: Mapping[str, Any],
    log_level: LogLevel = "warning",
    devices: Sequence[Any] | None = None,
    exploit_structure: bool = True,
) -> Solution:
    """Solve ``model`` by backward induction and return V and the policy of every period.

    States marked ``distributed`` are sharded over all devices (see ``project.devices``); V
    is returned materialised and still sharded.

    ``log_level``: "off" (no checks), "warning" (warn about NaN/inf and states without a
    feasible action, and check transition probabilities once per params), "progress" (also log
    each period's kernel and the solve time), "debug" (raise ``InvalidValueFunctionError``
    locating NaNs). ``devices``: the devices to shard over (default: all).
    ``exploit_structure=False`` runs the general kernel in every period (to cross-check the
    structure kernels, which give the same V to rounding).
    """
    check_log_level(log_level)
    plan = plan_for(model) if exploit_structure else general_plan(model)
    host_params = params_on_host(model=model, params=params)
    flat_params = pack_params(host_params)
    key = fingerprint(flat_params)
    mesh = state_mesh(model, devices=devices)
    points = grid_points_of(model, mesh=mesh)
    device_params = _on_devices(model, flat_params, key=key, mesh=mesh)
    if mesh is not None:
        check_permanent_states(model=model, grid_points=points)
    known = known_facts(model, key=key)
    known_slopes = None if known is None else known.unit_slope
    slopes = known_slopes if known_slopes is not None else slope_guess(model)
    started, compiled_before = time.perf_counter(), compiled_programs(model)
    choices, values, policies, report = _run(plan, slopes, device_params, points, mesh)
    if needs_slope_probe(plan) and tuple(report["unit_slope"]) != slopes:
        assumed = _kernel_names(plan, slopes)
        slopes = tuple(bool(s) for s in report["unit_slope"])
        if _kernel_names(plan, slopes) != assumed:
            choices, values, policies, report = _run(plan, slopes, device_params, points, mesh)
    checks = log_level != "off"
    transitions_valid = known is not None and known.transitions_valid
    if checks and not transitions_valid:
        if not all(report[c].all() for c in report if c.startswith("valid:")):
            raise_for_invalid_transitions(
                model, params=unpack_params(model=model, flat=device_params), grid_points=points
            )
        transitions_valid = True
    remember_facts(
        model,
        key=key,
        facts=KnownFacts(
            unit_slope=slopes if needs_slope_probe(plan) else known_slopes,
            transitions_valid=transitions_valid,
        ),
    )
    solution = Solution(
        model=model,
        params=host_params,
        values=values,
        policies=policies,
        kernels=tuple(c.name for c in choices),
    )
    if checks:
        report_flags(
            report["flags"],
            log_level=log_level,
            describe=lambda period: _describe_nans(solution, period=period, points=points),
        )
    if log_level in ("progress", "debug"):
        log_kernels(plan, choices)
        logger.info(
            "Solved %r: %d periods in %.3f s%s.",
            model.name,
            model.n_periods,
            time.perf_counter() - started,
            " (compiling the program included)"
            if compiled_programs(model) > compiled_before
            else "",
        )
    return solution


def _run(
    plan: SolvePlan,
    slopes: tuple[bool, ...],
    device_params: Any,
    points: dict[str, jax.Array],
    mesh: Mesh | None,
) -> tuple[tuple[KernelChoice, ...], jax.Array, dict[str, jax.Array], dict[str, Any]]:
    """Run the program for the kernels that ``slopes`` implies; read its report (one sync)."""
    choices = choose_kernels(plan, unit_slope=slopes)
    program = solve_program(plan, kernels=tuple(c.name for c in choices), mesh=mesh)
    values, policies, packed = program(device_params, points)
    table = np.asarray(packed)
    report: dict[str, Any] = {"flags": table[:, : len(FLAG_COLUMNS)]}
    for index, column in enumerate(fact_columns(plan)):
        report[column] = table[:, len(FLAG_COLUMNS) + index].astype(bool)
    return choices, values, policies, report


def _on_devices(model: Model, flat_params: np.ndarray, *, key: str, mesh: Mesh | None) -> Any:
    """Return the packed params on the devices, reusing the copy of the model's last params."""
    cached = _DEVICE_PARAMS.get(model)
    mesh_key = None if mesh is None else id(mesh)
    if cached is not None and cached[:2] == (key, mesh_key):
        return cached[2]
    placed = jax.device_put(flat_params) if mesh is None else replicate(flat_params, mesh=mesh)
    _DEVICE_PARAMS[model] = (key, mesh_key, placed)
    return placed


def _kernel_names(plan: SolvePlan, slopes: tuple[bool, ...]) -> tuple[str, ...]:
    return tuple(c.name for c in choose_kernels(plan, unit_slope=slopes))


def grid_points_of(model: Model, *, mesh: Mesh | None = None) -> dict[str, jax.Array]:
    """Return every state and action grid's points in the working precision (cached)."""
    per_model = _GRID_POINTS.setdefault(model, {})
    key = (str(float_dtype()), None if mesh is None else id(mesh))
    if key not in per_model:
        points = grid_points(model.states | model.actions)
        per_model[key] = points if mesh is None else replicate(points, mesh=mesh)
    return per_model[key]


def _describe_nans(solution: Solution, *, period: int, points: dict[str, jax.Array]) -> str:
    """Return where V and Q of ``period`` are NaN (the debug diagnosis)."""
    model = solution.model
    last = period == model.n_periods - 1
    next_value = solution.values[period + 1] if not last else jnp.zeros_like(solution.values[0])
    params = {k: jnp.asarray(v) for k, v in solution.params.items()}
    age = np.asarray(model.ages[period], dtype=float_dtype())
    q = build_q_kernel(model, continuation=not last)(
        next_value, params, points, jnp.int32(period), age
    )
    names = (*model.state_names, *model.action_names)
    return (
        f"States: {nan_locations(solution.values[period], axis_names=model.state_names)}. "
        f"Q(state, action) is NaN at: {nan_locations(q, axis_names=names)}."
    )
