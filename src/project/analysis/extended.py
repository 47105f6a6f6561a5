"""The paper's facts about the model from age 25: its calibration and set-up.

Its estimates, fit, searches and identification are in the estimation report's tables beside
the status quo's (``project.analysis.estimation``, row label "From age 25"), and their sentence
in ``project.analysis.numbers.estimation_numbers``. Here: the cost of working calibrated to the
claiming fact (``project.estimation.extended``), the claiming share it gives at the estimates,
and the set-up's calibrated values, every one read from the product or the model's module.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from project.analysis.notation import (
    age_label,
    number,
    percent,
    printed_decimals,
    symbol,
    variant_name,
)
from project.estimation.inputs import largest_simulation_share
from project.estimation.products import SavedEstimation
from project.models import buffer_stock, lifecycle_normalised

COST_DECIMALS = 3
EARLY_CLAIM_AGE = 65
"""The paper reports the share of the simulated claims made by this age."""


def extended_estimates(estimates: Mapping[str, SavedEstimation]) -> dict[str, SavedEstimation]:
    """Return the estimates that carry a calibrated param (the model from age 25's)."""
    return {name: saved for name, saved in estimates.items() if "calibrated" in saved.summary}


def extended_numbers(saved: SavedEstimation) -> dict[str, str]:
    """Return the calibration's and the set-up's figures the paper prints."""
    calibrated = saved.summary["calibrated"]
    settings = saved.summary["settings"]
    defaults = lifecycle_normalised.DEFAULT_PARAMS
    ages = [age_label(m) for m in saved.moments["moment"]]
    claiming = lifecycle_normalised.CLAIMING_FACTORS
    return {
        "work_cost": number(calibrated["value"], decimals=COST_DECIMALS),
        "claim_age": str(int(calibrated["fact"]["age"])),
        "target_share": percent(float(calibrated["fact"]["share"]), decimals=0),
        "share": percent(float(calibrated["share"])),
        "rounds": str(len(calibrated["rounds"])),
        "round_costs": ", ".join(
            number(value, decimals=COST_DECIMALS)
            for value in [r["value"] for r in calibrated["rounds"]] + [calibrated["value"]]
        ),
        "ages": f"{ages[0]} to {ages[-1]}".replace("-", "\u2013"),
        "n_households": f"{round(float(saved.moments['n_data'].sum())):,}",
        "n_subjects": f"{int(settings['n_subjects']):,}",
        "simulation_share": percent(largest_simulation_share(saved.moments)),
        "step": percent(float(settings["relative_step"]), decimals=0),
        "n_savings": str(int(calibrated["settings"]["n_savings"])),
        "first_age": str(lifecycle_normalised.FIRST_AGE),
        "last_age": str(lifecycle_normalised.LAST_AGE),
        "earliest_claim": str(lifecycle_normalised.EARLIEST_CLAIM),
        "factor_earliest": f"{claiming[lifecycle_normalised.EARLIEST_CLAIM]:g}",
        "factor_latest": f"{claiming[max(claiming)]:g}",
        "latest_credit_age": str(max(claiming)),
        "replacement": f"{defaults['replacement']:g}",
        "interest_factor": f"{defaults['interest_factor']:g}",
        "bequest_weight": f"{defaults['bequest_weight']:g}",
        "bequest_shift": f"{defaults['bequest_shift']:g}",
        "unemployment": percent(buffer_stock.UNEMPLOYMENT_PROBABILITY),
        "working_profile_last_age": str(
            lifecycle_normalised.FIRST_AGE + lifecycle_normalised.WORKING_PROFILE_AGES - 1
        ),
        **_initial_numbers(calibrated["settings"]["initial_distribution"]["wealth"]),
        **_claiming_numbers(calibrated.get("claiming_ages", {})),
        **_estimate_numbers(saved),
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


def _estimate_numbers(saved: SavedEstimation) -> dict[str, str]:
    """Return the bounds, crra's distance from its lower bound and the estimates' correlation."""
    if saved.estimates.empty:
        return {}
    rows = saved.estimates.set_index("param")
    crra = rows.loc["crra"]
    return {
        "bounds": ", ".join(
            f"{symbol(name)} in [{row.lower_bound:g}, {row.upper_bound:g}]"
            for name, row in rows.iterrows()
        ),
        "crra_lower": f"{crra.lower_bound:g}",
        "crra_above_bound": number((crra.estimate - crra.lower_bound) / crra.std_error, decimals=1),
        "correlation": number(saved.correlation, decimals=2),
        **{
            f"{name}_se_fixed": number(value, decimals=printed_decimals(name))
            for name, value in saved.summary["calibrated"]
            .get("fixed_cost_standard_errors", {})
            .items()
        },
    }


def extended_sentence(saved: SavedEstimation) -> str:
    """Return what the calibration found, with the figures ``extended_numbers`` prints."""
    own: Mapping[str, Any] = extended_numbers(saved)
    rounds = "one round" if own["rounds"] == "1" else f"{own['rounds']} rounds"
    moved = f"the cost went {own['round_costs']} over {rounds} of estimation and calibration"
    return (
        f"The calibration settles, within its tolerance, at a cost of working of "
        f"{own['work_cost']} of consumption "
        f"({moved}), at which {own['share']} of the simulated workers alive at "
        f"{own['claim_age']} claim at that age at the estimates, against the fact\u2019s "
        f"{own['target_share']}."
    )


def calibration_notes(estimates: Mapping[str, SavedEstimation]) -> str:
    """Return the calibrated param of each estimate that has one, for the estimates' caption."""
    notes = [
        f"{variant_name(name)}: the cost of working κ is calibrated to "
        f"{own['work_cost']}, at which {own['share']} of the workers alive at "
        f"{own['claim_age']} claim then (the fact: {own['target_share']}); its standard errors "
        "let \u03ba follow the estimates."
        for name, own in (
            (name, extended_numbers(saved)) for name, saved in extended_estimates(estimates).items()
        )
    ]
    return (" Parameters calibrated jointly with the estimate. " + " ".join(notes)) if notes else ""
