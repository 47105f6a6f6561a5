"""The robustness of the estimates: the status quo's estimation against each check's.

``robustness_table`` puts the status quo's estimates (``bld/<status quo>/estimation``) beside
those of every robustness check (``bld/robustness/<check>/estimation``, ``ROBUSTNESS`` in
``project.config``, given here as ``specs``: each check's ``description``, ``params`` and
``age_groups``): each estimate with its standard error (or "at a bound"), the J-test with its
degrees of freedom and p-value and, for a check that only leaves moments out, Hansen's C test
of those moments (the difference of the two J-statistics, chi-square with as many degrees of
freedom as moments left out, under the same diagonal efficient weighting).
``robustness_estimates_sentence`` says, in figures the table prints, how far the checks move
the estimates and what the tests find, and, given ``Welfare``, the benefit cut's λ at each
check's estimates (``project.analysis.robustness_welfare``); ``write_robustness_table`` writes
the table as LaTeX, Typst and Markdown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import chi2

from project.analysis.notation import (
    AT_BOUND,
    age_label,
    error_decimals,
    joined,
    number,
    p_relation,
    p_value,
    percent,
    printed_decimals,
    symbol,
)
from project.analysis.table_output import write_table_files
from project.analysis.welfare_text import normal_interval
from project.estimation.inference import CONFIDENCE, CRITICAL
from project.estimation.products import SavedEstimation
from project.persist.manifest import read_json_object

SPECIFICATION = "Specification"
BASELINE_LABEL = "Baseline (as estimated)"
J_DECIMALS = 2
LAMBDA = "λ (%)"
LAMBDA_DECIMALS = 2
CAPTION = (
    "Robustness of the estimates: the preferences estimated again with one assumption changed "
    "at a time, each round by a local search from the baseline's estimates, the cost of "
    "working κ calibrated again to the claiming fact, on the same SCF moments (fewer where the "
    "age range changes) and simulated households. Standard errors include the simulation "
    "noise and let κ follow the estimates; J is the test of the over-identifying restrictions "
    "with df degrees of freedom (moments less estimated parameters) and p its p-value; C, for "
    "a check that only leaves moments out, is Hansen's test of those moments (the baseline's J "
    "less the check's, chi-square with as many degrees of freedom as moments left out) and "
    "p (C) its p-value; λ is the benefit cut's consumption equivalent with both variants "
    "solved again at the row's estimates and assumptions. \u2020: the estimate's 95 % interval "
    "(1.96 standard errors each side) reaches a bound of its search; only its part within the "
    "bound is valid."
)


def _se_column(param: str) -> str:
    return f"{symbol(param)} s.e."


def robustness_table(
    *,
    baseline: SavedEstimation,
    checks: Mapping[str, SavedEstimation],
    specs: Mapping[str, Mapping[str, Any]],
    welfare: Welfare | None = None,
) -> pd.DataFrame:
    """Return one row per specification: estimates, standard errors, the J- and C-tests, λ.

    A standard error at a bound is the text "at a bound"; ``table_formats`` gives each
    numeric column's printed decimals, which the paper's sentence prints too. ``welfare``
    adds the benefit cut's λ (in percent) of the baseline and of every check.
    """
    rows = [_row(BASELINE_LABEL, baseline) | {"C": None, "p (C)": ""}]
    for name, saved in checks.items():
        test = c_test(baseline=baseline, check=saved, spec=specs[name])
        cells = (
            {"C": None, "p (C)": ""} if test is None else {"C": test[0], "p (C)": p_value(test[2])}
        )
        rows.append(_row(specs[name]["description"], saved) | cells)
    table = pd.DataFrame(rows)
    if welfare is not None:
        table[LAMBDA] = [100 * welfare.baseline] + [100 * welfare.checks[n] for n in checks]
    return table


@dataclass(frozen=True)
class Welfare:
    """The benefit cut's λ (a share) at the baseline's estimates and at each check's."""

    baseline: float
    checks: Mapping[str, float]
    interval: str | None = None
    """The baseline's 95 % interval as the welfare table prints it (``lambda_ci``); none where
    an estimate lies at a bound (the welfare measure then has no standard error)."""
    bounds: tuple[float, float] | None = None
    """That interval's ends (shares), where it is printed."""


