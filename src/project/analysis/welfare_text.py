"""The paper's welfare numbers and sentences: the consumption equivalent, its precision, its check.

Every number is printed once, by ``welfare_numbers``, into ``welfare.json``'s ``numbers``; the
sentences and the welfare table cite those strings, so they cannot disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from project.analysis.notation import PARAMETERS, SMALLEST_SE, joined, number, percent, symbol
from project.analysis.table_cells import MINUS
from project.estimation.inference import CONFIDENCE, CRITICAL

SMALLEST_PRINTED = 0.0005
"""A standard error below this many percentage points prints as ``SMALLEST_SE``, not "0.000 %"."""
LAMBDA_DECIMALS = 2
"""λ and its standard errors print in percent with this many decimals, or one more where the
headline standard error is below 0.1 percentage points (so that it keeps two digits)."""
VALUE_DECIMALS = 3
"""Expected lifetime utilities (V0, V1, C and its Monte Carlo estimate) print with these."""


def welfare_numbers(result: Mapping[str, Any]) -> dict[str, str]:
    """Return every welfare number as printed, from ``write_welfare``'s ``values``.

    λ (percent) with its standard errors and intervals (``lambda_se``, ``lambda_ci``: the work
    cost following the estimates; ``lambda_se_fixed_cost``, ``lambda_ci_fixed_cost``: held
    fixed), none where an estimate lies at a bound (``params_at_bound``); V0, V1, their
    difference and C (``base_value``, ``counterfactual_value``, ``value_difference``,
    ``consumption_utility``); λ's change in percentage points per hundredth of β
    (``lambda_beta_slope``), where β is estimated; the Monte Carlo check of C
    (``consumption_utility_mc``, its ``_se`` and ``_distance`` in standard errors,
    ``n_households``), where ``result`` has it.
    """
    decimals = lambda_decimals(result)
    numbers = {
        "lambda": percent(result["lambda"], decimals=decimals),
        "value_difference": number(result["value_difference"], decimals=VALUE_DECIMALS + 1),
    }
    for key in ("base_value", "counterfactual_value", "consumption_utility"):
        if key in result:
            numbers[key] = number(result[key], decimals=VALUE_DECIMALS)
    if not result.get("params_at_bound"):  # no delta method at a bound
        for suffix in ("", "_fixed_cost"):
            error = result.get(f"lambda_se{suffix}")
            if error is not None:
                numbers[f"lambda_se{suffix}"] = (
                    percent(error, decimals=decimals)
                    if 100 * error >= SMALLEST_PRINTED
                    else SMALLEST_SE
                )
                low, high = (
                    percent(b, decimals=decimals) for b in normal_interval(result["lambda"], error)
                )
                numbers[f"lambda_ci{suffix}"] = f"[{low}, {high}]"
    slope = (result.get("lambda_gradient") or {}).get("beta")
    if slope is not None:  # percentage points of λ per hundredth of β
        numbers["lambda_beta_slope"] = number(slope, decimals=2)
    error = result.get("simulated_consumption_utility_se")
    if error and "consumption_utility" in result:
        simulated = result["simulated_consumption_utility"]
        numbers |= {
            "consumption_utility_mc": number(simulated, decimals=VALUE_DECIMALS),
            "consumption_utility_mc_se": number(error, decimals=VALUE_DECIMALS),
            "consumption_utility_mc_distance": number(
                abs(simulated - result["consumption_utility"]) / error, decimals=1
            ),
            "n_households": f"{int(result['n_households']):,}",
        }
    return numbers


def lambda_decimals(result: Mapping[str, Any]) -> int:
    """Return the decimals of λ in percent: ``LAMBDA_DECIMALS``, one more for a small s.e."""
    error = None if result.get("params_at_bound") else result.get("lambda_se")
    return LAMBDA_DECIMALS + int(error is not None and 100 * error < 0.1)


def normal_interval(value: float, error: float) -> tuple[float, float]:
    """Return the 95 % interval of ``value`` with standard error ``error`` (normal)."""
    return value - CRITICAL * error, value + CRITICAL * error


def welfare_sentence(welfare: Mapping[str, Any]) -> dict[str, str]:
    """Return the abstract's and the counterfactual section's sentences on welfare.

    Both say what the standard error carries: the sampling uncertainty of the estimated
    preferences, with the cost of working calibrated again at each (``lambda_se``).
    """
    printed, values = welfare["numbers"], welfare.get("values", {})
    overall = float(welfare["lambda"])
    cut = _policy(values)
    abstract = (
        f"{cut[:1].upper()}{cut[1:]} is a welfare {'loss' if overall < 0 else 'gain'} worth "
        f"{printed['lambda'].removeprefix(MINUS)} of consumption in every period and state"
    )
    households = (
        f"the {int(values['n_households']):,} simulated" if "n_households" in values else "the"
    )
    sentence = (
        f"Evaluated ex ante at age {_age(values)} over {households} households' initial cash on "
        f"hand, each counted equally, {cut} has the consumption equivalent λ = {printed['lambda']}"
    )
    if "lambda_se" in printed:
        recalibrated = bool(values.get("calibrated_params"))
        abstract += (
            f" (standard error {printed['lambda_se']}, from the sampling uncertainty of the "
            "estimated preferences"
            + (", the cost of working recalibrated along)" if recalibrated else ")")
        )
        sentence += (
            f" (standard error {printed['lambda_se']}; {percent(CONFIDENCE, decimals=0)} "
            f"interval {printed['lambda_ci']}). The standard error carries the sampling "
            f"uncertainty of the estimated {_estimated(values)} by the delta method"
            + (_recalibration(values, printed) if recalibrated else "")
        )
    sentence += "."
    at_bound = values.get("params_at_bound", [])
    if at_bound:
        names = " and ".join(symbol(p) for p in at_bound)
        sentence += (
            f" No standard error is given: the estimate of {names} lies at a bound of its "
            "search interval, where the delta method does not apply."
        )
    return {"abstract": abstract + ".", "sentence": sentence}


def _recalibration(values: Mapping[str, Any], printed: Mapping[str, str]) -> str:
    """Return the clause on the cost of working, recalibrated at each value of the estimates."""
    fact = values.get("calibration_fact") or {}
    clause = (
        f", with the cost of working {_symbols(values['calibrated_params'])} calibrated again at "
        "each value of them, as the estimation calibrates it"
    )
    if fact:
        decided = values.get("calibration_decision_age")
        who = (
            f"alive at {fact['age']} claim there"
            if decided is None
            else f"alive at {decided} decide to claim at {fact['age']}"
        )
        clause += f" (so that {percent(fact['share'], decimals=0)} of the workers {who})"
    fixed = printed.get("lambda_se_fixed_cost")
    if fixed is not None:
        would = (
            "the same to the printed digits" if fixed == printed.get("lambda_se") else f"{fixed}"
        )
        clause += (
            "; holding it fixed instead, in the estimates' covariance and in λ's response to "
            f"them, the standard error would be {would}"
        )
    return clause


def _estimated(values: Mapping[str, Any]) -> str:
    names = list(values.get("estimated_params", {}))
    return f"preferences {_symbols(names)}" if names else "preferences"


def _symbols(names: Any) -> str:
    """Return the params' symbols joined, in the order of the paper's notation."""
    order = list(PARAMETERS)
    ranked = sorted(names, key=lambda n: order.index(n) if n in order else len(order))
    return joined([symbol(n) for n in ranked])


def monte_carlo_sentence(welfare: Mapping[str, Any]) -> str:
    """Return the Monte Carlo check of the welfare measure (empty without one)."""
    printed = welfare.get("numbers", {})
    if "consumption_utility_mc" not in printed:
        return ""
    values = welfare["values"]
    gap = values["simulated_consumption_utility"] - values["consumption_utility"]
    within = abs(gap) <= CRITICAL * values["simulated_consumption_utility_se"]
    level = percent(1 - CONFIDENCE, decimals=0)
    verdict = (
        f"within the two-sided {level} critical value of "
        if within
        else f"beyond the {level} critical value of "
    ) + number(CRITICAL, decimals=2)
    return (
        "The expected discounted utility of consumption behind λ, computed from the solution "
        f"({printed['consumption_utility']}), and its Monte Carlo estimate from the "
        f"{printed['n_households']} simulated households' realised consumption "
        f"({printed['consumption_utility_mc']}, standard error "
        f"{printed['consumption_utility_mc_se']}) are {printed['consumption_utility_mc_distance']} "
        f"standard errors apart, {verdict}"
        + (
            ": the two agree."
            if within
            else ": the simulation and the solution differ by more than the simulation's noise."
        )
    )


def _policy(values: Mapping[str, Any]) -> str:
    """Return the counterfactual as the sentences name it ("the benefit cut (paying 79 % ...)")."""
    change = values.get("policy", {}).get("benefit_scale")
    if change is None:
        return "the counterfactual"
    base, cut = change
    scheduled = "" if base == 1 else f" instead of {percent(base, decimals=0)}"
    return (
        f"the benefit cut (paying {percent(cut, decimals=0)} of scheduled Social Security "
        f"benefits{scheduled})"
    )


def _age(values: Mapping[str, Any]) -> str:
    age = values.get("first_age")
    return "entry" if age is None else f"{float(age):g}"
