"""The robustness of the estimates: the status quo's estimation against each check's.

``robustness_table`` puts the status quo's estimates (``bld/<status quo>/estimation``) beside
those of every robustness check (``bld/robustness/<check>/estimation``, ``ROBUSTNESS`` in
``project.config``): each estimate with its standard error (or "at a bound"), and the J-test
with its degrees of freedom and p-value. ``robustness_estimates_sentence`` says, in numbers the
table prints, how far the checks move each estimate and whether any leaves the status quo's
95 % interval; ``write_robustness_table`` writes the table as LaTeX, Typst and Markdown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from project.analysis.notation import number, printed_decimals, symbol
from project.analysis.table_output import write_table_files
from project.estimation.inference import CONFIDENCE
from project.estimation.products import SavedEstimation

SPECIFICATION = "Specification"
BASELINE_LABEL = "Baseline (as estimated)"
AT_BOUND = "at a bound"
P_FLOOR = 0.001
J_DECIMALS = 2
WITHIN = "Every check's estimate lies within"
CAPTION = (
    "Robustness of the estimates: the preferences estimated again with one assumption changed "
    "at a time, each by a local search from the baseline's estimates, on the same SCF moments "
    "(fewer where the age range changes) and simulated households. Standard errors include the "
    "simulation noise; J is the test of the over-identifying restrictions with df degrees of "
    "freedom (moments less estimated parameters)."
)


def _se_column(param: str) -> str:
    return f"{symbol(param)} s.e."


def robustness_table(
    *,
    baseline: SavedEstimation,
    checks: Mapping[str, SavedEstimation],
    descriptions: Mapping[str, str],
) -> pd.DataFrame:
    """Return one row per specification: estimates, standard errors and the J-test.

    A standard error at a bound is the text "at a bound"; ``table_formats`` gives each
    column's printed decimals, which the paper's sentence prints too.
    """
    rows = [_row(BASELINE_LABEL, baseline)]
    rows += [_row(descriptions[name], saved) for name, saved in checks.items()]
    return pd.DataFrame(rows)


def table_formats(params: Sequence[str]) -> dict[str, str]:
    """Return the number format of each numeric column of the table for ``params``."""
    formats = {"J": f"{{:.{J_DECIMALS}f}}"}
    for param in params:
        decimals = printed_decimals(param)
        formats[symbol(param)] = f"{{:.{decimals}f}}"
    return formats


def _row(label: str, saved: SavedEstimation) -> dict[str, object]:
    row: dict[str, object] = {SPECIFICATION: label}
    for estimate in saved.estimates.itertuples(index=False):
        decimals = printed_decimals(estimate.param)
        row[symbol(estimate.param)] = float(estimate.estimate)
        row[_se_column(estimate.param)] = (
            AT_BOUND if estimate.at_bound else number(estimate.std_error, decimals=decimals)
        )
    summary = saved.summary
    row["J"] = float(summary["j_statistic"])
    row["df"] = int(summary["j_dof"])
    p = float(summary["j_p_value"])
    row["p"] = f"< {P_FLOOR:g}" if p < P_FLOOR else number(p, decimals=3)
    return row


def robustness_estimates_sentence(
    *,
    baseline: SavedEstimation,
    checks: Mapping[str, SavedEstimation],
    descriptions: Mapping[str, str],
) -> str:
    """Return the paragraph on the checks' estimates, every figure as the table prints it."""
    if not checks:
        return ""
    table = robustness_table(baseline=baseline, checks=checks, descriptions=descriptions)
    clauses, verdicts = [], []
    for estimate in baseline.estimates.itertuples(index=False):
        column = table[symbol(estimate.param)]
        found = dict(zip(checks, column.iloc[1:].astype(float), strict=True))
        clauses.append(
            _range_clause(estimate.param, found, descriptions, base=float(column.iloc[0]))
        )
        verdicts.append(_interval_clause(estimate, found, descriptions))
    within = [v for v in verdicts if v.startswith(WITHIN)]
    if len(within) == len(verdicts) > 1:
        verdicts = [f"{WITHIN} the baseline's {_confidence()} confidence intervals."]
    j_values = dict(zip(checks, table["J"].iloc[1:].astype(float), strict=True))
    j_clause = _range_clause("J", j_values, descriptions, base=float(table["J"].iloc[0]))
    return " ".join(
        [
            f"Estimated again with one assumption changed at a time, {'; '.join(clauses)}.",
            *verdicts,
            f"The J-statistic {j_clause.removeprefix('J ')}; {_rejections(checks, descriptions)}",
        ]
    )


