# ruff: noqa: RUF002 (the Greek letters of the welfare formulas)
"""The pension cut's welfare effect as a consumption equivalent (CE), computed exactly.

Utility of ``lifecycle_regimes``: per period alive, ``u(c) = c^(1-γ)/(1-γ)`` less the type's
disutility of work while working, plus the EV1 taste shock of the chosen retirement option;
survival discounts the future, the dead get 0 (no bequest motive). Taste shocks are taken as
mean zero (the log-sum without Euler's constant: a worker's V is exactly her expected utility
including the shocks), the same convention in both variants, so they enter as a utility flow
that is not consumption, like the disutility of work.

A baseline household's expected lifetime utility at its initial state splits into the
consumption part ``C = E Σ β^t S_t u(c_t)`` and the rest ``R = V0 - C`` (work, shocks) along
the baseline's behaviour. Scaling its consumption by (1 + λ) in every period and state,
behaviour fixed, scales ``C`` by (1 + λ)^(1-γ), so the CE solves
``(1 + λ)^(1-γ) C + V0 - C = V1`` (V1: the counterfactual's expected lifetime utility):
``λ = ((V1 - V0 + C) / C)^(1/(1-γ)) - 1`` (negative: a loss).

``C`` is exact, not simulated: with utility ``k u(c) - d w + ε`` the value is
``V(k) = k · V(d / k, σ / k)`` (the model's params ``disutility_of_work``,
``taste_shock_scale`` and ``bequest_weight`` scaled, no engine change), and by the envelope
theorem (the log-sum's choice probabilities are optimal too) ``dV/dk`` at k = 1 is ``C`` along
the optimal policy. ``consumption_utility`` takes the derivative by Richardson-extrapolated
central differences (four solves of the baseline). Expectations over the initial distribution
average V at the simulated panel's first-period states (the same draws in both variants),
each household weighted by its calibrated weight (the baseline's reweighting to the aggregate
targets, which every table uses too; without weights, equally); λ by type uses the type's
households. ``simulated_consumption_utility`` is the Monte-Carlo counterpart from the panel's
consumption, a check of ``C``.

Uncertainty: both variants are solved at the status quo's estimated preferences θ̂, so λ is a
function of θ̂. ``welfare_uncertainty`` carries the estimates' sampling covariance Σ into λ by
the delta method: ``se(λ) = sqrt(g' Σ g)`` with ``g = dλ/dθ`` by central differences (both
variants and C solved again at θ̂ ± h for each estimated param, in float64, ``h`` a
``relative_step`` of the param), overall and by type.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from project.analysis.welfare_text import welfare_numbers
from project.calibration.weighting import WEIGHT, attach_weights
from project.dispatch import solve
from project.estimation.products import load_estimation
from project.persist.atomic import write_bytes_atomically
from project.persist.bundle import load_table
from project.pipeline import build_variant_model, load_variant_solution, variant_precision
from project.points import precision
from project.regimes.solution import RegimeSolution

logger = logging.getLogger("project.analysis")

NON_CONSUMPTION_PARAMS = ("disutility_of_work", "taste_shock_scale", "bequest_weight")
"""Params that scale utility flows other than consumption's (divided by k in ``V(k)``)."""
DELTA_RELATIVE_STEP = 1e-3
"""The delta method's central-difference step, relative to each estimated param."""


def consumption_equivalent(
    *, base_value: float, counterfactual_value: float, consumption_utility: float, crra: float
) -> float:
    """Return λ with ``(1 + λ)^(1-crra) C + base - C = counterfactual`` (C: consumption part)."""
    if crra == 1:
        msg = "crra = 1 (log utility) is not CRRA utility of this form; the model excludes it."
        raise ValueError(msg)
    ratio = (counterfactual_value - base_value + consumption_utility) / consumption_utility
    if not ratio > 0:
        msg = (
            f"No consumption equivalent: scaling consumption cannot close a gap of "
            f"{counterfactual_value - base_value} with consumption utility {consumption_utility}."
        )
        raise ValueError(msg)
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
        given = {
            s: states.loc[rows, s].astype(str).to_numpy()
            if isinstance(states[s].dtype, pd.CategoricalDtype)
            else states.loc[rows, s].to_numpy(dtype=np.float64)
            for s in names
        }
        values[rows] = solution.value(period=0, regime=regime, states=given)
    return values


