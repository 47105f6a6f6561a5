"""Solve a model by grid search, backward: plan, choose kernels, run one program, check.

``project.solve`` hands a model here when the method is "grid". Reading ``solve_grid`` top to
bottom is the whole path of a solve:

1. ``plan_for``: static facts of the model (loop action, folded states, structure), once per model;
2. params on the host, packed into one vector, and their fingerprint;
3. ``choose_kernels``: the kernel of every period, with the reason; where that depends on the
   params (the shift kernel's slope) and these params are new, the last pattern seen is assumed;
4. ``solve_program``: the backward induction as one jitted program, built once per choice;
5. one run; the solution is built while it runs, then one read of the small report (NaN/Inf
   flags, slope and transition facts) where the checks or new params' slopes need it. A wrong
   slope assumption re-runs with the right kernels (and is remembered); the checks follow. A
   quiet (``"off"``) solve of known params reads no report: it returns while its program runs.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh

from project.devices import check_permanent_states, mesh_key, replicate, state_mesh
from project.model.internal import Fact
from project.model.params import (
    check_param_values,
    pack_params,
    params_on_host,
    unpack_params,
)
from project.model.spec import Model
from project.points import float_dtype
from project.solver.budget import fit_solve
from project.solver.checks import (
    LogLevel,
    OnInvalid,
    nan_locations,
    report_flags,
)
from project.solver.facts import (
    KnownFacts,
    fact_columns,
    fingerprint,
    known_facts,
    needs_slope_probe,
    remember_facts,
    slope_guess,
)
from project.solver.grid_cache import grid_points_of
from project.solver.outputs import check_function_outputs
from project.solver.plan import SolvePlan, general_plan, plan_for
from project.solver.program import FLAG_COLUMNS, compiled_programs, solve_program
from project.solver.q import build_q_kernel
from project.solver.selection import KernelChoice, choose_kernels, log_kernels
from project.solver.solution import Solution, with_value_function
from project.solver.transitions import raise_for_invalid_transitions

logger = logging.getLogger("project.solver")

DEVICE_PARAMS: Fact[tuple[bytes, Any, Any] | None] = Fact(
    "the last params on the devices", build=lambda _model: None
)


def solve_grid(
    *,
    model: Model,
    params: Mapping[str, Any],
    log_level: LogLevel = "warning",
    devices: Sequence[Any] | None = None,
    exploit_structure: bool = True,
    memory_limit: int | float | str | None = None,
    on_invalid: OnInvalid = "raise",
) -> Solution:
    """Solve ``model`` by grid search; the arguments as in ``project.solve`` (checked there)."""
    plan = plan_for(model) if exploit_structure else general_plan(model)
    checks = log_level != "off"
    host_params, flat_params, key, known = _checked_params(model, params=params)
    check_function_outputs(model, params=host_params, codes=checks)
    mesh = state_mesh(model, devices=devices)
    points = grid_points_of(model, mesh=mesh)
    device_params = _on_devices(model, flat_params, key=key, mesh=mesh)
    if mesh is not None:
        check_permanent_states(model=model, grid_points=points)
    memory = fit_solve(
        plan, memory_limit=memory_limit, mesh=mesh, slopes=known.unit_slope, log_level=log_level
    )
    plan = memory.plan  # the model's batch sizes, or smaller ones that fit memory_limit
    logs = log_level in ("progress", "debug")
    started, compiled_before = time.perf_counter(), compiled_programs(plan.model) if logs else 0
    run = _run_with_right_kernels(
        plan, known, device_params=device_params, points=points, mesh=mesh
    )
    solution = Solution(  # while the program runs
        model=model,
        params=host_params,
        values=run.values,
        policies=run.policies,
        kernels=tuple(c.name for c in run.choices),
    )
    if run.periods:
        with_value_function(solution, run.periods)
    if checks:
        run = _with_report(plan, run)
    _check_and_remember(
        model, plan, known, run, key=key, checks=checks, device_params=device_params, points=points
    )
    if checks:
        report_flags(
            run.flags,
            log_level=log_level,
            describe=lambda period: _describe_nans(solution, period=period, points=points),
            on_invalid=on_invalid,
        )
    if logs:
        _log_solve(
            model, plan, run=run, memory=memory, started=started, compiled_before=compiled_before
        )
    return solution


def _checked_params(
    model: Model, *, params: Mapping[str, Any]
) -> tuple[dict[str, np.ndarray], np.ndarray, bytes, KnownFacts]:
    """Return params on the host, packed, their key and what earlier solves of them showed.

    Names and shapes are checked at every call; the values only for params no solve of the
    model ran before (a solve runs only after the check passed).
    """
    host_params = params_on_host(model=model, params=params, check_values=False)
    flat_params = pack_params(host_params)
    key = fingerprint(flat_params)
    known = known_facts(model, key=key)
    if known is None:
        check_param_values(model_name=model.name, params=host_params)
        known = KnownFacts(unit_slope=None, transitions_valid=False)
    return host_params, flat_params, key, known


def _check_and_remember(
    model: Model,
    plan: SolvePlan,
    known: KnownFacts,
    run: _Run,
    *,
    key: bytes,
    checks: bool,
    device_params: Any,
    points: dict[str, jax.Array],
) -> None:
    """Raise for invalid transitions (checked once per params); remember what the run showed.

    ``model`` is the caller's (``plan`` may hold a splayed copy): its facts are remembered.
    """
    if checks and not known.transitions_valid and not run.transitions_valid:
        raise_for_invalid_transitions(
            model, params=unpack_params(model=model, flat=device_params), grid_points=points
        )
    remember_facts(
        model,
        key=key,
        facts=KnownFacts(
            unit_slope=run.unit_slope if needs_slope_probe(plan) else known.unit_slope,
            transitions_valid=known.transitions_valid or (checks and run.transitions_valid),
        ),
    )


def _log_solve(
    model: Model,
    plan: SolvePlan,
    *,
    run: _Run,
    memory: Any,
    started: float,
    compiled_before: int,
) -> None:
    """Log the kernels, the solve's time and its memory plan."""
    log_kernels(plan, run.choices)
    compiled = compiled_programs(plan.model) > compiled_before
    logger.info(
        "Solved %r: %d periods in %.3f s%s.",
        model.name,
        model.n_periods,
        time.perf_counter() - started,
        " (compiling the program included)" if compiled else "",
    )
    memory.log(what=f"solving {model.name!r}")


