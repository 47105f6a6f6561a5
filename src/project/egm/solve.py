"""Solve a model with the endogenous grid method (DC-EGM with discrete choices): checks, one run.

The program is built for an envelope window (``envelope.py``); when its report says a run
overlapped one farther away, the solve re-runs once with a window that covers every run, and
remembers it for the model.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from project._xla import jit, quick_compile_options
from project.egm.envelope import WINDOW
from project.egm.program import FAILURE_COLUMNS, REPORT_COLUMNS, build_program
from project.egm.solution import EGMSolution
from project.egm.structure import egm_structure
from project.errors import InvalidValueFunctionError, ModelSpecificationError
from project.model.internal import Fact, table
from project.model.names import INVERSE_MARGINAL_UTILITY, INVERSE_UTILITY
from project.model.params import (
    check_param_values,
    n_packed_params,
    pack_params,
    params_on_host,
)
from project.model.spec import Model
from project.points import float_dtype
from project.solver.budget import compiled_within
from project.solver.checks import LogLevel, check_log_level, check_on_invalid, nan_locations
from project.solver.facts import MAX_CACHED_PARAMS, fingerprint
from project.solver.grid_cache import grid_points_of
from project.solver.outputs import check_function_outputs
from project.solver.sweep import compose

logger = logging.getLogger("project.solver")

PROGRAMS = table("EGM programs by window and dtype")
WINDOW_LEARNED: Fact[int] = Fact("upper envelope's window", build=lambda _model: WINDOW)
CHECKED = Fact(
    "params whose values and borrowing limit were checked", build=lambda _model: OrderedDict()
)
SAVINGS = table("post-decision grid by dtype")
# The report's columns ``check_report`` acts on (all but ``runs``); all clear is the usual case.
CHECKED_COLUMNS = tuple(REPORT_COLUMNS.index(c) for c in (*FAILURE_COLUMNS, "non_monotone"))

TRIAL_CONSUMPTION = (1e-3, 1e-1, 1.0, 1e2)


def solve_egm(
    *,
    model: Model,
    params: Mapping[str, Any],
    log_level: LogLevel = "warning",
    memory_limit: Any = None,
    on_invalid: str = "raise",
) -> EGMSolution:
    """Solve ``model`` by EGM and return its endogenous-grid solution.

    ``memory_limit`` (as in ``project.solve``) is checked against XLA's buffer
    assignment of the compiled program before it runs (``budget.check_buffers``);
    ``on_invalid`` as there (NaN/inf in V or consumption raises, or warns with "warn").
    """
    check_log_level(log_level)
    check_on_invalid(on_invalid)
    structure = egm_structure(model)
    checks = log_level != "off"
    host_params = params_on_host(model=model, params=params, check_values=False)
    flat = pack_params(host_params)
    key = fingerprint(flat)
    checked = CHECKED.of(model)
    if key not in checked:  # checked params passed this check before they ran
        check_param_values(model_name=model.name, params=host_params)
    check_function_outputs(model, params=host_params, codes=checks)
    savings = _savings(model)
    if checks and key not in checked:
        check_borrowing_limit(model, params=host_params, savings=np.asarray(savings))
        checked[key] = None
        while len(checked) > MAX_CACHED_PARAMS:
            checked.popitem(last=False)
    started = time.perf_counter()
    window = WINDOW_LEARNED.of(model)
    fits = {"memory_limit": memory_limit, "log_level": log_level}
    # The compiled call moves the host params itself (faster than a separate device_put).
    arrays, report = _program(model, window=window, **fits)(flat, savings)
    table = np.asarray(report)
    runs = int(table[:, REPORT_COLUMNS.index("runs")].max())
    if structure.discrete_actions and table[:, REPORT_COLUMNS.index("non_monotone")].any():
        window = max(runs, 2 * window)
        WINDOW_LEARNED.put(model, window)
        logger.info("Widening the upper envelope's window of %r to %d runs.", model.name, window)
        arrays, report = _program(model, window=window, **fits)(flat, savings)
        table = np.asarray(report)
    solution = EGMSolution(model=model, params=host_params, arrays=arrays, savings=savings)
    if checks:
        check_report(solution, table, on_invalid=on_invalid)
    if log_level in ("progress", "debug"):
        logger.info(
            "Solved %r by %s: %d periods on %d savings points in %.3f s (at most %d runs of "
            "increasing wealth in one endogenous grid).",
            model.name,
            solution.method.upper(),
            model.n_periods,
            savings.shape[0],
            time.perf_counter() - started,
            runs,
        )
    return solution


def _program(model: Model, *, window: int, memory_limit: Any, log_level: str) -> Callable[..., Any]:
    """Return the model's program for envelope ``window``, compiled once per dtype.

    Its buffers are checked against ``memory_limit`` at every call (the limit may change).
    """

    def lower() -> Any:
        flat = jax.ShapeDtypeStruct((n_packed_params(model),), float_dtype())
        savings = jax.ShapeDtypeStruct((model.post_decision_grid.n_points,), float_dtype())
        return build_program(model, window=window).lower(flat, savings)

    return compiled_within(
        PROGRAMS.of(model),
        (window, float_dtype()),
        lower=lower,
        memory_limit=memory_limit,
        what=f"Model {model.name!r} by {egm_structure(model).method.upper()}",
        log_level=log_level,
    )


def _savings(model: Model) -> jax.Array:
    per_model = SAVINGS.of(model)
    key = float_dtype()
    if key not in per_model:
        grid = model.post_decision_grid
        assert grid is not None
        per_model[key] = grid.to_jax()
    return per_model[key]


def check_borrowing_limit(
    model: Model, *, params: Mapping[str, np.ndarray], savings: np.ndarray
) -> None:
    """Raise unless the constraints allow every savings point and forbid less than its start.

    EGM reads the borrowing limit from the start of ``post_decision_grid``; the grid solver reads
    it from the constraints. Both must state the same limit, in every context and period.
    """
    structure = egm_structure(model)
    state, action = structure.state, structure.action
    if not structure.borrowing_constraints:
        msg = (
            f"Model {model.name!r}: {structure.method.upper()} needs the borrowing limit as a "
            f"constraint (e.g. {action} <= {state}); the model has none. Add it, matching the "
            f"start of {_savings_words(model)}."
        )
        raise ModelSpecificationError(msg)
    dtype = float_dtype()
    step = 1e3 * np.finfo(dtype).eps * max(1.0, abs(float(savings[0])))
    trials = np.concatenate([savings, [savings[0] - step]]).astype(dtype)
    # (period, context, choice, savings trial, consumption trial): one compiled check, one read.
    allowed = np.asarray(_feasibility(model)(dict(params), trials)).all(axis=-1)
    forbidden = np.argwhere(~allowed[..., :-1])
    if forbidden.size:
        period, row, choice, j = (int(i) for i in forbidden[0])
        msg = (
            f"Model {model.name!r} ({structure.method.upper()}): the constraints forbid savings "
            f"{float(savings[j])!r} of {_savings_words(model)} in period {period}"
            f"{_context(structure, structure.contexts[row], structure.choices[choice])}, which "
            f"starts at {float(savings[0])!r}. Start the grid at the borrowing limit the "
            "constraints state (e.g. post_decision_grid=default_savings_grid(start=<limit>, "
            "stop=...))."
        )
        raise ModelSpecificationError(msg)
    looser = np.argwhere(allowed[..., -1])
    if looser.size:
        period, row, choice = (int(i) for i in looser[0])
        msg = (
            f"Model {model.name!r} ({structure.method.upper()}): the constraints allow savings "
            f"below {float(savings[0])!r}, the start of {_savings_words(model)}, in period "
            f"{period}{_context(structure, structure.contexts[row], structure.choices[choice])}. "
            "EGM would solve a tighter problem than the grid solver: start the grid at the "
            "borrowing limit the constraints state (e.g. post_decision_grid="
            "default_savings_grid(start=<limit>, stop=...))."
        )
        raise ModelSpecificationError(msg)


def _savings_words(model: Model) -> str:
    """Return how messages name the savings grid: stated, or the default."""
    if model.stated_post_decision_grid is not None:
        return "post_decision_grid"
    return (
        "the default post_decision_grid (default_savings_grid(stop=<last point of the state "
        "grid>), no post_decision_grid was given)"
    )


def _feasibility(model: Model) -> Callable[..., jax.Array]:
    """Return the jitted ``(params, savings) -> feasible`` over periods, contexts and trials."""
    return FEASIBILITY.of(model)


def _build_feasibility(model: Model) -> Callable[..., jax.Array]:
    structure = egm_structure(model)
    state, action = structure.state, structure.action
    feasible = compose(model, list(structure.borrowing_constraints))
    contexts, choices = structure.contexts, structure.choices

    def check(params: dict[str, jax.Array], savings: jax.Array) -> jax.Array:
        dtype = savings.dtype
        ages = jnp.asarray(np.asarray(model.ages), dtype=dtype)
        trial = jnp.asarray(TRIAL_CONSUMPTION, dtype=dtype)

        def one(period, codes, choice, s, c):  # noqa: ANN001, ANN202
            env = params | {name: codes[i] for i, name in enumerate(structure.discrete)}
            env |= {a: choice[i] for i, a in enumerate(structure.discrete_actions)}
            env |= {"period": period, "age": ages[period], state: s + c, action: c}
            return jnp.all(jnp.stack([jnp.asarray(v) for v in feasible(env).values()]))

        per_trial = jax.vmap(one, in_axes=(None, None, None, None, 0))
        per_saving = jax.vmap(per_trial, in_axes=(None, None, None, 0, None))
        per_choice = jax.vmap(per_saving, in_axes=(None, None, 0, None, None))
        per_context = jax.vmap(per_choice, in_axes=(None, 0, None, None, None))
        per_period = jax.vmap(per_context, in_axes=(0, None, None, None, None))
        periods = jnp.arange(model.n_periods, dtype=jnp.int32)
        return per_period(periods, contexts, choices, savings, trial)

    return jit(check, compiler_options=quick_compile_options())


FEASIBILITY: Fact[Callable[..., jax.Array]] = Fact(
    "borrowing constraints' feasibility", build=_build_feasibility
)


def _context(structure: Any, codes: np.ndarray, choice: np.ndarray | None = None) -> str:
    pairs = list(zip(structure.discrete, codes, strict=True))
    if choice is not None:
        pairs += list(zip(structure.discrete_actions, choice, strict=True))
    if not pairs:
        return ""
    return " (" + ", ".join(f"{name}={int(code)}" for name, code in pairs) + ")"


def check_borrowing_limits(
    models: Mapping[str, Model], *, params: Mapping[str, np.ndarray], savings: Mapping[str, Any]
) -> None:
    """Run ``check_borrowing_limit`` for each model (a regime's), on its own savings grid."""
    for name, model in models.items():
        check_borrowing_limit(model, params=params, savings=np.asarray(savings[name]))


def check_reports(
    solutions: Mapping[str, EGMSolution], reports: Mapping[str, np.ndarray], *, on_invalid: str
) -> None:
    """Run ``check_report`` for each regime's solution and report, in the regimes' order."""
    for regime, solution in solutions.items():
        check_report(solution, reports[regime], on_invalid=on_invalid, regime=regime)


def check_report(
    solution: EGMSolution, report: np.ndarray, *, on_invalid: str = "raise", regime: str = ""
) -> None:
    """Raise for the failures an EGM solve's report records (period by period).

    NaN/inf in consumption or V (at the endogenous nodes; u(c) at the last period's nodes)
    raises ``InvalidValueFunctionError`` naming the last such period and where V is NaN on the
    state grid, or with ``on_invalid="warn"`` logs it.
    """
    if not report[:, list(CHECKED_COLUMNS)].any():
        return
    model = solution.model
    method = solution.method.upper()
    where = f"Model {model.name!r}{f', regime {regime!r}' if regime else ''} (solved by {method})"
    failed = {column: np.flatnonzero(report[:, i]) for i, column in enumerate(REPORT_COLUMNS)}
    _check_specification(model, failed, where=where)
    if failed["non_monotone"].size and not solution.structure.discrete_actions:
        period = int(failed["non_monotone"][0])
        raise InvalidValueFunctionError(_non_monotone_message(solution, period=period))
    reported = {*failed["not_finite"].tolist(), *failed["inverse_residual"].tolist()}
    if reported:
        periods = sorted(reported)
        period = periods[-1]  # backward induction: the last failed period is the source
        msg = (
            f"{where}: EGM produced NaN/inf consumption or values "
            f"or V outside the range of utility, in periods {periods}; in period {period} "
            f"{_invalid_states(solution, period)}. Check that utility is finite for positive "
            "consumption (logs of non-positive numbers, params) and that next period's wealth "
            "stays above the borrowing limit"
        )
        if on_invalid == "raise":
            msg += "; solve(..., on_invalid='warn') continues with a warning instead."
            raise InvalidValueFunctionError(msg)
        logger.warning("%s; continuing (on_invalid='warn').", msg)


def _check_specification(model: Any, failed: dict[str, np.ndarray], *, where: str) -> None:
    """Raise ``ModelSpecificationError`` for the failures that are the model's mistake.

    ``failed``: the periods in which each report column flagged a failure.
    """
    if failed["inverse_marginal_residual"].size:
        period = int(failed["inverse_marginal_residual"][0])
        what = (
            "the given inverse_marginal_utility disagrees with the derivative of utility"
            if INVERSE_MARGINAL_UTILITY in model.functions
            else "Newton's method did not invert marginal utility"
        )
        msg = (
            f"{where}, period {period}: {what}. Check that utility is increasing "
            "and strictly concave in consumption (and the inverse, if given)."
        )
        raise ModelSpecificationError(msg)
    # A closed form that overflows (V beyond the range of utility) is reported below as
    # NaN/inf; one that returns finite consumption off the mark is the model's mistake.
    misfits = np.setdiff1d(failed["inverse_residual"], failed["not_finite"])
    if misfits.size and INVERSE_UTILITY in model.functions:
        period = int(misfits[0])
        msg = (
            f"{where}, period {period}: the given inverse_utility does not invert utility "
            "(u(inverse_utility(V)) differs from V). Check it against utility, including the "
            "terms that depend on discrete states, actions and params."
        )
        raise ModelSpecificationError(msg)
    if failed["no_feasible_choice"].size:
        period = int(failed["no_feasible_choice"][0])
        msg = (
            f"{where}, period {period}: in some discrete context the constraints "
            "allow no discrete choice. Check the constraints that involve only discrete states "
            "and actions."
        )
        raise ModelSpecificationError(msg)


def _invalid_states(solution: EGMSolution, period: int) -> str:
    """Return where V of ``period`` is NaN on the state grids (computed only after a failure)."""
    model = solution.model
    points = grid_points_of(model)
    value = np.asarray(solution.grid_values[period])
    if not np.isnan(value).any():
        return "V is finite on the state grid (the NaN/inf are on the endogenous grid)"
    state = solution.structure.state
    located = nan_locations(
        value, axis_names=model.state_names, points={state: np.asarray(points[state])}
    )
    return f"V is NaN at states: {located}"


def _non_monotone_message(solution: EGMSolution, *, period: int) -> str:
    structure = solution.structure
    wealth = np.asarray(solution.arrays.wealth[period]).reshape(structure.n_contexts, -1)
    rows, nodes = np.nonzero(np.diff(wealth, axis=1) <= 0)
    row, node = int(rows[0]), int(nodes[0])
    savings = np.asarray(solution.savings)
    return (
        f"Model {solution.model.name!r}, period {period}"
        f"{_context(structure, structure.contexts[row])}: the endogenous grid is not increasing "
        f"at savings {float(savings[max(node - 1, 0)])!r} -> "
        f"{float(savings[min(node, savings.size - 1)])!r} (wealth {float(wealth[row, node])!r} -> "
        f"{float(wealth[row, node + 1])!r}). Consumption implied by "
        "the Euler equation falls faster than savings rise, so the problem is not concave there "
        "(e.g. a discrete choice or non-concave utility). Use method='grid' (or DC-EGM)."
    )
