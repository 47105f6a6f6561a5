"""The public ``solve``: check the arguments, choose the method, hand the model to it.

The top layer of the solve: it imports the methods (``project.solver`` for grid search,
``project.egm`` for (DC-)EGM, ``project.regimes`` for models of several regimes), and nothing
below imports it (``tests/test_imports.py`` checks the package graph).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jax

from project.actions import grid_search_needs_points
from project.egm.solution import EGMSolution
from project.egm.solve import solve_egm
from project.egm.structure import egm_obstacle, egm_structure
from project.errors import ModelSpecificationError
from project.model.spec import Model
from project.regimes.solution import RegimeSolution
from project.regimes.solve import solve_regimes
from project.regimes.spec import RegimeModel
from project.solver.checks import LogLevel, OnInvalid, check_log_level, check_on_invalid
from project.solver.solution import Solution
from project.solver.solve import solve_grid

METHODS = ("egm", "dcegm", "grid")


def solve(
    *,
    model: Model | RegimeModel,
    params: Mapping[str, Any],
    log_level: LogLevel = "warning",
    devices: Sequence[Any] | None = None,
    exploit_structure: bool = True,
    method: str | None = None,
    memory_limit: int | float | str | None = None,
    on_invalid: OnInvalid = "raise",
) -> Solution | EGMSolution | RegimeSolution:
    """Solve ``model`` by backward induction and return V and the policy of every period.

    States marked ``distributed`` are sharded over all devices (see ``project.devices``); V
    is returned materialised and still sharded.

    ``log_level``: "off" (no checks at all: NaN in V passes silently, whatever
    ``on_invalid`` says), "warning" (check V for NaN/+inf, warn about states without a feasible
    action, and check transition probabilities once per params), "progress" (also log each
    period's kernel and the solve time), "debug" (also locate NaNs in a warning with
    ``on_invalid="warn"``). ``devices``: the devices to shard over (default: all).

    ``on_invalid``: "raise" (the default) raises ``InvalidValueFunctionError`` when V of some
    period holds NaN or +inf, naming the method, the period and the states where V is NaN
    (discrete codes, continuous indices and values; located only after a check failed);
    "warn" logs a warning and returns the solution (NaNs then flow into evaluation and
    simulation).
    ``exploit_structure=False`` runs the general kernel in every period (to cross-check the
    structure kernels, which give the same V to rounding).

    ``method``: "egm" (the endogenous grid method: consumption and V on endogenous grids, exact
    between grid points up to interpolation; see ``project.egm``), "dcegm" (EGM per discrete
    choice with an upper envelope, for models with discrete actions), "grid" (V and the policy
    on the state and action grids) or None, the default: "egm" or "dcegm" for a model with a
    ``ContinuousAction`` (no points; grid search cannot solve it), or where the model states a
    ``post_decision_grid`` and has the structure EGM needs; else "grid" (a model whose actions
    all have grids and that states no ``post_decision_grid``). EGM/DC-EGM without a stated
    ``post_decision_grid`` use ``default_savings_grid(stop=<last point of the state grid>)``.
    The returned solution's ``method`` says which ran.

    ``memory_limit`` (per device): None for 80% of the free device memory, bytes, or a string
    such as "2GB" or "50%". On the grids the solve's peak is predicted before compiling; if the
    grids' batch sizes do not fit, the largest that do are used (splay is value-identical), and
    ``MemoryPlanError`` says what to do when none does (``project.solver.budget``). A (DC-)EGM
    program has nothing to splay: XLA's buffer assignment of the compiled program is checked
    against the limit before it runs.

    A ``project.regimes.RegimeModel`` is solved regime by regime in one program (one method for
    every regime) and returns a ``RegimeSolution``.
    """
    check_log_level(log_level)
    check_on_invalid(on_invalid)
    if not isinstance(model, Model | RegimeModel):
        msg = f"model must be a project.model.Model or RegimeModel, got {type(model).__name__}."
        raise ModelSpecificationError(msg)
    if devices is not None and len(devices) == 0:
        msg = "devices is empty: give at least one device (default: all of jax.devices())."
        raise ModelSpecificationError(msg)
    if isinstance(model, RegimeModel):
        return solve_regimes(
            model=model,
            params=params,
            log_level=log_level,
            exploit_structure=exploit_structure,
            method=method,
            memory_limit=memory_limit,
            on_invalid=on_invalid,
        )
    if choose_method(model, method=method) in ("egm", "dcegm"):
        _refuse_sharded_egm(model, devices=devices)
        return solve_egm(
            model=model,
            params=params,
            log_level=log_level,
            memory_limit=memory_limit,
            on_invalid=on_invalid,
        )
    return solve_grid(
        model=model,
        params=params,
        log_level=log_level,
        devices=devices,
        exploit_structure=exploit_structure,
        memory_limit=memory_limit,
        on_invalid=on_invalid,
    )


def choose_method(model: Model, *, method: str | None) -> str:
    """Return the method a solve of ``model`` uses: the given one, else the most accurate one.

    ``None`` picks EGM/DC-EGM for a model with a ``ContinuousAction`` (it has no points to
    search) or a stated ``post_decision_grid`` where EGM applies; a model whose actions all
    have grids and that states no ``post_decision_grid`` is solved on its grids.
    """
    endogenous = "dcegm" if model.discrete_actions else "egm"
    if method is None:
        if model.computed_actions:
            egm_structure(model)  # raises, naming the obstacle, where EGM does not apply
            return endogenous
        if model.stated_post_decision_grid is None:
            return "grid"
        return "grid" if egm_obstacle(model) else endogenous
    if method not in METHODS:
        msg = f"method must be one of {METHODS} or None (the most accurate), got {method!r}."
        raise ModelSpecificationError(msg)
    if method == "grid" and model.computed_actions:
        raise ModelSpecificationError(
            grid_search_needs_points(model_name=model.name, actions=model.computed_actions)
        )
    if method in ("egm", "dcegm") and method != endogenous:
        has = (
            f"discrete actions {list(model.discrete_actions)}"
            if model.discrete_actions
            else ("no discrete action")
        )
        msg = (
            f"Model {model.name!r} has {has}: solve it with method={endogenous!r} (or 'grid'), "
            f"not {method!r}."
        )
        raise ModelSpecificationError(msg)
    if method == endogenous:
        egm_structure(model)
    return method


def _refuse_sharded_egm(model: Model, *, devices: Sequence[Any] | None) -> None:
    """Raise where distributed states would be sharded over devices that (DC-)EGM ignores."""
    n_devices = len(jax.devices() if devices is None else devices)
    if model.permanent_states and n_devices > 1:
        msg = (
            f"Model {model.name!r} marks {list(model.permanent_states)} distributed, and there "
            f"are {n_devices} devices, but (DC-)EGM solves on one device and would hold every "
            "block there. Solve by grid search (method='grid', or no post_decision_grid), "
            "set distributed=False, or limit the devices to one."
        )
        raise ModelSpecificationError(msg)
