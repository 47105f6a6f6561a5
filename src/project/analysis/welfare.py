# ruff: noqa: RUF002 (the Greek letters of the welfare formulas)
"""The benefit cut's welfare effect as an ex-ante consumption equivalent (CE) at age 25.

Utility of ``lifecycle_normalised``: ``((1 - κ) c)^(1-γ)/(1-γ)`` working (κ: ``work_cost``),
``c^(1-γ)/(1-γ)`` retired, the warm glow ``ω (m + ζ)^(1-γ)/(1-γ)`` at death (ω:
``bequest_weight``) and, with taste shocks (a robustness check), the EV1 shock of the chosen
claim of scale σ (``taste_shock_scale``, mean zero in both variants). Scaling consumption by
(1 + λ) scales both period utilities by (1 + λ)^(1-γ), the work cost's included: only the
bequest and the taste shocks are not consumption (``NON_CONSUMPTION_PARAMS``).

A household's expected lifetime utility at its initial state splits into the consumption part
``C = E Σ β^t S_t u_t(c_t)`` and the rest ``V0 - C`` along the status quo's behaviour; scaling
its consumption by (1 + λ) in every period and state, behaviour fixed, scales C by
(1 + λ)^(1-γ), so ``(1 + λ)^(1-γ) C + V0 - C = V1`` gives
``λ = ((V1 - V0 + C) / C)^(1/(1-γ)) - 1`` (negative: a loss). V is normalised,
V(M, P) = P^(1-γ) v(M / P), and every household has P = 1 at 25, so V at period 0 is in the
same units for every household and variant. V0, V1 and C are averages over the status quo's
simulated households at their initial states (the same draws in both variants), every
household counted equally: λ is the CE of the ex-ante expected utility at 25.

``C`` is exact: with utility ``k u + b + ε`` the value is ``V(k) = k · V(ω / k, σ / k)``, and
by the envelope theorem dV/dk at k = 1 is C along the optimal policy (``consumption_utility``:
Richardson-extrapolated central differences, four solves). ``simulated_consumption_utility``
is its Monte Carlo check: each simulated household's realised Σ β^t u_t(c_t) in levels.

Uncertainty (``welfare_uncertainty``): both variants are solved at the estimated preferences θ̂
and at the work cost κ̂ calibrated with them, which the calibration moves with θ̂
(dκ/dθ, ``cost_gradient``). The delta method carries the estimates' covariance into λ:
``dλ/dθ_j = ∂λ/∂θ_j + ∂λ/∂κ · dκ/dθ_j`` (all by central differences, both variants and C
solved again at each point, in float64) gives ``lambda_se`` over the covariance that lets κ
follow; ``∂λ/∂θ`` over the covariance with κ held fixed gives ``lambda_se_fixed_cost``.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from project.analysis.welfare_measure import (
    SCALE_STEP,
    WelfareError,
    consumption_equivalent,
    consumption_utility,
    initial_states,
    initial_values,
    mean_and_error,
    simulated_consumption_utility,
)
from project.analysis.welfare_text import welfare_numbers
from project.dispatch import solve
from project.estimation.calibrated import calibrated_value
from project.estimation.products import SavedEstimation, load_estimation
from project.persist.atomic import write_bytes_atomically
from project.persist.bundle import load_table
from project.pipeline import build_variant_model, load_variant_solution, variant_precision
from project.points import precision
from project.regimes.solution import RegimeSolution

logger = logging.getLogger("project.analysis")


DELTA_RELATIVE_STEP = 1e-3
"""The delta method's central-difference step, relative to each param (at least 0.1 times it)."""
STEP_FLOOR = 0.1
"""A param's step is ``DELTA_RELATIVE_STEP * max(|value|, STEP_FLOOR)``, as the estimation's."""


def welfare_effect(
    *,
    model: Any,
    base_params: Mapping[str, Any],
    base_solution: RegimeSolution,
    counterfactual_solution: RegimeSolution,
    states: pd.DataFrame,
    step: float = SCALE_STEP,
) -> dict[str, Any]:
    """Return λ, the mean values V0, V1 and C at ``states`` and V1 - V0.

    ``states``: the initial states (one row per household, columns ``regime`` and its states),
    where both variants are evaluated; every household counts equally.
    """
    v0 = float(np.mean(initial_values(solution=base_solution, states=states)))
    v1 = float(np.mean(initial_values(solution=counterfactual_solution, states=states)))
    c = consumption_utility(model=model, params=base_params, states=states, step=step).mean()
    crra = float(np.asarray(base_params["crra"]))
    return {
        "lambda": consumption_equivalent(
            base_value=v0, counterfactual_value=v1, consumption_utility=c, crra=crra
        ),
        "base_value": v0,
        "counterfactual_value": v1,
        "value_difference": v1 - v0,
        "consumption_utility": float(c),
        "n_households": len(states),
    }


