"""The paper's sentences on welfare: the consumption equivalent, its precision, its check.

Every number comes from ``welfare.json`` (``project.analysis.welfare``) as printed there, so a
sentence and the results it cites cannot disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from project.analysis.notation import SMALLEST_SE, number, percent, symbol, type_name
from project.estimation.inference import CONFIDENCE, CRITICAL

SMALLEST_PRINTED = 0.005
"""A standard error below this many percentage points prints as ``SMALLEST_SE``, not "0.00 %"."""


def welfare_sentence(welfare: Mapping[str, Any]) -> dict[str, str]:
    """Return the abstract's and the counterfactual section's sentences on welfare.

    With the delta-method standard errors of ``welfare`` (``lambda_se``), both say how precise
    λ is given the estimated preferences.
    """
    overall = float(welfare["lambda"])
    size = percent(abs(overall), decimals=2)
    verb = "loss" if overall < 0 else "gain"
    printed = welfare.get("numbers", {})
    by_type = "; ".join(
        f"{type_name(t).lower()} households {percent(v, decimals=2)}"
        + (f" (s.e. {printed[f'lambda_{t}_se']})" if f"lambda_{t}_se" in printed else "")
        for t, v in welfare["lambda_by_type"].items()
    )
    abstract = f"The cut is a welfare {verb} worth {size} of consumption in every period and state"
    sentence = f"The cut's consumption equivalent is λ = {percent(overall, decimals=2)}"
    if "lambda_se" in printed:
        error = printed["lambda_se"]
        abstract += f" (standard error {error}, from the estimated preferences)"
        sentence += (
            f" (standard error {error}; {percent(CONFIDENCE, decimals=0)} interval "
            f"{printed['lambda_ci']}), the standard error carrying the sampling uncertainty of "
            "the estimated preferences by the delta method"
        )
    sentence += f". By type: {by_type}."
    if welfare.get("values", {}).get("weighted"):
        sentence += (
            " Both variants are evaluated at the baseline\u2019s simulated households, weighted "
            "by their calibrated baseline weights (those of the tables\u2019 baseline columns)."
        )
    at_bound = welfare.get("values", {}).get("params_at_bound", [])
    if at_bound:
        names = " and ".join(symbol(p) for p in at_bound)
        sentence += (
            f" No standard error is given: the estimate of {names} lies at a bound of its "
            "search interval, where the delta method does not apply."
        )
    return {"abstract": abstract + ".", "sentence": sentence}


def precise_types_sentence(
    welfare: Mapping[str, Any],
    *,
    retirement_ages: Mapping[str, Mapping[str, str]],
    mandatory_age: str,
) -> str:
    """Return why a type's λ has a standard error too small to print (empty when none has).

    ``retirement_ages`` are the printed mean retirement ages by variant and type (the results
    numbers); a type that retires at ``mandatory_age`` under both pensions changes no choice of
    when to retire, which is why its λ hardly moves with the preferences.
    """
    printed = welfare.get("numbers", {})
    parts = []
    for pref_type in welfare.get("lambda_by_type", {}):
        if printed.get(f"lambda_{pref_type}_se") != SMALLEST_SE:
            continue
        name = type_name(pref_type)
        ages = [by_type.get(name) for by_type in retirement_ages.values()]
        reason = ""
        if None not in ages and {float(a) for a in ages} == {float(mandatory_age)}:
            reason = (
                f": on average they retire at the mandatory age of {mandatory_age} under both "
                "pensions, so the cut hardly changes when they retire; their λ depends on the "
                "preferences only through saving and discounting, and the delta method finds it "
                "nearly constant over the estimates\u2019 sampling uncertainty"
            )
        parts.append(
            f" The standard error of the {name.lower()} households\u2019 λ is below "
            f"{SMALLEST_SE.removeprefix('< ')}{reason}."
        )
    return "".join(parts)


def monte_carlo_numbers(welfare: Mapping[str, Any]) -> dict[str, str]:
    """Return the Monte Carlo check of C as printed (empty without one).

    ``exact``: C from the solution; ``simulated`` and ``simulated_se``: its Monte Carlo estimate
    and standard error from the simulated households (``n_households``); ``distance``: their
    gap in standard errors.
    """
    values = welfare.get("values", {})
    needed = ("consumption_utility", "simulated_consumption_utility")
    if not all(k in values for k in needed) or not values.get("simulated_consumption_utility_se"):
        return {}
    exact, simulated = values["consumption_utility"], values["simulated_consumption_utility"]
    error = values["simulated_consumption_utility_se"]
    return {
        "exact": number(exact, decimals=2),
        "simulated": number(simulated, decimals=2),
        "simulated_se": number(error, decimals=3),
        "distance": number(abs(simulated - exact) / error, decimals=1),
        "n_households": f"{int(values.get('n_households', 0)):,}",
    }


def monte_carlo_sentence(welfare: Mapping[str, Any]) -> str:
    """Return the Monte Carlo check of the welfare measure (empty without one)."""
    printed = monte_carlo_numbers(welfare)
    if not printed:
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
        " The expected discounted utility of consumption behind λ, computed from the solution "
        f"({printed['exact']}), and its Monte Carlo estimate from the "
        f"{printed['n_households']} simulated households "
        f"({printed['simulated']}, standard error {printed['simulated_se']}) are "
        f"{printed['distance']} standard errors apart, {verdict}"
        + (
            f": the check passes at the {level} level."
            if within
            else ": the simulation and the solution differ by more than the simulation's noise."
        )
    )


def welfare_numbers(result: Mapping[str, Any]) -> dict[str, str]:
    """Return λ, its s.e. and 95 % interval (percent) overall and by type, and the value gap.

    No s.e. or interval is printed where an estimate lies at a bound (``params_at_bound``).
    """
    numbers = {"value_difference": number(result["value_difference"], decimals=4)}
    valid = not result.get("params_at_bound")  # no delta method at a bound
    errors = result.get("lambda_se_by_type", {}) if valid else {}
    groups = {"": (result["lambda"], result.get("lambda_se") if valid else None)} | {
        f"_{t}": (v, errors.get(t)) for t, v in result["lambda_by_type"].items()
    }
    for suffix, (value, error) in groups.items():
        numbers[f"lambda{suffix}"] = _percent(value)
        if error is not None:
            numbers[f"lambda{suffix}_se"] = (
                _percent(error) if 100 * error >= SMALLEST_PRINTED else SMALLEST_SE
            )
            low, high = normal_interval(value, error)
            numbers[f"lambda{suffix}_ci"] = f"[{_percent(low)}, {_percent(high)}]"
    return numbers


def normal_interval(value: float, error: float) -> tuple[float, float]:
    """Return the 95 % interval of ``value`` with standard error ``error`` (normal)."""
    return value - CRITICAL * error, value + CRITICAL * error


def _percent(value: float) -> str:
    return percent(value, decimals=2)