def _range_clause(
    param: str, values: Mapping[str, float], descriptions: Mapping[str, str], *, base: float
) -> str:
    """Return "<param> lies between a (check) and b (check), against c in the baseline"."""
    decimals = J_DECIMALS if param == "J" else printed_decimals(param)
    printed = {n: number(v, decimals=decimals) for n, v in values.items()}
    low, high = min(values, key=values.get), max(values, key=values.get)
    name = symbol(param)
    if printed[low] == printed[high]:
        where = "the check" if len(values) == 1 else "every check"
        found = f"{name} is {printed[low]} under {where} ({_listed(values, descriptions)})"
    else:
        found = (
            f"{name} lies between {printed[low]} ({_lower_first(descriptions[low])}) and "
            f"{printed[high]} ({_lower_first(descriptions[high])})"
        )
    return f"{found}, against {number(base, decimals=decimals)} in the baseline"


def _interval_clause(
    estimate: Any, values: Mapping[str, float], descriptions: Mapping[str, str]
) -> str:
    """Return whether each check's estimate lies within the baseline's confidence interval."""
    name = symbol(estimate.param)
    if estimate.at_bound:
        return (
            f"The baseline's estimate of {name} lies at a bound of its search interval, so it "
            "has no confidence interval to compare with."
        )
    lower, upper = float(estimate.ci_lower), float(estimate.ci_upper)
    outside = {n: v for n, v in values.items() if not lower <= v <= upper}
    if not outside:
        return f"{WITHIN} the baseline's {_confidence()} confidence interval of {name}."
    return (
        f"The estimate of {name} lies outside the baseline's {_confidence()} confidence "
        f"interval under {len(outside)} of the {len(values)} checks "
        f"({_listed(outside, descriptions)})."
    )


def _confidence() -> str:
    return f"{round(100 * CONFIDENCE)} %"


def _listed(names: Mapping[str, object], descriptions: Mapping[str, str]) -> str:
    return "; ".join(_lower_first(descriptions[n]) for n in names)


def _rejections(checks: Mapping[str, SavedEstimation], descriptions: Mapping[str, str]) -> str:
    level = round(100 * (1 - CONFIDENCE))
    rejected = [n for n, s in checks.items() if float(s.summary["j_p_value"]) < 1 - CONFIDENCE]
    if len(rejected) == len(checks):
        return f"the test rejects the model at the {level} % level under every check."
    if not rejected:
        return f"the test rejects the model at the {level} % level under none of the checks."
    return (
        f"the test rejects the model at the {level} % level under {len(rejected)} of the "
        f"{len(checks)} checks ({_listed(dict.fromkeys(rejected), descriptions)})."
    )


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


def write_robustness_table(
    *,
    baseline: SavedEstimation,
    checks: Mapping[str, SavedEstimation],
    descriptions: Mapping[str, str],
    paths: Mapping[str, Path],
    provenance: Mapping[str, str] | None = None,
) -> Sequence[Path]:
    """Write the robustness table (``paths``: "tex", "typ", "md"; label ``tab:robustness``)."""
    return write_table_files(
        table=robustness_table(baseline=baseline, checks=checks, descriptions=descriptions),
        paths=paths,
        formats=table_formats(list(baseline.estimates["param"])),
        caption=CAPTION,
        label="tab:robustness",
        font_size="footnotesize",
        provenance=provenance,
    )