def measured_at(
    *,
    model: Any,
    base_params: Mapping[str, Any],
    counterfactual_params: Mapping[str, Any],
    states: pd.DataFrame,
) -> dict[str, Any]:
    """Return ``welfare_effect`` with both variants solved at these params."""
    solutions = [
        solve(model=model, params=dict(params), log_level="warning")
        for params in (base_params, counterfactual_params)
    ]
    return welfare_effect(
        model=model,
        base_params=base_params,
        base_solution=solutions[0],
        counterfactual_solution=solutions[1],
        states=states,
    )


def delta_method(
    *,
    lambda_at: Callable[[Mapping[str, float]], float],
    estimates: Mapping[str, float],
    covariance: np.ndarray,
    calibrated: Mapping[str, float] | None = None,
    cost_gradient: Mapping[str, float] | None = None,
    fixed_cost_covariance: np.ndarray | None = None,
    relative_step: float = DELTA_RELATIVE_STEP,
) -> dict[str, Any]:
    """Return λ's delta-method standard errors, the calibrated param following and held fixed.

    ``lambda_at(changes)``: λ with the params in ``changes`` moved off ``estimates`` and
    ``calibrated`` (at most one param, whose slope in each estimate is ``cost_gradient``).
    ``covariance``: the estimates' (rows in the order of ``estimates``) with the calibrated param
    following them; ``fixed_cost_covariance``: with it held fixed (default: ``covariance``).
    """
    point = dict(estimates) | dict(calibrated or {})
    if len(point) != len(estimates) + len(calibrated or {}) or len(calibrated or {}) > 1:
        msg = (
            f"Give at most one calibrated param, and none that is estimated: got "
            f"{dict(calibrated or {})} with the estimates {list(estimates)}."
        )
        raise WelfareError(msg)
    slopes = {}
    for name, value in point.items():
        h = relative_step * max(abs(float(value)), STEP_FLOOR)
        up, down = (lambda_at({name: float(value) + sign * h}) for sign in (1, -1))
        slopes[name] = (up - down) / (2 * h)
    names = list(estimates)
    partial = np.array([slopes[n] for n in names])
    cost_slope = sum(slopes[n] for n in calibrated or {})
    gradient = partial + cost_slope * np.array([(cost_gradient or {}).get(n, 0.0) for n in names])
    covariance = np.asarray(covariance, dtype=np.float64).reshape(len(names), len(names))
    fixed = covariance if fixed_cost_covariance is None else fixed_cost_covariance
    fixed = np.asarray(fixed, dtype=np.float64).reshape(len(names), len(names))
    return {
        "lambda_se": float(np.sqrt(gradient @ covariance @ gradient)),
        "lambda_se_fixed_cost": float(np.sqrt(partial @ fixed @ partial)),
        "lambda_gradient": dict(zip(names, gradient.tolist(), strict=True)),
        "lambda_gradient_fixed_cost": dict(zip(names, partial.tolist(), strict=True)),
        "lambda_cost_slope": {n: slopes[n] for n in calibrated or {}},
        "delta_relative_step": relative_step,
    }


def fixed_cost_covariance(estimation: SavedEstimation) -> np.ndarray:
    """Return the estimates' covariance with the calibrated param held fixed.

    ``S Ω S'`` with ``S = (G'WG)^-1 G'W`` the saved ``sensitivity`` and Ω the moments' variances
    (diagonal: the SCF age groups are disjoint samples); checked against the saved
    ``fixed_cost_standard_errors``. The calibrated record's ``fixed_cost_covariance`` where it
    has one; without a calibrated param, the saved covariance.
    """
    calibrated = estimation.summary.get("calibrated") or {}
    if not calibrated or "fixed_cost_covariance" in calibrated:
        return np.asarray(calibrated.get("fixed_cost_covariance", estimation.covariance), float)
    sensitivity = np.asarray(estimation.summary["sensitivity"], dtype=np.float64)
    variances = estimation.moments["std_error"].to_numpy(np.float64) ** 2
    covariance = sensitivity @ np.diag(variances) @ sensitivity.T
    saved = np.array([calibrated["fixed_cost_standard_errors"][n] for n in estimation.params])
    if not np.allclose(np.sqrt(np.diag(covariance)), saved, rtol=1e-6, atol=0):
        msg = (
            f"The estimation's fixed-cost standard errors {saved.tolist()} are not those of its "
            f"sensitivity and moment variances ({np.sqrt(np.diag(covariance)).tolist()}): its "
            "moments' covariance is not diagonal. Save the fixed-cost covariance in the summary's "
            "calibrated record, or rebuild the estimation (`uv run pytask`)."
        )
        raise WelfareError(msg)
    return covariance


