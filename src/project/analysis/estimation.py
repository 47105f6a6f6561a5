"""Tables and the fit figure of the structural estimates (``project.estimation`` products).

``estimates_table`` and ``moment_fit_table`` turn the saved estimates of every estimated
variant into the paper's tables, in the paper's notation (``write_estimation_report`` writes
them as LaTeX, Typst and Markdown with the figure; the arrow
files in ``bld/<variant>/estimation/`` are the machine-readable copies); ``estimation_notes``
lists the warnings recorded with the estimates and ``j_test_notes`` the J-tests, which the
estimates table's caption carries; and
``plot_estimation_fit`` draws model against data by age group with the data's 95 % bands.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.stats

from project import style
from project.analysis.identification import (
    identification_caption,
    identification_table,
    plot_criterion_profiles,
)
from project.analysis.model_numbers import calibration_notes
from project.analysis.notation import (
    PARAMETERS,
    Notation,
    age_label,
    error_decimals,
    joined,
    number,
    p_relation,
    p_value,
    parameter_label,
    percent,
    printed_decimals,
    symbol,
    variant_name,
    with_plain_parameters,
)
from project.analysis.table_output import Symbol, typst_escape, write_table_files
from project.estimation.inference import CONFIDENCE, CRITICAL
from project.estimation.products import SavedEstimation

Z_95 = CRITICAL
MAX_FLAT_TICKS = 5
"""Age groups a fit panel labels horizontally; more are tilted so that their labels do not meet."""
ESTIMATES_CAPTION = (
    "Preferences estimated by simulated moments from SCF wealth-to-income ratios: estimates, "
    "standard errors (including the simulation noise) and 95% confidence intervals."
)
MOMENT_FIT_CAPTION = (
    "Mean log wealth-to-income by age group: SCF data with its standard error (Data s.e.), the "
    "model at the estimates, their difference (model less data) with its standard error "
    "(Diff. s.e.: the data's and the simulation's noise), the t-statistic (the difference over "
    "its standard error) and the SCF households of the group (N)."
)


def estimates_table(estimates: Mapping[str, SavedEstimation]) -> pd.DataFrame:
    """Return one row per variant and param: estimate, standard error and 95 % interval.

    Variants print by name ("Low pension"), params by description and symbol ("Discount
    factor β", per format). The J-test goes to the caption (``j_test_notes``).
    """
    rows = [
        {
            "Variant": variant_name(variant),
            "Parameter": parameter_label(str(row.param)),
            "Estimate": float(row.estimate),
            "Std. error": float(row.std_error),
            "CI lower": float(row.ci_lower),
            "CI upper": float(row.ci_upper),
        }
        for variant, saved in estimates.items()
        for row in saved.estimates.itertuples(index=False)
    ]
    return pd.DataFrame(rows, columns=list(ESTIMATES_COLUMNS))


ESTIMATES_COLUMNS = ("Variant", "Parameter", "Estimate", "Std. error", "CI lower", "CI upper")
MOMENT_FIT_COLUMNS = (
    "Variant",
    "Ages",
    "Data",
    "Data s.e.",
    "Model",
    "Difference",
    "Diff. s.e.",
    "t",
    "N",
)


def moment_fit_table(estimates: Mapping[str, SavedEstimation]) -> pd.DataFrame:
    """Return one row per variant and age group: data, model, difference, their s.e. and t.

    t is the difference over its s.e. (``Diff. s.e.``, data and simulation noise), the columns
    the table prints.

    Ages print as "61\u201365"; N counts the SCF households of the group.
    """
    rows = [
        {
            "Variant": variant_name(variant),
            "Ages": age_label(row.moment).replace("-", "\u2013"),
            "Data": float(row.data),
            "Data s.e.": float(row.data_std_error),
            "Model": float(row.simulated),
            "Difference": float(row.residual),
            "Diff. s.e.": float(row.std_error),
            "t": float(row.t_stat),
            "N": round(float(row.n_data)),
        }
        for variant, saved in estimates.items()
        for row in saved.moments.itertuples(index=False)
    ]
    return pd.DataFrame(rows, columns=list(MOMENT_FIT_COLUMNS))


_SEARCHES = (
    "Every local search of the estimation: where it started, where it ended and its criterion "
    "({criterion}, the weighted sum of squared moment differences). The multistart (TikTak) "
    "evaluates the start and points sampled within the bounds and runs its local searches from "
    "the best of them, each later one pulled towards the best end point found so far; the "
    "estimate is the end point with the lowest criterion (Kept). A search that did not "
    "converge stopped at its iteration limit."
)
SEARCHES_CAPTION = Symbol(
    text=_SEARCHES.format(criterion="g\u2032Wg"),
    latex=_SEARCHES.format(criterion="$g'Wg$"),
    typst=typst_escape(_SEARCHES.format(criterion="g\u2032Wg")),
)
SEARCHES_COLUMNS = ("Variant", "Search", "Start", "End", "Criterion", "Converged", "Kept")


def searches_table(estimates: Mapping[str, SavedEstimation]) -> pd.DataFrame:
    """Return one row per local search: its start, end point, criterion and whether kept.

    The kept one is the best local search of the search whose result is the estimate.

    Reads ``summary["searches"]``; a search recorded without its local searches (an older
    product) gives one row from its end point.
    """
    rows = []
    for variant, saved in estimates.items():
        searches = saved.summary.get("searches", {})
        for name, search in searches.items():
            local = search.get("local_searches") or [
                {"start": {}, "end": search["params"], "objective": search["objective"]}
            ]
            best = min(range(len(local)), key=lambda i: float(local[i]["objective"]))
            for position, found in enumerate(local, start=1):
                label = _search_label(name, position, n_local=len(local), n_searches=len(searches))
                rows.append(
                    {
                        "Variant": variant_name(variant),
                        "Search": label,
                        "Start": point_cell(found["start"]),
                        "End": point_cell(found["end"]),
                        "Criterion": float(found["objective"]),
                        "Converged": {True: "yes", False: "no"}.get(found.get("converged"), ""),
                        "Kept": "yes" if search["kept"] and position - 1 == best else "",
                    }
                )
    return pd.DataFrame(rows, columns=list(SEARCHES_COLUMNS))


def _search_label(name: str, number: int, *, n_local: int, n_searches: int) -> str:
    """Return a local search's row label: its search's name only where there are several."""
    if n_local == 1:
        return name
    return f"local search {number}" if n_searches == 1 else f"{name}, local search {number}"


def point_cell(point: Mapping[str, float]) -> Symbol | str:
    """Return a param point as "symbol = value, ..." in each format's markup."""
    if not point:
        return ""
    order = list(PARAMETERS)  # the paper's order (crra before beta), not the JSON's
    parts = []
    for name, value in sorted(point.items(), key=lambda item: _rank(item[0], order)):
        notation = PARAMETERS.get(name) or Notation(name, name, name, name)
        parts.append((notation, f"{float(value):.{printed_decimals(name)}f}"))
    return Symbol(
        text=", ".join(f"{n.text} = {v}" for n, v in parts),
        latex=", ".join(f"${n.latex}$ = {v}" for n, v in parts),
        typst=", ".join(f"${n.typst}$ = {v}" for n, v in parts),
    )


def _rank(name: str, order: list[str]) -> tuple[int, str]:
    return (order.index(name) if name in order else len(order), name)


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
                f"{freedom} of freedom, {_p_value(p)}: it {verdict} the model at the "
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


def write_estimation_report(
    *,
    estimates: Mapping[str, SavedEstimation],
    paths: Mapping[str, Path],
    provenance: Mapping[str, str] | None = None,
) -> list[Path]:
    """Write the estimates and moment-fit tables and the fit figure; return the files.

    ``paths`` has ``estimates_<suffix>``, ``moment_fit_<suffix>`` and
    ``estimation_searches_<suffix>`` and ``identification_<suffix>`` for "tex", "typ", "md"
    (labels ``tab:<stem>``), ``figure_png``, ``figure_pdf`` (the fit) and ``profiles_png``,
    ``profiles_pdf`` (the criterion along each param).
    """
    tables = {
        "estimates": (
            estimates_table(estimates),
            ESTIMATES_CAPTION
            + j_test_notes(estimates)
            + calibration_notes(estimates)
            + estimation_notes(estimates),
            {
                "Estimate": "{:.4f}",
                "Std. error": "{:.5f}",
                "CI lower": "{:.4f}",
                "CI upper": "{:.4f}",
            },
        ),
        "moment_fit": (
            moment_fit_table(estimates),
            MOMENT_FIT_CAPTION,
            {"Data s.e.": "{:.3f}", "Diff. s.e.": "{:.3f}", "t": "{:.2f}"},
        ),
        "estimation_searches": (
            searches_table(estimates),
            SEARCHES_CAPTION,
            {"Criterion": "{:.3f}"},
        ),
        "identification": (
            identification_table(estimates),
            identification_caption(estimates),
            {"Slope": "{:.3f}", "Sensitivity": "{:.3f}"},
        ),
    }
    written = []
    for stem, (table, caption, formats) in tables.items():
        written += write_table_files(
            table=table,
            paths={s: paths[f"{stem}_{s}"] for s in ("tex", "typ", "md") if f"{stem}_{s}" in paths},
            caption=caption,
            label=f"tab:{stem}",
            formats=formats,
            group_column="Variant",
            font_size="footnotesize",
            provenance=provenance,
        )
    figure = {fmt: paths[f"figure_{fmt}"] for fmt in ("png", "pdf") if f"figure_{fmt}" in paths}
    if figure:
        written += plot_estimation_fit(estimates=estimates, paths=figure, provenance=provenance)
    profiles = {f: paths[f"profiles_{f}"] for f in ("png", "pdf") if f"profiles_{f}" in paths}
    if profiles:
        written += plot_criterion_profiles(
            estimates=estimates, paths=profiles, provenance=provenance
        )
    return written


def _p_value(p: float) -> str:
    return f"p {p_relation(p_value(p))}"


def plot_estimation_fit(
    *,
    estimates: Mapping[str, SavedEstimation],
    paths: Mapping[str, Path],
    provenance: Mapping[str, str] | None = None,
) -> list[Path]:
    """Plot the model's mean log wealth-to-income against the SCF's (95 % bands), per variant."""
    with style.styled():
        figure, axes = style.new_figure(nrows=1, ncols=len(estimates))
        for panel, (variant, saved) in zip(axes[0], estimates.items(), strict=True):
            moments = saved.moments
            labels = [age_label(m).replace("-", "\u2013") for m in moments["moment"]]
            x = np.arange(len(labels))
            band = Z_95 * moments["data_std_error"].to_numpy()
            data = moments["data"].to_numpy()
            panel.fill_between(
                x, data - band, data + band, color=style.color(0), alpha=0.25, linewidth=0
            )
            panel.plot(x, data, color=style.color(0), marker="o", label="SCF data (95 % band)")
            panel.plot(
                x,
                moments["simulated"].to_numpy(),
                color=style.color(1),
                marker="s",
                linestyle="--",
                label="Model at the estimates",
            )
            panel.set_xticks(x, labels, rotation=45 if len(labels) > MAX_FLAT_TICKS else 0)
            panel.set(
                xlabel=style.AGE_LABEL,
                ylabel="Mean log wealth-to-income",
                title=style.variant_label(variant),
            )
        style.same_limits([row for line in axes for row in line])
        style.figure_legend(figure=figure, axis=axes[0][0])
        return style.save_figure(figure=figure, paths=paths, provenance=provenance)
