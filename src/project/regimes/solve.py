"""Solve a model with regimes: pick the method, run it, return one solution per regime."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from project.actions import grid_search_needs_points
from project.egm.structure import egm_obstacle
from project.errors import ModelSpecificationError
from project.regimes.grid import solve_on_grid
from project.regimes.solution import RegimeSolution
from project.regimes.spec import RegimeModel
from project.solver.checks import LogLevel, OnInvalid, check_on_invalid

METHODS = ("egm", "dcegm", "grid")


def solve_regimes(
    *,
    model: RegimeModel,
    params: Mapping[str, Any],
    log_level: LogLevel = "warning",
    exploit_structure: bool = True,
    method: str | None = None,
    memory_limit: Any = None,
    on_invalid: OnInvalid = "raise",
) -> RegimeSolution:
    """Solve every regime; ``method``, ``memory_limit``, ``on_invalid`` as in ``solver.solve``."""
    check_on_invalid(on_invalid)
    chosen = choose_regime_method(model, method=method)
    if chosen == "grid":
        solutions = solve_on_grid(
            model=model,
            params=params,
            log_level=log_level,
            exploit_structure=exploit_structure,
            memory_limit=memory_limit,
            on_invalid=on_invalid,
        )
    else:
        from project.regimes.egm import solve_on_endogenous_grids  # noqa: PLC0415

        solutions = solve_on_endogenous_grids(
            model=model,
            params=params,
            log_level=log_level,
            memory_limit=memory_limit,
            on_invalid=on_invalid,
        )
    first = next(iter(solutions.values()))
    return RegimeSolution(model=model, params=dict(first.params), solutions=solutions)


def choose_regime_method(model: RegimeModel, *, method: str | None) -> str:
    """Return "grid", or "egm"/"dcegm" where every regime admits the endogenous grid method."""
    if method is not None and method not in METHODS:
        msg = f"method must be one of {METHODS} or None (the most accurate), got {method!r}."
        raise ModelSpecificationError(msg)
    computed = {r: v.computed_actions for r, v in model.regimes.items() if v.computed_actions}
    if method == "grid":
        if computed:
            regime, actions = next(iter(computed.items()))
            raise ModelSpecificationError(
                grid_search_needs_points(
                    model_name=model.name, actions=actions, why=f" (regime {regime!r})"
                )
            )
        return "grid"
    obstacles = {r: egm_obstacle(v) for r, v in model.regimes.items()}
    blocked = {r: o for r, o in obstacles.items() if o}
    endogenous = "dcegm" if any(v.discrete_actions for v in model.regimes.values()) else "egm"
    if method is None:
        unstated = any(
            v.stated_post_decision_grid is None and not v.computed_actions
            for v in model.regimes.values()
        )
        if not computed and (blocked or unstated):
            return "grid"
        method = endogenous
    if blocked:
        regime, reason = next(iter(blocked.items()))
        msg = (
            f"Model {model.name!r} cannot be solved with method={method!r}: regime {regime!r} "
            f"does not admit it ({reason}). Solve it with method='grid'."
        )
        raise ModelSpecificationError(msg)
    if method != endogenous:
        msg = (
            f"Model {model.name!r}: solve it with method={endogenous!r} (or 'grid'), not "
            f"{method!r}: {'some' if endogenous == 'dcegm' else 'no'} regime has discrete actions."
        )
        raise ModelSpecificationError(msg)
    return method
