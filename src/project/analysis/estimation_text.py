"""The estimation's sentences: the last step, the misfit, the correlation, the J-test.

Each is generated from the saved estimate, so the paper's text and its tables print the same
numbers (``tests/test_paper.py``).
"""

from __future__ import annotations

from collections.abc import Mapping

import scipy.stats

from project.analysis.notation import (
    age_label,
    error_decimals,
    joined,
    number,
    p_relation,
    p_value,
    percent,
    symbol,
    variant_name,
    with_plain_parameters,
)
from project.estimation.inference import CONFIDENCE, CRITICAL
from project.estimation.products import SavedEstimation


def step_sentence(saved: SavedEstimation) -> str:
    """Return the sentence on the Jacobian's step and the standard errors from another step."""
    kept = next((r for r in saved.summary.get("searches", {}).values() if r.get("kept")), {})
    by_step = kept.get("std_errors_by_step", {})
    step = percent(float(saved.summary["settings"]["relative_step"]))
    sentence = f"Their Jacobian is taken by central differences of {step} of each estimate"
    if not by_step:
        return sentence + "."
    other, errors = next(iter(by_step.items()))
    main = saved.estimates.set_index("param")["std_error"].astype(float)  # the estimates' order
    printed = joined(
        [
            f"{number(errors[param], decimals=error_decimals(param))} for {symbol(param)} "
            f"({_signed_percent(errors[param] / main[param] - 1)})"
            for param in main.index
        ]
    )
    return (
        f"{sentence}; steps of {percent(float(other), decimals=0)} give standard errors of "
        f"{printed}."
    )


def _signed_percent(change: float) -> str:
    """Return a relative change as printed: "+17 %" or "\u22125 %"."""
    text = percent(change, decimals=0)
    return text if text.startswith("\u2212") else f"+{text}"


def misfit_sentence(saved: SavedEstimation) -> str:
    """Return where the model misses the data beyond sampling error, in the table's t-values.

    Every age group whose |t| exceeds the 5 % critical value, in age order, with the side the
    model lies on (t is the simulated moment less the data's over the difference's standard
    error), and the largest |t| of the others, as the moment-fit table prints them.
    """
    t = saved.moments.set_index("moment")["t_stat"].astype(float)
    critical = CRITICAL
    printed = {m: number(value, decimals=2) for m, value in t.items()}
    beyond = [m for m in t.index if abs(float(printed[m].replace("\u2212", "-"))) > critical]
    dash = "\u2013"

    def group(moment: str) -> str:
        side = "above" if t[moment] > 0 else "below"
        ages = age_label(moment).replace("-", dash)
        return f"{side} the data at ages {ages} (t = {printed[moment]})"

    if not beyond:
        largest = number(t.abs().max(), decimals=2)
        return f"Every group lies within {largest} standard errors of the difference."
    rest = [m for m in t.index if m not in beyond]
    sentence = (
        f"The model lies {joined([group(m) for m in beyond])}, beyond the "
        f"{percent(1 - CONFIDENCE, decimals=0)} critical value of {critical:.2f}"
    )
    if rest:
        bound = number(t[rest].abs().max(), decimals=2)
        sentence += f"; the other groups lie within {bound} standard errors of the difference"
    return sentence + "."


def correlation_sentence(saved: SavedEstimation) -> str:
    """Return the sentence on the two estimates' correlation and the direction it favours."""
    if len(saved.params) != 2:
        return ""
    first, second = (symbol(name) for name in saved.params)
    correlation = saved.correlation
    direction = "lower" if correlation < 0 else "higher"
    reading = ""
    if list(saved.params) == ["crra", "beta"] and correlation < 0:
        reading = " (more precautionary saving offset by less patience)"
    return (
        f"The baseline's two estimates are correlated at {number(correlation, decimals=2)}: the "
        f"moments pin down a combination of them more tightly than either, a higher {first} with a "
        f"{direction} {second} fitting them almost as well{reading}."
    )


def j_inflation_sentence(saved: SavedEstimation) -> str:
    """Return how much larger the data's variances would have to be for J not to reject."""
    summary = saved.summary
    level = percent(1 - CONFIDENCE, decimals=0)
    if int(summary["j_dof"]) < 1:
        return ""
    critical = float(scipy.stats.chi2.ppf(CONFIDENCE, int(summary["j_dof"])))
    factor = float(summary["j_statistic"]) / critical
    if factor <= 1:
        return f"Even so, the baseline's J-test does not reject at the {level} level."
    return (
        f"The baseline's J-test would not reject at the {level} level were the data's variances "
        f"{number(factor, decimals=2)} times as large (J scales with their inverse)."
    )


def j_test_notes(estimates: Mapping[str, SavedEstimation]) -> str:
    """Return the J-test of each variant as one sentence ("" when none is over-identified)."""
    notes = []
    for variant, saved in estimates.items():
        summary = saved.summary
        dof = int(summary["j_dof"])
        if dof > 0:
            freedom = "degree" if dof == 1 else "degrees"
            p = float(summary["j_p_value"])
            verdict = "rejects" if p < 1 - CONFIDENCE else "does not reject"
            notes.append(
                f"{variant_name(variant)}: J = {summary['j_statistic']:.2f} with {dof} "
                f"{freedom} of freedom, {_p_clause(p)}: it {verdict} the model at the "
                f"{percent(1 - CONFIDENCE, decimals=0)} level."
            )
    return (" J-test of the over-identifying restrictions. " + " ".join(notes)) if notes else ""


def estimation_notes(estimates: Mapping[str, SavedEstimation]) -> str:
    """Return the recorded warnings as one sentence per variant ("" when there are none).

    Parameters' code names in the warnings print as their symbols ("beta" as "β").
    """
    notes = []
    for variant, saved in estimates.items():
        shown = [w for w in saved.warnings if not w.startswith(J_WARNING)]  # the J note says it
        if shown:
            notes.append(f"{variant_name(variant)}: {with_plain_parameters(' '.join(shown))}")
    return (" Warnings. " + " ".join(notes)) if notes else ""


J_WARNING = "The J-test rejects"
"""The start of the warning of a rejected J-test, which the J-test note already states."""


def _p_clause(p: float) -> str:
    return f"p {p_relation(p_value(p))}"
