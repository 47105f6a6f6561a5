"""The benefit cut's welfare effect under each robustness check's estimates and assumptions.

Contract: ``write_robustness_welfare`` solves the status quo and the counterfactual again for
every robustness check (``project.config.ROBUSTNESS``, given as ``specs``): each variant's
specification with the check's changes (``robustness_specification``: its sizes, income
profiles and params), at the check's estimates and its calibrated work cost
(``SavedEstimation.params``, ``calibrated_value``; without one, the status quo's), and writes
λ to one JSON file. Both variants are solved in float64 and λ is the headline's measure
(``project.analysis.welfare.measured_at``: the status quo's simulated households at their
initial states, each counted equally), so only the estimates and the check's assumption differ.
No standard errors: each check's λ is a point estimate.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from project.analysis.welfare import measured_at
from project.analysis.welfare_measure import initial_states
from project.estimation.calibrated import calibrated_value
from project.estimation.products import SavedEstimation
from project.estimation.robustness import robustness_specification
from project.persist.atomic import write_bytes_atomically
from project.persist.bundle import load_table
from project.pipeline import build_variant_model
from project.points import precision

logger = logging.getLogger("project.analysis")

KEPT = ("lambda", "base_value", "counterfactual_value", "value_difference", "consumption_utility")
"""The measures of ``measured_at`` each entry of the JSON keeps."""


def check_params(
    *, params: Mapping[str, Any], check: Mapping[str, Any], estimates: Mapping[str, float]
) -> dict[str, Any]:
    """Return ``params`` with the check's params and then ``estimates`` set (a new dict)."""
    return {**params, **(check.get("params") or {}), **estimates}


def check_specifications(
    *,
    check: Mapping[str, Any],
    specifications: Mapping[str, Mapping[str, Any]],
    variants: tuple[str, str],
) -> list[dict[str, Any]]:
    """Return the specifications of ``variants`` (base, counterfactual) with the check's changes.

    The params the status quo estimates or calibrates are protected: no check may set them.
    """
    base = specifications[variants[0]]
    protected = [*base.get("estimated", []), *base.get("calibrated", [])]
    return [
        robustness_specification(check=check, specification=specifications[v], protected=protected)
        for v in variants
    ]


def measured_check(
    *,
    specifications: list[dict[str, Any]],
    check: Mapping[str, Any],
    estimates: Mapping[str, float],
    calibrated: Mapping[str, float],
    states: pd.DataFrame,
) -> dict[str, Any]:
    """Return λ (and V0, V1, C) with both ``specifications`` solved at these values (float64)."""
    base, counterfactual = (
        check_params(params=s["params"], check=check, estimates={**estimates, **calibrated})
        for s in specifications
    )
    with precision(x64=True):
        model = build_variant_model(
            model=specifications[0]["model"], sizes=specifications[0]["sizes"]
        )
        result = measured_at(
            model=model, base_params=base, counterfactual_params=counterfactual, states=states
        )
    return {key: result[key] for key in KEPT} | {
        "estimates": dict(estimates),
        "calibrated": {name: float(base[name]) for name in calibrated},
    }


def robustness_lambdas(
    *,
    specifications: Mapping[str, Mapping[str, Any]],
    checks: Mapping[str, SavedEstimation],
    specs: Mapping[str, Mapping[str, Any]],
    states: pd.DataFrame,
    base: str,
    counterfactual: str,
) -> dict[str, Any]:
    """Return ``{"status_quo": ..., "checks": {check: ...}}``, each with λ and its inputs.

    ``status_quo``: at the status quo's estimates and calibrated params (recomputed as the
    checks are, in float64); a check without a calibrated param keeps the status quo's.
    """
    variants = (base, counterfactual)
    status = specifications[base]
    calibrated = {n: float(status["params"][n]) for n in status.get("calibrated", [])}
    estimated = {n: float(status["params"][n]) for n in status.get("estimated", [])}
    content: dict[str, Any] = {
        "status_quo": measured_check(
            specifications=[dict(specifications[v]) for v in variants],
            check={},
            estimates=estimated,
            calibrated=calibrated,
            states=states,
        ),
        "checks": {},
    }
    for name, saved in checks.items():
        check = specs[name]
        content["checks"][name] = measured_check(
            specifications=check_specifications(
                check=check, specifications=specifications, variants=variants
            ),
            check=check,
            estimates=saved.params,
            calibrated=calibrated | calibrated_value(saved.summary),
            states=states,
        ) | {"description": str(check.get("description", name))}
    return content


def write_robustness_welfare(
    *,
    specifications: Mapping[str, Mapping[str, Any]],
    checks: Mapping[str, SavedEstimation],
    specs: Mapping[str, Mapping[str, Any]],
    bundle_directory: Path,
    path: Path,
    base: str = "baseline",
    counterfactual: str = "benefit_cut",
) -> dict[str, Any]:
    """Write ``{status_quo, checks: {check: {lambda, estimates, calibrated, ...}}}`` (JSON).

    ``bundle_directory``: the status quo's simulation, whose households' initial states every
    λ is measured at.
    """
    started = time.perf_counter()
    content = robustness_lambdas(
        specifications=specifications,
        checks=checks,
        specs=specs,
        states=initial_states(load_table(Path(bundle_directory))),
        base=base,
        counterfactual=counterfactual,
    )
    text = json.dumps(content, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    write_bytes_atomically(Path(path), text.encode())
    logger.info(
        "Welfare under %d robustness checks in %.1f s.",
        len(content["checks"]),
        time.perf_counter() - started,
    )
    return content