def table_formats(
    params: Sequence[str], *, welfare: bool = False, calibrated: Sequence[str] = ()
) -> dict[str, str]:
    """Return the number format of each numeric column of the table for ``params``.

    ``calibrated``: the params calibrated jointly with the estimates, whose values it shows.
    """
    formats = {
        "J": f"{{:.{J_DECIMALS}f}}",
        "C": f"{{:.{J_DECIMALS}f}}",
    }
    if welfare:
        formats[LAMBDA] = f"{{:.{LAMBDA_DECIMALS}f}}"
    for param in [*params, *calibrated]:
        formats[symbol(param)] = f"{{:.{printed_decimals(param)}f}}"
    return formats


def read_welfare(results: Mapping[str, Path]) -> Welfare:
    """Return the headline λ (``results["welfare"]``) and each check's (``robustness_welfare``)."""
    hint = "Run pytask to rebuild it."
    headline = read_json_object(
        results["welfare"], kind="welfare", hint=hint, required=("numbers",)
    )
    robustness = read_json_object(
        results["robustness_welfare"],
        kind="robustness welfare",
        hint=hint,
        required=("status_quo", "checks"),
    )
    return Welfare(
        baseline=float(robustness["status_quo"]["lambda"]),
        checks={name: float(value["lambda"]) for name, value in robustness["checks"].items()},
        interval=headline["numbers"].get("lambda_ci"),
        bounds=(
            normal_interval(float(headline["lambda"]), float(headline["lambda_se"]))
            if "lambda_ci" in headline["numbers"]
            else None
        ),
    )


def c_test(
    *, baseline: SavedEstimation, check: SavedEstimation, spec: Mapping[str, Any]
) -> tuple[float, int, float] | None:
    """Return Hansen's C test of the moments ``check`` leaves out: (C, df, p-value).

    None unless the check changes nothing of the model (no param, profile or size) and its
    moments are a strict subset of the baseline's (the two J-statistics then weigh the common
    moments alike). With a param calibrated jointly, the check calibrates it again on fewer
    moments' estimates, so the two J-statistics are taken at slightly different values of it.
    """
    kept, full = set(check.moments["moment"]), set(baseline.moments["moment"])
    changes_model = spec.get("params") or spec.get("profiles") or spec.get("sizes")
    if changes_model or not kept < full:
        return None
    statistic = float(baseline.summary["j_statistic"]) - float(check.summary["j_statistic"])
    dof = len(full - kept)
    return statistic, dof, float(chi2.sf(max(statistic, 0.0), dof))


def _row(label: str, saved: SavedEstimation) -> dict[str, object]:
    row: dict[str, object] = {SPECIFICATION: label}
    for estimate in saved.estimates.itertuples(index=False):
        row[symbol(estimate.param)] = float(estimate.estimate)
        error = (
            AT_BOUND
            if estimate.at_bound
            else number(estimate.std_error, decimals=error_decimals(estimate.param))
        )
        row[_se_column(estimate.param)] = error + (REACHES_BOUND if _reaches(estimate) else "")
    summary = saved.summary
    calibrated = summary.get("calibrated") or {}
    if calibrated:
        row[symbol(str(calibrated["param"]))] = float(calibrated["value"])
    row["J"] = float(summary["j_statistic"])
    row["df"] = int(summary["j_dof"])
    row["p"] = p_value(float(summary["j_p_value"]))
    return row


REACHES_BOUND = "\u2020"
"""Marks a standard error whose 95 % interval reaches a bound of its parameter's search."""


def _reaches(estimate: Any) -> bool:
    """Say whether the estimate's normal 95 % interval reaches a bound of its search."""
    if estimate.at_bound or not np.isfinite(estimate.std_error):
        return False
    half = CRITICAL * float(estimate.std_error)
    lower, upper = float(estimate.lower_bound), float(estimate.upper_bound)
    return float(estimate.estimate) - half < lower or float(estimate.estimate) + half > upper


