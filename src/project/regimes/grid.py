"""Solve a model with regimes on its grids: every regime's kernels in one compiled program.

Backwards over periods (one ``lax.scan``), each regime's period is solved by the kernel its own
structure allows (``solver.plan``: general, row, lattice; the shift kernel where its slope is 1
for all params), reading next period through its continuation ``W_r``
(``continuation.py``). The last period reads zeros, as a plain model's does. The program returns
per regime V and the policy of every period, and one small int32 report per regime: the NaN/Inf
flags, the stochastic transitions' checks and the regime transition's checks, read back once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from project._xla import jit
from project.model.internal import table
from project.model.params import pack_params, params_on_host, unpack_params
from project.points import float_dtype
from project.regimes.continuation import (
    CHECK_COLUMNS,
    RegimeContinuation,
    raise_for_regime_checks,
)
from project.regimes.memory import fit_regimes
from project.regimes.spec import RegimeModel
from project.solver.checks import LogLevel, check_log_level, nan_locations, report_flags
from project.solver.facts import fact_columns, program_facts
from project.solver.grid_cache import grid_points_of
from project.solver.kernels import build_kernel
from project.solver.outputs import check_function_outputs
from project.solver.plan import SolvePlan, general_plan, plan_for
from project.solver.program import FLAG_COLUMNS, action_block, kernel_step
from project.solver.selection import choose_kernels, log_kernels
from project.solver.solution import Solution
from project.solver.transitions import raise_for_invalid_transitions

logger = logging.getLogger("project.solver")

PROGRAMS = table("regimes' grid-search programs")


def regime_grid_points(model: RegimeModel) -> dict[str, jax.Array]:
    """Return the grid points of every state and action of every regime (one grid per name)."""
    points: dict[str, jax.Array] = {}
    for view in model.regimes.values():
        points |= grid_points_of(view)
    return points


def solve_on_grid(
    *,
    model: RegimeModel,
    params: Mapping[str, Any],
    log_level: LogLevel = "warning",
    exploit_structure: bool = True,
    memory_limit: Any = None,
    on_invalid: str = "raise",
) -> dict[str, Solution]:
    """Solve every regime of ``model`` on its grids; return each regime's ``Solution``.

    ``memory_limit`` as in ``project.solve``: the regimes are splayed to fit it
    (``memory.py``).
    """
    check_log_level(log_level)
    host_params = params_on_host(model=model, params=params)
    for view in model.regimes.values():
        check_function_outputs(view, params=host_params, codes=log_level != "off")
    flat = pack_params(host_params)
    plans = {
        r: plan_for(v) if exploit_structure else general_plan(v) for r, v in model.regimes.items()
    }
    choices = {r: choose_kernels(plan, unit_slope=None) for r, plan in plans.items()}
    names = {r: _one_kernel(c) for r, c in choices.items()}
    memory = fit_regimes(model, plans, names, memory_limit=memory_limit)
    points = regime_grid_points(model)
    started = time.perf_counter()
    program = _program(model, memory.plans, names)
    values, policies, reports = program(jax.device_put(flat), points)
    tables = {r: np.asarray(report) for r, report in reports.items()}
    solutions: dict[str, Solution] = {}
    continuation = solution_continuation(model, solutions=solutions, params=host_params)
    for regime, view in model.regimes.items():
        solutions[regime] = Solution(
            model=view,
            params=host_params,
            values=values[regime],
            policies=policies[regime],
            kernels=tuple(c.name for c in choices[regime]),
            continuation=lambda period, regime=regime: continuation(regime, period),
        )
    if log_level != "off":
        _check_reports(
            model,
            tables=tables,
            plans=plans,
            solutions=solutions,
            params=host_params,
            points=points,
            log_level=log_level,
            on_invalid=on_invalid,
        )
    if log_level in ("progress", "debug"):
        _log_solve(model, plans=plans, choices=choices, memory=memory, started=started)
    return solutions


def _log_solve(
    model: RegimeModel,
    *,
    plans: Mapping[str, Any],
    choices: Mapping[str, Any],
    memory: Any,
    started: float,
) -> None:
    """Log each regime's kernels, the solve's time and its memory plan."""
    for regime, plan in plans.items():
        logger.info("Regime %r:", regime)
        log_kernels(plan, choices[regime])
    logger.info(
        "Solved %r (%d regimes) on the grids: %d periods in %.3f s.",
        model.name,
        len(model.regimes),
        model.n_periods,
        time.perf_counter() - started,
    )
    memory.log(what=f"solving {model.name!r}")


def _check_reports(
    model: RegimeModel,
    *,
    tables: Mapping[str, np.ndarray],
    plans: Mapping[str, Any],
    solutions: Mapping[str, Solution],
    params: Mapping[str, Any],
    points: Mapping[str, jax.Array],
    log_level: LogLevel,
    on_invalid: str,
) -> None:
    """Raise or log what each regime's report records (``report_flags``)."""
    for regime, report in tables.items():
        _check_report(model, regime, report, plan=plans[regime], params=params)
        report_flags(
            report[:, : len(FLAG_COLUMNS)],
            log_level=log_level,
            describe=lambda period, regime=regime: (
                f"Regime {regime!r}: V is NaN at "
                + nan_locations(
                    solutions[regime].values[period],
                    axis_names=model.regimes[regime].state_names,
                    points={
                        n: np.asarray(p)
                        for n, p in points.items()
                        if jnp.issubdtype(p.dtype, jnp.floating)
                    },
                )
                + "."
            ),
            on_invalid=on_invalid,
            what=f"grid search, regime {regime!r}",
        )


