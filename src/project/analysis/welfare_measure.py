# ruff: noqa: RUF002 (the paper's Greek letters)
"""The consumption-equivalent welfare measure: V at the first states, consumption scaled.

λ solves V_counterfactual = V_base with every period's consumption scaled by 1 + λ; with CRRA
utility that is a closed form in the two values (``consumption_equivalent``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from project.dispatch import solve
from project.errors import ProjectError
from project.regimes.solution import RegimeSolution


class WelfareError(ProjectError, ValueError):
    """The welfare measure's inputs are inconsistent, or no consumption equivalent exists."""


WORKING, WORK_COST = "working", "work_cost"
"""The regime whose utility is net of the work cost, and that cost's param."""
NON_CONSUMPTION_PARAMS = ("bequest_weight", "taste_shock_scale")
"""Params that scale utility flows other than consumption's (divided by k in ``V(k)``)."""


SCALE_STEP = 0.02
"""The step in k of ``consumption_utility``'s central differences (and twice it)."""


def consumption_equivalent(
    *, base_value: float, counterfactual_value: float, consumption_utility: float, crra: float
) -> float:
    """Return λ with ``(1 + λ)^(1-crra) C + base - C = counterfactual`` (C: consumption part)."""
    if crra == 1:
        msg = "crra = 1 (log utility) is not CRRA utility of this form; the model excludes it."
        raise WelfareError(msg)
    ratio = (counterfactual_value - base_value + consumption_utility) / consumption_utility
    if not ratio > 0:
        msg = (
            f"No consumption equivalent: scaling consumption cannot close a gap of "
            f"{counterfactual_value - base_value} with consumption utility {consumption_utility}."
        )
        raise WelfareError(msg)
    return float(ratio ** (1 / (1 - crra)) - 1)


def scaled_params(params: Mapping[str, Any], *, scale: float) -> dict[str, Any]:
    """Return ``params`` with the non-consumption utility params divided by ``scale``."""
    return {
        k: (np.asarray(v, dtype=np.float64) / scale).tolist() if k in NON_CONSUMPTION_PARAMS else v
        for k, v in params.items()
    }


def initial_states(panel: pd.DataFrame) -> pd.DataFrame:
    """Return the first period's row of every subject of a simulated panel (sorted by id)."""
    first = panel[panel["period"] == panel["period"].min()]
    return first.sort_values("subject_id").reset_index(drop=True)


def initial_values(*, solution: RegimeSolution, states: pd.DataFrame) -> np.ndarray:
    """Return V of the first period at each row of ``states`` (columns: regime and its states)."""
    values = np.full(len(states), np.nan)
    regimes = states["regime"].astype(str).to_numpy()
    for regime in np.unique(regimes):
        rows = regimes == regime
        names = solution.solution(regime).model.state_names if regime in solution.solutions else ()
        given = {s: states.loc[rows, s].to_numpy(dtype=np.float64) for s in names}
        values[rows] = solution.value(period=0, regime=regime, states=given)
    return values


def consumption_utility(
    *, model: Any, params: Mapping[str, Any], states: pd.DataFrame, step: float = SCALE_STEP
) -> np.ndarray:
    """Return C, the expected discounted consumption utility, at each row of ``states``.

    ``dV(k)/dk`` at k = 1 with ``V(k) = k V(params scaled by 1/k)``: central differences at
    ``step`` and twice it, combined by Richardson extrapolation (error of order step^4).
    """

    def value(k: float) -> np.ndarray:
        solution = solve(model=model, params=scaled_params(params, scale=k), log_level="warning")
        return k * initial_values(solution=solution, states=states)

    narrow = (value(1 + step) - value(1 - step)) / (2 * step)
    wide = (value(1 + 2 * step) - value(1 - 2 * step)) / (4 * step)
    return (4 * narrow - wide) / 3


def simulated_consumption_utility(*, panel: pd.DataFrame, params: Mapping[str, Any]) -> pd.Series:
    """Return each subject's realised Σ β^t u_t(c_t) in levels over its years alive (Monte Carlo C).

    Consumption in levels is ``consumption * income_unit`` (units of permanent income at the
    first age); the working years' utility is net of the work cost, ((1 - κ) c)^(1-γ)/(1-γ).
    """
    if "income_unit" not in panel:
        msg = (
            "The panel has no column income_unit (each row's normaliser over permanent income at "
            "the first age), which the Monte Carlo check of C needs: save the simulation with "
            "project.pipeline.save_variant_bundle, which adds it."
        )
        raise WelfareError(msg)
    crra, beta = float(np.asarray(params["crra"])), float(np.asarray(params["beta"]))
    cost = float(np.asarray(params.get(WORK_COST, 0.0)))
    regime = panel["regime"].astype(str)
    living = panel[regime != "dead"]
    net = np.where(regime[living.index] == WORKING, 1 - cost, 1.0)
    level = net * living["consumption"].to_numpy(np.float64) * living["income_unit"].to_numpy()
    periods = (living["period"] - panel["period"].min()).to_numpy()
    flow = pd.Series(beta**periods * level ** (1 - crra) / (1 - crra), index=living.index)
    return flow.groupby(living["subject_id"].to_numpy()).sum()


def mean_and_error(values: np.ndarray) -> tuple[float, float]:
    """Return the mean of independent draws and its standard error."""
    values = np.asarray(values, dtype=np.float64)
    return float(values.mean()), float(values.std(ddof=1) / np.sqrt(values.size))