def consumption_utility(
    *,
    model: Any,
    params: Mapping[str, Any],
    states: pd.DataFrame,
    step: float = 0.02,
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
    """Return each subject's realised Σ β^t u(c_t) over the periods alive (Monte Carlo C)."""
    gamma, beta = float(np.asarray(params["crra"])), float(np.asarray(params["beta"]))
    living = panel[panel["regime"].astype(str) != "dead"]
    periods = living["period"] - panel["period"].min()
    flow = beta**periods * living["consumption"].astype(np.float64) ** (1 - gamma) / (1 - gamma)
    return flow.groupby(living["subject_id"]).sum()


def welfare_effect(
    *,
    model: Any,
    base_params: Mapping[str, Any],
    base_solution: RegimeSolution,
    counterfactual_solution: RegimeSolution,
    states: pd.DataFrame,
    weights: np.ndarray | None = None,
    step: float = 0.02,
) -> dict[str, Any]:
    """Return λ overall and by ``pref_type``, the expected values and their difference.

    ``states``: the initial states (one row per household, columns ``regime`` and its states);
    both variants are evaluated there. ``weights``: one per row (default: equal), for every
    mean. Keys: ``lambda``, ``lambda_by_type``, ``base_value``, ``counterfactual_value``,
    ``value_difference`` (V1 - V0), ``consumption_utility`` (C), ``value_difference_by_type``,
    ``type_shares`` (weighted), ``n_households``.
    """
    base = initial_values(solution=base_solution, states=states)
    counterfactual = initial_values(solution=counterfactual_solution, states=states)
    consumption = consumption_utility(model=model, params=base_params, states=states, step=step)
    crra = float(np.asarray(base_params["crra"]))
    frame = pd.DataFrame({"v0": base, "v1": counterfactual, "c": consumption})
    frame["w"] = np.ones(len(frame)) if weights is None else np.asarray(weights, dtype=np.float64)

    def weighted_means(part: pd.DataFrame) -> pd.Series:
        return part[["v0", "v1", "c"]].mul(part["w"], axis=0).sum() / part["w"].sum()

    def effect(part: pd.DataFrame) -> float:
        means = weighted_means(part)
        return consumption_equivalent(
            base_value=means["v0"],
            counterfactual_value=means["v1"],
            consumption_utility=means["c"],
            crra=crra,
        )

    types = states["pref_type"].astype(str) if "pref_type" in states else None
    groups = {} if types is None else dict(list(frame.groupby(types.to_numpy(), sort=False)))
    order = list(states["pref_type"].cat.categories) if types is not None else []
    order = [t for t in map(str, order) if t in groups] or sorted(groups)
    means, by_type = weighted_means(frame), {t: weighted_means(groups[t]) for t in order}
    return {
        "lambda": effect(frame),
        "lambda_by_type": {t: effect(groups[t]) for t in order},
        "base_value": float(means["v0"]),
        "counterfactual_value": float(means["v1"]),
        "value_difference": float(means["v1"] - means["v0"]),
        "consumption_utility": float(means["c"]),
        "value_difference_by_type": {t: float(m["v1"] - m["v0"]) for t, m in by_type.items()},
        "type_shares": {t: float(groups[t]["w"].sum() / frame["w"].sum()) for t in order},
        "n_households": len(frame),
    }


def lambdas_at(
    *,
    model: Any,
    base_params: Mapping[str, Any],
    counterfactual_params: Mapping[str, Any],
    states: pd.DataFrame,
    weights: np.ndarray | None = None,
) -> dict[str, float]:
    """Return λ overall (key ``"all"``) and by type with both variants solved at these params."""
    solutions = [
        solve(model=model, params=dict(params), log_level="warning")
        for params in (base_params, counterfactual_params)
    ]
    result = welfare_effect(
        model=model,
        base_params=base_params,
        base_solution=solutions[0],
        counterfactual_solution=solutions[1],
        states=states,
        weights=weights,
    )
    return {"all": result["lambda"], **result["lambda_by_type"]}


def welfare_uncertainty(
    *,
    specification: Mapping[str, Any],
    base_params: Mapping[str, Any],
    counterfactual_params: Mapping[str, Any],
    states: pd.DataFrame,
    estimates: Mapping[str, float],
    covariance: np.ndarray,
    weights: np.ndarray | None = None,
    relative_step: float = DELTA_RELATIVE_STEP,
) -> dict[str, Any]:
    """Return λ's delta-method standard error overall and by type, and its gradient in θ.

    ``specification``: the base variant's (its ``model`` and ``sizes`` are built in float64).
    ``estimates``: the estimated params (θ̂, in the order of ``covariance``'s rows), which both
    ``base_params`` and ``counterfactual_params`` must hold at exactly those values. The solves
    run in float64 (differences of λ over a step of 1e-3 are below float32's resolution of V).
    """
    names = list(estimates)
    for params in (base_params, counterfactual_params):
        mismatched = [n for n in names if float(np.asarray(params[n])) != float(estimates[n])]
        if mismatched:
            msg = (
                f"The welfare measure's params differ from the estimates in {mismatched}: both "
                "variants must be solved at the status quo's estimates. Rebuild with pytask."
            )
            raise ValueError(msg)
    gradients: dict[str, dict[str, float]] = {}
    with precision(x64=True):
        model = build_variant_model(model=specification["model"], sizes=specification["sizes"])
        for name in names:
            step = relative_step * abs(float(estimates[name]))
            sides = [
                lambdas_at(
                    model=model,
                    base_params={**base_params, name: float(estimates[name]) + sign * step},
                    counterfactual_params={
                        **counterfactual_params,
                        name: float(estimates[name]) + sign * step,
                    },
                    states=states,
                    weights=weights,
                )
                for sign in (1, -1)
            ]
            gradients[name] = {g: (sides[0][g] - sides[1][g]) / (2 * step) for g in sides[0]}
    groups = list(next(iter(gradients.values())))
    covariance = np.asarray(covariance, dtype=np.float64).reshape(len(names), len(names))
    errors = {}
    for group in groups:
        gradient = np.array([gradients[n][group] for n in names])
        errors[group] = float(np.sqrt(gradient @ covariance @ gradient))
    return {
        "lambda_se": errors.pop("all"),
        "lambda_se_by_type": errors,
        "lambda_gradient": {n: gradients[n]["all"] for n in names},
        "delta_relative_step": relative_step,
        "estimated_params": dict(estimates),
    }


def write_welfare(
    *,
    specifications: Mapping[str, Mapping[str, Any]],
    solution_directories: Mapping[str, Path],
    bundle_directories: Mapping[str, Path],
    estimation_directory: Path,
    path: Path,
    weights: pd.DataFrame | None = None,
    provenance: Mapping[str, str] | None = None,
    base: str = "baseline",
    counterfactual: str = "low_pension",
) -> dict[str, Any]:
    """Measure the counterfactual's CE against the base variant; write and return the result.

    ``weights`` (``subject_id``, ``weight``: the base variant's calibrated weights) weight its
    households in every mean. The JSON holds ``lambda`` and ``lambda_by_type`` (shares), their
    delta-method standard errors over the estimates in ``estimation_directory``
    (``lambda_se``, ``lambda_se_by_type``), ``numbers`` (as printed), ``values`` (every
    measure, including the Monte-Carlo check of C) and ``provenance``.
    """
    start = time.perf_counter()
    specification = dict(specifications[base])
    panel = load_table(Path(bundle_directories[base]))
    states = initial_states(panel)
    household_weights = subject_weights(states=states, weights=weights)
    with variant_precision(specification):
        model = build_variant_model(model=specification["model"], sizes=specification["sizes"])
        solutions = {
            v: load_variant_solution(
                specification=dict(specifications[v]), directory=Path(solution_directories[v])
            )
            for v in (base, counterfactual)
        }
        result = welfare_effect(
            model=model,
            base_params=specification["params"],
            base_solution=solutions[base],
            counterfactual_solution=solutions[counterfactual],
            states=states,
            weights=household_weights,
        )
    simulated = simulated_consumption_utility(panel=panel, params=specification["params"])
    mean, error = weighted_mean_and_error(
        simulated.reindex(states["subject_id"]).to_numpy(), weights=household_weights
    )
    result |= {
        "simulated_consumption_utility": mean,
        "simulated_consumption_utility_se": error,
        "weighted": weights is not None,
    }
    estimation = load_estimation(Path(estimation_directory))
    result |= welfare_uncertainty(
        specification=specification,
        base_params=specification["params"],
        counterfactual_params=specifications[counterfactual]["params"],
        states=states,
        estimates=estimation.params,
        covariance=estimation.covariance,
        weights=household_weights,
    )
    result["params_at_bound"] = list(estimation.summary.get("params_at_bound", []))
    content = {
        "lambda": result["lambda"],
        "lambda_by_type": result["lambda_by_type"],
        "lambda_se": result["lambda_se"],
        "lambda_se_by_type": result["lambda_se_by_type"],
        "numbers": welfare_numbers(result),
        "values": result | {"base": base, "counterfactual": counterfactual},
        "provenance": dict(provenance or {}),
    }
    text = json.dumps(content, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    write_bytes_atomically(Path(path), text.encode())
    logger.info("Welfare: λ = %.4f in %.1f s.", result["lambda"], time.perf_counter() - start)
    return content


def subject_weights(*, states: pd.DataFrame, weights: pd.DataFrame | None) -> np.ndarray:
    """Return each row's weight from ``weights`` (by ``subject_id``); ones without them.

    ``attach_weights`` refuses weights that miss a household, repeat one or are not finite.
    """
    if weights is None:
        return np.ones(len(states))
    attached = attach_weights(panel=states[["subject_id"]], weights=weights)
    return attached[WEIGHT].to_numpy(dtype=np.float64)


def weighted_mean_and_error(values: np.ndarray, *, weights: np.ndarray) -> tuple[float, float]:
    """Return the weighted mean of independent draws and its standard error (weights fixed)."""
    shares = np.asarray(weights, dtype=np.float64) / np.sum(weights)
    mean = float(shares @ values)
    residuals = values - mean
    correction = len(values) / (len(values) - 1)
    return mean, float(np.sqrt(correction * np.sum(shares**2 * residuals**2)))