class _Run(NamedTuple):
    """One run of a solve program and, once read, what its report says."""

    choices: tuple[KernelChoice, ...]
    values: jax.Array
    periods: tuple[jax.Array, ...]
    policies: dict[str, jax.Array]
    report: jax.Array
    flags: np.ndarray | None  # None until ``_with_report`` read the report
    unit_slope: tuple[bool, ...] | None
    transitions_valid: bool


def _run_with_right_kernels(
    plan: SolvePlan,
    known: KnownFacts,
    *,
    device_params: Any,
    points: dict[str, jax.Array],
    mesh: Mesh | None,
) -> _Run:
    """Run with the kernels the known (else the last seen) slopes imply; re-run if wrong.

    The report is read here only to learn the slopes of new params; the known slopes are
    those of the run (the same params), so the solve goes on while its program runs.
    """
    inputs = {"device_params": device_params, "points": points, "mesh": mesh}
    slopes = known.unit_slope if known.unit_slope is not None else slope_guess(plan.model)
    run = _run(plan, slopes, **inputs)
    if known.unit_slope is not None or not needs_slope_probe(plan):
        return run
    run = _with_report(plan, run)
    if run.unit_slope != slopes:
        assumed = tuple(c.name for c in run.choices)
        corrected = choose_kernels(plan, unit_slope=run.unit_slope)
        if tuple(c.name for c in corrected) != assumed:
            run = _with_report(plan, _run(plan, run.unit_slope, **inputs))
    return run


def _run(
    plan: SolvePlan,
    slopes: tuple[bool, ...],
    *,
    device_params: Any,
    points: dict[str, jax.Array],
    mesh: Mesh | None,
) -> _Run:
    """Start the program for the kernels that ``slopes`` implies (its report unread)."""
    choices = choose_kernels(plan, unit_slope=slopes)
    program = solve_program(plan, kernels=tuple(c.name for c in choices), mesh=mesh)
    values, policies, report, periods = program(device_params, points)
    return _Run(
        choices=choices,
        values=values,
        periods=periods,
        policies=policies,
        report=report,
        flags=None,
        unit_slope=slopes if needs_slope_probe(plan) else None,
        transitions_valid=False,
    )


def _with_report(plan: SolvePlan, run: _Run) -> _Run:
    """Return ``run`` with its report read (one sync): flags, slopes, valid transitions.

    The report's columns: ``FLAG_COLUMNS``, then ``fact_columns(plan)``.
    """
    if run.flags is not None:
        return run
    table = np.asarray(run.report)
    facts = {c: len(FLAG_COLUMNS) + i for i, c in enumerate(fact_columns(plan))}
    valid = [i for c, i in facts.items() if c.startswith("valid:")]
    slope = facts.get("unit_slope")
    return run._replace(
        flags=table[:, : len(FLAG_COLUMNS)],
        unit_slope=None if slope is None else tuple(table[:, slope].astype(bool).tolist()),
        transitions_valid=bool(table[:, valid].all()),
    )


def _on_devices(model: Model, flat_params: np.ndarray, *, key: bytes, mesh: Mesh | None) -> Any:
    """Return the packed params on the devices, reusing the copy of the model's last params."""
    cached = DEVICE_PARAMS.of(model)
    if cached is not None and cached[:2] == (key, mesh_key(mesh)):
        return cached[2]
    placed = jax.device_put(flat_params) if mesh is None else replicate(flat_params, mesh=mesh)
    DEVICE_PARAMS.put(model, (key, mesh_key(mesh), placed))
    return placed


def _describe_nans(solution: Solution, *, period: int, points: dict[str, jax.Array]) -> str:
    """Return where V and Q of ``period`` are NaN (computed only after a check failed)."""
    model = solution.model
    last = period == model.n_periods - 1
    next_value = solution.values[period + 1] if not last else jnp.zeros_like(solution.values[0])
    params = {k: jnp.asarray(v) for k, v in solution.params.items()}
    age = np.asarray(model.ages[period], dtype=float_dtype())
    q = build_q_kernel(model, continuation=not last)(
        next_value, params, points, jnp.int32(period), age
    )
    names = (*model.state_names, *model.action_names)
    continuous = {
        n: np.asarray(points[n])
        for n, g in (model.states | model.actions).items()
        if not g.is_discrete and n in points
    }
    located = nan_locations(
        solution.values[period], axis_names=model.state_names, points=continuous
    )
    return (
        f"V is NaN at states: {located}. "
        f"Q(state, action) is NaN at: {nan_locations(q, axis_names=names, points=continuous)}."
    )
