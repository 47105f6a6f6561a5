"""The pension cut's welfare cost under each robustness check's estimates.

Contract: ``write_robustness_welfare`` solves the status quo and the counterfactual again for
every robustness check, each at the check's estimates and with the check's calibrated params
(``params`` of the check in ``project.config.ROBUSTNESS``; a check that only changes the age
range keeps the status quo's), and writes λ overall and by type to one JSON file. Both
variants are solved in float64 and λ is the same measure as the headline's
(``project.analysis.welfare.lambdas_at``: the status quo's simulated households at their
initial states, weighted by the status quo's calibrated weights), so only the estimates and
the check's assumption differ. No standard errors: each check's λ is a point estimate.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from project.analysis.welfare import initial_states, lambdas_at, subject_weights
from project.estimation.products import SavedEstimation
from project.persist.atomic import write_bytes_atomically
from project.persist.bundle import load_table
from project.pipeline import build_variant_model
from project.points import precision

logger = logging.getLogger("project.analysis")


def check_params(
    *, params: Mapping[str, Any], check: Mapping[str, Any], estimates: Mapping[str, float]
) -> dict[str, Any]:
    """Return a variant's ``params`` with the check's calibrated params and estimates set."""
    return {**params, **check.get("params", {}), **estimates}


def robustness_lambdas(
    *,
    specifications: Mapping[str, Mapping[str, Any]],
    checks: Mapping[str, SavedEstimation],
    specs: Mapping[str, Mapping[str, Any]],
    states: pd.DataFrame,
    weights: Any,
    base: str,
    counterfactual: str,
) -> dict[str, dict[str, Any]]:
    """Return λ (``lambda``, ``lambda_by_type``) of the status quo and of every check.

    ``status_quo``: at the status quo's estimates (recomputed as the checks are, in float64);
    ``checks``: one entry per check.
    """
    specification = specifications[base]

    def measured(check: Mapping[str, Any], estimates: Mapping[str, float]) -> dict[str, Any]:
        lambdas = lambdas_at(
            model=model,
            base_params=check_params(
                params=specification["params"], check=check, estimates=estimates
            ),
            counterfactual_params=check_params(
                params=specifications[counterfactual]["params"], check=check, estimates=estimates
            ),
            states=states,
            weights=weights,
        )
        return {"lambda": lambdas.pop("all"), "lambda_by_type": lambdas, "estimates": estimates}

    with precision(x64=True):
        model = build_variant_model(model=specification["model"], sizes=specification["sizes"])
        estimated = {name: specification["params"][name] for name in specification["estimated"]}
        status_quo = measured({}, {n: float(v) for n, v in estimated.items()})
        return {
            "status_quo": status_quo,
            "checks": {name: measured(specs[name], saved.params) for name, saved in checks.items()},
        }


def write_robustness_welfare(
    *,
    specifications: Mapping[str, Mapping[str, Any]],
    checks: Mapping[str, SavedEstimation],
    specs: Mapping[str, Mapping[str, Any]],
    bundle_directory: Path,
    weights: pd.DataFrame | None,
    path: Path,
    base: str = "baseline",
    counterfactual: str = "low_pension",
) -> dict[str, Any]:
    """Write ``{status_quo, checks: {check: {lambda, lambda_by_type, estimates}}}`` (JSON)."""
    started = time.perf_counter()
    states = initial_states(load_table(Path(bundle_directory)))
    content = robustness_lambdas(
        specifications=specifications,
        checks=checks,
        specs=specs,
        states=states,
        weights=subject_weights(states=states, weights=weights),
        base=base,
        counterfactual=counterfactual,
    )
    text = json.dumps(content, indent=2, sort_keys=True) + "\n"
    write_bytes_atomically(Path(path), text.encode())
    logger.info(
        "Welfare under %d robustness checks in %.1f s.",
        len(content["checks"]),
        time.perf_counter() - started,
    )
    return content