def robustness_estimates_sentence(
    *,
    baseline: SavedEstimation,
    checks: Mapping[str, SavedEstimation],
    specs: Mapping[str, Mapping[str, Any]],
    welfare: Welfare | None = None,
) -> str:
    """Return the paragraph on the checks' estimates, tests and λ, every figure as printed."""
    if not checks:
        return ""
    descriptions = {name: spec["description"] for name, spec in specs.items()}
    table = robustness_table(baseline=baseline, checks=checks, specs=specs, welfare=welfare)
    clauses = []
    rows = baseline.estimates.set_index("param")
    for param in baseline.estimates["param"]:
        column = table[symbol(param)]
        found = dict(zip(checks, column.iloc[1:].astype(float), strict=True))
        decimals = printed_decimals(param)
        clauses.append(
            _range_clause(symbol(param), found, descriptions, decimals, base=column.iloc[0])
            + _outside_clause(found, rows.loc[param, "ci_lower"], rows.loc[param, "ci_upper"])
        )
    sentences = [
        f"Estimated again with one assumption changed at a time, {'; '.join(clauses)}.",
        "How far the estimates move measures their sensitivity to the assumption changed; it "
        "does not test it.",
        *_c_sentences(baseline=baseline, checks=checks, specs=specs),
        _j_sentence(baseline, checks, descriptions),
    ]
    if welfare is not None:
        found = dict(zip(checks, table[LAMBDA].iloc[1:].astype(float), strict=True))
        clause = _range_clause(
            "λ", found, descriptions, LAMBDA_DECIMALS, base=table[LAMBDA].iloc[0], unit=" %"
        )
        interval = (
            ""
            if welfare.interval is None
            else f", whose {percent(CONFIDENCE, decimals=0)} interval over the estimates' "
            f"uncertainty is {welfare.interval}"
        )
        outside = ""
        if welfare.interval is not None and welfare.bounds is not None:
            low, high = (100 * bound for bound in welfare.bounds)  # the table's λ is in percent
            outside = _outside_clause(found, low, high, named=False)
        sentences.append(
            f"At each check's estimates, the benefit cut's {clause}{interval}{outside}."
        )
    return " ".join(sentences)


def _outside_clause(
    values: Mapping[str, float], lower: float, upper: float, *, named: bool = True
) -> str:
    """Return how many checks lie outside the baseline's 95 % interval [lower, upper], if any.

    ``named``: name the interval; else call it "it" (the sentence has just printed it).
    """
    outside = [name for name, value in values.items() if not lower <= value <= upper]
    if not outside:
        return ""
    interval = f"the baseline's {percent(CONFIDENCE, decimals=0)} interval" if named else "it"
    if len(values) == 1:
        return f" (outside {interval})"
    return f" ({len(outside)} of the {len(values)} outside {interval})"


def _range_clause(
    name: str,
    values: Mapping[str, float],
    descriptions: Mapping[str, str],
    decimals: int,
    *,
    base: float,
    unit: str = "",
) -> str:
    """Return "<name> lies between a (check) and b (check), against c in the baseline"."""
    printed = {n: number(v, decimals=decimals) + unit for n, v in values.items()}
    low, high = min(values, key=values.get), max(values, key=values.get)

    def at(extreme: str) -> str:  # every check that prints the extreme value
        return _listed([n for n in values if printed[n] == printed[extreme]], descriptions)

    if printed[low] == printed[high]:
        where = "the check" if len(values) == 1 else "every check"
        found = f"{name} is {printed[low]} under {where} ({at(low)})"
    else:
        found = f"{name} lies between {printed[low]} ({at(low)}) and {printed[high]} ({at(high)})"
    return f"{found}, against {number(base, decimals=decimals)}{unit} in the baseline"


def _listed(names: Sequence[str], descriptions: Mapping[str, str]) -> str:
    return "; ".join(_lower_first(descriptions[n]) for n in names)