def solution_continuation(
    model: RegimeModel, *, solutions: Mapping[str, Solution], params: Mapping[str, Any]
) -> Callable[[str, int], jax.Array]:
    """Return ``continuation(regime, period)``: ``W_r`` from the solved V of period + 1."""
    forms = {r: RegimeContinuation(model, source=r) for r in model.regimes}
    jitted = {
        r: jit(
            lambda next_values, params, grid_points, period, age, form=form: form(
                next_values, params=params, grid_points=grid_points, period=period, age=age
            )[0]
        )
        for r, form in forms.items()
    }

    def continuation(regime: str, period: int) -> jax.Array:
        dtype = float_dtype()
        if period == model.n_periods - 1:
            return jnp.zeros(forms[regime].shape, dtype)
        next_values = {r: s.values[period + 1] for r, s in solutions.items()}
        return jitted[regime](
            next_values,
            {k: jnp.asarray(v, dtype) for k, v in params.items()},
            regime_grid_points(model),
            jnp.int32(period),
            jnp.asarray(model.ages[period], dtype),
        )

    return continuation


def _one_kernel(choices: tuple[Any, ...]) -> str:
    names = {c.name for c in choices}
    if len(names) != 1:  # choose_kernels without slope facts picks one kernel for all periods
        msg = f"expected one kernel for every period, got {sorted(names)}"
        raise AssertionError(msg)
    return names.pop()


def _program(
    model: RegimeModel, plans: Mapping[str, SolvePlan], names: Mapping[str, str]
) -> Callable[..., Any]:
    splay = tuple(
        (r, tuple((s, g.batch_size) for s, g in p.model.states.items())) for r, p in plans.items()
    )
    key = (
        tuple(names.items()),
        tuple(p.structure for p in plans.values()),
        splay,
        float_dtype(),
    )
    programs = PROGRAMS.of(model)
    if key not in programs:
        programs[key] = jit(_build(model, plans, names))
    return programs[key]


def _build(
    model: RegimeModel, plans: Mapping[str, SolvePlan], names: Mapping[str, str]
) -> Callable[..., Any]:
    backend = jax.default_backend()
    steps = {
        r: kernel_step(
            plan,
            build_kernel(names[r], plan, block=action_block(plan, backend=backend), mesh=None),
        )
        for r, plan in plans.items()
    }
    forms = {r: RegimeContinuation(model, source=r) for r in model.regimes}
    ages = np.asarray(model.ages, dtype=float_dtype())
    n_periods = model.n_periods

    def period_of(next_values: Any, params: Any, grid_points: Any, period: Any, age: Any) -> Any:
        out = {}
        for regime, form in forms.items():
            if next_values is None:
                continued = jnp.zeros(form.shape, ages.dtype)
                checks = jnp.zeros((len(CHECK_COLUMNS),), jnp.int32)
            else:
                continued, checks = form(
                    next_values, params=params, grid_points=grid_points, period=period, age=age
                )
            value, policy, flags = steps[regime](continued, params, grid_points, period, age)
            out[regime] = (value, policy, jnp.concatenate([flags, checks]))
        return out

    def program(flat_params: jax.Array, grid_points: dict[str, jax.Array]) -> Any:
        params = unpack_params(model=model, flat=flat_params)
        last = period_of(None, params, grid_points, jnp.int32(n_periods - 1), jnp.asarray(ages[-1]))
        stacked = jax.tree.map(lambda x: x[None], last)
        if n_periods > 1:

            def body(carry: Any, xs: Any) -> Any:
                out = period_of(carry, params, grid_points, *xs)
                return {r: o[0] for r, o in out.items()}, out

            xs = (jnp.arange(n_periods - 1, dtype=jnp.int32), jnp.asarray(ages[:-1]))
            carry = {r: o[0] for r, o in last.items()}
            _, history = jax.lax.scan(body, carry, xs, reverse=True)
            stacked = jax.tree.map(lambda h, s: jnp.concatenate([h, s]), history, stacked)
        periods = jnp.arange(n_periods, dtype=jnp.int32)
        reports = {}
        for regime, (_, _, flags) in stacked.items():
            facts = program_facts(
                plans[regime],
                params=params,
                grid_points=grid_points,
                periods=periods,
                ages=jnp.asarray(ages),
            )
            columns = [flags, *(jnp.asarray(f, jnp.int32)[:, None] for f in facts)]
            reports[regime] = jnp.concatenate(columns, axis=1)
        values = {r: s[0] for r, s in stacked.items()}
        policies = {r: s[1] for r, s in stacked.items()}
        return values, policies, reports

    return program


def _check_report(
    model: RegimeModel,
    regime: str,
    table: np.ndarray,
    *,
    plan: SolvePlan,
    params: Mapping[str, Any],
) -> None:
    """Raise for failed regime-transition or state-transition checks of one regime."""
    start = len(FLAG_COLUMNS)
    raise_for_regime_checks(model, regime, table[:, start : start + len(CHECK_COLUMNS)])
    facts = table[:, start + len(CHECK_COLUMNS) :]
    valid = [i for i, c in enumerate(fact_columns(plan)) if c.startswith("valid:")]
    if valid and not facts[:, valid].all():
        view = model.regimes[regime]
        raise_for_invalid_transitions(
            view,
            params={k: jnp.asarray(v) for k, v in params.items()},
            grid_points=grid_points_of(view),
        )
