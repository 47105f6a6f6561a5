"""The estimation's numbers for the paper: the estimates, their standard errors, the J-test."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from project.analysis.estimation import age_label
from project.analysis.estimation_text import (
    correlation_sentence,
    j_inflation_sentence,
    misfit_sentence,
    step_sentence,
)
from project.analysis.identification import identification_sentence
from project.analysis.notation import (
    AT_BOUND,
    VARIANT_NAMES,
    error_decimals,
    joined,
    number,
    p_relation,
    p_value,
    percent,
    printed_decimals,
    symbol,
)
from project.estimation.inference import CONFIDENCE
from project.estimation.inputs import largest_simulation_share
from project.estimation.products import SavedEstimation
from project.estimation.variant import halton_points


def estimation_numbers(estimates: Mapping[str, SavedEstimation]) -> dict[str, Any]:
    """Return each estimation's estimates, standard errors and J-test, and the moments' facts."""
    numbers: dict[str, Any] = {"confidence": percent(CONFIDENCE, decimals=0)}
    sentences = []
    for variant, saved in estimates.items():
        own: dict[str, str] = {}
        for row in saved.estimates.itertuples(index=False):
            decimals = printed_decimals(row.param)
            own[row.param] = number(row.estimate, decimals=decimals)
            error = number(row.std_error, decimals=error_decimals(row.param))
            own[f"{row.param}_se"] = AT_BOUND if row.at_bound else error
        summary = saved.summary
        own["j"] = number(summary["j_statistic"], decimals=2)
        own["j_p"] = p_value(summary["j_p_value"])
        own["j_dof"] = str(int(summary["j_dof"]))
        numbers[variant] = own
        sentences.append(_estimation_sentence(variant, own, saved))
    first = next(iter(estimates.values()))
    ages = [age_label(m) for m in first.moments["moment"]]
    settings = first.summary["settings"]
    numbers |= {
        "ages": f"{ages[0]} to {ages[-1]}".replace("-", "\u2013"),
        "n_subjects": f"{int(settings['n_subjects']):,}",
        "simulation_share": percent(largest_simulation_share(first.moments)),
        "step_sentence": step_sentence(first),
        "misfit_sentence": misfit_sentence(first),
        "correlation": number(first.correlation, decimals=2) if len(first.params) > 1 else "",
        "correlation_sentence": correlation_sentence(first),
        "identification_sentence": identification_sentence(first),
        "j_inflation_sentence": j_inflation_sentence(first),
        "start": joined(
            [
                f"{symbol(n)} = {number(settings['start'][n], decimals=printed_decimals(n))}"
                for n in settings["estimated"]
            ]
        ),
        "n_households": f"{round(float(first.moments['n_data'].sum())):,}",
        "n_starts": str(int(settings["n_starts"])),
        "multistart": int(settings["n_starts"]) > 1,
        "n_halton": str(halton_points(int(settings["n_starts"]))),
        "bounds": joined(
            [
                f"{symbol(row.param)} in [{row.lower_bound:g}, {row.upper_bound:g}]"
                for row in first.estimates.itertuples(index=False)
            ]
        ),
        "crra_lower": f"{float(settings['bounds']['crra'][0]):g}",
    }
    return {"numbers": numbers, "sentence": " ".join(sentences)}


def _estimation_sentence(variant: str, own: Mapping[str, str], saved: SavedEstimation) -> str:
    estimated = ", ".join(
        f"{symbol(p)} = {own[p]} "
        + (f"({AT_BOUND})" if own[f"{p}_se"] == AT_BOUND else f"(s.e. {own[f'{p}_se']})")
        for p in saved.estimates["param"]
    )
    rejects = saved.summary["j_p_value"] < 1 - CONFIDENCE
    verdict = "rejects" if rejects else "does not reject"
    sentence = (
        f"For {VARIANT_NAMES.get(variant, variant)}, {estimated}; the J-test {verdict} the "
        f"over-identifying restrictions at the {percent(1 - CONFIDENCE, decimals=0)} level "
        f"(J = {own['j']} with {own['j_dof']} degree{'' if own['j_dof'] == '1' else 's'} of "
        f"freedom, p {p_relation(own['j_p'])})."
    )
    at_bound = saved.summary.get("params_at_bound", [])
    if at_bound:
        names = " and ".join(symbol(p) for p in at_bound)
        sentence += (
            f" The estimate of {names} lies at a bound of its search interval, where no "
            "standard error or interval is valid; the table reports none."
        )
    return sentence
