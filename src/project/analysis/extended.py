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

from project.analysis.notation import age_label, number, percent, variant_name
from project.estimation.products import SavedEstimation
from project.models import buffer_stock, lifecycle_normalised

COST_DECIMALS = 3


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
        "n_subjects": f"{int(settings['n_subjects']):,}",
        "n_savings": str(int(calibrated["settings"]["n_savings"])),
        "initial_median": number(
            math.exp(calibrated["settings"]["initial_distribution"]["wealth"]["lognormal"][0]),
            decimals=2,
        ),
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
    }


def extended_sentence(saved: SavedEstimation) -> str:
    """Return what the calibration found, with the figures ``extended_numbers`` prints."""
    own: Mapping[str, Any] = extended_numbers(saved)
    rounds = "one round" if own["rounds"] == "1" else f"{own['rounds']} rounds"
    moved = f"the cost went {own['round_costs']} over {rounds} of estimation and calibration"
    return (
        f"The calibration settles at a cost of working of {own['work_cost']} of consumption "
        f"({moved}), at which {own['share']} of the simulated workers alive at "
        f"{own['claim_age']} claim at that age at the estimates, against the fact's "
        f"{own['target_share']}."
    )


def calibration_notes(estimates: Mapping[str, SavedEstimation]) -> str:
    """Return the calibrated param of each estimate that has one, for the estimates' caption."""
    notes = [
        f"{variant_name(name)}: the cost of working κ is calibrated to "
        f"{own['work_cost']}, at which {own['share']} of the workers alive at "
        f"{own['claim_age']} claim then (the fact: {own['target_share']})."
        for name, own in (
            (name, extended_numbers(saved)) for name, saved in extended_estimates(estimates).items()
        )
    ]
    return (" Calibrated with the estimate. " + " ".join(notes)) if notes else ""