def welfare_uncertainty(
    *,
    specification: Mapping[str, Any],
    base_params: Mapping[str, Any],
    counterfactual_params: Mapping[str, Any],
    states: pd.DataFrame,
    estimation: SavedEstimation,
    relative_step: float = DELTA_RELATIVE_STEP,
) -> dict[str, Any]:
    """Return λ's delta-method standard errors over ``estimation``'s estimates (float64).

    ``specification``: the base variant's (its ``model`` and ``sizes``). Both variants' params
    must hold the estimates and the calibrated value exactly.
    """
    estimates, calibrated = estimation.params, calibrated_value(estimation.summary)
    point = estimates | calibrated
    for params in (base_params, counterfactual_params):
        mismatched = [n for n in point if float(np.asarray(params[n])) != point[n]]
        if mismatched:
            msg = (
                f"The welfare measure's params differ from the estimation's in {mismatched}: both "
                "variants must be solved at the status quo's estimates and calibrated work cost. "
                "Rebuild with `uv run pytask`."
            )
            raise WelfareError(msg)
    fixed, record = fixed_cost_covariance(estimation), estimation.summary.get("calibrated") or {}
    with precision(x64=True):
        model = build_variant_model(model=specification["model"], sizes=specification["sizes"])
        result = delta_method(
            lambda_at=lambda changes: measured_at(
                model=model,
                base_params={**base_params, **changes},
                counterfactual_params={**counterfactual_params, **changes},
                states=states,
            )["lambda"],
            estimates=estimates,
            covariance=estimation.covariance,
            calibrated=calibrated,
            cost_gradient=record.get("cost_gradient"),
            fixed_cost_covariance=fixed,
            relative_step=relative_step,
        )
    return result | {
        "estimated_params": estimates,
        "calibrated_params": calibrated,
        "calibration_fact": record.get("fact"),
        "calibration_decision_age": record.get("decision_age"),
        "covariance": estimation.covariance.tolist(),
        "fixed_cost_covariance": fixed.tolist(),
        "params_at_bound": list(estimation.summary.get("params_at_bound", [])),
    }


def changed_params(base: Mapping[str, Any], counterfactual: Mapping[str, Any]) -> dict[str, Any]:
    """Return the scalar params the counterfactual changes: ``{name: [base, counterfactual]}``."""
    return {
        name: [float(base[name]), float(value)]
        for name, value in sorted(counterfactual.items())
        if np.ndim(value) == 0 and name in base and float(base[name]) != float(value)
    }


def _welfare_at_estimates(
    *,
    specifications: Mapping[str, Mapping[str, Any]],
    solution_directories: Mapping[str, Path],
    states: pd.DataFrame,
    base: str,
    counterfactual: str,
) -> dict[str, Any]:
    """Return ``welfare_effect`` of the saved solutions of ``base`` and ``counterfactual``."""
    specification = dict(specifications[base])
    with variant_precision(specification):
        model = build_variant_model(model=specification["model"], sizes=specification["sizes"])
        solutions = {
            v: load_variant_solution(
                specification=dict(specifications[v]), directory=Path(solution_directories[v])
            )
            for v in (base, counterfactual)
        }
        return welfare_effect(
            model=model,
            base_params=specification["params"],
            base_solution=solutions[base],
            counterfactual_solution=solutions[counterfactual],
            states=states,
        )


def write_welfare(
    *,
    specifications: Mapping[str, Mapping[str, Any]],
    solution_directories: Mapping[str, Path],
    bundle_directories: Mapping[str, Path],
    estimation_directory: Path,
    path: Path,
    provenance: Mapping[str, str] | None = None,
    base: str = "baseline",
    counterfactual: str = "benefit_cut",
) -> dict[str, Any]:
    """Measure the counterfactual's CE against the base variant; write and return the result.

    The JSON holds ``lambda``, its delta-method standard errors over the estimates in
    ``estimation_directory`` (``lambda_se``: the work cost following them, the headline;
    ``lambda_se_fixed_cost``), ``numbers`` (as printed), ``values`` (every measure, the Monte
    Carlo check of C included) and ``provenance``.
    """
    start = time.perf_counter()
    specification = dict(specifications[base])
    panel = load_table(Path(bundle_directories[base]))
    states = initial_states(panel)
    result = _welfare_at_estimates(
        specifications=specifications,
        solution_directories=solution_directories,
        states=states,
        base=base,
        counterfactual=counterfactual,
    )
    simulated = simulated_consumption_utility(panel=panel, params=specification["params"])
    mean, error = mean_and_error(simulated.reindex(states["subject_id"]).to_numpy())
    result |= {"simulated_consumption_utility": mean, "simulated_consumption_utility_se": error}
    result |= welfare_uncertainty(
        specification=specification,
        base_params=specification["params"],
        counterfactual_params=specifications[counterfactual]["params"],
        states=states,
        estimation=load_estimation(Path(estimation_directory)),
    )
    result |= {
        "base": base,
        "counterfactual": counterfactual,
        "policy": changed_params(specification["params"], specifications[counterfactual]["params"]),
        "first_age": float(states["age"].iloc[0]) if "age" in states else None,
    }
    content = {
        "lambda": result["lambda"],
        "lambda_se": result["lambda_se"],
        "lambda_se_fixed_cost": result["lambda_se_fixed_cost"],
        "numbers": welfare_numbers(result),
        "values": result,
        "provenance": dict(provenance or {}),
    }
    text = json.dumps(content, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    write_bytes_atomically(Path(path), text.encode())
    logger.info("Welfare: λ = %.4f in %.1f s.", result["lambda"], time.perf_counter() - start)
    return content
