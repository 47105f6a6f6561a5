"""Solve a model with regimes by (DC-)EGM: every regime's EGM step in one compiled program.

Each regime is an ``EGMPeriod`` (``egm/period.py``) whose targets are all regimes: it reads the
next period of every regime it may move to at the next states its own laws of motion give,
weighted by its regime transition, and a terminal regime's value and slope in wealth directly.
The Euler equation then holds in expectation over regimes: ``u'(c) = beta·E[sum_k P_k·a·V_k'(w')]``
with ``V_k' = u_k'(c'_k)`` for a regime that is alive (envelope condition) and the value
function's slope for a terminal one. Every regime needs EGM's structure (``egm/structure.py``)
and its own savings grid; a regime without discrete actions is plain EGM, one with them DC-EGM.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from project._xla import jit, quick_compile_options
from project.egm.envelope import WINDOW
from project.egm.expectations import Target
from project.egm.period import EGMPeriod
from project.egm.program import REPORT_COLUMNS, period_report
from project.egm.solution import EGMSolution
from project.egm.solve import check_borrowing_limits, check_reports
from project.egm.structure import egm_structure
from project.egm.utility import Utility
from project.model.internal import Fact, table
from project.model.params import n_packed_params, pack_params, params_on_host, unpack_params
from project.points import float_dtype
from project.regimes.checks import missing_states
from project.regimes.continuation import (
    CHECK_COLUMNS,
    probability_checks,
    raise_for_regime_checks,
)
from project.regimes.spec import REGIME_TRANSITION, RegimeModel, RegimeView
from project.solver.budget import compiled_within
from project.solver.checks import LogLevel, check_log_level
from project.solver.outputs import check_function_outputs
from project.solver.sweep import compose

logger = logging.getLogger("project.solver")

PROGRAMS = table("regimes' EGM programs by window and dtype")
WINDOW_LEARNED: Fact[int] = Fact("regimes' upper envelope window", build=lambda _model: WINDOW)


def solve_on_endogenous_grids(
    *,
    model: RegimeModel,
    params: Mapping[str, Any],
    log_level: LogLevel = "warning",
    memory_limit: Any = None,
    on_invalid: str = "raise",
) -> dict[str, EGMSolution]:
    """Solve every regime of ``model`` by (DC-)EGM; return each regime's ``EGMSolution``.

    ``memory_limit`` is checked against XLA's buffer assignment of the compiled program.
    """
    check_log_level(log_level)
    host_params = params_on_host(model=model, params=params)
    for view in model.regimes.values():
        check_function_outputs(view, params=host_params, codes=log_level != "off")
    savings = {r: v.post_decision_grid.to_jax() for r, v in model.regimes.items()}
    if log_level != "off":
        check_borrowing_limits(model.regimes, params=host_params, savings=savings)
    started = time.perf_counter()
    device_params = jax.device_put(pack_params(host_params))
    window = envelope_window(model)
    fits = {"memory_limit": memory_limit, "log_level": log_level}
    arrays, reports = _program(model, window=window, **fits)(device_params, savings)
    tables = {r: np.asarray(report) for r, report in reports.items()}
    monotone = REPORT_COLUMNS.index("non_monotone")
    runs = max(int(t[:, REPORT_COLUMNS.index("runs")].max()) for t in tables.values())
    if any(t[:, monotone].any() for t in tables.values()):
        window = widen_window(model, window=window, runs=runs)
        arrays, reports = _program(model, window=window, **fits)(device_params, savings)
        tables = {r: np.asarray(report) for r, report in reports.items()}
    solutions = _solutions(model, arrays=arrays, params=host_params, savings=savings)
    if log_level != "off":
        for regime in model.regimes:  # first: a bad regime transition is the root cause
            raise_for_regime_checks(model, regime, tables[regime][:, len(REPORT_COLUMNS) :])
        reports = {r: tables[r][:, : len(REPORT_COLUMNS)] for r in model.regimes}
        check_reports(solutions, reports, on_invalid=on_invalid)
    if log_level in ("progress", "debug"):
        logger.info(
            "Solved %r (%d regimes) by endogenous grids: %d periods in %.3f s.",
            model.name,
            len(model.regimes),
            model.n_periods,
            time.perf_counter() - started,
        )
    return solutions


def _solutions(
    model: RegimeModel,
    *,
    arrays: Mapping[str, Any],
    params: Mapping[str, Any],
    savings: Mapping[str, jax.Array],
) -> dict[str, EGMSolution]:
    """Return each regime's ``EGMSolution`` from the program's stacked arrays."""
    solutions, n_periods = {}, model.n_periods
    for regime, view in model.regimes.items():
        shape = egm_structure(view).discrete_shape
        regime_arrays = jax.tree.map(
            lambda x, shape=shape: x.reshape(n_periods, *shape, *x.shape[2:]),
            arrays[regime],
        )
        solutions[regime] = EGMSolution(
            model=view, params=params, arrays=regime_arrays, savings=savings[regime]
        )
    return solutions


def envelope_window(model: RegimeModel) -> int:
    """Return the upper envelope's window (runs) the model's programs are built with."""
    return WINDOW_LEARNED.of(model)


def widen_window(model: RegimeModel, *, window: int, runs: int) -> int:
    """Widen the model's window after a solve found more runs than ``window`` holds."""
    widened = max(runs, 2 * window)
    WINDOW_LEARNED.put(model, widened)
    logger.info("Widening the upper envelope's window of %r to %d runs.", model.name, widened)
    return widened


