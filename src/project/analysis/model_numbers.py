"""The paper's facts about the model and the calibration of its cost of working.

``setup_numbers`` reads the model's calibrated values from the status quo's specification and
the model's module (``lifecycle_normalised``: ages, claiming rule, profiles, bequest, initial
wealth); ``calibration_numbers`` and ``calibration_sentence`` read the cost of working the
estimation calibrated to the claiming fact (``project.estimation.calibrated``) from the
estimation product: its value, the rounds, the share it gives, where the simulated claims fall
and the standard errors with it held fixed. Every value is a string as the paper prints it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from project.analysis.notation import (
    error_decimals,
    number,
    percent,
    printed_decimals,
    symbol,
    variant_name,
)
from project.estimation.products import SavedEstimation
from project.models import buffer_stock, lifecycle_normalised, lifecycle_normalised_params

COST_DECIMALS = 3
EARLY_CLAIM_AGE = 65
"""The paper reports the share of the simulated claims made by this age."""


def setup_numbers(
    *,
    specification: Mapping[str, Any],
    counterfactual: Mapping[str, Any],
    initial_distribution: Mapping[str, Any],
    female_share: float,
) -> dict[str, str]:
    """Return the model's set-up as the paper states it (status quo and the cut's share)."""
    params = specification["params"]
    claiming = lifecycle_normalised.CLAIMING_FACTORS
    profiles = lifecycle_normalised_params.income_profiles()
    n_working = lifecycle_normalised_params.working_years()
    working = slice(0, n_working)
    cut = float(counterfactual["params"]["benefit_scale"])
    return {
        "first_age": str(lifecycle_normalised.FIRST_AGE),
        "last_age": str(lifecycle_normalised.LAST_AGE),
        "n_periods": str(lifecycle_normalised.n_periods()),
        "earliest_claim": str(lifecycle_normalised.EARLIEST_CLAIM),
        "probe_age": str(lifecycle_normalised.EARLIEST_CLAIM - 1),
        "factor_earliest": f"{claiming[lifecycle_normalised.EARLIEST_CLAIM]:g}",
        "factor_latest": f"{claiming[max(claiming)]:g}",
        "latest_credit_age": str(max(claiming)),
        "full_retirement_age": str(min(a for a, f in claiming.items() if f >= 1)),
        "replacement": f"{float(params['replacement']):g}",
        "benefit_scale_cut": f"{cut:g}",
        "benefit_cut": percent(1 - cut, decimals=0),
        "interest_factor": f"{float(params['interest_factor']):g}",
        "bequest_weight": f"{float(params['bequest_weight']):g}",
        "bequest_shift": f"{float(params['bequest_shift']):g}",
        "unemployment": percent(buffer_stock.UNEMPLOYMENT_PROBABILITY),
        "n_nodes": str(buffer_stock.N_NODES),
        "working_profile_last_age": str(lifecycle_normalised.FIRST_AGE + n_working - 1),
        **_range("growth", profiles["income_growth"][working], decimals=3),
        **_range("permanent_sd", profiles["permanent_shock_sd"][working], decimals=2),
        **_range("transitory_sd", profiles["transitory_shock_sd"][working], decimals=2),
        "n_savings": str(int(specification["sizes"]["n_savings"])),
        "female_share": percent(female_share, decimals=0),
        **_initial_numbers(initial_distribution["wealth"]),
    }


def _range(name: str, values: Any, *, decimals: int) -> dict[str, str]:
    """Return the smallest and largest of ``values`` as printed (``<name>_low``, ``_high``)."""
    return {
        f"{name}_low": number(float(min(values)), decimals=decimals),
        f"{name}_high": number(float(max(values)), decimals=decimals),
    }


def _initial_numbers(wealth: Mapping[str, Any]) -> dict[str, str]:
    """Return the initial cash on hand's median, log s.d. and clip, as printed."""
    mean, sd = wealth["lognormal"]
    low, high = wealth.get("clip", (0.0, math.inf))
    return {
        "initial_median": number(math.exp(mean), decimals=2),
        "initial_sd": f"{sd:g}",
        "initial_clip": f"{low:g} and {high:g}",
    }