def _c_sentences(
    *,
    baseline: SavedEstimation,
    checks: Mapping[str, SavedEstimation],
    specs: Mapping[str, Mapping[str, Any]],
) -> list[str]:
    """Return one sentence per check that leaves moments out (its C test, as printed)."""
    sentences = []
    level = percent(1 - CONFIDENCE, decimals=0)
    for name, saved in checks.items():
        test = c_test(baseline=baseline, check=saved, spec=specs[name])
        if test is None:
            continue
        statistic, dof, p = test
        left_out = sorted(set(baseline.moments["moment"]) - set(saved.moments["moment"]))
        ages = joined([age_label(m).replace("-", "\u2013") for m in left_out])
        plural = dof > 1
        moments = f"moment{'s' if plural else ''} of ages {ages}"
        verdict = "rejects" if p < 1 - CONFIDENCE else "does not reject"
        sentences.append(
            f"Leaving out the {moments} lowers J from "
            f"{number(baseline.summary['j_statistic'], decimals=J_DECIMALS)} to "
            f"{number(saved.summary['j_statistic'], decimals=J_DECIMALS)} (p "
            f"{p_relation(p_value(float(saved.summary['j_p_value'])))}); the difference, C = "
            f"{number(statistic, decimals=J_DECIMALS)} with {dof} degree"
            f"{'s' if plural else ''} of freedom (p {p_relation(p_value(p))}), {verdict} at the "
            f"{level} level that the {moments} agree{'' if plural else 's'} with the others."
        )
    if sentences:
        sentences.append(
            "C is chi-square only under efficient weighting: ours leaves out the correlation of "
            "the simulated moments, which share simulated households, so its size is "
            "approximate, and the data's variances are understated (see the data paragraph), "
            "which makes it over-reject. It is more "
            "powerful against one moment's misfit than the J-test, which spreads its degrees of "
            "freedom over all moments."
        )
    return sentences


def _j_sentence(
    baseline: SavedEstimation,
    checks: Mapping[str, SavedEstimation],
    descriptions: Mapping[str, str],
) -> str:
    """Return the J-tests' p-values under the checks and how many reject the model."""
    values = {name: float(saved.summary["j_p_value"]) for name, saved in checks.items()}
    printed = {name: p_value(value) for name, value in values.items()}
    low, high = min(values, key=values.get), max(values, key=values.get)
    rejected = [n for n, v in values.items() if v < 1 - CONFIDENCE]
    level = percent(1 - CONFIDENCE, decimals=0)
    verdict = (
        "under every check"
        if len(rejected) == len(values)
        else "under none of the checks"
        if not rejected
        else f"under {len(rejected)} of the {len(values)} checks"
    )
    spread = (
        f"is {printed[low]} ({_lower_first(descriptions[low])})"
        if low == high
        else f"lies between {printed[low]} ({_lower_first(descriptions[low])}) and "
        f"{printed[high]} ({_lower_first(descriptions[high])})"
    )
    base = p_value(float(baseline.summary["j_p_value"]))
    return (
        f"The J-test's p-value {spread}, against {base} in the baseline; it rejects the model at "
        f"the {level} level {verdict}."
    )


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


def write_robustness_table(
    *,
    baseline: SavedEstimation,
    checks: Mapping[str, SavedEstimation],
    specs: Mapping[str, Mapping[str, Any]],
    paths: Mapping[str, Path],
    welfare: Welfare | None = None,
    provenance: Mapping[str, str] | None = None,
) -> Sequence[Path]:
    """Write the robustness table (``paths``: "tex", "typ", "md"; label ``tab:robustness``)."""
    return write_table_files(
        table=robustness_table(baseline=baseline, checks=checks, specs=specs, welfare=welfare),
        paths=paths,
        formats=table_formats(
            list(baseline.estimates["param"]),
            welfare=welfare is not None,
            calibrated=[c["param"] for c in [baseline.summary.get("calibrated")] if c],
        ),
        caption=CAPTION,
        label="tab:robustness",
        font_size="footnotesize",
        provenance=provenance,
    )