def endogenous_grid_program(model: RegimeModel, *, window: int) -> Callable[..., Any]:
    """Return ``program(flat_params, savings) -> (arrays, reports)``, traceable (not compiled).

    ``arrays[regime]`` have axes (period, context, choice, ...); ``reports[regime]`` one row
    per period (``REPORT_COLUMNS``, then the regime transition's checks).
    """
    return _build(model, window=window)


def _program(
    model: RegimeModel, *, window: int, memory_limit: Any, log_level: str
) -> Callable[..., Any]:
    """Return the program for envelope ``window``, compiled once per dtype, its memory checked."""
    dtype = float_dtype()
    flat = jax.ShapeDtypeStruct((n_packed_params(model),), dtype)
    savings = {
        r: jax.ShapeDtypeStruct((v.post_decision_grid.n_points,), dtype)
        for r, v in model.regimes.items()
    }
    return compiled_within(
        PROGRAMS.of(model),
        (window, dtype),
        lower=lambda: jit(
            _build(model, window=window), compiler_options=quick_compile_options()
        ).lower(flat, savings),
        memory_limit=memory_limit,
        what=f"Model {model.name!r} ({len(model.regimes)} regimes) by endogenous grids",
        log_level=log_level,
    )


def regime_targets(model: RegimeModel, *, source: str) -> tuple[Target, ...]:
    """Return every regime as a target of ``source``, in code order."""
    targets = []
    for name in model.regime_names:
        reachable = not missing_states(model, source=source, target=name)
        if name in model.terminal:
            targets.append(Target(name=name, value=model.terminal[name].value, reachable=reachable))
            continue
        view = model.regimes[name]
        structure = egm_structure(view)
        targets.append(
            Target(
                name=name,
                structure=structure,
                utility=Utility(view, structure),
                reachable=reachable,
            )
        )
    return tuple(targets)


def regime_probabilities(view: RegimeView) -> Callable[[dict[str, Any]], jnp.ndarray]:
    """Return ``probabilities(env)``: the regime transition of ``view`` as a vector."""
    transition = compose(view, [REGIME_TRANSITION])

    def probabilities(env: dict[str, Any]) -> jnp.ndarray:
        out = transition(env)[REGIME_TRANSITION]
        return view.regime_probabilities(out).astype(float_dtype())

    return probabilities


def _build(model: RegimeModel, *, window: int) -> Callable[..., Any]:
    periods = {
        regime: EGMPeriod(
            view,
            window=window,
            name=regime,
            targets=regime_targets(model, source=regime),
            probabilities=regime_probabilities(view),
        )
        for regime, view in model.regimes.items()
    }
    reachable = {r: tuple(t.reachable for t in period.targets) for r, period in periods.items()}
    n_periods = model.n_periods

    def program(flat_params: jax.Array, savings: dict[str, jax.Array]) -> Any:
        params = unpack_params(model=model, flat=flat_params)

        def step(carry: dict[str, Any], t: jnp.ndarray) -> Any:
            out = {}
            for regime, period in periods.items():
                arrays, flags, probabilities = period.step(carry, t, params=params, savings=savings)
                report = jnp.concatenate(
                    [
                        period_report(flags, arrays.feasible),
                        probability_checks(probabilities, reachable=reachable[regime]),
                    ]
                )
                out[regime] = (arrays, report)
            return {r: o[0] for r, o in out.items()}, out

        terminal = {}
        for regime, period in periods.items():
            arrays = period.terminal(savings[regime], params=params)
            flags = period.terminal_flags(arrays, params=params)
            report = jnp.concatenate(
                [period_report(flags, arrays.feasible), jnp.zeros(len(CHECK_COLUMNS), jnp.int32)]
            )
            terminal[regime] = (arrays, report)
        carry = {r: o[0] for r, o in terminal.items()}
        steps = jnp.arange(n_periods - 1, dtype=jnp.int32)
        _, history = jax.lax.scan(step, carry, steps, reverse=True)
        stacked = jax.tree.map(
            lambda earlier, final: jnp.concatenate([earlier, final[None]]), history, terminal
        )
        return {r: s[0] for r, s in stacked.items()}, {r: s[1] for r, s in stacked.items()}

    return program