def calibration_numbers(saved: SavedEstimation) -> dict[str, str]:
    """Return the calibration's figures the paper prints (empty without a calibration)."""
    calibrated = saved.summary.get("calibrated")
    if not calibrated:
        return {}
    rounds = calibrated["rounds"]
    return {
        "work_cost": number(calibrated["value"], decimals=COST_DECIMALS),
        "claim_age": str(int(calibrated["fact"]["age"])),
        "target_share": percent(float(calibrated["fact"]["share"]), decimals=0),
        "share": percent(float(calibrated["share"])),
        "rounds": str(len(rounds)),
        "round_costs": ", ".join(
            number(value, decimals=COST_DECIMALS)
            for value in [r["value"] for r in rounds] + [calibrated["value"]]
        ),
        "calibration_start": number(rounds[0]["value"], decimals=COST_DECIMALS),
        **{
            f"first_round_{name}": number(value, decimals=printed_decimals(name))
            for name, value in rounds[0].get("estimates", {}).items()
        },
        "tolerance": f"{float(calibrated['settings']['tolerance']):g}",
        **_claiming_numbers(calibrated.get("claiming_ages", {})),
        **{
            f"{name}_se_fixed": number(value, decimals=error_decimals(name))
            for name, value in calibrated.get("fixed_cost_standard_errors", {}).items()
        },
        **{
            f"cost_gradient_{name}": number(value, decimals=2)
            for name, value in calibrated.get("cost_gradient", {}).items()
        },
        "crra_above_bound": _above_bound(saved),
        **{
            f"share_slope_{name}": number(value, decimals=2)
            for name, value in calibrated.get("share_slope", {}).items()
        },
        "decision_age": str(int(calibrated.get("decision_age", calibrated["fact"]["age"]))),
    }


def _claiming_numbers(shares: Mapping[str, float]) -> dict[str, str]:
    """Return where the simulated claims fall by age (shares of all claims), as printed."""
    if not shares:
        return {}
    by_age = {int(age): float(share) for age, share in shares.items()}
    first = min(by_age)
    return {
        "claims_first": percent(by_age.get(first, 0.0)),
        "claims_first_age": str(first),
        "claims_early": percent(sum(v for a, v in by_age.items() if a <= EARLY_CLAIM_AGE)),
        "early_age": str(EARLY_CLAIM_AGE),
        "claims_last_age": str(max(a for a, v in by_age.items() if v > 0)),
    }


def _above_bound(saved: SavedEstimation) -> str:
    """Return how many standard errors crra lies above its lower bound, as printed."""
    if "param" not in saved.estimates or "crra" not in set(saved.estimates["param"]):
        return ""
    rows = saved.estimates.set_index("param")
    crra = rows.loc["crra"]
    return number((crra.estimate - crra.lower_bound) / crra.std_error, decimals=1)


def calibration_sentence(saved: SavedEstimation) -> str:
    """Return what the calibration found, with the figures ``calibration_numbers`` prints."""
    own = calibration_numbers(saved)
    if not own:
        return ""
    rounds = "one round" if own["rounds"] == "1" else f"{own['rounds']} rounds"
    return (
        f"The calibration settles, within its tolerance of {own['tolerance']}, at a cost of "
        f"working of {own['work_cost']} of consumption (the cost went {own['round_costs']} "
        f"over {rounds} of estimation and calibration), at which {own['share']} of the "
        f"simulated workers alive at {own['decision_age']} decide to claim at "
        f"{own['claim_age']} at the estimates, "
        f"against the fact\u2019s {own['target_share']}."
    )


def calibration_notes(estimates: Mapping[str, SavedEstimation]) -> str:
    """Return the calibrated param of each estimate that has one, for the estimates' caption."""
    notes = []
    for name, saved in estimates.items():
        own = calibration_numbers(saved)
        if not own:
            continue
        kappa = symbol("work_cost")
        notes.append(
            f"{variant_name(name)}: the cost of working {kappa} is calibrated to "
            f"{own['work_cost']}, at which {own['share']} of the workers alive at "
            f"{own['decision_age']} decide to claim at {own['claim_age']} (the fact: "
            f"{own['target_share']}); the standard "
            f"errors let {kappa} follow the estimates."
        )
    return (" Parameters calibrated jointly with the estimate. " + " ".join(notes)) if notes else ""
